// tweetkeeper-export: writes what tweetkeeper keeps of a set of posts (all, a network, a time
// range, the ids or URLs in a file) as twarc2's JSON lines (X posts' latest payloads, a page per
// batch that saw them, at most 100 posts each) or CSV (one row per post with its latest counts,
// or with --history one row per observation). It reads through a cursor in one REPEATABLE READ
// transaction: constant memory, one consistent snapshot. Posts found deleted or unavailable
// (a tombstone) are left out. A file is written as FILE.partial and renamed when complete.
// Exit: 0 all written, 1 database or output error, 2 bad usage or unreadable input, 3 some lines
// of --ids were bad (the others exported), as tweetkeeper-import.

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <pqxx/pqxx>
#include <cstring>
#include <tuple>
#include <string>
#include <vector>

#include "cli/progress.hpp"
#include "dsn/dsn.hpp"
#include "export/export_format.hpp"
#include "ids/id_reader.hpp"
#include "provider/x_v2.hpp"
#include "queue/payload.hpp"

namespace ex = tweetkeeper::exporter;
namespace im = tweetkeeper::importer;
using tweetkeeper::worker::ArrayLiteral;
using tweetkeeper::worker::TextArrayLiteral;
using tweetkeeper::worker::Thousands;

namespace {

constexpr int kExitDatabase = 1, kExitUsage = 2, kExitBadLines = 3;
constexpr const char* kVersion = "tweetkeeper-export 0.3.0";
constexpr int kFetch = 2000;    // rows per FETCH
constexpr std::size_t kPage = 100;  // posts per twarc2 page, as GET /2/tweets answers


// An ISO 8601 UTC rendering of a timestamptz column, in SQL.
std::string Iso(const std::string& column) {
  return "to_char(" + column + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')";
}

std::optional<std::string> Field(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return std::string(f.c_str());
}

// Reads --ids into the temporary table want (id, or url for a Bluesky/Mastodon post); bad lines
// are reported. Returns how many were bad, or nullopt when the file cannot be read.
std::optional<std::uint64_t> LoadIds(pqxx::connection& c, const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  pqxx::nontransaction tx(c);
  tx.exec("CREATE TEMP TABLE want (id bigint, url text)");
  im::IdReader reader(im::Format::kLines);
  std::vector<std::int64_t> ids;
  std::vector<std::string> urls;
  const auto flush = [&] {
    if (!ids.empty()) tx.exec_params("INSERT INTO want (id) SELECT unnest($1::bigint[])", ArrayLiteral(ids));
    if (!urls.empty()) tx.exec_params("INSERT INTO want (url) SELECT unnest($1::text[])", TextArrayLiteral(urls));
    ids.clear();
    urls.clear();
  };
  const std::int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::uint64_t bad = 0, number = 0;
  std::string line;
  while (std::getline(file, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    im::LineResult r = reader.Parse(line, now_ms);
    if (!r.error.empty()) {
      ++bad;
      std::cerr << path << ":" << number << ": " << r.error << "\n";
      continue;
    }
    for (const im::Tweet& t : r.tweets) {
      if (t.url.empty()) ids.push_back(t.id);
      else urls.push_back(t.url);
    }
    if (ids.size() + urls.size() >= 10'000) flush();
  }
  if (file.bad()) return std::nullopt;
  flush();
  // A Bluesky or Mastodon URL names its post by network, server and key (Bluesky: and author).
  tx.exec(
      "UPDATE want w SET id = (SELECT r.tweet_id FROM tweetkeeper.parse_post_url(w.url) p "
      "JOIN tweetkeeper.post_refs r ON r.network = p.network AND r.host = coalesce(p.host, '') "
      "AND r.post_key = p.post_key AND (r.network <> 'bluesky' OR r.author = p.author) LIMIT 1) "
      "WHERE w.url IS NOT NULL");
  tx.exec("CREATE INDEX ON want (id)");
  tx.exec("ANALYZE want");
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dsn, format, network, since, until, ids_file, output = "-";
  bool history = false;
  int progress_every = 5;
  CLI::App app{"tweetkeeper-export: writes tracked posts as twarc2 JSON lines or CSV.", "tweetkeeper-export"};
  app.footer(
      "twarc2: X posts' latest payloads (tweetkeeper.payloads first or changed), one line per page of at most 100 "
      "posts seen by one batch, as GET /2/tweets answered them, with twarc2's __twarc object and tweetkeeper's "
      "provenance in __tweetkeeper; twarc2's own tools (twarc2 flatten, twarc-csv) read it. csv: one row per post "
      "(post_id, network, url, created_at, author, text, the latest counts, updated_at, state); --history: one row "
      "per observation. Posts found deleted or unavailable are left out. --ids: a file of ids or post URLs, one per "
      "line. Exit: 0 all written, 1 database or output error, 2 bad usage or unreadable input, 3 some lines of --ids "
      "were bad (the others exported).");
  app.add_option("--dsn", dsn, "PostgreSQL connection (libpq conninfo or URI); the role needs tweetkeeper_reader")
      ->required();
  app.add_option("--format", format, "twarc2 or csv")->required()->check(CLI::IsMember({"twarc2", "csv"}));
  app.add_flag("--history", history, "csv: one row per observation instead of one per post");
  app.add_option("--network", network, "Only this network's posts: x, bluesky or mastodon")
      ->check(CLI::IsMember({"x", "bluesky", "mastodon"}));
  app.add_option("--since", since, "Only posts created at or after this time (e.g. 2026-11-01 or 2026-11-01T12:00Z)");
  app.add_option("--until", until, "Only posts created before this time");
  app.add_option("--ids", ids_file, "Only the posts in this file: one id or post URL per line");
  app.add_option("--output,-o", output, "The file to write; - writes stdout")->capture_default_str();
  app.add_option("--progress-interval", progress_every, "Seconds between progress lines when not on a terminal")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  if (auto error = tweetkeeper::worker::DsnError(dsn)) {
    std::cerr << "tweetkeeper-export: --dsn: " << *error << std::endl;
    return kExitUsage;
  }
  if (history && format != "csv") {
    std::cerr << "tweetkeeper-export: --history needs --format csv (twarc2 pages hold payloads, not observations)"
              << std::endl;
    return kExitUsage;
  }
  if (format == "twarc2" && !network.empty() && network != "x") {
    std::cerr << "tweetkeeper-export: twarc2 is the X API's format; export " << network
              << " posts with --format csv" << std::endl;
    return kExitUsage;
  }

  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(dsn);
  } catch (const std::exception& e) {
    std::cerr << "tweetkeeper-export: cannot connect: " << tweetkeeper::worker::RedactDsnSecrets(e.what(), dsn)
              << std::endl;
    return kExitDatabase;
  }
  // The filters, validated by PostgreSQL's own parser (a bad time is bad usage, not a failure).
  std::string filter = "NOT EXISTS (SELECT 1 FROM tweetkeeper.tombstones x WHERE x.tweet_id = p.post_id)";
  std::string left_out_filter = "EXISTS (SELECT 1 FROM tweetkeeper.tombstones x WHERE x.tweet_id = p.post_id)";
  std::string common;
  try {
    pqxx::nontransaction tx(*conn);
    for (const auto& [name, value, op] : {std::tuple{"--since", since, ">="}, std::tuple{"--until", until, "<"}}) {
      if (value.empty()) continue;
      try {
        const std::string t = tx.exec_params1("SELECT $1::timestamptz::text", value)[0].as<std::string>();
        common += std::string(" AND p.created_at ") + op + " " + tx.quote(t) + "::timestamptz";
      } catch (const pqxx::data_exception& e) {
        std::cerr << "tweetkeeper-export: " << name << ": not a time: " << value << std::endl;
        return kExitUsage;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "tweetkeeper-export: " << tweetkeeper::worker::RedactDsnSecrets(e.what(), dsn) << std::endl;
    return kExitDatabase;
  }
  if (format == "twarc2") common += " AND p.network = 'x'";
  else if (!network.empty()) common += " AND p.network = " + conn->quote(network);

  std::uint64_t bad_lines = 0, not_tracked = 0;
  if (!ids_file.empty()) {
    try {
      std::optional<std::uint64_t> bad = LoadIds(*conn, ids_file);
      if (!bad) {
        std::cerr << "tweetkeeper-export: cannot read --ids " << ids_file << std::endl;
        return kExitUsage;
      }
      bad_lines = *bad;
      pqxx::nontransaction tx(*conn);
      not_tracked = tx.exec1("SELECT count(*) FROM want w WHERE w.id IS NULL OR NOT EXISTS "
                             "(SELECT 1 FROM tweetkeeper.tweets t WHERE t.tweet_id = w.id)")[0]
                        .as<std::uint64_t>();
    } catch (const std::exception& e) {
      std::cerr << "tweetkeeper-export: " << tweetkeeper::worker::RedactDsnSecrets(e.what(), dsn) << std::endl;
      return kExitDatabase;
    }
    common += " AND p.post_id IN (SELECT w.id FROM want w WHERE w.id IS NOT NULL)";
  }
  filter += common;
  left_out_filter += common;

  const std::string latest =
      "SELECT x.* FROM tweetkeeper.payloads x WHERE x.tweet_id = p.post_id ORDER BY x.seen_at DESC, x.lease_id DESC "
      "LIMIT 1";
  std::string query, count;
  if (format == "twarc2") {
    query = "SELECT l.lease_id, to_char(l.seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"+00:00\"'), " +
            Iso("l.seen_at") + ", l.tweet_id, l.payload::text, l.author::text FROM tweetkeeper.posts p " +
            "CROSS JOIN LATERAL (" + latest + ") l WHERE " + filter + " ORDER BY l.seen_at, l.lease_id, l.tweet_id";
    count = "SELECT count(*) FROM tweetkeeper.posts p WHERE " + filter +
            " AND EXISTS (SELECT 1 FROM tweetkeeper.payloads x WHERE x.tweet_id = p.post_id)";
  } else if (history) {
    query = "SELECT p.post_id, p.network, p.url, " + Iso("h.observed_at") +
            ", h.like_count, h.retweet_count, h.reply_count, h.quote_count, h.bookmark_count, h.impression_count "
            "FROM tweetkeeper.posts p JOIN tweetkeeper.metric_history h ON h.tweet_id = p.post_id WHERE " +
            filter + " ORDER BY p.post_id, h.observed_at, h.lease_id";
    count = "SELECT count(*) FROM tweetkeeper.posts p JOIN tweetkeeper.metric_history h ON h.tweet_id = p.post_id "
            "WHERE " + filter;
  } else {
    query = "SELECT p.post_id, p.network, p.url, " + Iso("p.created_at") +
            ", coalesce(l.author->>'username', l.payload->'author'->>'handle', l.payload->'account'->>'acct', "
            "p.author), coalesce(l.payload->>'text', l.payload->'record'->>'text', l.payload->>'content'), "
            "p.like_count, p.retweet_count, p.reply_count, p.quote_count, p.bookmark_count, p.impression_count, " +
            Iso("p.updated_at") + ", p.state FROM tweetkeeper.posts p LEFT JOIN LATERAL (" + latest +
            ") l ON true WHERE " + filter + " ORDER BY p.post_id";
    count = "SELECT count(*) FROM tweetkeeper.posts p WHERE " + filter;
  }

  // The output: stdout, or FILE.partial renamed to FILE once everything is written.
  const bool to_file = output != "-";
  const std::string partial = output + ".partial";
  std::FILE* out = to_file ? std::fopen(partial.c_str(), "wb") : stdout;
  if (!out) {
    std::cerr << "tweetkeeper-export: cannot write " << partial << ": " << std::strerror(errno) << std::endl;
    return kExitUsage;
  }
  const auto fail = [&](const std::string& why) {
    std::cerr << "tweetkeeper-export: " << why << std::endl;
    if (to_file) {
      std::fclose(out);
      std::remove(partial.c_str());
    }
    return kExitDatabase;
  };
  const auto write = [&](const std::string& text) {
    return std::fwrite(text.data(), 1, text.size(), out) == text.size();
  };

  const auto started = std::chrono::steady_clock::now();
  std::uint64_t rows = 0, pages = 0, left_out = 0;
  std::vector<std::int64_t> unreadable;
  try {
    pqxx::work tx(*conn);
    tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
    const std::uint64_t total = tx.exec1(count)[0].as<std::uint64_t>();
    left_out = tx.exec1("SELECT count(*) FROM tweetkeeper.posts p WHERE " + left_out_filter)[0].as<std::uint64_t>();
    tweetkeeper::worker::Progress progress("tweetkeeper-export", format == "twarc2" ? "posts" : "rows",
                                           format == "twarc2" ? "posts written" : "rows written", total,
                                           isatty(STDERR_FILENO) != 0, std::chrono::seconds(progress_every));
    tx.exec("DECLARE export_rows NO SCROLL CURSOR FOR " + query);
    if (format == "csv") {
      const std::vector<std::optional<std::string>> header =
          history ? std::vector<std::optional<std::string>>{"post_id", "network", "url", "observed_at", "like_count",
                                                            "retweet_count", "reply_count", "quote_count",
                                                            "bookmark_count", "impression_count"}
                  : std::vector<std::optional<std::string>>{"post_id", "network", "url", "created_at", "author", "text",
                                                            "like_count", "retweet_count", "reply_count", "quote_count",
                                                            "bookmark_count", "impression_count", "updated_at", "state"};
      if (!write(ex::CsvRow(header))) return fail(std::string("cannot write: ") + std::strerror(errno));
    }
    const tweetkeeper::worker::XV2Provider x_api("https://api.x.com");
    std::vector<ex::StoredPost> page;
    ex::PageSource source;
    const auto flush_page = [&]() -> bool {
      if (page.empty()) return true;
      std::vector<std::int64_t> ids;
      for (const auto& post : page) ids.push_back(post.id);
      tweetkeeper::worker::PostKeys keys;
      keys.payloads = true;
      ex::PageResult result = ex::Twarc2Page(page, source, x_api.RequestUrl(ids, keys), kVersion);
      unreadable.insert(unreadable.end(), result.unreadable.begin(), result.unreadable.end());
      page.clear();
      if (result.line.empty()) return true;
      ++pages;
      return write(result.line + "\n");
    };
    for (;;) {
      const pqxx::result r = tx.exec("FETCH " + std::to_string(kFetch) + " FROM export_rows");
      if (r.empty()) break;
      for (const auto& row : r) {
        if (format == "twarc2") {
          const std::int64_t lease = row[0].as<std::int64_t>();
          if (!page.empty() && (lease != source.lease_id || page.size() == kPage) && !flush_page()) {
            return fail(std::string("cannot write: ") + std::strerror(errno));
          }
          source = {lease, row[1].c_str(), row[2].c_str()};
          page.push_back({row[3].as<std::int64_t>(), row[4].c_str(), row[5].is_null() ? "" : row[5].c_str()});
        } else {
          std::vector<std::optional<std::string>> fields;
          for (const auto& f : row) fields.push_back(Field(f));
          if (!write(ex::CsvRow(fields))) return fail(std::string("cannot write: ") + std::strerror(errno));
        }
        ++rows;
      }
      progress.Update(rows, rows);
    }
    if (!flush_page()) return fail(std::string("cannot write: ") + std::strerror(errno));
    progress.Update(rows, rows, true);
    tx.commit();
  } catch (const std::exception& e) {
    return fail(tweetkeeper::worker::RedactDsnSecrets(e.what(), dsn));
  }
  if (std::fflush(out) != 0 || (to_file && (fsync(fileno(out)) != 0 || std::fclose(out) != 0))) {
    return fail(std::string("cannot write: ") + std::strerror(errno));
  }
  if (to_file && std::rename(partial.c_str(), output.c_str()) != 0) {
    std::cerr << "tweetkeeper-export: cannot rename " << partial << " to " << output << ": " << std::strerror(errno)
              << std::endl;
    return kExitDatabase;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::string what = format == "twarc2" ? fmt::format("{} posts in {} pages", Thousands(rows - unreadable.size()), pages)
                                        : fmt::format("{} rows", Thousands(rows));
  std::cerr << fmt::format("tweetkeeper-export: {} written to {} ({}{}) in {:.1f} s; {} left out (deleted or unavailable)",
                           what, to_file ? output : "stdout", format, history ? ", history" : "", secs,
                           Thousands(left_out));
  if (!ids_file.empty()) std::cerr << fmt::format("; {} of --ids not tracked", Thousands(not_tracked));
  if (bad_lines) std::cerr << fmt::format("; {} bad lines in --ids", Thousands(bad_lines));
  std::cerr << std::endl;
  for (std::int64_t id : unreadable) std::cerr << "tweetkeeper-export: post " << id << ": stored payload unreadable, left out\n";
  if (!unreadable.empty()) return kExitDatabase;
  return bad_lines ? kExitBadLines : 0;
}
