#include "report/report_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tweetkeeper::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool Finite(double v) { return std::isfinite(v); }
bool Drawable(double age) { return Finite(age) && age > 0; }
double At(const std::vector<double>& values, std::size_t i) { return i < values.size() ? values[i] : kNaN; }

// Folds a finite value into a maximum that starts as NaN.
void SeeMax(double& max, double v) {
  if (Finite(v)) max = Finite(max) ? std::max(max, v) : v;
}

}  // namespace

Range DrawableAges(const CurveChart& chart) {
  Range r{kNaN, kNaN};
  const auto see = [&](double age) {
    if (!Drawable(age)) return;
    r.min = Finite(r.min) ? std::min(r.min, age) : age;
    r.max = Finite(r.max) ? std::max(r.max, age) : age;
  };
  for (const Band& b : chart.bands) {
    for (std::size_t i = 0; i < b.ages_seconds.size(); ++i) {
      if (Finite(At(b.p25, i)) || Finite(At(b.median, i)) || Finite(At(b.p75, i))) see(b.ages_seconds[i]);
    }
  }
  for (const Curve& c : chart.top) {
    for (const CurvePoint& p : c.points) {
      if (Finite(p.value)) see(p.age_seconds);
    }
  }
  return r;
}

double BandsMax(const std::vector<Band>& bands) {
  double max = kNaN;
  for (const Band& b : bands) {
    for (std::size_t i : AgeOrder(b.ages_seconds)) {
      for (double v : {At(b.p25, i), At(b.median, i), At(b.p75, i)}) SeeMax(max, v);
    }
  }
  return max;
}

double TopMax(const std::vector<Curve>& top) {
  double max = kNaN;
  for (const Curve& c : top) {
    for (const CurvePoint& p : c.points) {
      if (Drawable(p.age_seconds)) SeeMax(max, p.value);
    }
  }
  return max;
}

std::vector<std::size_t> AgeOrder(const std::vector<double>& ages) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < ages.size(); ++i) {
    if (Drawable(ages[i])) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ages[a] < ages[b]; });
  return order;
}

HistogramShares SharesOf(const Histogram& h) {
  HistogramShares out;
  out.bins = h.edges_seconds.size() < 2 ? 0 : h.edges_seconds.size() - 1;
  const std::size_t series = h.series.size();
  out.totals.assign(series, 0);
  out.shares.assign(series, std::vector<double>(out.bins, kNaN));
  out.max = kNaN;
  for (std::size_t s = 0; s < series; ++s) {
    const auto& counts = h.series[s].counts;
    for (std::size_t b = 0; b < out.bins && b < counts.size(); ++b)
      out.totals[s] += counts[b] > 0 ? static_cast<double>(counts[b]) : 0;
    for (std::size_t b = 0; b < out.bins && b < counts.size(); ++b) {
      if (out.totals[s] > 0 && counts[b] >= 0) out.shares[s][b] = static_cast<double>(counts[b]) / out.totals[s] * 100;
      SeeMax(out.max, out.shares[s][b]);
    }
  }
  return out;
}

std::size_t ModeBin(const std::vector<double>& shares) {
  std::size_t mode = shares.size();
  for (std::size_t b = 0; b < shares.size(); ++b) {
    if (Finite(shares[b]) && (mode == shares.size() || shares[b] > shares[mode])) mode = b;
  }
  return mode;
}

double LatenessMax(const std::vector<TimelinessRow>& rows) {
  double max = kNaN;
  for (const TimelinessRow& r : rows) {
    for (double v : {r.p50_late_s, r.p90_late_s}) SeeMax(max, v);
  }
  return max;
}

CostTotals TotalsOf(const std::vector<CostDay>& days) {
  CostTotals t;
  t.max = kNaN;
  for (const CostDay& d : days) {
    (d.forecast ? t.forecast_days : t.measured_days) += 1;
    if (!Finite(d.cost)) continue;
    (d.forecast ? t.forecast : t.measured) += d.cost;
    SeeMax(t.max, d.cost);
  }
  return t;
}

Linear NiceLinear(double max, double target) {
  if (!(Finite(max) && max > 0)) max = 1;
  const double raw = max / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  return {std::max(step, std::ceil(max / step - 1e-9) * step), step};
}

Linear NiceDuration(double max) {
  static constexpr double kSteps[] = {0.1,   0.2,   0.5,   1,      2,      5,       10,     15,   30,
                                      60,    120,   300,   600,    900,    1800,    3600,   7200, 10800,
                                      21600, 43200, 86400, 172800, 604800, 1209600, 2592000};
  if (!(Finite(max) && max > 0)) max = 1;
  for (double step : kSteps) {
    if (max / step <= 5) return {std::max(step, std::ceil(max / step - 1e-9) * step), step};
  }
  return NiceLinear(max);
}

int DecimalsFor(double step) {
  for (int d = 0; d < 6; ++d) {
    const double scaled = step * std::pow(10.0, d);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
  }
  return 6;
}

std::vector<double> SpreadLabels(const std::vector<double>& ys, double gap, double bottom) {
  std::vector<double> out;
  for (double y : ys) out.push_back(out.empty() ? y : std::max(y, out.back() + gap));
  for (std::size_t k = out.size(); k-- > 0;) {
    out[k] = std::min(out[k], k + 1 < out.size() ? out[k + 1] - gap : bottom);
  }
  return out;
}

}  // namespace tweetkeeper::report
