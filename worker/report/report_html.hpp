#pragma once
// tweetkeeper-report's output, without I/O (unit-tested): one self-contained HTML document of how
// posts' counts grew (curves), how long they took to get there (lifespans), how late refreshes
// ran (timeliness) and what the requests cost. Nothing in it loads anything when opened: the CSS
// is inline, the charts are inline SVG, there is no script. The caller (main() and its queries)
// fills a Report (report_data.hpp); RenderReport writes the page, drawing what the statistics
// (report_stats.hpp) compute of it.
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

#include "report/report_data.hpp"

namespace tweetkeeper::report {

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
