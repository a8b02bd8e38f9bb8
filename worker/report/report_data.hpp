#pragma once
// What tweetkeeper-report shows: the data its page is made of, as main() fills it from its queries.
// The statistics of it are report_stats.*, the page report_html.* (whose header says how tables,
// charts and values are written).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tweetkeeper::report {

// One observation (or interpolated value) of a post's count at an age (seconds since creation).
struct CurvePoint {
  double age_seconds = 0;
  double value = 0;
};

// One post's count over its age, e.g. a top post's likes; points in any order (drawn sorted by age).
struct Curve {
  std::string label;  // shown escaped, cut to 48 characters in the legend, whole in the table
  std::vector<CurvePoint> points;
};

// The posts of one network at each age: 25th percentile, median and 75th percentile of the count,
// one entry per age in ages_seconds (a missing or NaN entry is "none": n/a in the table, a gap in
// the chart). Table "table-curve-<metric>-<network>": a row per age, its <th> data-value the
// age in seconds, then p25, median and p75.
struct Band {
  std::string network;
  std::vector<double> ages_seconds;
  std::vector<double> p25, median, p75;
  std::size_t posts = 0;  // how many posts the percentiles are over (said in the legend and caption)
};

// One count (metric) over age: a chart of the bands (medians with their p25-p75 spread, a line
// style per network) and, when `top` is not empty, a second chart of the top posts as thin lines
// (their own y scale: one viral post would flatten every median). Both share a log age axis.
// Table "table-curve-<metric>-top": a row per point, post label (<th>, data-rank: 1 for the first
// curve), age (data-value seconds), value.
struct CurveChart {
  std::string title;        // e.g. "Likes"
  std::string metric;       // e.g. "like_count": the ids' <metric>
  std::string value_label;  // the y axis, e.g. "likes"; the metric when empty
  std::string note;         // optional: a sentence under the title (what was selected, caveats)
  std::vector<Curve> top;
  std::vector<Band> bands;
};

// A network's (or any group's) posts per bin.
struct HistogramSeries {
  std::string name;
  std::vector<std::int64_t> counts;  // one per bin; missing ones are n/a, extra ones ignored
};

// Posts by a duration, e.g. the age at which they reached 50% of their likes, in bins whose edges
// the caller chooses (log-spaced: the bars are drawn equally wide). The chart draws each series'
// share of its own posts in each bin (networks differ in size by orders of magnitude); the table
// gives counts and shares. Table "table-lifespans-<key>": a row per bin, its <th> with data-bin
// (0-based index), data-lower and data-upper (the edges in seconds; no data-upper for an open
// last bin), then per series its count (data-value the integer) and share (data-value in percent
// of that series' total over all bins; n/a when the total is 0).
struct Histogram {
  std::string key;      // the ids' <key>, e.g. "like_count-age_50"; the title when empty
  std::string title;    // e.g. "Time to half of the likes"
  std::string x_label;  // e.g. "age at 50% of the latest likes"
  std::string note;     // optional
  // bins + 1 increasing edges in seconds; the last may be +infinity ("30 d or more").
  std::vector<double> edges_seconds;
  std::vector<HistogramSeries> series;
};

// How late refreshes ran behind their due time, by the post's age at the refresh. Table
// "table-timeliness": a row per bucket, its <th> the bucket's text (no data-value), then
// refreshes, p50, p90 and max lateness (data-value seconds). The chart draws p50 and p90.
struct TimelinessRow {
  std::string age_bucket;  // e.g. "under 1 h"
  std::int64_t refreshes = 0;
  double p50_late_s = 0;
  double p90_late_s = 0;
  double max_late_s = 0;
};

// One day's requests and their cost, measured or forecast. Table "table-cost": a row per day
// (<tr data-forecast="true|false">), its <th> the day as given, then requests, billed reads
// (data-value integers) and cost (data-value in the report's currency), and "measured" or
// "forecast". The chart draws the cost; forecast days hatched, lighter and labelled.
struct CostDay {
  std::string day;  // e.g. "2026-11-27" (shown as "11-27" on the axis when it has that shape)
  std::int64_t requests = 0;
  std::int64_t billed_reads = 0;
  double cost = 0;
  bool forecast = false;
};

// How much of a collection survives (tweetkeeper.mortality_by_age): at each age, of its posts that
// reached it, those available, gone (by reason) and unknown (seen last before, found gone after).
// The chart draws each collection's share available; table "table-survival": a row per
// collection and age, its <th> the collection (text), then the age (data-value seconds), posts,
// available, gone, unknown (data-value integers), the share available (data-value in percent of
// the posts known; n/a when none is), and deleted, private, suspended, account gone, hidden and
// missing (integers).
struct SurvivalAge {
  double age_seconds = 0;
  std::int64_t posts = 0, available = 0, gone = 0, unknown = 0;
  double share = 0;  // available of those known, 0 to 1; NaN when none is known
  std::int64_t deleted = 0, private_posts = 0, suspended = 0, account_gone = 0, hidden = 0, missing = 0;
};
struct Survival {
  std::string collection;  // as shown: a collection's name, or what the whole is ("all tracked posts")
  std::vector<SurvivalAge> ages;
};

struct Report {
  std::string title;                                         // the <title> and <h1>; "tweetkeeper report" when empty
  std::string generated_at;                                  // as the caller writes it, e.g. "2026-11-27 20:18 UTC"
  std::string selection;                                     // what posts, in words
  std::vector<std::pair<std::string, std::string>> summary;  // key facts, already formatted
  std::vector<CurveChart> curves;
  std::vector<Histogram> lifespans;
  std::vector<Survival> survival;
  std::vector<TimelinessRow> timeliness;
  std::string timeliness_note;  // optional
  std::vector<CostDay> cost;
  std::string cost_note;  // optional, e.g. how the forecast was made
  std::string currency = "USD";
};

}  // namespace tweetkeeper::report
