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

}  // namespace tweetkeeper::worker::follow
