// tweetkeeper-report: one self-contained HTML file (report_html.hpp) about a set of posts (all,
// --network, --since/--until, --ids FILE, --follows): how their likes and reposts grew with age
// (each network's median and its spread, and the top posts), how long they took to reach half and
// nine tenths of their latest likes, how late refreshes ran by the posts' age, and the requests
// and cost per day with the forecast. It reads through metrics_at(), lifespans, batches,
// daily_usage and forecast() in one REPEATABLE READ transaction, so every chart shows one moment.
// Exit: 0 written, 1 database or output error, 2 bad usage or unreadable input, 3 some lines of
// --ids were bad (the report made of the others).

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "cli/tool_command_line.hpp"
#include "dsn/dsn.hpp"
#include "export/selection.hpp"
#include "report/report_html.hpp"

namespace ex = tweetkeeper::exporter;
namespace rp = tweetkeeper::report;

namespace {

// The ages the curves are drawn at (seconds): 10 min to 30 days, about evenly on a log axis.
constexpr double kAges[] = {600, 1800, 3600, 7200, 14400, 28800, 57600, 86400, 172800, 345600, 604800, 1209600, 2592000};
constexpr int kTopPosts = 5;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

struct Options {
  std::string dsn, dsn_file, output;
  ex::PostFilter filter;
  bool follows = false;
  int forecast_days = 7;
};

std::optional<int> ParseOptions(int argc, char** argv, Options& o) {
  CLI::App app{"tweetkeeper-report: writes one self-contained HTML report (curves, lifespans, timeliness, cost) of "
               "tracked posts.",
               "tweetkeeper-report"};
  tweetkeeper::worker::AddDsnOptions(app, o.dsn, o.dsn_file, "tweetkeeper_reader");
  ex::AddSelectionOptions(app, o.filter);
  app.add_flag("--follows", o.follows,
               "Only the posts of followed accounts (tweetkeeper.follow; X's: those whose payloads are kept)");
  tweetkeeper::worker::AddBounded(app, "--forecast-days", o.forecast_days, "Days of forecast after today", 0, 60);
  app.add_option("--output,-o", o.output, "The HTML file to write")->required();
  if (const std::optional<int> exit_code = tweetkeeper::worker::ParseToolCommandLine(
          app, argc, argv, o.dsn, o.dsn_file, "tweetkeeper-report", tweetkeeper::worker::UsageErrors::kCli11))
    return exit_code;
  o.filter.dsn = o.dsn;
  return std::nullopt;
}

double Num(const pqxx::field& f) { return f.is_null() ? kNone : f.as<double>(); }

// The selected posts, into the temporary table sel (post_id, network, url, likes).
std::uint64_t Selected(pqxx::work& tx, const std::string& condition) {
  tx.exec("CREATE TEMP TABLE sel ON COMMIT DROP AS SELECT p.post_id, p.network, p.url, p.like_count "
          "FROM tweetkeeper.posts p WHERE " + condition);
  tx.exec("ANALYZE sel");
  return tx.exec1("SELECT count(*) FROM sel")[0].as<std::uint64_t>();
}

std::vector<rp::CurveChart> Curves(pqxx::work& tx) {
  std::string ages;
  for (double a : kAges) ages += (ages.empty() ? "" : ",") + fmt::format("{:.0f} seconds", a);
  tx.exec("CREATE TEMP TABLE m ON COMMIT DROP AS SELECT s.network, x.post_id, extract(epoch FROM x.age)::float8 AS age, "
          "x.like_interpolated, x.retweet_interpolated FROM tweetkeeper.metrics_at(ARRAY(SELECT post_id FROM sel), '{" +
          ages + "}'::interval[]) x JOIN sel s USING (post_id)");
  std::vector<rp::CurveChart> charts;
  for (const auto& [metric, column, title, label] :
       {std::tuple{"like_count", "like_interpolated", "Likes", "likes"},
        std::tuple{"retweet_count", "retweet_interpolated", "Reposts", "reposts (retweets, boosts)"}}) {
    rp::CurveChart chart;
    chart.title = title;
    chart.metric = metric;
    chart.value_label = label;
    chart.note = "Each post's count at each age, interpolated between its observations; a post counts at the ages it "
                 "was observed up to.";
    std::map<std::string, rp::Band> bands;
    for (const auto& row : tx.exec(std::string("SELECT network, age, count(") + column + "), percentile_cont(0.25) "
                                   "WITHIN GROUP (ORDER BY " + column + "), percentile_cont(0.5) WITHIN GROUP (ORDER BY " +
                                   column + "), percentile_cont(0.75) WITHIN GROUP (ORDER BY " + column +
                                   ") FROM m GROUP BY network, age ORDER BY network, age")) {
      rp::Band& b = bands[row[0].c_str()];
      b.network = row[0].c_str();
      b.ages_seconds.push_back(row[1].as<double>());
      b.p25.push_back(Num(row[3]));
      b.median.push_back(Num(row[4]));
      b.p75.push_back(Num(row[5]));
      b.posts = std::max<std::size_t>(b.posts, row[2].as<std::size_t>());
    }
    for (auto& [network, band] : bands) chart.bands.push_back(std::move(band));
    // The top posts by their latest count, each's curve.
    std::map<std::int64_t, std::size_t> index;
    for (const auto& row : tx.exec(std::string("SELECT m.post_id, s.url, m.age, m.") + column +
                                   " FROM m JOIN sel s USING (post_id) WHERE m.post_id IN (SELECT p.post_id FROM "
                                   "tweetkeeper.posts p JOIN sel USING (post_id) WHERE p." + metric +
                                   " IS NOT NULL ORDER BY p." + metric + " DESC, p.post_id LIMIT " +
                                   std::to_string(kTopPosts) + ") AND m." + column +
                                   " IS NOT NULL ORDER BY (SELECT p." + metric +
                                   " FROM tweetkeeper.posts p WHERE p.post_id = m.post_id) DESC, m.post_id, m.age")) {
      const std::int64_t id = row[0].as<std::int64_t>();
      if (!index.count(id)) {
        index[id] = chart.top.size();
        chart.top.push_back({row[1].c_str(), {}});
      }
      chart.top[index[id]].points.push_back({row[2].as<double>(), row[3].as<double>()});
    }
    charts.push_back(std::move(chart));
  }
  return charts;
}

std::vector<rp::Histogram> Lifespans(pqxx::work& tx) {
  const std::vector<double> edges = {0, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400, kInf};
  std::string bounds;  // width_bucket's thresholds: the finite edges after 0
  for (std::size_t i = 1; i + 1 < edges.size(); ++i) bounds += (bounds.empty() ? "" : ",") + fmt::format("{:.0f}", edges[i]);
  std::vector<rp::Histogram> out;
  for (const auto& [column, title, label] : {std::tuple{"age_50", "Time to half of the likes",
                                                        "age at which a post had half of its latest likes"},
                                             std::tuple{"age_90", "Time to nine tenths of the likes",
                                                        "age at which a post had 90% of its latest likes"}}) {
    rp::Histogram h;
    h.key = std::string("like_count-") + column;
    h.title = title;
    h.x_label = label;
    h.note = "Posts with at least one like; the age is interpolated between the observations around the moment.";
    h.edges_seconds = edges;
    std::map<std::string, std::vector<std::int64_t>> series;
    for (const auto& row : tx.exec(std::string("SELECT l.network, width_bucket(extract(epoch FROM l.") + column +
                                   ")::float8, '{" + bounds + "}'::float8[]), count(*) FROM tweetkeeper.lifespans l "
                                   "JOIN sel s ON s.post_id = l.post_id WHERE l.metric = 'like_count' AND l." + column +
                                   " IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2")) {
      auto& counts = series[row[0].c_str()];
      counts.resize(edges.size() - 1, 0);
      const int bin = row[1].as<int>();
      if (bin >= 0 && bin < static_cast<int>(counts.size())) counts[bin] += row[2].as<std::int64_t>();
    }
    for (auto& [network, counts] : series) h.series.push_back({network, std::move(counts)});
    out.push_back(std::move(h));
  }
  return out;
}

std::vector<rp::TimelinessRow> Timeliness(pqxx::work& tx) {
  std::vector<rp::TimelinessRow> rows;
  for (const auto& row : tx.exec(
           "WITH r AS (SELECT extract(epoch FROM b.claimed_at - t.created_at) AS age, "
           "greatest(extract(epoch FROM b.claimed_at - b.oldest_due_at), 0) AS late "
           "FROM tweetkeeper.batches b CROSS JOIN LATERAL unnest(b.tweet_ids) i(id) JOIN sel s ON s.post_id = i.id "
           "JOIN tweetkeeper.tweets t ON t.tweet_id = i.id WHERE b.outcome = 'completed') "
           "SELECT width_bucket(age, '{3600,21600,86400,604800,2592000}'::float8[]) AS k, count(*), "
           "percentile_cont(0.5) WITHIN GROUP (ORDER BY late), percentile_cont(0.9) WITHIN GROUP (ORDER BY late), "
           "max(late) FROM r GROUP BY 1 ORDER BY 1")) {
    static const char* kBuckets[] = {"under 1 h", "1 h to 6 h", "6 h to 1 d", "1 d to 7 d", "7 d to 30 d", "30 d or more"};
    const int k = row[0].as<int>();
    rows.push_back({kBuckets[std::clamp(k, 0, 5)], row[1].as<std::int64_t>(), Num(row[2]), Num(row[3]), Num(row[4])});
  }
  return rows;
}

// Every tracked post, then the 7 largest collections, by age (tweetkeeper.mortality_by_age):
// whatever the selection, which leaves gone posts out.
std::vector<rp::Survival> Survival(pqxx::work& tx) {
  std::vector<rp::Survival> out;
  std::optional<std::string> last;
  for (const auto& row : tx.exec(
           "SELECT m.collection, extract(epoch FROM m.age)::float8, m.posts, m.available, m.gone, m.unknown, "
           "m.share_available::float8, m.deleted, m.private, m.suspended, m.account_gone, m.hidden, m.missing "
           "FROM tweetkeeper.mortality_by_age m "
           "LEFT JOIN (SELECT c.collection, count(*) AS n FROM tweetkeeper.collection_posts c GROUP BY 1) k "
           "ON k.collection = m.collection "
           "WHERE m.collection IS NULL OR m.collection IN (SELECT c.collection FROM tweetkeeper.collection_posts c "
           "GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 7) "
           "ORDER BY m.collection IS NOT NULL, k.n DESC, m.collection, m.age")) {
    // (NULL: every post; a collection may be named anything, that too.)
    std::optional<std::string> key;
    if (!row[0].is_null()) key = row[0].c_str();
    if (out.empty() || key != last) out.push_back({key ? *key : "all tracked posts", {}});
    last = key;
    rp::SurvivalAge a;
    a.age_seconds = row[1].as<double>();
    a.posts = row[2].as<std::int64_t>();
    a.available = row[3].as<std::int64_t>();
    a.gone = row[4].as<std::int64_t>();
    a.unknown = row[5].as<std::int64_t>();
    a.share = Num(row[6]);
    a.deleted = row[7].as<std::int64_t>();
    a.private_posts = row[8].as<std::int64_t>();
    a.suspended = row[9].as<std::int64_t>();
    a.account_gone = row[10].as<std::int64_t>();
    a.hidden = row[11].as<std::int64_t>();
    a.missing = row[12].as<std::int64_t>();
    out.back().ages.push_back(a);
  }
  return out;
}

std::vector<rp::CostDay> Cost(pqxx::work& tx, int forecast_days, std::string* note) {
  std::vector<rp::CostDay> days;
  for (const auto& row : tx.exec(
           "SELECT u.day::text, sum(u.requests)::bigint, sum(u.billed_reads)::bigint, "
           "sum(u.billed_reads * coalesce(c.price_per_read, 0.005))::float8 FROM tweetkeeper.daily_usage u "
           "LEFT JOIN tweetkeeper.credentials c ON c.name = u.credential "
           "WHERE u.day > (now() AT TIME ZONE 'UTC')::date - 30 GROUP BY u.day ORDER BY u.day")) {
    days.push_back({row[0].c_str(), row[1].as<std::int64_t>(), row[2].as<std::int64_t>(), row[3].as<double>(), false});
  }
  // The forecast per day: forecast() counts from now, so each day is the difference of two spans.
  const double price = tx.exec1("SELECT coalesce(avg(price_per_read), 0.005)::float8 FROM tweetkeeper.credentials "
                                "WHERE provider = 'x-v2'")[0].as<double>();
  if (forecast_days > 0) {
    for (const auto& row : tx.exec(
             "SELECT ((now() AT TIME ZONE 'UTC')::date + d)::text, (f.requests - lag(f.requests, 1, 0) OVER w)::bigint, "
             "(f.billed_reads - lag(f.billed_reads, 1, 0) OVER w)::bigint FROM generate_series(1, " +
             std::to_string(forecast_days) + ") d CROSS JOIN LATERAL tweetkeeper.forecast(d * interval '1 day') f "
             "WINDOW w AS (ORDER BY d) ORDER BY d")) {
      const std::int64_t billed = row[2].as<std::int64_t>();
      days.push_back({row[0].c_str(), row[1].as<std::int64_t>(), billed, static_cast<double>(billed) * price, true});
    }
  }
  *note = fmt::format("Measured: the last 30 UTC days of daily_usage, billed reads at each credential's price. "
                      "Forecast: X's refreshes from now on under each post's refresh policy (forecast()), at {:.4f} a billed read; "
                      "Bluesky and Mastodon cost no money.", price);
  return days;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const std::optional<int> exit_code = ParseOptions(argc, argv, o)) return *exit_code;
  const std::unique_ptr<pqxx::connection> conn = ex::ConnectOrSay(o.dsn, "tweetkeeper-report");
  if (!conn) return ex::kExitDatabase;
  ex::Selection selection;
  if (const std::optional<int> exit_code = ex::Select(*conn, o.filter, selection, "tweetkeeper-report")) return *exit_code;
  std::string condition = selection.exported;
  if (o.follows) {
    // A followed account's posts: Bluesky's and Mastodon's by their URL's author (a DID; a user
    // on the account's server), X's by the author of their kept payload (tweetkeeper.payloads:
    // without payloads an X post does not say whose it is).
    condition +=
        " AND p.post_id IN (SELECT r.tweet_id FROM tweetkeeper.post_refs r JOIN tweetkeeper.followed_accounts f "
        "ON f.network = r.network AND f.host = r.host AND r.author IN (f.account_id, f.handle) "
        "UNION ALL SELECT x.tweet_id FROM tweetkeeper.payloads x JOIN tweetkeeper.followed_accounts f "
        "ON f.network = 'x' AND x.tweet_id > 0 AND x.payload->>'author_id' = f.account_id)";
  }
  rp::Report report;
  report.title = "tweetkeeper report";
  const auto started = std::chrono::steady_clock::now();
  try {
    pqxx::work tx(*conn);
    tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    report.generated_at = tx.exec1("SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI \"UTC\"')")[0].c_str();
    const std::uint64_t posts = Selected(tx, condition);
    std::string what = o.filter.network.empty() ? "all networks" : o.filter.network;
    if (!o.filter.since.empty()) what += ", created since " + o.filter.since;
    if (!o.filter.until.empty()) what += ", created before " + o.filter.until;
    if (!o.filter.collection.empty()) what += ", collection " + o.filter.collection;
    if (!o.filter.ids_file.empty()) what += ", the posts of " + o.filter.ids_file;
    if (o.follows) what += ", posts of followed accounts";
    report.selection = fmt::format("{} posts ({}); deleted and unavailable ones left out", posts, what);
    for (const auto& row : tx.exec("SELECT network, count(*), sum(like_count) FROM sel GROUP BY 1 ORDER BY 1"))
      report.summary.push_back({std::string(row[0].c_str()) + " posts",
                                fmt::format("{} ({} likes in all)", row[1].c_str(), row[2].is_null() ? "0" : row[2].c_str())});
    report.curves = Curves(tx);
    report.lifespans = Lifespans(tx);
    report.survival = Survival(tx);
    report.timeliness = Timeliness(tx);
    report.timeliness_note = "How late the oldest post of each refresh's batch was behind its due time (an upper bound "
                             "for the others), by the post's age at the refresh; the batches the database still keeps.";
    report.cost = Cost(tx, o.forecast_days, &report.cost_note);
    tx.commit();
  } catch (const std::exception& e) {
    std::cerr << "tweetkeeper-report: " << tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn) << std::endl;
    return ex::kExitDatabase;
  }
  const std::string html = rp::RenderReport(report);
  const std::string partial = o.output + ".partial";
  std::FILE* out = std::fopen(partial.c_str(), "wb");
  if (!out) {
    std::cerr << "tweetkeeper-report: cannot write " << partial << ": " << std::strerror(errno) << std::endl;
    return ex::kExitUsage;
  }
  const bool written = std::fwrite(html.data(), 1, html.size(), out) == html.size();
  if (std::fclose(out) != 0 || !written || std::rename(partial.c_str(), o.output.c_str()) != 0) {
    std::cerr << "tweetkeeper-report: cannot write " << o.output << ": " << std::strerror(errno) << std::endl;
    std::remove(partial.c_str());
    return ex::kExitDatabase;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cerr << fmt::format("tweetkeeper-report: {} written ({} KB) in {:.1f} s: {}", o.output, html.size() / 1024, secs,
                           report.selection)
            << std::endl;
  return selection.bad_lines ? ex::kExitBadLines : 0;
}
