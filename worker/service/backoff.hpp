#pragma once
// How long to wait after failures. Pure functions; the randomness is passed in for the tests.

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

namespace tweetkeeper::worker {

using Millis = std::chrono::milliseconds;

// A delay in seconds, for log lines.
inline double Secs(Millis d) { return static_cast<double>(d.count()) / 1000.0; }

// The steady clock in milliseconds: a deadline that threads share as one atomic number.
inline std::int64_t SteadyNowMs() {
  return std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Exponential backoff with jitter: for attempt n (1, 2, ...) the ceiling is min(cap, base*2^(n-1));
// the delay is drawn from [ceiling/2, ceiling] with `unit` in [0, 1]. Half fixed, half random:
// slots and workers that failed together spread out, yet never retry sooner than half the ceiling.
Millis BackoffDelay(int attempt, Millis base, Millis cap, double unit);

// BackoffDelay with a real random draw.
class Backoff {
 public:
  Backoff(Millis base, Millis cap);
  Millis Next(int attempt);

 private:
  Millis base_;
  Millis cap_;
  std::mt19937_64 rng_;
};

// A lost or unreachable connection (the database, a stream) is tried again after 0.5 s doubling to
// 30 s: the one schedule of the slots, the due listener, the follower and the Jetstream client.
inline constexpr Millis kReconnectBase{500}, kReconnectCap{30'000};
inline Backoff ReconnectBackoff() { return Backoff(kReconnectBase, kReconnectCap); }

// How long to pause after a 429 (or when x-rate-limit-remaining hits 0): until the window's
// reset (epoch seconds) plus one second of slack for clock skew, at least 1 s, at most `cap`.
// Without a usable reset header, `fallback`.
Millis RateLimitPause(std::optional<std::int64_t> reset_epoch_s, std::int64_t now_epoch_s, Millis cap, Millis fallback);

}  // namespace tweetkeeper::worker
