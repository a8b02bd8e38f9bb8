#include "service/rate_budget.hpp"

#include <algorithm>
#include <cmath>

namespace tweetkeeper::worker {

double WindowShare(double configured_rps, double limit, double remaining, double left_s, double window_s, double mine,
                   double keep, double weight) {
  const double spare = std::max(0.0, remaining - keep) / std::max(left_s, 1.0);
  // Others' pace so far in this window (its first tenth counted as a tenth: a few requests at its
  // start are no rate yet).
  const double elapsed_s = std::max(window_s - left_s, 0.1 * window_s);
  const double others_rps = std::max(0.0, limit - remaining - mine) / std::max(elapsed_s, 1.0);
  // Alone: all of it. Else halfway between what the others leave and its part (weight) of it:
  // "what the others leave" alone would make every split of the window a resting point (the first
  // to take it keeps it: make bench saw one X follower at 10 requests a second and the other at
  // 1); this one's only resting point for two clients is their parts (halves by default), and it
  // moves there by halving the gap each time.
  const double share = others_rps <= 0 ? spare : (spare - others_rps + spare * weight) / 2;
  return std::max(std::min(configured_rps, share), 0.05 * configured_rps);
}

std::int64_t Gate::NextAt() const { return std::max(next_ms_, paused_until_ms_); }

void Gate::Sent(std::int64_t now_ms) {
  const std::int64_t spacing = budget_rps_ > 0 ? static_cast<std::int64_t>(std::ceil(1000.0 / budget_rps_)) : 1000;
  // In its turn or before it: the next turn one spacing after this one. Late by up to kCatchUpMs
  // (the thread was busy: a claim, a store, a late wake-up on a loaded machine): still one spacing
  // after the turn it missed, not after now, so the lost time is made up; counted from now, every
  // delay pushed every later turn back, and on a slow machine the follower sent 6 requests a second
  // where its budget and its schedule said 7.5 (make bench-follow with a CPU hog: X's reads 12 s
  // late against their plan, and growing, issue 49). Later than that (idle, or paused): from now,
  // so that no credit piles up for a burst.
  next_ms_ = (next_ms_ >= now_ms - kCatchUpMs ? next_ms_ : now_ms) + spacing;
}

void Gate::PauseUntil(std::int64_t until_ms) { paused_until_ms_ = std::max(paused_until_ms_, until_ms); }

void RateBudget::SetWeight(double weight) {
  weight_ = weight;
  if (gate_.budget() > configured_rps()) gate_.SetBudget(configured_rps());
}

RateBudget::RateBudget(double limit, double window_s, double share)
    : limit_(limit), window_s_(window_s), share_(share), gate_(share * limit / window_s) {}

std::optional<std::int64_t> RateBudget::Learn(const RateLimit& rate, bool refused, std::int64_t now_ms) {
  if (rate.limit && *rate.limit > 0 && static_cast<double>(*rate.limit) != limit_) {
    limit_ = static_cast<double>(*rate.limit);
    gate_.SetBudget(configured_rps());
    repace = true;
  }
  // What is left of the window, spread over the time left of it, less what the others on the same
  // address or credential (a second follower, a refreshing worker) were seen to spend of it
  // (WindowShare: two clients converge on halves, evenly spread).
  if (rate.remaining && rate.reset_epoch_s && *rate.reset_epoch_s * 1000 > now_ms) {
    // This client's requests in the window the answer speaks of (a new reset time: a new window).
    if (*rate.reset_epoch_s != window_reset_s_) window_reset_s_ = *rate.reset_epoch_s, mine_ = 0;
    ++mine_;
    const double left_s = static_cast<double>(*rate.reset_epoch_s * 1000 - now_ms) / 1000.0;
    gate_.SetBudget(WindowShare(configured_rps(), limit_, static_cast<double>(*rate.remaining), left_s, window_s_,
                                static_cast<double>(mine_), 2, weight_));
    // A schedule planned for a rate this far from the one the gate lets through is planned again:
    // reads planned faster than they can go queue at the gate and lose their order.
    // (5%: a schedule 20% too fast for the gate, as this once allowed, queued reads for minutes.)
    if (planned_rps > 0 && std::abs(gate_.budget() - planned_rps) > 0.05 * planned_rps) repace = true;
  }
  if (!refused && !(rate.remaining && *rate.remaining <= 1)) return std::nullopt;
  const std::int64_t until = rate.reset_epoch_s ? *rate.reset_epoch_s * 1000 + 1000 : now_ms + 60'000;
  const std::int64_t pause = std::min(until, now_ms + 15 * 60'000);
  gate_.PauseUntil(pause);
  return pause;
}

}  // namespace tweetkeeper::worker
