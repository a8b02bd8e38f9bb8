#include "follow/pacing.hpp"

#include <algorithm>
#include <cmath>

namespace tweetkeeper::worker::follow {

double PostRate(std::int64_t posts_found, double seconds_followed) {
  constexpr double kFloor = 1.0 / 86400.0;
  return std::max(kFloor, static_cast<double>(std::max<std::int64_t>(posts_found, 0)) / std::max(seconds_followed, 3600.0));
}

std::vector<Millis> PollIntervals(const std::vector<double>& rates, double budget_rps, Millis min, Millis max) {
  const std::size_t n = rates.size();
  std::vector<double> interval(n, static_cast<double>(max.count()) / 1000.0);
  if (n == 0 || budget_rps <= 0) return std::vector<Millis>(n, max);
  const double lo = static_cast<double>(min.count()) / 1000.0, hi = static_cast<double>(max.count()) / 1000.0;
  // Water-filling: the accounts the square-root rule would read more often than `min` get `min`,
  // and the rest of the budget is shared again among the others.
  std::vector<bool> at_min(n, false);
  for (int round = 0; round < 64; ++round) {
    double budget = budget_rps, roots = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (at_min[i]) budget -= 1.0 / lo;
      else roots += std::sqrt(std::max(rates[i], 1e-12));
    }
    bool changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (at_min[i]) continue;
      interval[i] = budget > 0 ? roots / (budget * std::sqrt(std::max(rates[i], 1e-12))) : hi;
      if (interval[i] < lo) {
        at_min[i] = true;
        changed = true;
      }
    }
    if (!changed) break;
  }
  double spent = 0;
  for (std::size_t i = 0; i < n; ++i) {
    interval[i] = std::clamp(at_min[i] ? lo : interval[i], lo, hi);
    spent += 1.0 / interval[i];
  }
  // `max` for every account may cost more than the budget: all stretch alike.
  const double stretch = spent > budget_rps ? spent / budget_rps : 1.0;
  std::vector<Millis> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = Millis(static_cast<std::int64_t>(std::ceil(interval[i] * stretch * 1000.0)));
  return out;
}

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

}  // namespace tweetkeeper::worker::follow
