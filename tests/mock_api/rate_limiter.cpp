#include "mock_api/rate_limiter.hpp"

namespace tweetkeeper::mock {

RateLimiter::RateLimiter(int64_t limit, int64_t window_seconds) : limit_(limit), window_ms_(window_seconds * 1000) {}

RateVerdict RateLimiter::Take(const std::string& key, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = windows_.find(key);
  if (it == windows_.end() || now_ms >= it->second.start_ms + window_ms_) {
    it = windows_.insert_or_assign(key, Window{now_ms, 0}).first;
  }
  Window& window = it->second;
  RateVerdict verdict;
  verdict.limit = limit_;
  // Rounded up: a client that sleeps until the advertised second always finds a fresh window.
  verdict.reset_epoch_s = (window.start_ms + window_ms_ + 999) / 1000;
  verdict.window_start_ms = window.start_ms;
  verdict.allowed = window.used < limit_;
  if (verdict.allowed) ++window.used;
  verdict.remaining = limit_ - window.used;
  return verdict;
}

RateVerdict RateLimiter::Peek(const std::string& key, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  RateVerdict verdict;
  verdict.limit = limit_;
  auto it = windows_.find(key);
  if (it == windows_.end() || now_ms >= it->second.start_ms + window_ms_) {
    // No window open: a request now would open one.
    verdict.remaining = limit_;
    verdict.window_start_ms = now_ms;
    verdict.reset_epoch_s = (now_ms + window_ms_ + 999) / 1000;
    return verdict;
  }
  verdict.window_start_ms = it->second.start_ms;
  verdict.reset_epoch_s = (it->second.start_ms + window_ms_ + 999) / 1000;
  verdict.remaining = limit_ - it->second.used;
  return verdict;
}

void RateLimiter::Reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  windows_.clear();
}

}  // namespace tweetkeeper::mock
