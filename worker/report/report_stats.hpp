#pragma once
// tweetkeeper-report's statistics: what its charts are drawn from, computed from a Report's data
// without drawing anything (unit-tested on their own). A value that is not finite stands for
// "none" throughout: it is skipped, and a statistic of nothing is NaN.
#include <cstddef>
#include <vector>

#include "report/report_data.hpp"

namespace tweetkeeper::report {

// The smallest and largest of a set of values; NaN for both when none was seen.
struct Range {
  double min;
  double max;
};

// The ages a curve chart draws, over its bands (an age with any finite percentile) and its top
// posts (a point with a finite value): only finite ages > 0 (a log axis has no 0).
Range DrawableAges(const CurveChart& chart);

// The largest finite percentile of the bands at a drawable age (finite, > 0); NaN when none.
double BandsMax(const std::vector<Band>& bands);

// The largest finite value of the top posts' points at a drawable age; NaN when none.
double TopMax(const std::vector<Curve>& top);

// Indices of the entries with an age a log axis can show (finite, > 0), by age (ties in order).
std::vector<std::size_t> AgeOrder(const std::vector<double>& ages);

// A histogram's numbers: each series' total over the bins (negative counts count as 0) and its
// share of that total in each bin, in percent (NaN for a missing or negative count, or a total
// of 0). `bins` is edges - 1 (0 with fewer than two edges); counts beyond it are ignored.
struct HistogramShares {
  std::size_t bins = 0;
  std::vector<double> totals;
  std::vector<std::vector<double>> shares;  // [series][bin]
  double max = 0;  // the largest finite share; NaN when none
};
HistogramShares SharesOf(const Histogram& h);

// The bin with the largest finite share (the first of equals); shares.size() when none.
std::size_t ModeBin(const std::vector<double>& shares);

// The largest finite median or 90th percentile lateness; NaN when none.
double LatenessMax(const std::vector<TimelinessRow>& rows);

// Cost summed by kind: measured and forecast days (every day counted), their finite costs summed,
// and the largest finite cost of a day (NaN when none).
struct CostTotals {
  double measured = 0, forecast = 0;
  std::size_t measured_days = 0, forecast_days = 0;
  double max = 0;
};
CostTotals TotalsOf(const std::vector<CostDay>& days);

// A linear value axis from 0: `max` a round number at or above the data's, in steps of `step`.
struct Linear {
  double max = 1;
  double step = 0.2;
};
// 0 to a round number at or above max, in about `target` steps of 1, 2, 2.5 or 5 times a power
// of 10 (max not finite or <= 0: as for 1).
Linear NiceLinear(double max, double target = 5);
// The same for durations in seconds, in steps a clock has (15 s, 5 min, 6 h, 7 d, ...): at most 5.
Linear NiceDuration(double max);
// How many decimals a step needs (0 to 6).
int DecimalsFor(double step);

// Labels at `ys` (sorted ascending) moved apart so that none is nearer than `gap` to the one
// before, top to bottom; then, from the bottom, any pushed below `bottom` moved back up.
std::vector<double> SpreadLabels(const std::vector<double>& ys, double gap, double bottom);

}  // namespace tweetkeeper::report
