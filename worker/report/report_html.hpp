#pragma once
// tweetkeeper-report's output, without I/O (unit-tested): one self-contained HTML document of how
// posts' counts grew (curves), how long they took to get there (lifespans), how late refreshes
// ran (timeliness) and what the requests cost. Nothing in it loads anything when opened: the CSS
// is inline, the charts are inline SVG, there is no script. The caller (main() and its queries)
// fills a Report; RenderReport writes the page.
//
// Every chart is followed by a table of the numbers it draws (for screen readers, for copying,
// and for the browser test, which compares the tables with SQL). The tables are the contract:
// - Ids: "table-curve-<metric>-<network>" (a band's ages and percentiles),
//   "table-curve-<metric>-top" (the top posts' points), "table-lifespans-<key>",
//   "table-timeliness", "table-cost". <metric>, <network> and <key> go through Slug(); should two
//   tables end up with the same id, the later ones get "-2", "-3", ... in order of the document.
//   Charts are <svg id="chart-..."> with the same tails ("chart-curve-<metric>-median",
//   "chart-curve-<metric>-top", "chart-lifespans-<key>", "chart-timeliness", "chart-cost").
// - Every numeric cell carries data-value: the raw number, RawNumber() or RawInteger() (full
//   precision, '.' as the decimal point, no grouping). A value that is not finite (NaN stands
//   for "none") is written "n/a" with no data-value. Row header cells carry the row's key the
//   same way (see each struct). Compare data-value, never the text.
// - The text of a cell: counts and percentiles FormatNumber(), durations FormatDuration(),
//   money FormatCost(), shares FormatPercent(). All of it is independent of the locale.
// Every string from data (titles, labels, networks, the selection) is escaped (EscapeHtml), and
// nothing that is not finite reaches an SVG coordinate: a point with a NaN or infinite age or
// value, or an age <= 0 (there is no 0 on a log axis), is left out of the chart (a line breaks
// there), while its table row stays. Each <svg> is well-formed XML on its own.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tweetkeeper::report {

// ---- What the report shows ----

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

struct Report {
  std::string title;                                         // the <title> and <h1>; "tweetkeeper report" when empty
  std::string generated_at;                                  // as the caller writes it, e.g. "2026-11-27 20:18 UTC"
  std::string selection;                                     // what posts, in words
  std::vector<std::pair<std::string, std::string>> summary;  // key facts, already formatted
  std::vector<CurveChart> curves;
  std::vector<Histogram> lifespans;
  std::vector<TimelinessRow> timeliness;
  std::string timeliness_note;  // optional
  std::vector<CostDay> cost;
  std::string cost_note;  // optional, e.g. how the forecast was made
  std::string currency = "USD";
};

// The whole HTML document. Sections without data say so in a sentence instead of drawing an
// empty chart. A network keeps its colour and dash pattern in every chart of the report.
std::string RenderReport(const Report& report);

// ---- Building blocks (exposed for the unit tests) ----

// Text for HTML text and attribute values alike: & < > " ' escaped as &amp; &lt; &gt; &quot;
// &#39;, and bytes that are not UTF-8, control characters (but tab, LF, CR) and U+FFFE/U+FFFF
// replaced by U+FFFD, so that the result is also valid XML 1.0 character data.
std::string EscapeHtml(std::string_view text);

// data-value text: the shortest decimal that reads back as exactly v ("94.28571428571429", "3",
// "1e+21"; "-0" as "0"), "" when v is not finite. RawInteger: plain decimal digits.
std::string RawNumber(double v);
std::string RawInteger(std::int64_t v);

// Cell text. FormatNumber: a whole number plain ("1234"), otherwise one decimal ("94.3").
// FormatDuration: below 10 s whole seconds plain and others with one decimal ("0 s", "0.4 s",
// "3 s"); then rounded to whole seconds, "42 s"; below an hour "5 min 3 s" ("5 min" when the
// seconds are 0); rounded to minutes below a day, "2 h 5 min" ("2 h"); then rounded to hours,
// "3 d 4 h" ("3 d"); negative values with a leading "-". FormatCost: two decimals ("12.30"), four
// for amounts below 0.01 but not 0 ("0.0045"); no currency. FormatPercent: one decimal and "%"
// ("12.5%"). All of them: "n/a" for a value that is not finite.
std::string FormatNumber(double v);
std::string FormatDuration(double seconds);
std::string FormatCost(double v);
std::string FormatPercent(double v);

// An id part from data: ASCII letters lowered, digits, '_' and '-' kept, any other run of bytes
// one '-', no '-' at either end; "unnamed" when nothing is left ("Like Count!" -> "like-count").
std::string Slug(std::string_view text);

// The log age axis of a curve chart: its domain runs from the largest tick value at or below
// min_age to the smallest at or above max_age (ticks at 1 s, 10 s, 1 min, 10 min, 1 h, 6 h, 1 d,
// 7 d, 30 d, 90 d and 365 d; beyond those the ages themselves), and each tick inside it gets its
// position between `from` and `to` (pixels). Ages are positive seconds; anything else is taken
// as 1 s. At least two ticks, increasing in value and position.
struct Tick {
  double value = 0;
  double position = 0;
  std::string label;
};
struct LogAxis {
  double lo = 1;
  double hi = 10;
  double from = 0;
  double to = 1;
  std::vector<Tick> ticks;
  double Position(double age_seconds) const;  // from..to for lo..hi; only for ages > 0
};
LogAxis LogAgeAxis(double min_age, double max_age, double from, double to);

}  // namespace tweetkeeper::report
