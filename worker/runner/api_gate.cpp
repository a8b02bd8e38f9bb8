#include "runner/api_gate.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

namespace tweetkeeper::worker {
namespace {

constexpr Millis kWindowCap{15 * 60'000};      // a rate-limit window is 15 minutes
constexpr Millis kUsageCapPause{15 * 60'000};  // monthly cap: retry rarely, loudly

std::string Opt(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "?"; }

}  // namespace

std::optional<Millis> ApiGate::Apply(const std::string& label, const BatchResult& answer,
                                     const std::function<Millis()>& backoff) {
  const RateLimit& rl = answer.rate_limit;
  const std::int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (answer.failure == FailureKind::kRateLimited) {
    const Millis pause = RateLimitPause(rl.reset_epoch_s, now_s, kWindowCap, backoff());
    if (Close(pause)) {
      spdlog::warn("{}: rate limited (HTTP 429, {}/{} left); pausing all requests for {:.0f} s until the window resets",
                   label, Opt(rl.remaining), Opt(rl.limit), Secs(pause));
    }
    return pause;
  }
  if (answer.failure == FailureKind::kUsageCapped) {
    if (Close(kUsageCapPause)) {
      spdlog::error(
          "{}: the token's usage cap is exhausted ({}); waiting for the rate-limit window does not "
          "help. Pausing all requests for {:.0f} s; they fail until the cap resets or the plan changes",
          label, answer.reason, Secs(kUsageCapPause));
    }
    return kUsageCapPause;
  }
  if (answer.ok() && rl.remaining && *rl.remaining == 0 && rl.reset_epoch_s) {
    // The next request would be a certain 429: wait for the window instead.
    const Millis pause = RateLimitPause(rl.reset_epoch_s, now_s, kWindowCap, Millis{0});
    if (Close(pause)) {
      spdlog::info("{}: rate-limit window used up ({} requests); pausing requests for {:.0f} s until it resets", label,
                   Opt(rl.limit), Secs(pause));
    }
    return pause;
  }
  return std::nullopt;
}

bool ApiGate::Close(Millis duration) {
  const std::int64_t until = SteadyNowMs() + duration.count();
  std::int64_t current = closed_until_ms_.load();
  while (until > current + 1000) {
    if (closed_until_ms_.compare_exchange_weak(current, until)) return true;
  }
  return false;
}

bool ApiGate::Wait(StopSignal& stop) {
  for (;;) {
    const std::int64_t left = closed_until_ms_.load() - SteadyNowMs();
    if (left <= 0) return !stop.stopping();
    if (!stop.SleepUnlessStopped(Millis{left})) return false;
  }
}

}  // namespace tweetkeeper::worker
