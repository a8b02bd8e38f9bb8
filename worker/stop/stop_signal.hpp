#pragma once
// Shutdown in two steps, shared by all threads. Sleeps go through here so that a signal wakes
// them at once (a condition variable, not a plain sleep).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace tweetkeeper::worker {

class StopSignal {
 public:
  // Step 1: claim nothing new; batches in flight finish and are completed or released.
  void RequestStop();
  // Step 2: also cut HTTP requests short and stop retrying the database; batches are still
  // released when the database answers.
  void RequestAbort();

  bool stopping() const { return stop_.load(); }
  bool aborting() const { return abort_.load(); }
  const std::atomic<bool>* abort_flag() const { return &abort_; }

  // Work may be due (a NOTIFY from the database): wakes every SleepUntilWoken sleeper.
  void Wake();
  std::uint64_t wakes() const { return wakes_.load(); }

  // Sleep up to `d`. Return false when woken early by a stop (resp. abort) request.
  bool SleepUnlessStopped(std::chrono::milliseconds d);
  // Sleep up to `d`, or until a stop request or a Wake() after `wakes_seen` (read it before
  // looking for work, so that a wake in between is not missed).
  void SleepUntilWoken(std::chrono::milliseconds d, std::uint64_t wakes_seen);
  bool SleepUnlessAborted(std::chrono::milliseconds d);

 private:
  bool SleepUnless(std::chrono::milliseconds d, const std::atomic<bool>& flag);

  std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> abort_{false};
  std::atomic<std::uint64_t> wakes_{0};
};

}  // namespace tweetkeeper::worker
