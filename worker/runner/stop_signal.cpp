#include "runner/stop_signal.hpp"

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

bool StopSignal::SleepUnlessStopped(std::chrono::milliseconds d) { return SleepUnless(d, stop_); }
bool StopSignal::SleepUnlessAborted(std::chrono::milliseconds d) { return SleepUnless(d, abort_); }

}  // namespace tweetkeeper::worker
