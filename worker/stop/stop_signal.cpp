#include "stop/stop_signal.hpp"

namespace tweetkeeper::worker {

void StopSignal::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);  // no sleeper can miss the change
    stop_ = true;
  }
  cv_.notify_all();
}

void StopSignal::RequestAbort() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    abort_ = true;
  }
  cv_.notify_all();
}

bool StopSignal::SleepUnless(std::chrono::milliseconds d, const std::atomic<bool>& flag) {
  std::unique_lock<std::mutex> lock(mutex_);
  return !cv_.wait_for(lock, d, [&] { return flag.load(); });
}

void StopSignal::Wake() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++wakes_;
  }
  cv_.notify_all();
}

void StopSignal::SleepUntilWoken(std::chrono::milliseconds d, std::uint64_t wakes_seen) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, d, [&] { return stop_.load() || wakes_.load() != wakes_seen; });
}

bool StopSignal::SleepUnlessStopped(std::chrono::milliseconds d) { return SleepUnless(d, stop_); }
bool StopSignal::SleepUnlessAborted(std::chrono::milliseconds d) { return SleepUnless(d, abort_); }

}  // namespace tweetkeeper::worker
