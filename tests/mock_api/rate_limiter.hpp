#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tweetkeeper::mock {

// The three x-rate-limit-* headers and whether the request may proceed.
struct RateVerdict {
  bool allowed = true;
  int64_t limit = 0;
  int64_t remaining = 0;
  int64_t reset_epoch_s = 0;
  int64_t window_start_ms = 0;  // identifies the window (with the key) for per-window stats
};

// Fixed windows per key (token and endpoint), each starting at the key's first request after the
// previous window ended, as X does. Time is passed in so tests can roll windows over.
class RateLimiter {
 public:
  RateLimiter(int64_t limit, int64_t window_seconds);

  // Counts one request; refused requests (429) do not count.
  RateVerdict Take(const std::string& key, int64_t now_ms);
  // The headers a request would see now, without counting it (usage-capped answers).
  RateVerdict Peek(const std::string& key, int64_t now_ms);
  void Reset();

 private:
  struct Window {
    int64_t start_ms = 0;
    int64_t used = 0;
  };

  const int64_t limit_;
  const int64_t window_ms_;
  std::mutex mutex_;
  std::unordered_map<std::string, Window> windows_;
};

}  // namespace tweetkeeper::mock
