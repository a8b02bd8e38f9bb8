// tweetkeeper-report's page: hostile labels stay text, every <svg> is well-formed XML on its own,
// tables carry the exact numbers (data-value) under stable ids, the log age axis puts its ticks
// in order inside the plot, and empty or non-finite data gives a note, never a broken chart.

#include "report/report_html.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace tweetkeeper::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
const char* const kHostile = "</svg><script>alert(1)</script>\"'&amp;<!--";

// ---- A small XML well-formedness check (no XML library is a dependency of the project) ----

bool NameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':'; }
bool NameChar(char c) { return NameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }
bool Space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// "" when `text` (character data or an attribute value) uses '&' only for XML's five entities and
// character references, has no '<' and no control character XML 1.0 forbids; else the problem.
std::string TextProblem(const std::string& text) {
  static const std::regex reference("^&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);");
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '<') return "'<' in text: " + text.substr(i, 40);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return "control character in text";
    if (c == '&' && !std::regex_search(text.substr(i, 12), reference)) return "bad reference: " + text.substr(i, 12);
  }
  return "";
}

struct Element {
  std::string name;
  std::map<std::string, std::string> attributes;
};

// "" when `xml` is exactly one well-formed element (tags nest and match, attributes name="value"
// and unique, references valid); the problem otherwise. `visit` sees each start tag.
template <typename Visit>
std::string XmlProblem(const std::string& xml, Visit visit) {
  std::vector<std::string> open;
  bool root_done = false;
  std::size_t i = 0;
  const auto name_at = [&](std::size_t& k) {
    const std::size_t start = k;
    if (k < xml.size() && NameStart(xml[k])) {
      while (k < xml.size() && NameChar(xml[k])) ++k;
    }
    return xml.substr(start, k - start);
  };
  while (i < xml.size()) {
    if (xml[i] != '<') {
      const std::size_t end = std::min(xml.find('<', i), xml.size());
      const std::string text = xml.substr(i, end - i);
      if (open.empty() && text.find_first_not_of(" \t\r\n") != std::string::npos)
        return "text outside the root: " + text;
      if (const std::string p = TextProblem(text); !p.empty()) return p;
      i = end;
      continue;
    }
    if (root_done) return "a second root at " + xml.substr(i, 40);
    if (xml.compare(i, 4, "<!--") == 0) {
      const std::size_t end = xml.find("-->", i + 4);
      if (end == std::string::npos) return "unterminated comment";
      i = end + 3;
      continue;
    }
    if (xml.compare(i, 2, "</") == 0) {
      std::size_t k = i + 2;
      const std::string name = name_at(k);
      while (k < xml.size() && Space(xml[k])) ++k;
      if (k >= xml.size() || xml[k] != '>') return "bad end tag at " + xml.substr(i, 40);
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes <" + (open.empty() ? "" : open.back()) + ">";
      open.pop_back();
      root_done = open.empty();
      i = k + 1;
      continue;
    }
    std::size_t k = i + 1;
    Element element;
    element.name = name_at(k);
    if (element.name.empty()) return "bad tag at " + xml.substr(i, 40);
    for (;;) {
      const std::size_t before = k;
      while (k < xml.size() && Space(xml[k])) ++k;
      if (k >= xml.size()) return "unterminated tag <" + element.name;
      if (xml.compare(k, 2, "/>") == 0 || xml[k] == '>') break;
      if (k == before) return "no space before an attribute in <" + element.name;
      const std::string attribute = name_at(k);
      if (attribute.empty() || k >= xml.size() || xml[k] != '=')
        return "bad attribute in <" + element.name + ": " + xml.substr(k, 30);
      ++k;
      if (k >= xml.size() || (xml[k] != '"' && xml[k] != '\'')) return "unquoted attribute " + attribute;
      const char quote = xml[k];
      const std::size_t end = xml.find(quote, k + 1);
      if (end == std::string::npos) return "unterminated attribute " + attribute;
      const std::string value = xml.substr(k + 1, end - k - 1);
      if (const std::string p = TextProblem(value); !p.empty()) return attribute + ": " + p;
      if (!element.attributes.emplace(attribute, value).second) return "attribute " + attribute + " twice";
      k = end + 1;
    }
    visit(element);
    if (xml[k] == '/') {
      root_done = open.empty();
      i = k + 2;
    } else {
      open.push_back(element.name);
      i = k + 1;
    }
  }
  if (!open.empty()) return "<" + open.back() + "> not closed";
  return root_done ? "" : "no element";
}

std::string XmlProblem(const std::string& xml) {
  return XmlProblem(xml, [](const Element&) {});
}

// Each <svg>...</svg> of the page.
std::vector<std::string> SvgFragments(const std::string& html) {
  std::vector<std::string> fragments;
  for (std::size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    const std::size_t end = html.find("</svg>", at);
    fragments.push_back(html.substr(at, end == std::string::npos ? std::string::npos : end + 6 - at));
  }
  return fragments;
}

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The table with this id, from <table to </table>; "" when there is none.
std::string Table(const std::string& html, const std::string& id) {
  const std::size_t at = html.find("<table id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</table>", at) + 8 - at);
}

// The data-value attributes of the cells (<td>) of a table, in document order.
std::vector<std::string> CellValues(const std::string& table) {
  static const std::regex value("<td data-value=\"([^\"]*)\"");
  std::vector<std::string> values;
  for (auto it = std::sregex_iterator(table.begin(), table.end(), value); it != std::sregex_iterator(); ++it) {
    values.push_back((*it)[1]);
  }
  return values;
}

Report Sample() {
  Report r;
  r.title = "Engagement & cost";
  r.generated_at = "2026-11-27 20:30 UTC";
  r.selection = "all posts of the last 30 days";
  r.summary = {{"posts", "1234"}, {"networks", "x, bluesky"}};
  CurveChart likes;
  likes.title = "Likes";
  likes.metric = "like_count";
  likes.value_label = "likes";
  const std::vector<double> ages = {600, 3600, 21600, 86400, 604800, 2592000};
  likes.bands.push_back({"x", ages, {0, 1, 3, 5, 8, 9}, {1, 3, 7, 12, 20, 22}, {2, 6, 15, 30, 50, 55}, 120});
  likes.bands.push_back(
      {"bluesky", ages, {0, 0.5, 2, 3, 4, 4}, {0.25, 1, 94.28571428571429, 5, 6, 6}, {1, 2, 5, 8, 9, 9}, 30});
  likes.top.push_back({"first post", {{600, 10}, {3600, 200}, {86400, 900}, {2592000, 1000}}});
  likes.top.push_back({"second post", {{600, 5}, {3600, 100}, {86400, 400}}});
  r.curves.push_back(likes);
  Histogram half;
  half.key = "like_count-age_50";
  half.title = "Time to half of the likes";
  half.x_label = "age at 50% of the latest likes";
  half.edges_seconds = {0, 600, 3600, 21600, 86400, 604800, kInf};
  half.series = {{"x", {10, 40, 30, 20, 15, 5}}, {"bluesky", {1, 3, 4, 2, 0, 0}}};
  r.lifespans.push_back(half);
  r.survival = {{"all tracked posts",
                 {{3600, 100, 90, 10, 0, 0.9, 4, 0, 0, 0, 3, 3}, {86400, 80, 60, 15, 5, 0.8, 8, 1, 1, 1, 2, 2}}},
                {"election night", {{3600, 10, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0}, {86400, 4, 0, 0, 4, kNaN, 0, 0, 0, 0, 0, 0}}}};
  r.timeliness = {
      {"under 1 h", 5000, 1.5, 12.25, 95}, {"1 h to 1 d", 900, 30, 240, 3600}, {"over 1 d", 40, -2, 10, 20}};
  for (int d = 20; d <= 27; ++d) {
    r.cost.push_back({"2026-11-" + std::to_string(d), 100 + d, 9000 + d, 0.5 * d, d >= 25});
  }
  return r;
}

// ---- Escaping ----

TEST(ReportEscape, HostileTextStaysText) {
  EXPECT_EQ(EscapeHtml("</svg><script>alert(1)</script>"), "&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(EscapeHtml("a & \"b\" 'c'"), "a &amp; &quot;b&quot; &#39;c&#39;");
  EXPECT_EQ(EscapeHtml("caf\xC3\xA9 \xE2\x98\x95 \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x98\x95 \xF0\x9F\x98\x80")
      << "UTF-8 kept";
  EXPECT_EQ(EscapeHtml("tab\there\nnew"), "tab\there\nnew");
  // What XML cannot hold becomes U+FFFD: control characters, broken or overlong UTF-8, surrogates, U+FFFF.
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(EscapeHtml(std::string("a\x01"
                                   "b\x7F",
                                   4)),
            "a" + r + "b" + r);
  EXPECT_EQ(EscapeHtml(std::string("\0", 1)), r);
  EXPECT_EQ(EscapeHtml("\xC3"), r) << "a sequence cut short";
  EXPECT_EQ(EscapeHtml("\xC0\xAF"), r + r) << "overlong";
  EXPECT_EQ(EscapeHtml("\xED\xA0\x80"), r + r + r) << "a surrogate";
  EXPECT_EQ(EscapeHtml("\xEF\xBF\xBF"), r + r + r) << "U+FFFF";
  EXPECT_EQ(EscapeHtml("\xC2\x85"), r + r) << "a C1 control";
  EXPECT_EQ(TextProblem(EscapeHtml(std::string("\x01\xFF<&>\"'\xE2\x82", 9))), "");
}

TEST(ReportEscape, HostileLabelsEverywhereLeaveTheDocumentWhole) {
  Report r = Sample();
  r.title = r.selection = r.generated_at = r.currency = r.timeliness_note = r.cost_note = kHostile;
  r.summary.push_back({kHostile, kHostile});
  CurveChart& c = r.curves[0];
  c.title = c.metric = c.value_label = c.note = kHostile;
  c.bands[0].network = kHostile;
  c.top[0].label =
      std::string(kHostile) + " a very long label that the legend must shorten somewhere \xE2\x98\x95\xE2\x98\x95";
  r.lifespans[0].title = r.lifespans[0].x_label = r.lifespans[0].key = r.lifespans[0].note = kHostile;
  r.lifespans[0].series[0].name = kHostile;
  r.timeliness[0].age_bucket = kHostile;
  r.cost[0].day = kHostile;
  r.survival[1].collection = kHostile;
  const std::string html = RenderReport(r);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<!--"), std::string::npos);
  EXPECT_NE(html.find("&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;amp;&lt;!--"),
            std::string::npos);
  const auto svgs = SvgFragments(html);
  EXPECT_EQ(svgs.size(), 6u) << "medians, top posts, lifespans, survival, timeliness, cost";
  EXPECT_EQ(Count(html, "</svg>"), svgs.size());
  for (const std::string& svg : svgs) EXPECT_EQ(XmlProblem(svg), "") << svg;
  // Ids from data are slugs: nothing of the label gets into an attribute unescaped.
  EXPECT_NE(Table(html, "table-curve-svg-script-alert-1-script-amp-" + Slug(kHostile)), "") << Slug(kHostile);
  EXPECT_EQ(Slug(kHostile), "svg-script-alert-1-script-amp");
}

TEST(ReportXml, TheCheckerRejectsWhatIsNotWellFormed) {
  EXPECT_EQ(XmlProblem("<a x=\"1\"><b/>t &amp; &#39; &#x2F;</a>"), "");
  for (const char* bad : {"<a><b></a></b>", "<a x=\"1\" x=\"2\"/>", "<a>&nbsp;</a>", "<a>1 < 2</a>", "<a x=1/>", "<a>",
                          "<a/><b/>", "<a x=\"<\"/>", "text<a/>", "<a></b>", "<a x=\"1\"y=\"2\"/>", "<a>&amp</a>"}) {
    EXPECT_NE(XmlProblem(bad), "") << bad;
  }
}

// ---- Numbers ----

TEST(ReportNumbers, RawNumbersReadBackExactly) {
  std::vector<double> values = {94.28571428571429, 1.0 / 3, 0.1, 1e-7, 123456789012.0, 2.5e300, -17.75, 5e-324, 86400};
  std::uint64_t state = 42;
  for (int i = 0; i < 2000; ++i) {  // a fixed pseudo-random spread of magnitudes
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    values.push_back(static_cast<double>(state >> 11) / 9007199254740992.0 *
                     std::pow(10.0, static_cast<int>(state % 40) - 20));
  }
  for (double v : values) {
    const std::string raw = RawNumber(v);
    EXPECT_EQ(raw.find(','), std::string::npos);
    EXPECT_EQ(std::strtod(raw.c_str(), nullptr), v) << raw;
  }
  EXPECT_EQ(RawNumber(94.28571428571429), "94.28571428571429");
  EXPECT_EQ(RawNumber(3), "3");
  EXPECT_EQ(RawNumber(-0.0), "0");
  EXPECT_EQ(RawNumber(kNaN), "");
  EXPECT_EQ(RawNumber(kInf), "");
  EXPECT_EQ(RawInteger(-9223372036854775807LL - 1), "-9223372036854775808");
}

TEST(ReportNumbers, CellTextIsFixed) {
  EXPECT_EQ(FormatNumber(1234), "1234");
  EXPECT_EQ(FormatNumber(94.28571428571429), "94.3");
  EXPECT_EQ(FormatNumber(0.25), "0.2") << "round half to even, as printf";
  EXPECT_EQ(FormatNumber(-0.04), "0.0");
  EXPECT_EQ(FormatNumber(kNaN), "n/a");
  EXPECT_EQ(FormatDuration(0), "0 s");
  EXPECT_EQ(FormatDuration(0.36), "0.4 s");
  EXPECT_EQ(FormatDuration(3), "3 s");
  EXPECT_EQ(FormatDuration(9.96), "10 s");
  EXPECT_EQ(FormatDuration(42.4), "42 s");
  EXPECT_EQ(FormatDuration(59.6), "1 min");
  EXPECT_EQ(FormatDuration(303), "5 min 3 s");
  EXPECT_EQ(FormatDuration(3599.7), "1 h");
  EXPECT_EQ(FormatDuration(7500), "2 h 5 min");
  EXPECT_EQ(FormatDuration(7200), "2 h");
  EXPECT_EQ(FormatDuration(86399), "1 d");
  EXPECT_EQ(FormatDuration(3 * 86400 + 4 * 3600), "3 d 4 h");
  EXPECT_EQ(FormatDuration(2592000), "30 d");
  EXPECT_EQ(FormatDuration(-90), "-1 min 30 s");
  EXPECT_EQ(FormatDuration(-0.01), "0 s");
  EXPECT_EQ(FormatDuration(kInf), "n/a");
  EXPECT_EQ(FormatDuration(1e300), FormatDuration(1e300)) << "no overflow";
  EXPECT_EQ(FormatCost(12.3), "12.30");
  EXPECT_EQ(FormatCost(0), "0.00");
  EXPECT_EQ(FormatCost(0.0045), "0.0045");
  EXPECT_EQ(FormatCost(kNaN), "n/a");
  EXPECT_EQ(FormatPercent(12.345), "12.3%");
  EXPECT_EQ(Slug("Like Count!"), "like-count");
  EXPECT_EQ(Slug("like_count-age_50"), "like_count-age_50");
  EXPECT_EQ(Slug("caf\xC3\xA9"), "caf");
  EXPECT_EQ(Slug("\xE2\x98\x95"), "unnamed");
}

// ---- Tables ----

TEST(ReportTables, EveryChartHasATableWithItsNumbers) {
  const Report r = Sample();
  const std::string html = RenderReport(r);
  for (const char* id : {"table-curve-like_count-x", "table-curve-like_count-bluesky", "table-curve-like_count-top",
                         "table-lifespans-like_count-age_50", "table-timeliness", "table-cost"}) {
    const std::string table = Table(html, id);
    ASSERT_NE(table, "") << id;
    EXPECT_NE(table.find("<caption id=\"" + std::string(id) + "-caption\">"), std::string::npos) << id;
    EXPECT_NE(table.find("<th scope=\"col\">"), std::string::npos) << id;
    EXPECT_NE(table.find("<th scope=\"row\""), std::string::npos) << id;
    EXPECT_EQ(Count(html, "id=\"" + std::string(id) + "\""), 1u) << id;
  }
  for (const char* id : {"chart-curve-like_count-median", "chart-curve-like_count-top",
                         "chart-lifespans-like_count-age_50", "chart-timeliness", "chart-cost"}) {
    EXPECT_NE(html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" + std::string(id) + "\""), std::string::npos)
        << id;
  }

  // A band: per age p25, median, p75, read back exactly.
  const Band& b = r.curves[0].bands[1];
  std::vector<std::string> expected;
  for (std::size_t i = 0; i < b.ages_seconds.size(); ++i) {
    for (double v : {b.p25[i], b.median[i], b.p75[i]}) expected.push_back(RawNumber(v));
  }
  const std::string band = Table(html, "table-curve-like_count-bluesky");
  EXPECT_EQ(CellValues(band), expected);
  EXPECT_NE(band.find("<td data-value=\"94.28571428571429\">94.3</td>"), std::string::npos);
  EXPECT_NE(band.find("<th scope=\"row\" data-value=\"21600\">6 h</th>"), std::string::npos);

  // The top posts: a row per point, age and value.
  const std::string top = Table(html, "table-curve-like_count-top");
  EXPECT_EQ(Count(top, "<tr><th scope=\"row\""), 7u);
  EXPECT_NE(top.find("data-rank=\"2\">second post</th><td data-value=\"3600\">1 h</td><td data-value=\"100\">100</td>"),
            std::string::npos);

  // Lifespans: counts and shares per series; the open last bin has no upper edge.
  const std::string life = Table(html, "table-lifespans-like_count-age_50");
  const std::vector<std::string> cells = CellValues(life);
  ASSERT_EQ(cells.size(), 6u * 4);
  EXPECT_EQ(cells[0], "10");                         // x, bin 0, count
  EXPECT_EQ(cells[1], RawNumber(10.0 / 120 * 100));  // x, bin 0, share of its 120 posts
  EXPECT_EQ(cells[2], "1");                          // bluesky, bin 0
  EXPECT_EQ(cells[3], RawNumber(1.0 / 10 * 100));
  EXPECT_NE(life.find("data-bin=\"0\" data-lower=\"0\" data-upper=\"600\">0 s \xE2\x80\x93 10 min</th>"),
            std::string::npos);
  EXPECT_NE(life.find("data-bin=\"5\" data-lower=\"604800\">7 d or more</th>"), std::string::npos);

  // Timeliness and cost.
  EXPECT_EQ(
      CellValues(Table(html, "table-timeliness")),
      (std::vector<std::string>{"5000", "1.5", "12.25", "95", "900", "30", "240", "3600", "40", "-2", "10", "20"}));
  const std::string cost = Table(html, "table-cost");
  EXPECT_EQ(Count(cost, "data-forecast=\"true\""), 3u);
  EXPECT_EQ(Count(cost, "data-forecast=\"false\""), 5u);
  EXPECT_NE(
      cost.find("<th scope=\"row\">2026-11-27</th><td data-value=\"127\">127</td><td data-value=\"9027\">9027</td>"
                "<td data-value=\"13.5\">13.50</td><td>forecast</td>"),
      std::string::npos);
}

TEST(ReportTables, IdsStayUnique) {
  Report r = Sample();
  r.curves.push_back(r.curves[0]);  // the same metric twice
  const std::string html = RenderReport(r);
  EXPECT_NE(Table(html, "table-curve-like_count-x"), "");
  EXPECT_NE(Table(html, "table-curve-like_count-x-2"), "");
  EXPECT_NE(html.find("id=\"chart-curve-like_count-median-2\""), std::string::npos);
  static const std::regex id_attribute(" id=\"([^\"]+)\"");
  std::set<std::string> ids;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), id_attribute); it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(ids.insert((*it)[1]).second) << "id twice: " << (*it)[1];
  }
}

// ---- The log age axis ----

TEST(ReportAxis, LogAgeTicksAreInOrderInsideThePlot) {
  const LogAxis axis = LogAgeAxis(700, 20 * 86400, 64, 564);
  EXPECT_EQ(axis.lo, 600);
  EXPECT_EQ(axis.hi, 2592000);
  std::vector<std::string> labels;
  for (const Tick& t : axis.ticks) labels.push_back(t.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"10 min", "1 h", "6 h", "1 d", "7 d", "30 d"}));
  EXPECT_DOUBLE_EQ(axis.ticks.front().position, 64);
  EXPECT_DOUBLE_EQ(axis.ticks.back().position, 564);
  EXPECT_NEAR(axis.Position(6000), 64 + 500 * std::log(10.0) / std::log(4320.0), 1e-9) << "log, not linear";

  const double cases[][2] = {{700, 20 * 86400}, {30, 30}, {3600, 3600}, {0.2, 0.5}, {1e-3, 1e9},
                             {kNaN, kNaN},      {-5, 0},  {kInf, 1},    {5e8, 6e8}, {1, 31536000}};
  for (const auto& c : cases) {
    const LogAxis a = LogAgeAxis(c[0], c[1], 64, 564);
    ASSERT_GE(a.ticks.size(), 2u) << c[0] << " " << c[1];
    EXPECT_LT(a.lo, a.hi);
    for (std::size_t i = 0; i < a.ticks.size(); ++i) {
      const Tick& t = a.ticks[i];
      EXPECT_TRUE(std::isfinite(t.position));
      EXPECT_GE(t.position, 64 - 1e-9) << t.label;
      EXPECT_LE(t.position, 564 + 1e-9) << t.label;
      EXPECT_FALSE(t.label.empty());
      if (i) {
        EXPECT_GT(t.value, a.ticks[i - 1].value);
      }
      if (i) {
        EXPECT_GT(t.position, a.ticks[i - 1].position);
      }
    }
    if (std::isfinite(c[0]) && c[0] > 0) {
      EXPECT_LE(a.lo, c[0]);
    }
    if (std::isfinite(c[1]) && c[1] > 0 && c[1] >= c[0]) {
      EXPECT_GE(a.hi, c[1]);
    }
  }
}

TEST(ReportAxis, TheChartDrawsTheAxisTicksInsideThePlot) {
  const std::string html = RenderReport(Sample());
  const std::string svg = SvgFragments(html).at(0);
  std::vector<double> xs;
  double axis_from = kNaN, axis_to = kNaN;
  XmlProblem(svg, [&](const Element& e) {
    if (e.name != "line") return;
    const auto cls = e.attributes.find("class");
    if (cls != e.attributes.end() && cls->second == "x-tick") xs.push_back(std::stod(e.attributes.at("x1")));
    // A horizontal line across the plot: the x axis, or a grid line (they span the same width).
    if (cls == e.attributes.end() && e.attributes.count("y1") && e.attributes.at("y1") == e.attributes.at("y2") &&
        std::stod(e.attributes.at("x2")) - std::stod(e.attributes.at("x1")) > 400) {
      axis_from = std::stod(e.attributes.at("x1")), axis_to = std::stod(e.attributes.at("x2"));
    }
  });
  ASSERT_EQ(xs.size(), 6u) << svg;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_GE(xs[i], axis_from);
    EXPECT_LE(xs[i], axis_to);
    if (i) {
      EXPECT_GT(xs[i], xs[i - 1]);
    }
  }
  EXPECT_NE(svg.find(">age (log scale)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">likes</text>"), std::string::npos) << "the y axis label";
  EXPECT_NE(svg.find(">10 min</text>"), std::string::npos);
  EXPECT_NE(svg.find(">30 d</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title id=\"chart-curve-like_count-median-title\">"), std::string::npos);
  EXPECT_NE(svg.find("<desc id=\"chart-curve-like_count-median-desc\">"), std::string::npos);
  EXPECT_NE(svg.find("role=\"img\""), std::string::npos);
  EXPECT_NE(svg.find("x (120 posts)"), std::string::npos) << "the legend";
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos) << "the second network's line is dashed";
}

// The survival section: a line per collection over the ages, gaps where no share is known; its
// table a row per collection and age, the share in percent (n/a when none is known).
TEST(ReportSurvival, ALinePerCollectionAndEveryCountInTheTable) {
  const Report r = Sample();
  const std::string html = RenderReport(r);
  const std::string table = Table(html, "table-survival");
  ASSERT_NE(table, "");
  EXPECT_EQ(Count(table, "<tr><th scope=\"row\">"), 4u);
  EXPECT_EQ(CellValues(table),
            (std::vector<std::string>{"3600", "100", "90", "10", "0", "90", "4", "0", "0", "0", "3", "3",
                                      "86400", "80", "60", "15", "5", "80", "8", "1", "1", "1", "2", "2",
                                      "3600", "10", "10", "0", "0", "100", "0", "0", "0", "0", "0", "0",
                                      "86400", "4", "0", "0", "4", "0", "0", "0", "0", "0", "0"}))
      << "the last row's share is n/a: none of its posts is known";
  EXPECT_NE(table.find("<td class=\"na\">n/a</td>"), std::string::npos);
  EXPECT_NE(table.find("<th scope=\"row\">election night</th><td data-value=\"86400\">1 d</td>"), std::string::npos);
  const auto svgs = SvgFragments(html);
  const auto chart = std::find_if(svgs.begin(), svgs.end(),
                                  [](const std::string& s) { return s.find("id=\"chart-survival\"") != std::string::npos; });
  ASSERT_NE(chart, svgs.end());
  EXPECT_EQ(XmlProblem(*chart), "");
  EXPECT_EQ(Count(*chart, "<path d=\"M"), 1u) << "the first collection's line (two points)";
  EXPECT_EQ(Count(*chart, "<circle"), 1u) << "the second's one known point, a dot";
  EXPECT_NE(chart->find(">all tracked posts</text>"), std::string::npos) << "the legend";
  EXPECT_NE(chart->find(">election night</text>"), std::string::npos);
  EXPECT_NE(chart->find(">1 h</text>"), std::string::npos);
  EXPECT_NE(chart->find(">1 d</text>"), std::string::npos);
  EXPECT_NE(chart->find(">100%</text>"), std::string::npos);
}

// ---- Empty and non-finite data ----

TEST(ReportEmpty, NoDataGivesNotesNotCharts) {
  const std::string html = RenderReport(Report{});
  EXPECT_EQ(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<table"), std::string::npos);
  EXPECT_EQ(Count(html, "class=\"empty\""), 5u);
  EXPECT_NE(html.find("<title>tweetkeeper report</title>"), std::string::npos);

  Report r;
  r.curves.push_back({"Likes", "like_count", "likes", "", {}, {}});
  r.curves.push_back({"Replies", "reply_count", "replies", "", {}, {{"x", {}, {}, {}, {}, 0}}});
  r.lifespans.push_back({"k", "Half", "age", "", {}, {}});
  r.lifespans.push_back({"k2", "Half", "age", "", {0, 60, kInf}, {{"x", {0, 0}}}});
  r.cost.push_back({"2026-11-27", 0, 0, kNaN, false});
  r.timeliness.push_back({"under 1 h", 0, kNaN, kNaN, kNaN});
  const std::string some = RenderReport(r);
  EXPECT_EQ(some.find("<svg"), std::string::npos) << "nothing drawable: no chart";
  EXPECT_GE(Count(some, "class=\"empty\""), 6u);
  EXPECT_NE(Table(some, "table-curve-reply_count-x"), "") << "the table stays, empty";
  EXPECT_NE(Table(some, "table-cost").find("<td class=\"na\">n/a</td>"), std::string::npos);
}

TEST(ReportEmpty, NonFiniteValuesNeverReachTheSvg) {
  Report r = Sample();
  Band& b = r.curves[0].bands[0];
  b.ages_seconds = {0, -5, kNaN, 600, 3600, kInf, 86400, 604800};
  b.p25 = {0, 1, 2, kNaN, 3, 4, 5, 6};
  b.median = {1, 2, 3, 4, kNaN, 5, 6, kInf};
  b.p75 = {2, 3, 4, 5, 6, 7, -kInf, 9};  // one short of nothing; a missing entry is n/a too
  b.p75.pop_back();
  r.curves[0].top[0].points = {{kNaN, 1}, {600, kNaN}, {3600, 5}, {0, 3}, {86400, kInf}, {604800, 7}};
  r.curves[0].top[1].points = {{kNaN, kNaN}};
  r.lifespans[0].edges_seconds = {0, 60, kNaN, kInf};
  r.lifespans[0].series[1].counts = {1, -3};
  r.timeliness.push_back({"nan", 1, kNaN, kInf, -kInf});
  r.cost.push_back({"2026-11-28", 1, 1, kInf, true});
  r.cost.push_back({"2026-11-29", 1, 1, -4, true});
  r.survival[0].ages[1].share = kInf;
  r.survival[0].ages.push_back({kNaN, 1, 1, 0, 0, -kInf, 0, 0, 0, 0, 0, 0});
  const std::string html = RenderReport(r);
  const auto svgs = SvgFragments(html);
  ASSERT_EQ(svgs.size(), 6u);
  for (const std::string& svg : svgs) {
    EXPECT_EQ(XmlProblem(svg,
                         [&](const Element& e) {
                           for (const auto& [name, value] : e.attributes) {
                             if (name == "id" || name == "aria-labelledby") continue;
                             std::string lower = value;
                             for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                             EXPECT_EQ(lower.find("nan"), std::string::npos) << e.name << " " << name << "=" << value;
                             EXPECT_EQ(lower.find("inf"), std::string::npos) << e.name << " " << name << "=" << value;
                             EXPECT_EQ(lower.find("e+"), std::string::npos) << e.name << " " << name << "=" << value;
                           }
                         }),
              "")
        << svg;
  }
  const std::string band = Table(html, "table-curve-like_count-x");
  EXPECT_EQ(Count(band, "<tr><th scope=\"row\""), 8u) << "every row stays in the table";
  EXPECT_EQ(Count(band, "n/a"), 1u + 1 + 1 + 1 + 1 + 1 + 1)
      << "NaN age, NaN p25, NaN median, inf age, inf median, -inf p75, missing p75";
  EXPECT_EQ(Count(html, "data-value=\"\""), 0u);
  for (const std::string& v : CellValues(html)) EXPECT_TRUE(std::isfinite(std::strtod(v.c_str(), nullptr))) << v;
}

// ---- The page ----

TEST(ReportPage, SelfContainedAccessibleAndInOrder) {
  const std::string html = RenderReport(Sample());
  EXPECT_EQ(html.rfind("<!doctype html>\n<html lang=\"en\">", 0), 0u);
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_NE(html.find("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"), std::string::npos);
  EXPECT_NE(html.find("<title>Engagement &amp; cost</title>"), std::string::npos);
  EXPECT_NE(html.find("@media print"), std::string::npos);
  // Nothing to fetch: no script, no external resource; the only URL is the SVG namespace.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(Count(html, "http"), Count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(Count(html, "url("), Count(html, "url(#")) << "only patterns of the same document";
  // Headings start at h1 and never skip a level going down.
  static const std::regex heading("<h([1-6])[ >]");
  int previous = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), heading); it != std::sregex_iterator(); ++it) {
    const int level = std::stoi((*it)[1]);
    if (previous == 0) {
      EXPECT_EQ(level, 1);
    }
    EXPECT_LE(level, previous + 1);
    previous = level;
  }
  // The forecast days are drawn differently and labelled.
  const std::string cost = SvgFragments(html).back();
  EXPECT_EQ(Count(cost, "fill=\"url(#chart-cost-fill-forecast)\""), 3u + 1) << "three bars and the legend";
  EXPECT_NE(cost.find(">forecast</text>"), std::string::npos);
  EXPECT_NE(cost.find(">11-20</text>"), std::string::npos);
  // Every table sits in a scrolling wrapper.
  EXPECT_EQ(Count(html, "<div class=\"table-wrap\""), Count(html, "<table "));
}

}  // namespace
}  // namespace tweetkeeper::report
