// tweetkeeper-export: writes what tweetkeeper keeps of a set of posts (all, a network, a time
// range, the ids or URLs in a file) as twarc2's JSON lines (X posts' latest payloads, a page per
// batch that saw them, at most 100 posts each) or CSV (one row per post with its latest counts,
// or with --history one row per observation). It reads through a cursor in one REPEATABLE READ
// transaction: constant memory, one consistent snapshot. Posts found deleted or unavailable
// (a tombstone) are left out. A file is written as FILE.partial and renamed when complete.
// --format dataset DIR writes a dataset to share (export/dataset.hpp) into DIR.partial, renamed
// to DIR once complete.
// Exit: 0 all written, 1 database or output error, 2 bad usage or unreadable input, 3 some lines
// of --ids were bad (the others exported), as tweetkeeper-import.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <tuple>
#include <vector>

#include "cli/progress.hpp"
#include "cli/tool_command_line.hpp"
#include "dsn/dsn.hpp"
#include "export/dataset.hpp"
#include "export/export_format.hpp"
#include "export/selection.hpp"
#include "ids/id_reader.hpp"
#include "provider/x_v2.hpp"
#include "queue/payload.hpp"

namespace ex = tweetkeeper::exporter;
namespace im = tweetkeeper::importer;
using tweetkeeper::worker::ArrayLiteral;
using tweetkeeper::worker::TextArrayLiteral;
using tweetkeeper::worker::Thousands;

namespace {

using ex::kExitBadLines;
using ex::kExitDatabase;
using ex::kExitUsage;
using ex::Selection;
constexpr const char* kVersion = "tweetkeeper-export " TK_VERSION;  // (the extension's default_version)
constexpr int kFetch = 2000;        // rows per FETCH
constexpr std::size_t kPage = 100;  // posts per twarc2 page, as GET /2/tweets answers

// An ISO 8601 UTC rendering of a timestamptz column, in SQL.
std::string Iso(const std::string& column) {
  return "to_char(" + column + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')";
}

std::optional<std::string> Field(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return std::string(f.c_str());
}

// Whether PostgreSQL typed the column as a number, a time or a boolean (pg_type.dat's OIDs): its
// text is never a formula, and "-1" must stay a number. Any other column is text, which CsvRow
// keeps spreadsheets from reading as a formula.
bool Typed(pqxx::oid type) {
  switch (type) {
    case 16: case 20: case 21: case 23: case 26: case 700: case 701: case 790:    // bool, ints, oid, floats, money
    case 1082: case 1083: case 1114: case 1184: case 1186: case 1266: case 1700:  // times, numeric
      return true;
    default:
      return false;
  }
}

struct Options {
  std::string dsn, dsn_file, format, output = "-", ages_text, dir;
  ex::PostFilter filter;  // --network, --since, --until, --collection, --ids
  bool history = false, answer_counts = false;
  bool x_permission = false;      // --format dataset: X's written permission for more ids
  std::uint64_t x_ids_shared = 0;  // --format dataset: X ids given to the recipient in the last 30 days
  int progress_every = 5;
  std::vector<ex::Age> ages;  // --format curves and dataset

  bool twarc2() const { return format == "twarc2"; }
  bool curves() const { return format == "curves"; }
  bool dataset() const { return format == "dataset"; }
  bool csv_like() const { return format != "twarc2"; }
};

// The ages of a dataset's curves.csv unless --ages says otherwise.
constexpr const char* kDatasetAges = "1h,6h,24h,7d,30d";

// The command line, checked. An exit code when the export should not run (--help: 0).
std::optional<int> ParseOptions(int argc, char** argv, Options& o) {
  CLI::App app{"tweetkeeper-export: writes tracked posts as twarc2 JSON lines or CSV (posts, observations, curves, "
               "lifespans).", "tweetkeeper-export"};
  app.footer(
      "twarc2: X posts' latest payloads (tweetkeeper.payloads first or changed), one line per page of at most 100 "
      "posts seen by one batch, as GET /2/tweets answered them, with twarc2's __twarc object and tweetkeeper's "
      "provenance in __tweetkeeper; twarc2's own tools (twarc2 flatten, twarc-csv) read it. Each tweet's "
      "public_metrics are its latest counts (the answer's own in __tweetkeeper.answer_public_metrics; "
      "--answer-counts keeps them in place). csv: one row per post "
      "(post_id, network, url, created_at, author, text, the latest counts, updated_at, state); --history: one row "
      "per observation. curves: one row per post, each count at each of --ages (interpolated between observations, "
      "<count>_<age>; the last observation at or before it, <count>_<age>_observed; empty past the last "
      "observation). lifespans: one row per post and count: its latest value and the ages (seconds) at which it "
      "reached 50% and 90% of it. dataset DIR: a new directory of what the networks' terms let one share: X post "
      "ids (x_ids.txt; at most 1,500,000 to a recipient in 30 days without X's written permission), Bluesky at:// "
      "URIs, Mastodon status URLs, one a line; history.csv (every observation, the time to the microsecond) and "
      "curves.csv (--ages, by default " + std::string(kDatasetAges) + "); datasheet.json and datasheet.md (what was "
      "collected, when, by which policy, how much survives, what was left out and why, the terms); SHA256SUMS. It is "
      "written into DIR.partial and renamed to DIR once complete. Posts found deleted or unavailable are left out. "
      "--ids: a file of ids or post URLs, one per line. Exit: 0 all written, 1 database or output error, 2 bad usage or unreadable input, 3 some lines of --ids "
      "were bad (the others exported).");
  app.add_option("--format", o.format, "twarc2, csv, curves, lifespans or dataset")
      ->required()
      ->check(CLI::IsMember({"twarc2", "csv", "curves", "lifespans", "dataset"}));
  app.add_flag("--history", o.history, "csv: one row per observation instead of one per post");
  app.add_option("--ages", o.ages_text, "curves and dataset: the ages, e.g. 1h,6h,24h,7d (s, m, h, d, w)");
  app.add_option("dir", o.dir, "dataset: the directory to make (it must not exist)");
  app.add_option("--x-ids-shared", o.x_ids_shared,
                 "dataset: X post ids already given to this recipient in the last 30 days (X's limit counts them)")
      ->capture_default_str();
  app.add_flag("--x-written-permission", o.x_permission,
               "dataset: X gave you written permission to share more than 1,500,000 post ids in 30 days");
  app.add_flag("--answer-counts", o.answer_counts,
               "twarc2: each tweet's public_metrics as the answer that carried its content gave them, not its latest");
  ex::AddSelectionOptions(app, o.filter);
  app.add_option("--output,-o", o.output, "The file to write; - writes stdout")->capture_default_str();
  tweetkeeper::worker::AddDsnOptions(app, o.dsn, o.dsn_file, "tweetkeeper_reader");
  tweetkeeper::worker::AddProgressIntervalOption(app, o.progress_every);
  if (const std::optional<int> exit_code = tweetkeeper::worker::ParseToolCommandLine(
          app, argc, argv, o.dsn, o.dsn_file, "tweetkeeper-export", tweetkeeper::worker::UsageErrors::kCli11))
    return exit_code;
  if (o.history && o.format != "csv") {
    std::cerr << "tweetkeeper-export: --history needs --format csv (twarc2 pages hold payloads, not observations)"
              << std::endl;
    return kExitUsage;
  }
  if (o.dataset()) {
    if (o.dir.empty() && o.output != "-") o.dir = o.output;
    if (o.dir.empty() || o.history || o.answer_counts) {
      std::cerr << "tweetkeeper-export: --format dataset takes a directory (tweetkeeper-export --format dataset DIR), "
                   "and neither --history nor --answer-counts"
                << std::endl;
      return kExitUsage;
    }
    if (o.ages_text.empty()) o.ages_text = kDatasetAges;
  } else if (!o.dir.empty() || o.x_permission || o.x_ids_shared) {
    std::cerr << "tweetkeeper-export: a directory, --x-ids-shared and --x-written-permission are for --format dataset"
              << std::endl;
    return kExitUsage;
  }
  if (!o.dataset() && o.curves() != !o.ages_text.empty()) {
    std::cerr << "tweetkeeper-export: " << (o.curves() ? "--format curves needs --ages (e.g. --ages 1h,6h,24h,7d)"
                                                       : "--ages is for --format curves")
              << std::endl;
    return kExitUsage;
  }
  if (o.curves() || o.dataset()) {
    std::string error;
    const auto ages = ex::ParseAges(o.ages_text, &error);
    if (!ages) {
      std::cerr << "tweetkeeper-export: --ages: " << error << std::endl;
      return kExitUsage;
    }
    o.ages = *ages;
  }
  if (o.answer_counts && !o.twarc2()) {
    std::cerr << "tweetkeeper-export: --answer-counts is for --format twarc2" << std::endl;
    return kExitUsage;
  }
  if (o.twarc2() && !o.filter.network.empty() && o.filter.network != "x") {
    std::cerr << "tweetkeeper-export: twarc2 is the X API's format; export " << o.filter.network
              << " posts with --format csv" << std::endl;
    return kExitUsage;
  }
  return std::nullopt;
}

// The rows to write, in order, and how many there are (for the progress line).
struct Queries {
  std::string rows, count;
};

Queries BuildQueries(const Options& o, const std::string& filter) {
  const std::string latest =
      "SELECT x.* FROM tweetkeeper.payloads x WHERE x.tweet_id = p.post_id ORDER BY x.seen_at DESC, x.lease_id DESC "
      "LIMIT 1";
  Queries q;
  if (o.twarc2()) {
    q.rows = "SELECT l.lease_id, to_char(l.seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"+00:00\"'), " +
             Iso("l.seen_at") + ", l.tweet_id, l.payload::text, l.author::text, p.retweet_count, p.reply_count, " +
             "p.like_count, p.quote_count, p.bookmark_count, p.impression_count, " + Iso("p.updated_at") +
             " FROM tweetkeeper.posts p " +
             "CROSS JOIN LATERAL (" + latest + ") l WHERE " + filter + " ORDER BY l.seen_at, l.lease_id, l.tweet_id";
    q.count = "SELECT count(*) FROM tweetkeeper.posts p WHERE " + filter +
              " AND EXISTS (SELECT 1 FROM tweetkeeper.payloads x WHERE x.tweet_id = p.post_id)";
  } else if (o.curves()) {
    // One call for every post (metrics_at is set-based), its rows by post and age, pivoted here.
    std::string ages;
    for (const ex::Age& a : o.ages) ages += (ages.empty() ? "" : ",") + std::to_string(a.seconds) + " seconds";
    q.rows = "SELECT p.post_id, p.network, p.url, " + Iso("p.created_at") + ", extract(epoch FROM m.age)::bigint, " +
             Iso("m.observed_before") + ", " + Iso("m.observed_after") +
             ", m.like_interpolated, m.retweet_interpolated, m.reply_interpolated, m.quote_interpolated, "
             "m.bookmark_interpolated, m.impression_interpolated, m.like_count, m.retweet_count, m.reply_count, "
             "m.quote_count, m.bookmark_count, m.impression_count "
             "FROM tweetkeeper.metrics_at(ARRAY(SELECT p.post_id FROM tweetkeeper.posts p WHERE " + filter +
             "), '{" + ages + "}'::interval[]) m JOIN tweetkeeper.posts p ON p.post_id = m.post_id "
             "ORDER BY m.post_id, m.age";
    q.count = "SELECT count(*) * " + std::to_string(o.ages.size()) + " FROM tweetkeeper.posts p WHERE " + filter;
  } else if (o.format == "lifespans") {
    q.rows = "SELECT p.post_id, p.network, p.url, l.metric, l.latest, " + Iso("l.latest_at") +
             ", round(extract(epoch FROM l.age_50), 3), round(extract(epoch FROM l.age_90), 3), l.still_changing "
             "FROM tweetkeeper.posts p JOIN tweetkeeper.lifespans l ON l.post_id = p.post_id WHERE " +
             filter + " ORDER BY p.post_id, l.metric";
    q.count = "SELECT count(*) FROM tweetkeeper.posts p JOIN tweetkeeper.lifespans l ON l.post_id = p.post_id WHERE " +
              filter;
  } else if (o.history) {
    q.rows = "SELECT p.post_id, p.network, p.url, " + Iso("h.observed_at") +
             ", h.like_count, h.retweet_count, h.reply_count, h.quote_count, h.bookmark_count, h.impression_count "
             "FROM tweetkeeper.posts p JOIN tweetkeeper.metric_history h ON h.tweet_id = p.post_id WHERE " +
             filter + " ORDER BY p.post_id, h.observed_at, h.lease_id";
    q.count =
        "SELECT count(*) FROM tweetkeeper.posts p JOIN tweetkeeper.metric_history h ON h.tweet_id = p.post_id "
        "WHERE " +
        filter;
  } else {
    q.rows = "SELECT p.post_id, p.network, p.url, " + Iso("p.created_at") +
             ", coalesce(l.author->>'username', l.payload->'author'->>'handle', l.payload->'account'->>'acct', "
             "p.author), coalesce(l.payload->>'text', l.payload->'record'->>'text', l.payload->>'content'), "
             "p.like_count, p.retweet_count, p.reply_count, p.quote_count, p.bookmark_count, p.impression_count, " +
             Iso("p.updated_at") + ", p.state FROM tweetkeeper.posts p LEFT JOIN LATERAL (" + latest +
             ") l ON true WHERE " + filter + " ORDER BY p.post_id";
    q.count = "SELECT count(*) FROM tweetkeeper.posts p WHERE " + filter;
  }
  return q;
}

// The output: stdout, or FILE.partial renamed to FILE once everything is written.
class Output {
 public:
  explicit Output(std::string path) : path_(std::move(path)), partial_(path_ + ".partial") {}

  bool to_file() const { return path_ != "-"; }
  std::string name() const { return to_file() ? path_ : "stdout"; }

  // False (said on stderr) when the file cannot be created.
  bool Open() {
    out_ = to_file() ? std::fopen(partial_.c_str(), "wb") : stdout;
    if (!out_)
      std::cerr << "tweetkeeper-export: cannot write " << partial_ << ": " << std::strerror(errno) << std::endl;
    return out_ != nullptr;
  }
  bool Write(const std::string& text) { return std::fwrite(text.data(), 1, text.size(), out_) == text.size(); }

  // Says why the export failed and removes the partial file: the exit code.
  int Fail(const std::string& why) {
    std::cerr << "tweetkeeper-export: " << why << std::endl;
    if (to_file()) {
      std::fclose(out_);
      std::remove(partial_.c_str());
    }
    return kExitDatabase;
  }
  int FailWriting() { return Fail(std::string("cannot write: ") + std::strerror(errno)); }

  // Flushed, synced and renamed into place; an exit code when that fails.
  std::optional<int> Finish() {
    if (std::fflush(out_) != 0 || (to_file() && (fsync(fileno(out_)) != 0 || std::fclose(out_) != 0))) {
      return FailWriting();
    }
    if (to_file() && std::rename(partial_.c_str(), path_.c_str()) != 0) {
      std::cerr << "tweetkeeper-export: cannot rename " << partial_ << " to " << path_ << ": " << std::strerror(errno)
                << std::endl;
      return kExitDatabase;
    }
    return std::nullopt;
  }

 private:
  std::string path_, partial_;
  std::FILE* out_ = nullptr;
};

struct Written {
  std::uint64_t rows = 0, pages = 0, left_out = 0;
  std::vector<std::int64_t> unreadable;  // posts whose stored payload could not be read: left out
};

// twarc2's pages: the posts one batch saw, at most kPage each, as GET /2/tweets answered them.
class Twarc2Pages {
 public:
  Twarc2Pages(Output& out, Written& written, bool answer_counts)
      : out_(out), written_(written), answer_counts_(answer_counts) {}

  // One row of the twarc2 query; false when writing failed.
  bool Add(const pqxx::row& row) {
    const std::int64_t lease = row[0].as<std::int64_t>();
    if (!page_.empty() && (lease != source_.lease_id || page_.size() == kPage) && !Flush()) return false;
    source_ = {lease, row[1].c_str(), row[2].c_str()};
    ex::Counts latest;
    std::optional<std::int64_t>* counts[] = {&latest.retweet, &latest.reply,    &latest.like,
                                             &latest.quote,   &latest.bookmark, &latest.impression};
    for (int i = 0; i < 6; ++i)
      if (!row[6 + i].is_null()) *counts[i] = row[6 + i].as<std::int64_t>();
    latest.observed_at = row[12].is_null() ? "" : row[12].c_str();
    page_.push_back({row[3].as<std::int64_t>(), row[4].c_str(), row[5].is_null() ? "" : row[5].c_str(),
                     row[12].is_null() ? std::nullopt : std::optional<ex::Counts>(latest)});
    return true;
  }

  bool Flush() {
    if (page_.empty()) return true;
    std::vector<std::int64_t> ids;
    for (const auto& post : page_) ids.push_back(post.id);
    tweetkeeper::worker::PostKeys keys;
    keys.payloads = true;
    ex::PageResult result = ex::Twarc2Page(page_, source_, x_api_.RequestUrl(ids, keys), kVersion, answer_counts_);
    written_.unreadable.insert(written_.unreadable.end(), result.unreadable.begin(), result.unreadable.end());
    page_.clear();
    if (result.line.empty()) return true;
    ++written_.pages;
    return out_.Write(result.line + "\n");
  }

 private:
  Output& out_;
  Written& written_;
  bool answer_counts_;
  const tweetkeeper::worker::XV2Provider x_api_{"https://api.x.com"};
  std::vector<ex::StoredPost> page_;
  ex::PageSource source_;
};

// --format curves: the rows of metrics_at (a post's, one per age, in order) as one CSV line a post.
class CurveRows {
 public:
  explicit CurveRows(const std::vector<ex::Age>& ages) : ages_(ages) {}

  // One row; the line of the post before it once its rows are all in.
  std::optional<std::string> Add(const pqxx::row& row) {
    std::optional<std::string> line;
    const std::int64_t post = row[0].as<std::int64_t>();
    if (!fields_.empty() && post != post_) line = Flush();
    if (fields_.empty()) {
      post_ = post;
      fields_ = {Field(row[0]), Field(row[1]), Field(row[2]), Field(row[3])};
      fields_.resize(4 + ages_.size() * 14);
      typed_ = {Typed(row[0].type()), Typed(row[1].type()), Typed(row[2].type()), Typed(row[3].type())};
      typed_.resize(fields_.size(), true);  // the counts and their times
    }
    const std::int64_t seconds = row[4].as<std::int64_t>();
    for (std::size_t i = 0; i < ages_.size(); ++i) {
      if (ages_[i].seconds != seconds) continue;
      const std::size_t at = 4 + i * 14;
      for (int k = 0; k < 12; ++k) fields_[at + k] = Field(row[7 + k]);
      fields_[at + 12] = Field(row[5]);
      fields_[at + 13] = Field(row[6]);
    }
    return line;
  }
  std::optional<std::string> Flush() {
    if (fields_.empty()) return std::nullopt;
    std::string line = ex::CsvRow(fields_, typed_);
    fields_.clear();
    return line;
  }

 private:
  const std::vector<ex::Age>& ages_;
  std::int64_t post_ = 0;
  std::vector<std::optional<std::string>> fields_;
  std::vector<bool> typed_;
};

// The curves' counts, in the order of the query's interpolated (and then observed) columns.
constexpr const char* kCurveCounts[] = {"like_count", "retweet_count", "reply_count", "quote_count", "bookmark_count",
                                        "impression_count"};

std::vector<std::optional<std::string>> CsvHeader(const Options& o) {
  if (o.curves()) {
    std::vector<std::optional<std::string>> h = {"post_id", "network", "url", "created_at"};
    for (const ex::Age& a : o.ages) {
      for (const char* c : kCurveCounts) h.push_back(std::string(c) + "_" + a.label);
      for (const char* c : kCurveCounts) h.push_back(std::string(c) + "_" + a.label + "_observed");
      h.push_back("observed_before_" + a.label);
      h.push_back("observed_after_" + a.label);
    }
    return h;
  }
  if (o.format == "lifespans") {
    return {"post_id", "network", "url", "metric", "latest", "latest_at", "age_50_seconds", "age_90_seconds",
            "still_changing"};
  }
  if (o.history) {
    return {"post_id",       "network",     "url",         "observed_at",    "like_count",
            "retweet_count", "reply_count", "quote_count", "bookmark_count", "impression_count"};
  }
  return {"post_id",        "network",          "url",           "created_at",  "author",
          "text",           "like_count",       "retweet_count", "reply_count", "quote_count",
          "bookmark_count", "impression_count", "updated_at",    "state"};
}

// Every row of q through a cursor in tx (closed at the end): an exit code when writing failed
// (a database error is thrown).
std::optional<int> StreamRows(pqxx::work& tx, const Options& o, const Queries& q, Output& out, Written& written) {
  const std::uint64_t total = tx.exec1(q.count)[0].as<std::uint64_t>();
  tweetkeeper::worker::Progress progress("tweetkeeper-export", o.twarc2() ? "posts" : "rows",
                                         o.twarc2() ? "posts written" : "rows written", total,
                                         isatty(STDERR_FILENO) != 0, std::chrono::seconds(o.progress_every));
  tx.exec("DECLARE export_rows NO SCROLL CURSOR FOR " + q.rows);
  if (o.csv_like() && !out.Write(ex::CsvRow(CsvHeader(o)))) return out.FailWriting();
  Twarc2Pages pages(out, written, o.answer_counts);
  CurveRows curves(o.ages);
  for (;;) {
    const pqxx::result r = tx.exec("FETCH " + std::to_string(kFetch) + " FROM export_rows");
    if (r.empty()) break;
    for (const auto& row : r) {
      if (o.twarc2()) {
        if (!pages.Add(row)) return out.FailWriting();
      } else if (o.curves()) {
        const std::optional<std::string> line = curves.Add(row);
        if (line && !out.Write(*line)) return out.FailWriting();
      } else {
        std::vector<std::optional<std::string>> fields;
        std::vector<bool> typed;
        for (const auto& f : row) {
          fields.push_back(Field(f));
          typed.push_back(Typed(f.type()));
        }
        if (!out.Write(ex::CsvRow(fields, typed))) return out.FailWriting();
      }
      ++written.rows;
    }
    progress.Update(written.rows, written.rows);
  }
  if (!pages.Flush()) return out.FailWriting();
  if (const std::optional<std::string> line = curves.Flush(); line && !out.Write(*line)) return out.FailWriting();
  progress.Update(written.rows, written.rows, true);
  tx.exec("CLOSE export_rows");
  return std::nullopt;
}

// Every row, through a cursor in one REPEATABLE READ transaction: an exit code when it failed.
std::optional<int> WriteRows(pqxx::connection& conn, const Options& o, const Queries& q, const Selection& selection,
                             Output& out, Written& written) {
  try {
    pqxx::work tx(conn);
    tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
    written.left_out =
        tx.exec1("SELECT count(*) FROM tweetkeeper.posts p WHERE " + selection.left_out)[0].as<std::uint64_t>();
    if (const std::optional<int> exit_code = StreamRows(tx, o, q, out, written)) return exit_code;
    tx.commit();
  } catch (const std::exception& e) {
    return out.Fail(tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn));
  }
  return std::nullopt;
}

// The closing lines on stderr, and the exit code.
int Report(const Options& o, const Selection& selection, const Written& written, const Output& out, double secs) {
  std::string what = o.twarc2() ? fmt::format("{} posts in {} pages",
                                              Thousands(written.rows - written.unreadable.size()), written.pages)
                    : o.curves() ? fmt::format("{} posts at {} ages", Thousands(written.rows / o.ages.size()), o.ages.size())
                                 : fmt::format("{} rows", Thousands(written.rows));
  std::cerr << fmt::format(
      "tweetkeeper-export: {} written to {} ({}{}) in {:.1f} s; {} left out (deleted or unavailable)", what, out.name(),
      o.format, o.history ? ", history" : "", secs, Thousands(written.left_out));
  if (!o.filter.ids_file.empty())
    std::cerr << fmt::format("; {} of --ids not tracked", Thousands(selection.not_tracked));
  if (selection.bad_lines) std::cerr << fmt::format("; {} bad lines in --ids", Thousands(selection.bad_lines));
  std::cerr << std::endl;
  for (std::int64_t id : written.unreadable) {
    std::cerr << "tweetkeeper-export: post " << id << ": stored payload unreadable, left out\n";
  }
  if (!written.unreadable.empty()) return kExitDatabase;
  return selection.bad_lines ? kExitBadLines : 0;
}

// --format dataset ----------------------------------------------------------------------------

// What each network's terms say of sharing, for the datasheet (docs/archive.md has the sources).
constexpr const char* kTermsX =
    "X (Developer Policy): a dataset given to others may hold post ids only, at most 1,500,000 to any entity "
    "within any 30 days unless X gave written permission; content deleted, made private or suspended on X must "
    "be deleted by whoever keeps it (within 24 hours of a request). This dataset holds X post ids only.";
constexpr const char* kTermsBluesky =
    "Bluesky (developer guidelines): every service must have a way to delete content its author asked to be "
    "deleted. This dataset names posts by at:// URI only: a post deleted since is not rehydrated.";
constexpr const char* kTermsMastodon =
    "Mastodon: each server's own terms and policy apply, and many forbid collection for research; check those "
    "of the servers named. This dataset names statuses by URL only.";

// The microsecond: a dataset's observations are read back as they were.
std::string IsoMicro(const std::string& column) {
  return "to_char(" + column + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
}

// Removes what an export wrote into the partial directory, and the directory.
void RemovePartial(const std::string& partial) {
  std::vector<std::string> names = ex::kDatasetFiles;
  names.push_back(ex::kSums);
  for (const std::string& n : names) {
    std::remove((partial + "/" + n).c_str());
    std::remove((partial + "/" + n + ".partial").c_str());
  }
  rmdir(partial.c_str());
}

bool FsyncPath(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return false;
  const bool ok = fsync(fd) == 0;
  close(fd);
  return ok;
}

// One file of the dataset: the single text column of `query`, a line each, through a cursor.
std::optional<int> ExportLines(pqxx::work& tx, const std::string& query, Output& out, std::uint64_t& lines) {
  if (!out.Open()) return kExitDatabase;
  tx.exec("DECLARE dataset_lines NO SCROLL CURSOR FOR " + query);
  for (;;) {
    const pqxx::result r = tx.exec("FETCH " + std::to_string(kFetch) + " FROM dataset_lines");
    if (r.empty()) break;
    std::string text;
    for (const auto& row : r) (text += row[0].c_str()) += '\n';
    if (!out.Write(text)) return out.FailWriting();
    lines += r.size();
  }
  tx.exec("CLOSE dataset_lines");
  return out.Finish();
}

struct DatasetCounts {
  std::uint64_t x = 0, bluesky = 0, mastodon = 0, observations = 0, curves = 0, left_out = 0;
};

// datasheet.json's text: the numbers, read in the export's transaction.
std::string DatasheetJson(pqxx::work& tx, const Options& o, const Selection& selection, const DatasetCounts& n,
                          const std::string& name) {
  const std::string sel = "(SELECT p.post_id, p.network, p.created_at, p.updated_at, NOT EXISTS (SELECT 1 FROM "
                          "tweetkeeper.tombstones x WHERE x.tweet_id = p.post_id) AS kept FROM tweetkeeper.posts p "
                          "WHERE (" + selection.exported + ") OR (" + selection.left_out + "))";
  const std::string q = "WITH sel AS MATERIALIZED " + sel + R"SQL(
SELECT jsonb_pretty(jsonb_build_object(
  'format', 'tweetkeeper-dataset 1',
  'name', $1::text,
  'exported_at', )SQL" + Iso("now()") + R"SQL(,
  'exported_by', $2::text,
  'selection', jsonb_build_object('collection', nullif($3, ''), 'network', nullif($4, ''), 'since', nullif($5, ''),
                                  'until', nullif($6, ''), 'ids_file', $7::boolean),
  'curves_ages', $8::text,
  'composition', jsonb_build_object(
    'posts', (SELECT count(*) FROM sel WHERE sel.kept),
    'by_network', jsonb_build_object('x', $9::bigint, 'bluesky', $10::bigint, 'mastodon', $11::bigint),
    'observations', $12::bigint),
  'collection_process', jsonb_build_object(
    'first_observation', (SELECT )SQL" + Iso("min(h.observed_at)") + R"SQL( FROM sel JOIN tweetkeeper.metric_history h
                            ON h.tweet_id = sel.post_id WHERE sel.kept),
    'last_observation', (SELECT )SQL" + Iso("max(sel.updated_at)") + R"SQL( FROM sel WHERE sel.kept),
    'posts_created_from', (SELECT )SQL" + Iso("min(sel.created_at)") + R"SQL( FROM sel WHERE sel.kept),
    'posts_created_to', (SELECT )SQL" + Iso("max(sel.created_at)") + R"SQL( FROM sel WHERE sel.kept),
    'refresh_policy', current_setting('tweetkeeper.refresh_policy', true),
    'age_policy', (SELECT jsonb_agg(jsonb_build_object('max_age', a.max_age::text, 'delay', a.delay::text) ORDER BY a.max_age)
                     FROM tweetkeeper.age_policy a),
    'adaptive', (SELECT jsonb_agg(jsonb_build_object('name', s.name, 'setting', s.setting || coalesce(' ' || s.unit, ''))
                                  ORDER BY s.name)
                   FROM pg_catalog.pg_settings s WHERE s.name LIKE 'tweetkeeper.adaptive%'),
    'own_policy', (SELECT jsonb_agg(jsonb_build_object('policy', x.refresh_policy, 'posts', x.n) ORDER BY x.refresh_policy)
                     FROM (SELECT t.refresh_policy, count(*) AS n FROM sel JOIN tweetkeeper.tweets t ON t.tweet_id = sel.post_id
                            WHERE sel.kept AND t.refresh_policy IS NOT NULL GROUP BY 1) x)),
  'collections', (SELECT jsonb_agg(jsonb_build_object('name', c.name, 'kind', c.kind, 'created_at', )SQL" +
                  Iso("c.created_at") + R"SQL(, 'posts', x.n) ORDER BY c.name)
                    FROM (SELECT cp.collection, count(*) AS n FROM sel JOIN tweetkeeper.collection_posts cp ON cp.tweet_id = sel.post_id
                           WHERE sel.kept GROUP BY 1) x JOIN tweetkeeper.collections c ON c.name = x.collection),
  'survival', jsonb_build_object(
    'selected', (SELECT count(*) FROM sel),
    'available', (SELECT count(*) FROM sel WHERE sel.kept),
    'gone', (SELECT count(*) FROM sel WHERE NOT sel.kept),
    'gone_by_reason', (SELECT jsonb_agg(jsonb_build_object('network', x.network, 'reason', x.reason, 'detail', x.detail,
                                                           'posts', x.n) ORDER BY x.network, x.reason, x.detail)
                         FROM (SELECT sel.network, coalesce(a.reason, 'gone') AS reason, coalesce(a.detail, '') AS detail,
                                      count(*) AS n
                                 FROM sel JOIN tweetkeeper.post_availability a ON a.post_id = sel.post_id
                                WHERE NOT sel.kept GROUP BY 1, 2, 3) x)),
  'mortality_by_age', (SELECT jsonb_agg(jsonb_build_object('age', m.age::text, 'posts', m.posts, 'available', m.available,
                                                           'gone', m.gone, 'unknown', m.unknown,
                                                           'share_available', m.share_available) ORDER BY m.age)
                         FROM tweetkeeper.mortality_by_age m WHERE m.collection IS NOT DISTINCT FROM nullif($3, '')),
  'distribution', jsonb_build_object('x_ids', $9::bigint, 'x_ids_shared_before', $13::bigint,
                                     'x_written_permission', $14::boolean),
  'terms', jsonb_build_object('x', $15::text, 'bluesky', $16::text, 'mastodon', $17::text)))
)SQL";
  const ex::PostFilter& f = o.filter;
  return tx.exec_params1(q, name, std::string(kVersion), f.collection, f.network, f.since, f.until, !f.ids_file.empty(),
                         o.ages_text, n.x, n.bluesky, n.mastodon, n.observations, o.x_ids_shared, o.x_permission,
                         std::string(kTermsX), std::string(kTermsBluesky), std::string(kTermsMastodon))[0]
             .as<std::string>() +
         "\n";
}

// One whole file of the dataset from text.
std::optional<int> WriteWhole(const std::string& path, const std::string& text) {
  Output out(path);
  if (!out.Open()) return kExitDatabase;
  if (!out.Write(text)) return out.FailWriting();
  return out.Finish();
}

// The files, in DIR.partial (renamed to DIR once complete and synced), in one REPEATABLE READ
// transaction: an exit code when the export failed, DIR.partial removed.
std::optional<int> WriteDataset(pqxx::connection& conn, const Options& o, const Selection& selection,
                                DatasetCounts& n) {
  const std::string& dir = o.dir;
  const std::string partial = dir + ".partial";
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0) {
    std::cerr << "tweetkeeper-export: " << dir << " exists: a dataset is written into a new directory" << std::endl;
    return kExitUsage;
  }
  if (stat(partial.c_str(), &st) == 0) {
    std::cerr << "tweetkeeper-export: " << partial << " exists: an export into " << dir
              << " failed or is running; remove it first" << std::endl;
    return kExitUsage;
  }
  const std::string exported = " WHERE " + selection.exported;
  try {
    pqxx::work tx(conn);
    tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
    n.x = tx.exec1("SELECT count(*) FROM tweetkeeper.posts p" + exported + " AND p.network = 'x'")[0].as<std::uint64_t>();
    if (n.x + o.x_ids_shared > ex::kXIdsPer30Days && !o.x_permission) {
      std::cerr << fmt::format(
                       "tweetkeeper-export: refusing {} X post ids ({} given to this recipient before): X's developer "
                       "policy allows at most {} to any entity within 30 days without X's written permission. Select "
                       "fewer (--collection, --since, --until, --ids), or pass --x-written-permission if X gave it.",
                       Thousands(n.x), Thousands(o.x_ids_shared), Thousands(ex::kXIdsPer30Days))
                << std::endl;
      return kExitUsage;
    }
    n.left_out = tx.exec1("SELECT count(*) FROM tweetkeeper.posts p WHERE " + selection.left_out)[0].as<std::uint64_t>();
    if (mkdir(partial.c_str(), 0755) != 0) {
      std::cerr << "tweetkeeper-export: cannot make " << partial << ": " << std::strerror(errno) << std::endl;
      return kExitDatabase;
    }
    const auto fail = [&](int code) {
      RemovePartial(partial);
      return code;
    };
    const auto file = [&](const char* name) { return partial + "/" + name; };
    std::uint64_t lines = 0;
    const std::pair<const char*, std::string> references[] = {
        {ex::kXIds, "SELECT p.post_id::text FROM tweetkeeper.posts p" + exported + " AND p.network = 'x' ORDER BY 1"},
        {ex::kBlueskyUris, "SELECT 'at://' || r.author || '/app.bsky.feed.post/' || r.post_key FROM tweetkeeper.posts p "
                           "JOIN tweetkeeper.post_refs r ON r.tweet_id = p.post_id" + exported +
                           " AND p.network = 'bluesky' ORDER BY 1"},
        {ex::kMastodonUrls, "SELECT p.url FROM tweetkeeper.posts p" + exported + " AND p.network = 'mastodon' ORDER BY 1"}};
    std::uint64_t* counted[] = {&lines, &n.bluesky, &n.mastodon};
    for (int i = 0; i < 3; ++i) {
      Output out(file(references[i].first));
      if (const std::optional<int> code = ExportLines(tx, references[i].second, out, *counted[i])) return fail(*code);
    }
    // history.csv: the csv --history columns, every observation, and each post's last read when
    // it changed nothing (history keeps changes only): its curve then stands until that read.
    Options history = o;
    history.format = "csv";
    history.history = true;
    Queries hq;
    hq.rows = "SELECT p.post_id, p.network, p.url, " + IsoMicro("h.observed_at") +
              ", h.like_count, h.retweet_count, h.reply_count, h.quote_count, h.bookmark_count, h.impression_count "
              "FROM tweetkeeper.posts p CROSS JOIN LATERAL ("
              "SELECT h.observed_at, h.lease_id, h.like_count, h.retweet_count, h.reply_count, h.quote_count, "
              "h.bookmark_count, h.impression_count FROM tweetkeeper.metric_history h WHERE h.tweet_id = p.post_id "
              "UNION ALL SELECT p.updated_at, NULL, l.like_count, l.retweet_count, l.reply_count, l.quote_count, "
              "l.bookmark_count, l.impression_count FROM (SELECT h.* FROM tweetkeeper.metric_history h "
              "WHERE h.tweet_id = p.post_id ORDER BY h.observed_at DESC, h.lease_id DESC LIMIT 1) l "
              "WHERE p.updated_at > l.observed_at) h" +
              exported + " ORDER BY p.post_id, h.observed_at, h.lease_id NULLS LAST";
    hq.count = "SELECT count(*) FROM tweetkeeper.posts p JOIN tweetkeeper.metric_history h ON h.tweet_id = p.post_id" +
               exported;
    {
      Output out(file(ex::kHistory));
      if (!out.Open()) return fail(kExitDatabase);
      Written w;
      if (const std::optional<int> code = StreamRows(tx, history, hq, out, w)) return fail(*code);
      if (const std::optional<int> code = out.Finish()) return fail(*code);
      n.observations = w.rows;
    }
    {
      Options curves = o;
      curves.format = "curves";
      Output out(file(ex::kCurves));
      if (!out.Open()) return fail(kExitDatabase);
      Written w;
      if (const std::optional<int> code = StreamRows(tx, curves, BuildQueries(curves, selection.exported), out, w))
        return fail(*code);
      if (const std::optional<int> code = out.Finish()) return fail(*code);
      n.curves = w.rows / o.ages.size();
    }
    const std::string name = !o.filter.collection.empty() ? o.filter.collection : [&] {
      const std::size_t slash = dir.find_last_of('/', dir.find_last_not_of('/'));
      std::string base = dir.substr(slash == std::string::npos ? 0 : slash + 1);
      while (!base.empty() && base.back() == '/') base.pop_back();
      return base;
    }();
    const std::string json = DatasheetJson(tx, o, selection, n, name);
    tx.commit();
    std::string error;
    const std::optional<std::string> md = ex::DatasheetMarkdown(json, &error);
    if (!md) {
      std::cerr << "tweetkeeper-export: " << error << std::endl;
      return fail(kExitDatabase);
    }
    if (const std::optional<int> code = WriteWhole(file(ex::kDatasheetJson), json)) return fail(*code);
    if (const std::optional<int> code = WriteWhole(file(ex::kDatasheetMd), *md)) return fail(*code);
    std::vector<std::pair<std::string, std::string>> sums;
    for (const std::string& f : ex::kDatasetFiles) {
      const std::optional<std::string> hex = ex::Sha256File(partial + "/" + f);
      if (!hex) {
        std::cerr << "tweetkeeper-export: cannot read back " << partial << "/" << f << std::endl;
        return fail(kExitDatabase);
      }
      sums.emplace_back(f, *hex);
    }
    if (const std::optional<int> code = WriteWhole(file(ex::kSums), ex::SumsText(sums))) return fail(*code);
    // Complete: the directory's entries synced, then renamed into place, and the rename synced.
    const std::size_t slash = dir.find_last_of('/');
    const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
    if (!FsyncPath(partial) || std::rename(partial.c_str(), dir.c_str()) != 0 || !FsyncPath(parent)) {
      std::cerr << "tweetkeeper-export: cannot rename " << partial << " to " << dir << ": " << std::strerror(errno)
                << std::endl;
      return fail(kExitDatabase);
    }
    n.x = lines;
  } catch (const std::exception& e) {
    RemovePartial(partial);
    std::cerr << "tweetkeeper-export: " << tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn) << std::endl;
    return kExitDatabase;
  }
  return std::nullopt;
}

int ExportDataset(pqxx::connection& conn, const Options& o, const Selection& selection) {
  const auto started = std::chrono::steady_clock::now();
  DatasetCounts n;
  if (const std::optional<int> exit_code = WriteDataset(conn, o, selection, n)) return *exit_code;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cerr << fmt::format(
      "tweetkeeper-export: dataset {}: {} X post ids, {} Bluesky URIs, {} Mastodon URLs, {} observations, curves of "
      "{} posts at {} ages, in {:.1f} s; {} left out (deleted or unavailable)",
      o.dir, Thousands(n.x), Thousands(n.bluesky), Thousands(n.mastodon), Thousands(n.observations),
      Thousands(n.curves), o.ages.size(), secs, Thousands(n.left_out));
  if (!o.filter.ids_file.empty())
    std::cerr << fmt::format("; {} of --ids not tracked", Thousands(selection.not_tracked));
  if (selection.bad_lines) std::cerr << fmt::format("; {} bad lines in --ids", Thousands(selection.bad_lines));
  std::cerr << std::endl;
  return selection.bad_lines ? kExitBadLines : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const std::optional<int> exit_code = ParseOptions(argc, argv, o)) return *exit_code;
  const std::unique_ptr<pqxx::connection> conn = ex::ConnectOrSay(o.dsn, "tweetkeeper-export");
  if (!conn) return kExitDatabase;
  Selection selection;
  o.filter.dsn = o.dsn;
  o.filter.x_only = o.twarc2();
  if (const std::optional<int> exit_code = ex::Select(*conn, o.filter, selection, "tweetkeeper-export"))
    return *exit_code;
  if (o.dataset()) return ExportDataset(*conn, o, selection);
  const Queries queries = BuildQueries(o, selection.exported);

  Output out(o.output);
  if (!out.Open()) return kExitUsage;
  const auto started = std::chrono::steady_clock::now();
  Written written;
  if (const std::optional<int> exit_code = WriteRows(*conn, o, queries, selection, out, written)) return *exit_code;
  if (const std::optional<int> exit_code = out.Finish()) return *exit_code;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return Report(o, selection, written, out, secs);
}
