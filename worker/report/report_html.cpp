#include "report/report_html.hpp"

#include "report/report_stats.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>

namespace tweetkeeper::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Okabe and Ito's palette, told apart with the common colour vision deficiencies. Colour is never
// the only cue: each network also has a dash pattern (lines) and a fill pattern (bars).
constexpr const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#444444"};
constexpr const char* kDashes[] = {"", "9 4", "2 3", "10 3 2 3", "5 5", "1 4"};
constexpr std::size_t kColourCount = sizeof kColours / sizeof kColours[0];
constexpr std::size_t kDashCount = sizeof kDashes / sizeof kDashes[0];
constexpr std::size_t kFillCount = 5;  // solid, diagonal hatch, dots, cross-hatch, horizontal lines

const char* Colour(std::size_t i) { return kColours[i % kColourCount]; }
std::string DashAttribute(std::size_t i) {
  const char* dash = kDashes[i % kDashCount];
  return *dash ? std::string(" stroke-dasharray=\"") + dash + "\"" : std::string();
}

bool Finite(double v) { return std::isfinite(v); }
double At(const std::vector<double>& values, std::size_t i) { return i < values.size() ? values[i] : kNaN; }

std::string Fixed(double v, int decimals) {
  char buffer[400];  // the largest double has 309 digits
  const auto r = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::fixed, decimals);
  if (r.ec != std::errc()) return "n/a";
  std::string s(buffer, r.ptr);
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);  // no "-0.0"
  return s;
}

// An SVG coordinate. Callers pass only finite values; this clamps anyway, so that a mistake can
// never write "nan" or "inf" into the document (the XML would still parse, the drawing not).
std::string C(double v) {
  if (!Finite(v)) v = 0;
  std::string s = Fixed(std::clamp(v, -1e5, 1e5), 1);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

// The length of the UTF-8 sequence at s[i] when it is valid and an XML 1.0 character other than
// a C1 control; 0 otherwise (a lone byte: replaced).
std::size_t ValidSequence(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) -> unsigned {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
  };
  const auto continuation = [](unsigned b) { return b >= 0x80 && b <= 0xBF; };
  const unsigned b0 = byte(0), b1 = byte(1);
  if (b0 >= 0xC2 && b0 <= 0xDF) return continuation(b1) && !(b0 == 0xC2 && b1 <= 0x9F) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!continuation(b1) || !continuation(byte(2))) return 0;
    if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 > 0x9F)) return 0;            // overlong, surrogate
    if (b0 == 0xEF && b1 == 0xBF && (byte(2) == 0xBE || byte(2) == 0xBF)) return 0;  // U+FFFE, U+FFFF
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!continuation(b1) || !continuation(byte(2)) || !continuation(byte(3))) return 0;
    if ((b0 == 0xF0 && b1 < 0x90) || (b0 == 0xF4 && b1 > 0x8F)) return 0;  // overlong, beyond U+10FFFF
    return 4;
  }
  return 0;
}

// Where each character of `text` starts (a byte that is no valid sequence counts as one).
std::vector<std::size_t> CharacterStarts(std::string_view text) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < text.size();) {
    starts.push_back(i);
    const auto c = static_cast<unsigned char>(text[i]);
    i += c < 0x80 ? 1 : std::max<std::size_t>(1, ValidSequence(text, i));
  }
  return starts;
}

// At most `max` characters, the last one "…" when cut: labels in a legend or beside an axis,
// where SVG cannot wrap text. Cut between characters, so that no sequence is split.
std::string Shorten(std::string_view text, std::size_t max) {
  const std::vector<std::size_t> starts = CharacterStarts(text);
  if (starts.size() <= max || max == 0) return std::string(text);
  return std::string(text.substr(0, starts[max - 1])) + "\xE2\x80\xA6";
}

std::string E(std::string_view text) { return EscapeHtml(text); }

// ---- Scales ----

// A tick label on a value axis: as many decimals as the step needs; k, M, G from 10 000 on.
std::string ValueTick(double v, const Linear& scale) {
  double unit = 1;
  const char* suffix = "";
  if (scale.max >= 1e9) {
    unit = 1e9, suffix = "G";
  } else if (scale.max >= 1e6) {
    unit = 1e6, suffix = "M";
  } else if (scale.max >= 1e4) {
    unit = 1e3, suffix = "k";
  }
  return v == 0 ? "0" : Fixed(v / unit, DecimalsFor(scale.step / unit)) + suffix;
}

template <typename Label>
std::vector<Tick> LinearTicks(const Linear& scale, double from, double to, Label label) {
  std::vector<Tick> ticks;
  for (int k = 0; k <= 50 && k * scale.step <= scale.max * (1 + 1e-9); ++k) {
    const double v = k * scale.step;
    ticks.push_back({v, from + v / scale.max * (to - from), label(v)});
  }
  return ticks;
}

// ---- SVG pieces ----

constexpr double kWidth = 600;  // the viewBox's; drawn at the column's width on any screen

// The plot area inside the viewBox.
struct Frame {
  double left = 64;
  double top = 24;
  double width = kWidth - 64 - 36;
  double height = 240;
  double right() const { return left + width; }
  double bottom() const { return top + height; }
};

double YOf(double v, const Linear& scale, const Frame& f) {
  return f.bottom() - std::clamp(v, 0.0, scale.max) / scale.max * f.height;
}

std::string SvgOpen(const std::string& id, double height, std::string_view title, std::string_view desc) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" + id + "\" class=\"chart\" viewBox=\"0 0 " + C(kWidth) +
         " " + C(std::ceil(height)) + "\" width=\"100%\" role=\"img\" aria-labelledby=\"" + id + "-title " + id +
         "-desc\" font-family=\"system-ui, sans-serif\" font-size=\"12\"><title id=\"" + id + "-title\">" + E(title) +
         "</title><desc id=\"" + id + "-desc\">" + E(desc) + "</desc>";
}

struct AxisSpec {
  std::vector<Tick> ticks;  // positions in the viewBox
  std::string label;
  bool grid = true;
};

void Axes(std::string& s, const Frame& f, const AxisSpec& x, const AxisSpec& y) {
  s += "<g class=\"grid\" stroke=\"#e2e2e2\" stroke-width=\"1\">";
  if (x.grid) {
    for (const Tick& t : x.ticks) {
      s += "<line x1=\"" + C(t.position) + "\" y1=\"" + C(f.top) + "\" x2=\"" + C(t.position) + "\" y2=\"" +
           C(f.bottom()) + "\"/>";
    }
  }
  if (y.grid) {
    for (const Tick& t : y.ticks) {
      s += "<line x1=\"" + C(f.left) + "\" y1=\"" + C(t.position) + "\" x2=\"" + C(f.right()) + "\" y2=\"" +
           C(t.position) + "\"/>";
    }
  }
  s += "</g><g class=\"axes\" stroke=\"#333\" stroke-width=\"1\">";
  s += "<line x1=\"" + C(f.left) + "\" y1=\"" + C(f.bottom()) + "\" x2=\"" + C(f.right()) + "\" y2=\"" + C(f.bottom()) +
       "\"/>";
  s += "<line x1=\"" + C(f.left) + "\" y1=\"" + C(f.top) + "\" x2=\"" + C(f.left) + "\" y2=\"" + C(f.bottom()) + "\"/>";
  for (const Tick& t : x.ticks) {
    s += "<line class=\"x-tick\" x1=\"" + C(t.position) + "\" y1=\"" + C(f.bottom()) + "\" x2=\"" + C(t.position) +
         "\" y2=\"" + C(f.bottom() + 5) + "\"/>";
  }
  for (const Tick& t : y.ticks) {
    s += "<line class=\"y-tick\" x1=\"" + C(f.left - 5) + "\" y1=\"" + C(t.position) + "\" x2=\"" + C(f.left) +
         "\" y2=\"" + C(t.position) + "\"/>";
  }
  s += "</g><g class=\"tick-labels\" fill=\"#333\">";
  for (const Tick& t : x.ticks) {
    s += "<text x=\"" + C(t.position) + "\" y=\"" + C(f.bottom() + 18) + "\" text-anchor=\"middle\">" + E(t.label) +
         "</text>";
  }
  for (const Tick& t : y.ticks) {
    s += "<text x=\"" + C(f.left - 8) + "\" y=\"" + C(t.position) + "\" dy=\"0.32em\" text-anchor=\"end\">" +
         E(t.label) + "</text>";
  }
  s += "</g>";
  if (!x.label.empty()) {
    s += "<text class=\"axis-label\" x=\"" + C(f.left + f.width / 2) + "\" y=\"" + C(f.bottom() + 36) +
         "\" text-anchor=\"middle\" fill=\"#111\">" + E(Shorten(x.label, 70)) + "</text>";
  }
  if (!y.label.empty()) {
    s += "<text class=\"axis-label\" transform=\"translate(14 " + C(f.top + f.height / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" fill=\"#111\">" + E(Shorten(y.label, 36)) + "</text>";
  }
}

struct LegendEntry {
  std::string swatch;  // SVG drawn in a 24 x 12 box at the origin
  std::string label;   // raw text, short enough for one line
};

// The entries left to right, wrapping; appends to `s` and returns the height used.
double Legend(std::string& s, const std::vector<LegendEntry>& entries, double top) {
  constexpr double kRow = 18, kStart = 8, kEnd = kWidth - 8;
  double x = kStart, y = top;
  s += "<g class=\"legend\" fill=\"#111\">";
  for (const LegendEntry& e : entries) {
    const double width = 24 + 6 + 7.0 * static_cast<double>(CharacterStarts(e.label).size()) + 18;
    if (x > kStart && x + width > kEnd) x = kStart, y += kRow;
    s += "<g transform=\"translate(" + C(x) + " " + C(y) + ")\">" + e.swatch + "<text x=\"30\" y=\"10\">" + E(e.label) +
         "</text></g>";
    x += width;
  }
  s += "</g>";
  return entries.empty() ? 0 : y + kRow - top;
}

std::string LineSwatch(const char* colour, double width, const std::string& dash) {
  return "<line x1=\"0\" y1=\"6\" x2=\"24\" y2=\"6\" stroke=\"" + std::string(colour) + "\" stroke-width=\"" +
         C(width) + "\"" + dash + "/>";
}

std::string BoxSwatch(const std::string& fill, const char* stroke, const std::string& extra = "") {
  return "<rect x=\"1\" y=\"1\" width=\"22\" height=\"10\" fill=\"" + fill + "\" stroke=\"" + stroke + "\"" + extra +
         "/>";
}

// A fill that is not colour alone: pattern `kind` (0 solid, then hatch, dots, cross-hatch,
// lines) in `colour`. Returns the fill attribute's value; appends the <pattern> to `defs`.
std::string PatternFill(std::string& defs, const std::string& id, std::size_t kind, const char* colour) {
  kind %= kFillCount;
  if (kind == 0) return colour;
  const std::string c = colour;
  static const char* const kShapes[] = {"",
                                        "<path d=\"M-1 1L1 -1M0 6L6 0M5 7L7 5\" stroke=\"#C\" stroke-width=\"1.5\"/>",
                                        "<circle cx=\"3\" cy=\"3\" r=\"1.4\" fill=\"#C\"/>",
                                        "<path d=\"M0 0L6 6M6 0L0 6\" stroke=\"#C\" stroke-width=\"1\"/>",
                                        "<path d=\"M0 3H6\" stroke=\"#C\" stroke-width=\"1.5\"/>"};
  std::string shape = kShapes[kind];
  for (std::size_t at; (at = shape.find("#C")) != std::string::npos;) shape.replace(at, 2, c);
  defs += "<pattern id=\"" + id +
          "\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\"><rect width=\"6\" height=\"6\" fill=\"" + c +
          "\" fill-opacity=\"0.25\"/>" + shape + "</pattern>";
  return "url(#" + id + ")";
}

struct Point {
  double x = 0;
  double y = 0;
};

// Runs of consecutive entries of `order` that can be drawn: a line breaks at a gap.
template <typename Drawable>
std::vector<std::vector<std::size_t>> IndexRuns(const std::vector<std::size_t>& order, Drawable drawable) {
  std::vector<std::vector<std::size_t>> runs(1);
  for (std::size_t i : order) {
    if (drawable(i)) {
      runs.back().push_back(i);
    } else if (!runs.back().empty()) {
      runs.emplace_back();
    }
  }
  if (runs.back().empty()) runs.pop_back();
  return runs;
}

// The points of each run of finite values, in the viewBox.
template <typename Value>
std::vector<std::vector<Point>> Runs(const std::vector<std::size_t>& order, const std::vector<double>& ages,
                                     Value value, const LogAxis& x, const Linear& y, const Frame& f) {
  std::vector<std::vector<Point>> runs;
  for (const auto& run : IndexRuns(order, [&](std::size_t i) { return Finite(value(i)); })) {
    auto& points = runs.emplace_back();
    for (std::size_t i : run) points.push_back({x.Position(ages[i]), YOf(value(i), y, f)});
  }
  return runs;
}

// A path through each run; a run of one point is a dot (a path of one point draws nothing).
std::string Polyline(const std::vector<std::vector<Point>>& runs, const char* colour, double width,
                     const std::string& dash) {
  std::string d, dots;
  for (const auto& run : runs) {
    if (run.size() == 1) {
      dots += "<circle cx=\"" + C(run[0].x) + "\" cy=\"" + C(run[0].y) + "\" r=\"" + C(width + 1) + "\"/>";
      continue;
    }
    for (std::size_t k = 0; k < run.size(); ++k) d += (k ? "L" : "M") + C(run[k].x) + " " + C(run[k].y);
  }
  std::string s;
  if (!d.empty()) {
    s += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"" + C(width) +
         "\" stroke-linejoin=\"round\"" + dash + "/>";
  }
  if (!dots.empty()) s += "<g fill=\"" + std::string(colour) + "\">" + dots + "</g>";
  return s;
}

// ---- Tables ----

std::string TableOpen(const std::string& id, std::string_view caption, const std::vector<std::string>& columns) {
  // The wrapper scrolls on a narrow screen; focusable so that a keyboard can scroll it too.
  std::string s = "<div class=\"table-wrap\" role=\"region\" tabindex=\"0\" aria-labelledby=\"" + id +
                  "-caption\"><table id=\"" + id + "\"><caption id=\"" + id + "-caption\">" + E(caption) +
                  "</caption><thead><tr>";
  for (const std::string& column : columns) s += "<th scope=\"col\">" + E(column) + "</th>";
  return s + "</tr></thead><tbody>";
}

const char* const kTableClose = "</tbody></table></div>";

// `text` is already formatted (FormatNumber and the like): ASCII with nothing to escape.
std::string NumberCell(double v, const std::string& text) {
  if (!Finite(v)) return "<td class=\"na\">n/a</td>";
  return "<td data-value=\"" + RawNumber(v) + "\">" + text + "</td>";
}

std::string IntegerCell(std::int64_t v) {
  return "<td data-value=\"" + RawInteger(v) + "\">" + RawInteger(v) + "</td>";
}

std::string Empty(std::string_view sentence) { return "<p class=\"empty\">" + E(sentence) + "</p>"; }
std::string Note(std::string_view note) { return note.empty() ? "" : "<p class=\"note\">" + E(note) + "</p>"; }

std::string Folded(const std::string& table) {
  return "<details><summary>Table: the numbers in this chart</summary>" + table + "</details>";
}

// ---- The report ----

// What is shared across the document: ids, which must be unique, and each network's style.
class Context {
 public:
  std::string Id(const std::string& base) {
    std::string id = base;
    for (int n = 2; !ids_.insert(id).second; ++n) id = base + "-" + std::to_string(n);
    return id;
  }
  std::size_t Style(const std::string& network) { return styles_.emplace(network, styles_.size()).first->second; }

 private:
  std::set<std::string> ids_;
  std::map<std::string, std::size_t> styles_;
};

// A curve chart's parts, which share its names, the plot area and the age axis of both charts.
struct CurveFrame {
  std::string metric, value_label, name, range;
  Frame f;
  LogAxis x;

  std::string BandChart(const CurveChart& chart, Context& ctx) const;
  std::string BandTables(const CurveChart& chart, Context& ctx) const;
  std::string TopChart(const CurveChart& chart, Context& ctx) const;
  std::string TopTable(const CurveChart& chart, Context& ctx) const;
};

// The medians and their spread, one band per network.
std::string CurveFrame::BandChart(const CurveChart& chart, Context& ctx) const {
  const double y_max = BandsMax(chart.bands);
  const std::string id = ctx.Id("chart-curve-" + metric + "-median");
  if (!Finite(y_max)) return Empty("No median of " + value_label + " to draw: no age with a value.");
  const Linear y = NiceLinear(y_max);
  std::string body, areas, edges, medians, desc;
  Axes(body, f, {x.ticks, "age (log scale)", true},
       {LinearTicks(y, f.bottom(), f.top, [&](double v) { return ValueTick(v, y); }), value_label, true});
  std::vector<LegendEntry> legend;
  for (const Band& b : chart.bands) {
    const std::size_t style = ctx.Style(b.network);
    const char* colour = Colour(style);
    const std::vector<std::size_t> order = AgeOrder(b.ages_seconds);
    const auto p25 = [&](std::size_t i) { return At(b.p25, i); };
    const auto p75 = [&](std::size_t i) { return At(b.p75, i); };
    const auto median = [&](std::size_t i) { return At(b.median, i); };
    const auto band = [&](std::size_t i) { return Finite(p25(i)) && Finite(p75(i)); };
    for (const auto& run : IndexRuns(order, band)) {
      if (run.size() < 2) continue;
      // Along p75, and back along p25.
      std::string d;
      for (std::size_t k = 0; k < run.size(); ++k) {
        d += (k ? "L" : "M") + C(x.Position(b.ages_seconds[run[k]])) + " " + C(YOf(p75(run[k]), y, f));
      }
      for (auto it = run.rbegin(); it != run.rend(); ++it) {
        d += "L" + C(x.Position(b.ages_seconds[*it])) + " " + C(YOf(p25(*it), y, f));
      }
      areas +=
          "<path d=\"" + d + "Z\" fill=\"" + std::string(colour) + "\" fill-opacity=\"0.16\" stroke=\"none\"/>";
    }
    edges += Polyline(Runs(order, b.ages_seconds, p25, x, y, f), colour, 0.75, DashAttribute(style));
    edges += Polyline(Runs(order, b.ages_seconds, p75, x, y, f), colour, 0.75, DashAttribute(style));
    medians += Polyline(Runs(order, b.ages_seconds, median, x, y, f), colour, 2.5, DashAttribute(style));
    legend.push_back({"<rect x=\"0\" y=\"0\" width=\"24\" height=\"12\" fill=\"" + std::string(colour) +
                          "\" fill-opacity=\"0.16\"/>" + LineSwatch(colour, 2.5, DashAttribute(style)),
                      Shorten(b.network, 24) + " (" + std::to_string(b.posts) + " posts)"});
    desc += " " + b.network + ", " + std::to_string(b.posts) + " posts";
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (Finite(median(*it))) {
        desc += ": median " + FormatNumber(median(*it)) + " at " + FormatDuration(b.ages_seconds[*it]);
        break;
      }
    }
    desc += ".";
  }
  body += "<g class=\"bands\">" + areas + "</g><g class=\"quartiles\">" + edges + "</g><g class=\"medians\">" +
          medians + "</g>";
  const double height = f.bottom() + 48 + Legend(body, legend, f.bottom() + 48) + 6;
  return "<figure>" +
         SvgOpen(id, height, name + ": median " + value_label + " by age",
                 "Line chart of " + value_label + " by post age on a log scale from " + range +
                     ": per network the median (thick line) and the 25th to 75th percentiles (shaded band)." +
                     desc + " The table below gives every value.") +
         body + "</svg><figcaption>Median " + E(value_label) +
         " by age; the shaded band spans the 25th to 75th percentile of the network's posts.</figcaption></figure>";
}

// Each band's numbers, a table per network.
std::string CurveFrame::BandTables(const CurveChart& chart, Context& ctx) const {
  std::string tables;
  for (const Band& b : chart.bands) {
    std::string t =
        TableOpen(ctx.Id("table-curve-" + metric + "-" + Slug(b.network)),
                  name + ", " + b.network + ": " + value_label + " by age over " + std::to_string(b.posts) + " posts",
                  {"age", "25th percentile", "median", "75th percentile"});
    for (std::size_t i = 0; i < b.ages_seconds.size(); ++i) {
      const double age = b.ages_seconds[i];
      t += Finite(age)
               ? "<tr><th scope=\"row\" data-value=\"" + RawNumber(age) + "\">" + FormatDuration(age) + "</th>"
               : std::string("<tr><th scope=\"row\">n/a</th>");
      for (double v : {At(b.p25, i), At(b.median, i), At(b.p75, i)}) t += NumberCell(v, FormatNumber(v));
      t += "</tr>";
    }
    tables += t + kTableClose;
  }
  return Folded(tables);
}

// The top posts, each a thin line with its rank at its end.
std::string CurveFrame::TopChart(const CurveChart& chart, Context& ctx) const {
  const double y_max = TopMax(chart.top);
  const std::string id = ctx.Id("chart-curve-" + metric + "-top");
  if (!Finite(y_max)) return Empty("No point of the top posts' " + value_label + " to draw.");
  const Linear y = NiceLinear(y_max);
  std::string body, lines, ranks, desc;
  std::vector<std::pair<Point, std::string>> ends;  // where each line ends, and its rank
  Axes(body, f, {x.ticks, "age (log scale)", true},
       {LinearTicks(y, f.bottom(), f.top, [&](double v) { return ValueTick(v, y); }), value_label, true});
  std::vector<LegendEntry> legend;
  for (std::size_t n = 0; n < chart.top.size(); ++n) {
    const Curve& c = chart.top[n];
    std::vector<double> ages, values;
    for (const CurvePoint& p : c.points) ages.push_back(p.age_seconds), values.push_back(p.value);
    const auto value = [&](std::size_t i) { return values[i]; };
    const auto runs = Runs(AgeOrder(ages), ages, value, x, y, f);
    const std::string dash = DashAttribute(n / kColourCount);  // beyond the colours, a dash tells lines apart
    lines += Polyline(runs, Colour(n), 1.25, dash);
    const std::string rank = std::to_string(n + 1);
    if (!runs.empty()) ends.push_back({runs.back().back(), rank});
    legend.push_back({LineSwatch(Colour(n), 1.5, dash), rank + ". " + Shorten(c.label, 48)});
    desc += " " + rank + ". " + Shorten(c.label, 48) + ".";
  }
  // Lines that end close together would print their numbers over each other: top to bottom,
  // each at least a line of text below the one before; then, from the bottom, those pushed
  // out of the plot back up.
  std::stable_sort(ends.begin(), ends.end(), [](const auto& a, const auto& b) { return a.first.y < b.first.y; });
  std::vector<double> end_y;
  for (const auto& end : ends) end_y.push_back(end.first.y);
  const std::vector<double> label_y = SpreadLabels(end_y, 11, f.bottom() + 4);
  for (std::size_t k = 0; k < ends.size(); ++k) {
    ranks += "<text x=\"" + C(ends[k].first.x + 4) + "\" y=\"" + C(label_y[k]) + "\" dy=\"0.32em\">" +
             ends[k].second + "</text>";
  }
  body +=
      "<g class=\"top-posts\">" + lines + "</g><g class=\"ranks\" fill=\"#111\" font-size=\"10\">" + ranks + "</g>";
  const double height = f.bottom() + 48 + Legend(body, legend, f.bottom() + 48) + 6;
  return "<figure>" +
         SvgOpen(id, height, name + ": the top posts' " + value_label + " by age",
                 "Line chart of the " + std::to_string(chart.top.size()) + " top posts' " + value_label +
                     " by age on a log scale from " + range + ", each line numbered at its end:" + desc +
                     " The table below gives every point.") +
         body + "</svg><figcaption>The top posts' " + E(value_label) +
         ", numbered at the end of each line as in the legend.</figcaption></figure>";
}

std::string CurveFrame::TopTable(const CurveChart& chart, Context& ctx) const {
  std::string t = TableOpen(ctx.Id("table-curve-" + metric + "-top"),
                            name + ": the top posts' " + value_label + " by age", {"post", "age", value_label});
  for (std::size_t n = 0; n < chart.top.size(); ++n) {
    for (const CurvePoint& p : chart.top[n].points) {
      t += "<tr><th scope=\"row\" class=\"label\" data-rank=\"" + std::to_string(n + 1) + "\">" +
           E(chart.top[n].label) + "</th>" + NumberCell(p.age_seconds, FormatDuration(p.age_seconds)) +
           NumberCell(p.value, FormatNumber(p.value)) + "</tr>";
    }
  }
  return Folded(t + kTableClose);
}

std::string CurveCharts(const CurveChart& chart, Context& ctx) {
  CurveFrame cf;
  cf.metric = Slug(chart.metric);
  cf.value_label = chart.value_label.empty() ? chart.metric : chart.value_label;
  cf.name = chart.title.empty() ? cf.value_label : chart.title;
  std::string out = "<h3>" + E(cf.name) + "</h3>" + Note(chart.note);
  // One age axis for both charts, over every drawable age.
  const Range ages = DrawableAges(chart);
  cf.x = LogAgeAxis(ages.min, ages.max, cf.f.left, cf.f.right());
  cf.range = cf.x.ticks.front().label + " to " + cf.x.ticks.back().label;
  if (chart.bands.empty()) {
    out += Empty("No network has posts with observations of " + cf.value_label + " in this selection.");
  } else {
    out += cf.BandChart(chart, ctx) + cf.BandTables(chart, ctx);
  }
  if (!chart.top.empty()) out += cf.TopChart(chart, ctx) + cf.TopTable(chart, ctx);
  return out;
}

std::string EdgeLabel(double edge) {
  return edge == std::numeric_limits<double>::infinity() ? "\xE2\x88\x9E" : FormatDuration(edge);
}

std::string HistogramChart(const Histogram& h, const HistogramShares& shares, const std::vector<std::string>& bin_labels,
                           const std::string& id, const std::string& name, Context& ctx);
std::string HistogramTable(const Histogram& h, const HistogramShares& shares,
                           const std::vector<std::string>& bin_labels, const std::string& key, const std::string& name,
                           Context& ctx);

std::string HistogramSection(const Histogram& h, Context& ctx) {
  const std::string key = Slug(h.key.empty() ? h.title : h.key);
  const std::string name = !h.title.empty() ? h.title : !h.x_label.empty() ? h.x_label : "Lifespans";
  std::string out = "<h3>" + E(name) + "</h3>" + Note(h.note);
  // Counts (a missing one n/a), each series' total over the bins, and its share in each.
  const HistogramShares shares = SharesOf(h);
  const std::size_t bins = shares.bins;
  if (bins == 0 || h.series.empty())
    return out + Empty("No posts to count: " + std::string(bins ? "no series." : "no bins."));
  std::vector<std::string> bin_labels;
  for (std::size_t b = 0; b < bins; ++b) {
    const double hi = h.edges_seconds[b + 1];
    bin_labels.push_back(hi == std::numeric_limits<double>::infinity()
                             ? FormatDuration(h.edges_seconds[b]) + " or more"
                             : FormatDuration(h.edges_seconds[b]) + " \xE2\x80\x93 " + FormatDuration(hi));
  }
  const std::string id = ctx.Id("chart-lifespans-" + key);
  out += Finite(shares.max) ? HistogramChart(h, shares, bin_labels, id, name, ctx) : Empty("No posts in these bins.");
  return out + HistogramTable(h, shares, bin_labels, key, name, ctx);
}

// The bars: each series' share of its posts per bin, side by side.
std::string HistogramChart(const Histogram& h, const HistogramShares& shares, const std::vector<std::string>& bin_labels,
                           const std::string& id, const std::string& name, Context& ctx) {
  const std::size_t bins = shares.bins, series = h.series.size();
  const double y_max = shares.max;
  const Frame f;
  const Linear y = NiceLinear(y_max);
  const double group = f.width / static_cast<double>(bins);
  const double bar = group * 0.8 / static_cast<double>(series);
  std::vector<Tick> x_ticks;
  for (std::size_t b = 0; b <= bins; ++b) {
    // Every edge when there is room for its label, otherwise every other.
    const bool labelled = group >= 44 || b % 2 == 0;
    x_ticks.push_back(
        {h.edges_seconds[b], f.left + group * static_cast<double>(b), labelled ? EdgeLabel(h.edges_seconds[b]) : ""});
  }
  std::string body, defs, bars, desc;
  Axes(body, f, {x_ticks, h.x_label, false},
       {LinearTicks(y, f.bottom(), f.top, [&](double v) { return ValueTick(v, y) + "%"; }),
        "share of the network's posts (%)", true});
  std::vector<LegendEntry> legend;
  for (std::size_t s = 0; s < series; ++s) {
    const std::size_t style = ctx.Style(h.series[s].name);
    const char* colour = Colour(style);
    const std::string fill = PatternFill(defs, id + "-fill-" + std::to_string(s), style, colour);
    const std::size_t mode = ModeBin(shares.shares[s]);
    for (std::size_t b = 0; b < bins; ++b) {
      const double v = shares.shares[s][b];
      if (!Finite(v) || v <= 0) continue;
      const double top = YOf(v, y, f);
      bars += "<rect x=\"" + C(f.left + group * (static_cast<double>(b) + 0.1) + bar * static_cast<double>(s)) +
              "\" y=\"" + C(top) + "\" width=\"" + C(bar) + "\" height=\"" + C(f.bottom() - top) + "\" fill=\"" +
              fill + "\" stroke=\"" + colour + "\"/>";
    }
    const std::string posts = FormatNumber(shares.totals[s]);
    legend.push_back({BoxSwatch(fill, colour), Shorten(h.series[s].name, 24) + " (" + posts + " posts)"});
    desc += " " + h.series[s].name + ", " + posts + " posts";
    if (mode < bins) desc += ", most in " + bin_labels[mode] + " (" + FormatPercent(shares.shares[s][mode]) + ")";
    desc += ".";
  }
  body += "<g class=\"bars\">" + bars + "</g>";
  const double height = f.bottom() + 48 + Legend(body, legend, f.bottom() + 48) + 6;
  return "<figure>" +
         SvgOpen(id, height, name,
                 "Bar chart: the share of each network's posts by " + h.x_label + ", in " + std::to_string(bins) +
                     " bins from " + EdgeLabel(h.edges_seconds.front()) + " to " + EdgeLabel(h.edges_seconds.back()) +
                     "." + desc + " The table below gives the counts and shares.") +
         (defs.empty() ? "" : "<defs>" + defs + "</defs>") + body +
         "</svg><figcaption>Share of each network's posts per bin of " + E(h.x_label) +
         "; bars of one bin side by side, in the legend's order.</figcaption></figure>";
}

// Counts and shares per bin.
std::string HistogramTable(const Histogram& h, const HistogramShares& shares,
                           const std::vector<std::string>& bin_labels, const std::string& key, const std::string& name,
                           Context& ctx) {
  const std::size_t bins = shares.bins, series = h.series.size();
  std::vector<std::string> columns = {h.x_label.empty() ? "bin" : h.x_label};
  for (const HistogramSeries& s : h.series)
    columns.push_back(s.name + ": posts"), columns.push_back(s.name + ": share");
  std::string t = TableOpen(ctx.Id("table-lifespans-" + key), name + ": posts per bin", columns);
  for (std::size_t b = 0; b < bins; ++b) {
    const double lo = h.edges_seconds[b], hi = h.edges_seconds[b + 1];
    t += "<tr><th scope=\"row\" data-bin=\"" + std::to_string(b) + "\"" +
         (Finite(lo) ? " data-lower=\"" + RawNumber(lo) + "\"" : std::string()) +
         (Finite(hi) ? " data-upper=\"" + RawNumber(hi) + "\"" : std::string()) + ">" + bin_labels[b] + "</th>";
    for (std::size_t s = 0; s < series; ++s) {
      const auto& counts = h.series[s].counts;
      t += b < counts.size() ? IntegerCell(counts[b]) : std::string("<td class=\"na\">n/a</td>");
      t += NumberCell(shares.shares[s][b], FormatPercent(shares.shares[s][b]));
    }
    t += "</tr>";
  }
  return t + kTableClose;
}

std::string TimelinessSection(const Report& report, Context& ctx) {
  const auto& rows = report.timeliness;
  std::string out = Note(report.timeliness_note);
  if (rows.empty()) return out + Empty("No refreshes recorded for this selection.");

  const double x_max = LatenessMax(rows);
  const std::string id = ctx.Id("chart-timeliness");
  if (!Finite(x_max)) {
    out += Empty("No lateness to draw: no bucket has a value.");
  } else {
    constexpr double kRow = 30;
    Frame f;
    f.left = 136, f.width = kWidth - f.left - 36, f.height = kRow * static_cast<double>(rows.size());
    const Linear x = NiceDuration(x_max);
    std::vector<Tick> y_ticks;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      y_ticks.push_back({0, f.top + kRow * (static_cast<double>(r) + 0.5), Shorten(rows[r].age_bucket, 16)});
    }
    std::string body, defs, bars;
    Axes(body, f,
         {LinearTicks(x, f.left, f.right(), [](double v) { return FormatDuration(v); }), "lateness behind the due time",
          true},
         {y_ticks, "", false});
    body += "<text x=\"" + C(f.left - 8) + "\" y=\"" + C(f.top - 8) +
            "\" text-anchor=\"end\" fill=\"#111\">post age</text>";
    const char* p50_colour = Colour(0);
    const char* p90_colour = Colour(1);
    const std::string p90_fill = PatternFill(defs, id + "-fill-p90", 1, p90_colour);
    const auto width = [&](double v) { return std::clamp(v, 0.0, x.max) / x.max * f.width; };
    // Each bar's value beside it: on a linear scale a few seconds are a sliver next to minutes.
    std::string values;
    const auto value_label = [&](double v, double middle) {
      if (!Finite(v)) return;
      const std::string text = FormatDuration(v);
      const double end = f.left + width(v);
      const bool inside = end + 4 + 6.5 * static_cast<double>(text.size()) > kWidth - 4;
      values += "<text x=\"" + C(inside ? end - 4 : end + 4) + "\" y=\"" + C(middle) + "\" dy=\"0.32em\"" +
                (inside ? " text-anchor=\"end\"" : "") + ">" + text + "</text>";
    };
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const double top = f.top + kRow * static_cast<double>(r);
      value_label(rows[r].p50_late_s, top + 9.5);
      value_label(rows[r].p90_late_s, top + 20.5);
      // Early refreshes (negative lateness) draw no bar; the table has the value.
      if (Finite(rows[r].p50_late_s) && rows[r].p50_late_s > 0) {
        bars += "<rect x=\"" + C(f.left) + "\" y=\"" + C(top + 5) + "\" width=\"" + C(width(rows[r].p50_late_s)) +
                "\" height=\"9\" fill=\"" + p50_colour + "\"/>";
      }
      if (Finite(rows[r].p90_late_s) && rows[r].p90_late_s > 0) {
        bars += "<rect x=\"" + C(f.left) + "\" y=\"" + C(top + 16) + "\" width=\"" + C(width(rows[r].p90_late_s)) +
                "\" height=\"9\" fill=\"" + p90_fill + "\" stroke=\"" + p90_colour + "\"/>";
      }
    }
    // (A white halo keeps a value legible where it sits on a bar.)
    body += "<g class=\"bars\">" + bars +
            "</g><g class=\"values\" font-size=\"10\" fill=\"#111\" stroke=\"#fff\" "
            "stroke-width=\"3\" paint-order=\"stroke\">" +
            values + "</g>";
    const double height = f.bottom() + 48 +
                          Legend(body,
                                 {{BoxSwatch(p50_colour, p50_colour), "median (p50)"},
                                  {BoxSwatch(p90_fill, p90_colour), "90th percentile (p90)"}},
                                 f.bottom() + 48) +
                          6;
    out += "<figure>" +
           SvgOpen(
               id, height, "Lateness of refreshes by post age",
               "Bar chart: per post age bucket, the median (solid) and 90th percentile (hatched) of how late refreshes "
               "ran behind their due time, from 0 to " +
                   FormatDuration(x.max) + ". The table below gives them with the counts and the maximum.") +
           (defs.empty() ? "" : "<defs>" + defs + "</defs>") + body +
           "</svg><figcaption>Median and 90th percentile lateness per age bucket.</figcaption></figure>";
  }
  std::string t = TableOpen(ctx.Id("table-timeliness"), "Lateness of refreshes behind their due time, by post age",
                            {"post age", "refreshes", "median lateness", "90th percentile", "maximum"});
  for (const TimelinessRow& r : rows) {
    t += "<tr><th scope=\"row\">" + E(r.age_bucket) + "</th>" + IntegerCell(r.refreshes);
    for (double v : {r.p50_late_s, r.p90_late_s, r.max_late_s}) t += NumberCell(v, FormatDuration(v));
    t += "</tr>";
  }
  return out + t + kTableClose;
}

// "1 h", "7 d", "365 d": an age of mortality_by_age, under its point.
std::string AgeTick(double seconds) {
  if (seconds < 86400) return Fixed(seconds / 3600, 0) + " h";
  return Fixed(seconds / 86400, 0) + " d";
}

std::string SurvivalSection(const Report& report, Context& ctx) {
  const auto& series = report.survival;
  if (series.empty()) return Empty("No tracked post has reached an hour of age yet.");
  // The ages, every series' together, in order: evenly spaced points (they grow by a factor of 3 to
  // 24 each: a log axis in all but name).
  std::vector<double> ages;
  for (const Survival& s : series)
    for (const SurvivalAge& a : s.ages) ages.push_back(a.age_seconds);
  std::sort(ages.begin(), ages.end());
  ages.erase(std::unique(ages.begin(), ages.end()), ages.end());
  Frame f;
  f.height = 200;
  const auto x_of = [&](double age) {
    const auto at = std::lower_bound(ages.begin(), ages.end(), age) - ages.begin();
    return ages.size() == 1 ? f.left + f.width / 2
                            : f.left + 12 + (f.width - 24) * static_cast<double>(at) / static_cast<double>(ages.size() - 1);
  };
  const Linear y{1, 0.25};
  std::vector<Tick> x_ticks, y_ticks;
  for (double a : ages) x_ticks.push_back({a, x_of(a), AgeTick(a)});
  for (double v = 0; v <= 1.0001; v += 0.25) y_ticks.push_back({v, YOf(v, y, f), Fixed(v * 100, 0) + "%"});
  const std::string id = ctx.Id("chart-survival");
  std::string body, lines;
  Axes(body, f, {x_ticks, "age of the post", true}, {y_ticks, "share still available", true});
  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < series.size(); ++i) {
    std::vector<std::vector<Point>> runs(1);
    for (const SurvivalAge& a : series[i].ages) {
      if (Finite(a.share)) runs.back().push_back({x_of(a.age_seconds), YOf(a.share, y, f)});
      else if (!runs.back().empty()) runs.emplace_back();
    }
    if (runs.back().empty()) runs.pop_back();
    const double width = i == 0 ? 3 : 2;
    lines += Polyline(runs, Colour(i), width, DashAttribute(i));
    legend.push_back({LineSwatch(Colour(i), width, DashAttribute(i)), Shorten(series[i].collection, 40)});
  }
  body += "<g class=\"lines\">" + lines + "</g>";
  const double height = f.bottom() + 48 + Legend(body, legend, f.bottom() + 48) + 6;
  std::string out = "<figure>" +
                    SvgOpen(id, height, "Share of posts still available by age",
                            "Line chart: for each collection, the share of its posts still available at each age they "
                            "reached, of those whose state then is known, from 0% to 100%. The table below gives the "
                            "counts, with why the others are gone.") +
                    body + "</svg><figcaption>Share still available, by age and collection.</figcaption></figure>";
  std::string t = TableOpen(ctx.Id("table-survival"), "Posts available and gone by age, per collection",
                            {"collection", "age", "posts", "available", "gone", "unknown", "share available", "deleted",
                             "private", "suspended", "account gone", "hidden", "missing"});
  for (const Survival& s : series) {
    for (const SurvivalAge& a : s.ages) {
      t += "<tr><th scope=\"row\">" + E(s.collection) + "</th>" + NumberCell(a.age_seconds, AgeTick(a.age_seconds));
      for (std::int64_t v : {a.posts, a.available, a.gone, a.unknown}) t += IntegerCell(v);
      t += NumberCell(a.share * 100, FormatPercent(a.share * 100));
      for (std::int64_t v : {a.deleted, a.private_posts, a.suspended, a.account_gone, a.hidden, a.missing})
        t += IntegerCell(v);
      t += "</tr>";
    }
  }
  return out + Folded(t + kTableClose);
}

// "2026-11-27" as "11-27" under a bar; anything else as given, shortened.
std::string DayTick(const std::string& day) {
  const bool iso = day.size() == 10 && day[4] == '-' && day[7] == '-' &&
                   std::all_of(day.begin(), day.end(), [](char c) { return c == '-' || (c >= '0' && c <= '9'); });
  return iso ? day.substr(5) : Shorten(day, 10);
}

std::string CostSection(const Report& report, Context& ctx) {
  const auto& days = report.cost;
  std::string out = Note(report.cost_note);
  if (days.empty()) return out + Empty("No cost recorded or forecast for this selection.");

  const CostTotals sums = TotalsOf(days);
  const double measured = sums.measured, forecast = sums.forecast, y_max = sums.max;
  const std::size_t measured_days = sums.measured_days, forecast_days = sums.forecast_days;
  const std::string currency = report.currency;
  const std::string totals =
      "Measured: " + FormatCost(measured) + " " + currency + " over " + std::to_string(measured_days) +
      (measured_days == 1 ? " day" : " days") +
      (forecast_days ? "; forecast: " + FormatCost(forecast) + " " + currency + " over " +
                           std::to_string(forecast_days) + (forecast_days == 1 ? " day" : " days")
                     : std::string()) +
      ".";
  out += "<p class=\"totals\">" + E(totals) + "</p>";
  const std::string id = ctx.Id("chart-cost");
  if (!Finite(y_max)) {
    out += Empty("No cost to draw: no day has a value.");
  } else {
    Frame f;
    f.top = 34;  // room for the "forecast" bracket above the bars
    const Linear y = NiceLinear(y_max);
    const double slot = f.width / static_cast<double>(days.size());
    const std::size_t every = (days.size() + 7) / 8;  // at most 8 day labels
    std::vector<Tick> x_ticks;
    for (std::size_t i = 0; i < days.size(); i += every) {
      x_ticks.push_back({0, f.left + slot * (static_cast<double>(i) + 0.5), DayTick(days[i].day)});
    }
    std::string body, defs, bars, brackets;
    Axes(body, f, {x_ticks, "day", false},
         {LinearTicks(y, f.bottom(), f.top, [&](double v) { return ValueTick(v, y); }),
          "cost per day (" + currency + ")", true});
    const char* colour = Colour(0);
    const std::string hatched = PatternFill(defs, id + "-fill-forecast", 1, colour);
    for (std::size_t i = 0; i < days.size(); ++i) {
      const CostDay& d = days[i];
      if (Finite(d.cost) && d.cost > 0) {
        const double top = YOf(d.cost, y, f);
        bars += "<rect x=\"" + C(f.left + slot * (static_cast<double>(i) + 0.15)) + "\" y=\"" + C(top) + "\" width=\"" +
                C(std::max(1.0, slot * 0.7)) + "\" height=\"" + C(f.bottom() - top) + "\" fill=\"" +
                (d.forecast ? hatched + "\" stroke=\"" + colour + "\" stroke-dasharray=\"3 2\""
                            : std::string(colour) + "\"") +
                "/>";
      }
      // Each run of forecast days gets a bracket and a label above it.
      if (d.forecast && (i == 0 || !days[i - 1].forecast)) {
        std::size_t end = i;
        while (end + 1 < days.size() && days[end + 1].forecast) ++end;
        const double x1 = f.left + slot * static_cast<double>(i) + 1,
                     x2 = f.left + slot * static_cast<double>(end + 1) - 1;
        const double mid = std::clamp((x1 + x2) / 2, f.left + 30, f.right() - 30);
        brackets += "<path d=\"M" + C(x1) + " " + C(f.top - 4) + "V" + C(f.top - 10) + "H" + C(x2) + "V" +
                    C(f.top - 4) + "\" fill=\"none\" stroke=\"#333\"/><text x=\"" + C(mid) + "\" y=\"" + C(f.top - 14) +
                    "\" text-anchor=\"middle\">forecast</text>";
      }
    }
    body += "<g class=\"bars\">" + bars + "</g><g class=\"forecast-labels\" fill=\"#111\">" + brackets + "</g>";
    const double height = f.bottom() + 48 +
                          Legend(body,
                                 {{BoxSwatch(colour, colour), "measured"},
                                  {BoxSwatch(hatched, colour, " stroke-dasharray=\"3 2\""), "forecast"}},
                                 f.bottom() + 48) +
                          6;
    out += "<figure>" +
           SvgOpen(id, height, "Cost per day in " + currency,
                   "Bar chart of the cost per day in " + currency + " over " + std::to_string(days.size()) +
                       " days, forecast days hatched and bracketed. " + totals + " The table below gives every day.") +
           (defs.empty() ? "" : "<defs>" + defs + "</defs>") + body + "</svg><figcaption>Cost per day in " +
           E(currency) + "; forecast days are hatched, lighter and labelled.</figcaption></figure>";
  }
  std::string t = TableOpen(ctx.Id("table-cost"), "Requests and cost per day, forecast days marked",
                            {"day", "requests", "billed reads", "cost (" + currency + ")", "kind"});
  for (const CostDay& d : days) {
    t += std::string("<tr") + (d.forecast ? " class=\"forecast\" data-forecast=\"true\"" : " data-forecast=\"false\"") +
         "><th scope=\"row\">" + E(d.day) + "</th>" + IntegerCell(d.requests) + IntegerCell(d.billed_reads) +
         NumberCell(d.cost, FormatCost(d.cost)) + "<td>" + (d.forecast ? "forecast" : "measured") + "</td></tr>";
  }
  return out + Folded(t + kTableClose);
}

// Inline, so that the file opens anywhere without a network; no web fonts.
constexpr const char* kStyle = R"css(
:root{color-scheme:light}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1b;background:#f4f4f4}
main{max-width:60rem;margin:0 auto;padding:1rem}
header p{margin:.25rem 0}
nav ul{list-style:none;padding:0;margin:.5rem 0;display:flex;flex-wrap:wrap;gap:.25rem 1rem}
section{background:#fff;border-radius:6px;box-shadow:0 1px 3px rgba(0,0,0,.15);padding:1rem 1.25rem;margin:1rem 0}
h1{font-size:1.6rem;line-height:1.25;margin:.5rem 0}
h2{font-size:1.3rem;margin:.25rem 0 .5rem}
h3{font-size:1.1rem;margin:1.5rem 0 .25rem}
a{color:#0b5394}
.meta,.note,figcaption{color:#444}
figure{margin:.75rem 0}
svg.chart{display:block;width:100%;height:auto}
figcaption{font-size:.9rem}
.table-wrap{overflow-x:auto;margin:.5rem 0}
table{border-collapse:collapse;font-size:.9rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{padding:.2rem .6rem;border-bottom:1px solid #ddd;text-align:left;white-space:nowrap;vertical-align:top}
th.label{white-space:normal;min-width:10rem;max-width:24rem;overflow-wrap:anywhere;font-weight:normal}
td[data-value],td.na{text-align:right;font-variant-numeric:tabular-nums}
tr.forecast{font-style:italic;background:#eef4fa}
.empty{padding:.75rem 1rem;border:1px dashed #888;border-radius:4px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0}
dt{font-weight:600}
dd{margin:0;overflow-wrap:anywhere}
details{margin:.5rem 0}
summary{cursor:pointer;color:#0b5394}
:focus-visible{outline:2px solid #0b5394;outline-offset:2px}
@media (max-width:40rem){main{padding:.5rem}section{padding:.75rem}
dl.facts{grid-template-columns:1fr}dd{margin-bottom:.5rem}}
@media print{body{background:#fff;color:#000;font-size:11pt}main{max-width:none;padding:0}nav{display:none}
section{box-shadow:none;border-radius:0;padding:0;margin:0 0 1rem}
figure,table,.empty{break-inside:avoid}h2,h3{break-after:avoid}
.meta,.note,figcaption,summary,a{color:#000}tr.forecast{background:none}}
)css";

}  // namespace

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const std::size_t length = ValidSequence(text, i);
      if (length == 0) {
        out += "\xEF\xBF\xBD";
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
      case '\n':
      case '\r':
        out += static_cast<char>(c);
        break;
      default:
        out += c < 0x20 || c == 0x7F ? "\xEF\xBF\xBD" : std::string(1, static_cast<char>(c));
    }
    ++i;
  }
  return out;
}

std::string RawNumber(double v) {
  if (!Finite(v)) return "";
  if (v == 0) return "0";
  char buffer[32];
  const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, r.ptr);
}

std::string RawInteger(std::int64_t v) { return std::to_string(v); }

std::string FormatNumber(double v) {
  if (!Finite(v)) return "n/a";
  return Fixed(v, std::fabs(v) < 1e15 && v == std::floor(v) ? 0 : 1);
}

std::string FormatDuration(double seconds) {
  if (!Finite(seconds)) return "n/a";
  if (seconds < 0) {
    const std::string s = FormatDuration(-seconds);
    return s == "0 s" ? s : "-" + s;
  }
  if (seconds < 9.95) {
    const double tenths = std::round(seconds * 10) / 10;
    return Fixed(tenths, tenths == std::floor(tenths) ? 0 : 1) + " s";
  }
  if (seconds >= 1e12) return Fixed(seconds / 86400, 0) + " d";  // beyond any post's age: no splitting
  const auto two = [](long long big, const char* big_unit, long long small, const char* small_unit) {
    return std::to_string(big) + " " + big_unit + (small ? " " + std::to_string(small) + " " + small_unit : "");
  };
  // Rounded to the smaller unit shown, then split: 3599.7 s is "1 h", not "59 min 60 s".
  const long long secs = std::llround(seconds);
  if (secs < 60) return std::to_string(secs) + " s";
  if (secs < 3600) return two(secs / 60, "min", secs % 60, "s");
  const long long minutes = std::llround(seconds / 60);
  if (minutes < 1440) return two(minutes / 60, "h", minutes % 60, "min");
  const long long hours = std::llround(seconds / 3600);
  return two(hours / 24, "d", hours % 24, "h");
}

std::string FormatCost(double v) {
  if (!Finite(v)) return "n/a";
  return Fixed(v, v != 0 && std::fabs(v) < 0.01 ? 4 : 2);
}

std::string FormatPercent(double v) { return Finite(v) ? Fixed(v, 1) + "%" : "n/a"; }

std::string Slug(std::string_view text) {
  std::string out;
  bool separator = false;
  for (char ch : text) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
    if (!keep) {
      separator = true;
      continue;
    }
    if (separator && !out.empty()) out += '-';
    separator = false;
    out += ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch;
  }
  return out.empty() ? "unnamed" : out;
}

double LogAxis::Position(double age_seconds) const {
  return from + std::log(age_seconds / lo) / std::log(hi / lo) * (to - from);
}

LogAxis LogAgeAxis(double min_age, double max_age, double from, double to) {
  struct Named {
    double seconds;
    const char* label;
  };
  static constexpr Named kTicks[] = {{1, "1 s"},        {10, "10 s"},      {60, "1 min"},      {600, "10 min"},
                                     {3600, "1 h"},     {21600, "6 h"},    {86400, "1 d"},     {604800, "7 d"},
                                     {2592000, "30 d"}, {7776000, "90 d"}, {31536000, "365 d"}};
  if (!(Finite(min_age) && min_age > 0)) min_age = 1;
  if (!(Finite(max_age) && max_age > 0)) max_age = min_age;
  if (max_age < min_age) std::swap(min_age, max_age);
  LogAxis axis;
  axis.from = from, axis.to = to, axis.lo = min_age, axis.hi = max_age;
  for (const Named& t : kTicks) {
    if (t.seconds <= min_age) axis.lo = t.seconds;
  }
  for (auto t = std::rbegin(kTicks); t != std::rend(kTicks); ++t) {
    if (t->seconds >= max_age) axis.hi = t->seconds;
  }
  if (axis.hi <= axis.lo) {
    // All ages on one tick: on to the next one (or a decade on), so that the axis has a length.
    axis.hi = axis.lo * 10;
    for (const Named& t : kTicks) {
      if (t.seconds > axis.lo) {
        axis.hi = t.seconds;
        break;
      }
    }
  }
  for (const Named& t : kTicks) {
    if (t.seconds >= axis.lo && t.seconds <= axis.hi) axis.ticks.push_back({t.seconds, 0, t.label});
  }
  if (axis.ticks.size() < 2) {
    // Ages off the list (below 1 s, beyond a year): the domain's ends, labelled as they are.
    if (axis.ticks.empty() || axis.ticks.front().value > axis.lo)
      axis.ticks.insert(axis.ticks.begin(), {axis.lo, 0, FormatDuration(axis.lo)});
    if (axis.ticks.back().value < axis.hi) axis.ticks.push_back({axis.hi, 0, FormatDuration(axis.hi)});
  }
  for (Tick& t : axis.ticks) t.position = axis.Position(t.value);
  return axis;
}

namespace {

// A section of the page and its heading, which names it for screen readers.
std::string SectionOpen(const std::string& id, const std::string& heading) {
  return "<section id=\"" + id + "\" aria-labelledby=\"" + id + "-heading\">\n<h2 id=\"" + id + "-heading\">" + heading +
         "</h2>\n";
}

// A section of one drawing per item (draw(item)), or the sentence `empty` when there is none.
template <class Item, class Draw>
std::string ItemsSection(const std::string& id, const std::string& heading, const std::string& intro,
                         const std::vector<Item>& items, std::string_view empty, Draw draw) {
  std::string html = SectionOpen(id, heading) + intro;
  if (items.empty()) html += Empty(empty);
  for (const Item& item : items) html += draw(item) + "\n";
  return html + "</section>\n";
}

}  // namespace

std::string RenderReport(const Report& report) {
  Context ctx;
  const std::string title = report.title.empty() ? "tweetkeeper report" : report.title;
  std::string html =
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
      E(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<main>\n<header>\n<h1>" + E(title) +
      "</h1>\n";
  if (!report.generated_at.empty()) html += "<p class=\"meta\">Generated " + E(report.generated_at) + ".</p>\n";
  if (!report.selection.empty()) html += "<p class=\"meta\">Posts: " + E(report.selection) + "</p>\n";
  html += "<nav aria-label=\"Sections\"><ul>";
  if (!report.summary.empty()) html += "<li><a href=\"#summary\">Summary</a></li>";
  html +=
      "<li><a href=\"#curves\">Engagement over time</a></li><li><a href=\"#lifespans\">Lifespans</a></li>"
      "<li><a href=\"#survival\">Survival</a></li><li><a href=\"#timeliness\">Timeliness</a></li>"
      "<li><a href=\"#cost\">Cost</a></li></ul></nav>\n</header>\n";

  if (!report.summary.empty()) {
    html += SectionOpen("summary", "Summary") + "<dl class=\"facts\">";
    for (const auto& [key, value] : report.summary) html += "<dt>" + E(key) + "</dt><dd>" + E(value) + "</dd>";
    html += "</dl>\n</section>\n";
  }

  // A network's style is fixed by its first appearance, before any chart is drawn: the same in all.
  for (const CurveChart& chart : report.curves) {
    for (const Band& band : chart.bands) ctx.Style(band.network);
  }
  for (const Histogram& h : report.lifespans) {
    for (const HistogramSeries& s : h.series) ctx.Style(s.name);
  }

  html += ItemsSection(
      "curves", "Engagement over time",
      "<p>How each count grew with the posts' age. The thick line is the median post of a network at each age, the "
      "shaded band the middle half of its posts (25th to 75th percentile); a second chart draws the top posts one by "
      "one, on a scale of their own. Age runs on a log scale, so that the first hour has as much room as the first "
      "month. Each network keeps its colour and line pattern in every chart.</p>\n",
      report.curves, "No curves: no post in this selection has observations.",
      [&](const CurveChart& chart) { return CurveCharts(chart, ctx); });

  html += ItemsSection(
      "lifespans", "Lifespans",
      "<p>How long posts took to reach a share of their latest count. Each bar is the share of one network's posts "
      "whose age at that point falls in the bin, so that networks of different sizes compare; the table gives the "
      "counts too. Posts whose count is 0 have no such age and are not counted.</p>\n",
      report.lifespans, "No lifespans: no post in this selection has a count above 0.",
      [&](const Histogram& h) { return HistogramSection(h, ctx); });

  html +=
      SectionOpen("survival", "Survival") +
      "<p>How much of each collection is still there, by the posts' age: of the posts that reached an age, the share "
      "still available then, as tweetkeeper saw it. A post is gone from the read that found it deleted, hidden or "
      "left out; unknown between its last sight and that read (old posts imported and found gone at once are "
      "mostly that, as are posts not read yet), and left out of the share. It covers every tracked post (the first "
      "line) and the largest collections, whatever the selection above, which leaves gone posts out.</p>\n" +
      SurvivalSection(report, ctx) + "\n</section>\n";

  html +=
      SectionOpen("timeliness", "Timeliness") +
      "<p>How late refreshes ran behind the time they were due, by the post's age at the refresh: the median and the "
      "90th percentile. Workers that keep up show seconds here; minutes or hours mean too few workers or too little "
      "API quota for the posts tracked.</p>\n" +
      TimelinessSection(report, ctx) + "\n</section>\n";

  html +=
      SectionOpen("cost", "Cost") +
      "<p>What the API requests cost per day, in " +
      E(report.currency) +
      ". Days marked forecast are an estimate, not a bill: hatched, lighter and bracketed in the chart, in italics "
      "in the table.</p>\n" +
      CostSection(report, ctx) + "\n</section>\n";

  html += "</main>\n</body>\n</html>\n";
  return html;
}

}  // namespace tweetkeeper::report
