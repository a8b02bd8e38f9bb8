// tweetkeeper-report's statistics (report/report_stats.hpp), on their own: what the charts are
// drawn from, computed without drawing.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "report/report_stats.hpp"

namespace tweetkeeper::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ReportStats, DrawableAgesSkipNonesAndAgesALogAxisCannotShow) {
  CurveChart chart;
  Band b;
  b.ages_seconds = {0, 5, 60, kNaN, 3600, 86400};
  b.p25 = {1, kNaN, 2, 3, 4, kNaN};
  b.median = {1, kNaN, 2, 3, 4, kNaN};
  b.p75 = {1, kNaN, 2, 3, 4};  // the last age has no percentile at all (p75 short)
  chart.bands.push_back(b);
  // Age 0 and NaN: not drawable; 5 s: no value; 86400: no value.
  Range r = DrawableAges(chart);
  EXPECT_EQ(r.min, 60);
  EXPECT_EQ(r.max, 3600);
  // A top post's point counts when its value is finite.
  chart.top.push_back({"a", {{2, 10}, {7 * 86400.0, kNaN}, {-1, 5}}});
  r = DrawableAges(chart);
  EXPECT_EQ(r.min, 2);
  EXPECT_EQ(r.max, 3600);
  // Nothing drawable: NaN for both.
  r = DrawableAges(CurveChart{});
  EXPECT_TRUE(std::isnan(r.min));
  EXPECT_TRUE(std::isnan(r.max));
}

TEST(ReportStats, MaximaOnlyOverDrawableAges) {
  Band b;
  b.ages_seconds = {0, 10, 20};
  b.p25 = {1000, 1, 2};  // age 0 is not drawn: its 1000 is no maximum
  b.median = {kNaN, 3, kNaN};
  b.p75 = {kNaN, 7, kInf};
  EXPECT_EQ(BandsMax({b}), 7);
  EXPECT_TRUE(std::isnan(BandsMax({})));
  const std::vector<Curve> top = {{"a", {{0, 500}, {10, 4}}}, {"b", {{20, 9}, {30, kNaN}}}};
  EXPECT_EQ(TopMax(top), 9);
  EXPECT_TRUE(std::isnan(TopMax({{"c", {{kNaN, 1}}}})));
}

TEST(ReportStats, AgeOrderSortsDrawableAgesStably) {
  const std::vector<std::size_t> order = AgeOrder({30, 0, 10, kNaN, 10, -5, kInf, 20});
  EXPECT_EQ(order, (std::vector<std::size_t>{2, 4, 7, 0}));
}

TEST(ReportStats, HistogramSharesPerSeries) {
  Histogram h;
  h.edges_seconds = {1, 10, 100, kInf};  // three bins
  h.series = {{"a", {1, 3, 0, 99}},        // the fourth count is beyond the bins: ignored
              {"b", {-2, 4}},              // a negative count: no share, counted as 0; the third missing
              {"c", {0, 0, 0}}};           // a total of 0: no shares
  const HistogramShares s = SharesOf(h);
  ASSERT_EQ(s.bins, 3u);
  EXPECT_EQ(s.totals, (std::vector<double>{4, 4, 0}));
  EXPECT_DOUBLE_EQ(s.shares[0][0], 25);
  EXPECT_DOUBLE_EQ(s.shares[0][1], 75);
  EXPECT_DOUBLE_EQ(s.shares[0][2], 0);
  EXPECT_TRUE(std::isnan(s.shares[1][0]));
  EXPECT_DOUBLE_EQ(s.shares[1][1], 100);
  EXPECT_TRUE(std::isnan(s.shares[1][2]));
  for (double v : s.shares[2]) EXPECT_TRUE(std::isnan(v));
  EXPECT_DOUBLE_EQ(s.max, 100);
  // Fewer than two edges: no bins.
  Histogram none;
  none.edges_seconds = {1};
  none.series = {{"a", {1}}};
  EXPECT_EQ(SharesOf(none).bins, 0u);
  EXPECT_TRUE(std::isnan(SharesOf(none).max));
}

TEST(ReportStats, ModeBinIsTheFirstLargestShare) {
  EXPECT_EQ(ModeBin({10, 40, kNaN, 40, 10}), 1u);
  EXPECT_EQ(ModeBin({kNaN, 0, kNaN}), 1u);
  EXPECT_EQ(ModeBin({kNaN, kNaN}), 2u) << "none: the size";
  EXPECT_EQ(ModeBin({}), 0u);
}

TEST(ReportStats, LatenessMaxOverMedianAndP90Only) {
  std::vector<TimelinessRow> rows = {{"under 1 h", 3, 2, 8, 1e6}, {"1 d", 1, kNaN, 12, kNaN}};
  EXPECT_EQ(LatenessMax(rows), 12) << "the maximum column is not drawn";
  EXPECT_TRUE(std::isnan(LatenessMax({{"x", 0, kNaN, kNaN, 5}})));
}

TEST(ReportStats, CostTotalsByKind) {
  const std::vector<CostDay> days = {{"2026-11-01", 10, 5, 1.5, false},
                                     {"2026-11-02", 10, 5, kNaN, false},  // a day counted, its cost not
                                     {"2026-11-03", 10, 5, 2.25, true},
                                     {"2026-11-04", 10, 5, 4, true}};
  const CostTotals t = TotalsOf(days);
  EXPECT_DOUBLE_EQ(t.measured, 1.5);
  EXPECT_DOUBLE_EQ(t.forecast, 6.25);
  EXPECT_EQ(t.measured_days, 2u);
  EXPECT_EQ(t.forecast_days, 2u);
  EXPECT_DOUBLE_EQ(t.max, 4);
  EXPECT_TRUE(std::isnan(TotalsOf({}).max));
}

TEST(ReportStats, NiceScalesRoundUpInFewSteps) {
  Linear l = NiceLinear(7);  // about 5 steps: 2, up to 8
  EXPECT_DOUBLE_EQ(l.step, 2);
  EXPECT_DOUBLE_EQ(l.max, 8);
  l = NiceLinear(1234);
  EXPECT_DOUBLE_EQ(l.step, 250);
  EXPECT_DOUBLE_EQ(l.max, 1250);
  l = NiceLinear(kNaN);  // as for 1
  EXPECT_DOUBLE_EQ(l.step, 0.2);
  EXPECT_DOUBLE_EQ(l.max, 1);
  Linear d = NiceDuration(100);  // seconds: 30 s steps, to 120
  EXPECT_DOUBLE_EQ(d.step, 30);
  EXPECT_DOUBLE_EQ(d.max, 120);
  d = NiceDuration(5 * 3600);  // an hour's steps
  EXPECT_DOUBLE_EQ(d.step, 3600);
  EXPECT_DOUBLE_EQ(d.max, 5 * 3600);
  EXPECT_EQ(DecimalsFor(250), 0);
  EXPECT_EQ(DecimalsFor(0.25), 2);
  EXPECT_EQ(DecimalsFor(0.2), 1);
}

TEST(ReportStats, SpreadLabelsKeepAGapAndStayInThePlot) {
  // Close together: pushed down a gap apart.
  EXPECT_EQ(SpreadLabels({10, 12, 13}, 11, 1000), (std::vector<double>{10, 21, 32}));
  // Pushed below the bottom: moved back up from the bottom, each a gap above the next.
  EXPECT_EQ(SpreadLabels({95, 96, 97}, 11, 100), (std::vector<double>{78, 89, 100}));
  EXPECT_TRUE(SpreadLabels({}, 11, 100).empty());
}

}  // namespace
}  // namespace tweetkeeper::report
