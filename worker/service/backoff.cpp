#include "service/backoff.hpp"

#include <algorithm>

namespace tweetkeeper::worker {

Millis BackoffDelay(int attempt, Millis base, Millis cap, double unit) {
  attempt = std::clamp(attempt, 1, 62);
  const std::int64_t b = std::max<std::int64_t>(base.count(), 1);
  const std::int64_t c = std::max<std::int64_t>(cap.count(), b);
  // Doubling stops at the cap (and long before int64 overflow).
  std::int64_t ceiling = b;
  for (int i = 1; i < attempt && ceiling < c; ++i) ceiling *= 2;
  ceiling = std::min(ceiling, c);
  unit = std::clamp(unit, 0.0, 1.0);
  return Millis(ceiling / 2 + static_cast<std::int64_t>(unit * static_cast<double>(ceiling - ceiling / 2)));
}

Backoff::Backoff(Millis base, Millis cap) : base_(base), cap_(cap), rng_(std::random_device{}()) {}

Millis Backoff::Next(int attempt) {
  return BackoffDelay(attempt, base_, cap_, std::uniform_real_distribution<double>(0.0, 1.0)(rng_));
}

Millis RateLimitPause(std::optional<std::int64_t> reset_epoch_s, std::int64_t now_epoch_s, Millis cap,
                      Millis fallback) {
  if (!reset_epoch_s) return std::min(fallback, cap);
  // A reset already past (skew) still gets a short pause; a reset far away is capped.
  // (Both values are non-negative epoch seconds, so the difference cannot overflow.)
  const std::int64_t cap_s = std::max<std::int64_t>(cap.count() / 1000, 1);
  const std::int64_t ahead = *reset_epoch_s > now_epoch_s ? *reset_epoch_s - now_epoch_s : 0;
  const std::int64_t seconds = ahead >= cap_s ? cap_s : std::max<std::int64_t>(ahead + 1, 1);
  return std::min(Millis(seconds * 1000), cap);
}

}  // namespace tweetkeeper::worker
