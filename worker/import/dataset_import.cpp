#include "import/dataset_import.hpp"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>
#include <vector>

#include "cli/progress.hpp"
#include "dsn/dsn.hpp"
#include "export/dataset.hpp"
#include "export/selection.hpp"
#include "ids/id_reader.hpp"
#include "json/bounded.hpp"
#include "queue/payload.hpp"

namespace tweetkeeper::importer {
namespace {

namespace ex = tweetkeeper::exporter;
using tweetkeeper::worker::ArrayLiteral;
using tweetkeeper::worker::TextArrayLiteral;
using tweetkeeper::worker::Thousands;
constexpr int kExitDatabase = 1, kExitUsage = 2;
constexpr std::size_t kChunk = 10'000;  // posts or observations per call

const std::vector<std::string> kHistoryHeader = {"post_id",       "network",     "url",         "observed_at",
                                                 "like_count",    "retweet_count", "reply_count", "quote_count",
                                                 "bookmark_count", "impression_count"};

struct Observation {
  std::string url, observed_at;
  std::optional<std::int64_t> counts[6];  // retweets, replies, likes, quotes, bookmarks, impressions
};

// What the dataset holds, read and checked whole.
struct Dataset {
  std::string name;
  std::vector<std::int64_t> x_ids;
  std::vector<std::string> urls;  // Bluesky and Mastodon
  std::uint64_t bluesky = 0, mastodon = 0;
  std::uint64_t observations = 0;  // in history.csv (read again, in chunks, as it is stored)
};

std::optional<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return s.str();
}

// Says why the dataset is refused (on stderr): false.
bool Bad(const std::string& why) {
  std::cerr << "tweetkeeper-import: " << why << std::endl;
  return false;
}

// Every file listed in SHA256SUMS with its checksum: false (said why) when one is missing, not
// listed, or differs.
bool Verify(const std::string& dir) {
  const std::optional<std::string> text = ReadWhole(dir + "/" + ex::kSums);
  if (!text) return Bad(dir + ": no " + ex::kSums + ": not a dataset of tweetkeeper-export --format dataset");
  std::string error;
  const auto sums = ex::ParseSums(*text, &error);
  if (!sums) return Bad(dir + "/" + error);
  for (const std::string& f : ex::kDatasetFiles) {
    if (!sums->count(f)) return Bad(dir + "/" + ex::kSums + " does not list " + f);
  }
  bool ok = true;
  for (const auto& [name, hex] : *sums) {
    const std::optional<std::string> got = ex::Sha256File(dir + "/" + name);
    if (!got)
      ok = Bad(dir + "/" + name + ": missing or unreadable");
    else if (*got != hex)
      ok = Bad(dir + "/" + name + ": checksum mismatch (SHA256SUMS says " + hex + ", the file is " + *got + ")");
  }
  return ok;
}

// Each line of a file, to line_ok(number, "path:number: ", line), which says (on stderr) why a
// line is bad; false when the file cannot be read or a line was bad.
template <typename LineOk>
bool EachLine(const std::string& path, LineOk&& line_ok) {
  std::ifstream in(path);
  if (!in) return Bad(path + ": cannot read");
  std::vector<char> buffer(kMaxLineBytes + 1);
  std::string_view line;
  std::uint64_t number = 0;
  bool ok = true;
  for (LineRead got; (got = ReadLine(in, buffer, &line)) != LineRead::kEnd;) {
    ++number;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (got == LineRead::kTooLong)
      ok = Bad(where + "the line is too long");
    else if (!line_ok(number, where, line))
      ok = false;
  }
  if (in.bad()) return Bad(path + ": cannot read");
  return ok;
}

// One file of references, a line each: X ids (x true) or URLs starting with `prefix`.
bool ReadReferences(const std::string& path, bool x, const std::string& prefix, Dataset& d, std::uint64_t& n) {
  IdReader reader(Format::kLines);
  return EachLine(path, [&](std::uint64_t, const std::string& where, std::string_view line) {
    const LineResult r = reader.Parse(line, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::system_clock::now().time_since_epoch()).count());
    if (!r.error.empty()) return Bad(where + r.error);
    if (r.tweets.size() != 1 || (x ? !r.tweets[0].url.empty() : line.substr(0, prefix.size()) != prefix))
      return Bad(where + (x ? "not an X post id" : "not a post reference starting " + prefix) + ": " + Shown(line));
    if (x)
      d.x_ids.push_back(r.tweets[0].id);
    else
      d.urls.push_back(r.tweets[0].url);
    ++n;
    return true;
  });
}

std::optional<std::int64_t> Count(const std::string& field, bool* bad) {
  if (field.empty()) return std::nullopt;
  std::int64_t v = 0;
  for (char c : field) {
    if (c < '0' || c > '9' || v > (INT64_MAX - 9) / 10) {
      *bad = true;
      return std::nullopt;
    }
    v = v * 10 + (c - '0');
  }
  return v;
}

// Each observation of history.csv to `each`, in order; false (said why) for a bad line or file.
template <typename Each>
bool ReadHistory(const std::string& path, Each&& each) {
  bool header = false;
  const bool ok = EachLine(path, [&](std::uint64_t number, const std::string& where, std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto fields = SplitCsv(line);
    if (number == 1) {
      header = fields && *fields == kHistoryHeader;
      return header || Bad(where + "not history.csv's header (post_id,network,url,...)");
    }
    if (!header) return false;  // (said once, at the header)
    if (!fields || fields->size() != kHistoryHeader.size() || (*fields)[2].empty() || !ParseTimestampMs((*fields)[3]))
      return Bad(where + "not an observation (post_id, network, url, observed_at and six counts)");
    Observation o{(*fields)[2], (*fields)[3], {}};
    bool bad = false;
    // The file's order (likes, retweets, replies, quotes, bookmarks, impressions) into
    // import_history's (retweets, replies, likes, quotes, bookmarks, impressions).
    const int into[6] = {2, 0, 1, 3, 4, 5};
    for (int k = 0; k < 6; ++k) o.counts[into[k]] = Count((*fields)[4 + k], &bad);
    if (bad) return Bad(where + "a count is not a whole number");
    each(std::move(o));
    return true;
  });
  return ok && (header || Bad(path + ": empty (not even its header)"));
}

bool ReadDataset(const std::string& dir, Dataset& d) {
  const std::optional<std::string> json = ReadWhole(dir + "/" + ex::kDatasheetJson);
  rapidjson::Document sheet;
  if (!json || !json::Parse(sheet, *json).empty() || !sheet.IsObject() || !sheet.HasMember("format") ||
      !sheet["format"].IsString() || std::string(sheet["format"].GetString()) != "tweetkeeper-dataset 1" ||
      !sheet.HasMember("name") || !sheet["name"].IsString())
    return Bad(dir + "/" + ex::kDatasheetJson + ": not a datasheet of format \"tweetkeeper-dataset 1\" with a name");
  d.name = sheet["name"].GetString();
  std::uint64_t x = 0;
  bool ok = ReadReferences(dir + "/" + ex::kXIds, true, "", d, x);
  ok = ReadReferences(dir + "/" + ex::kBlueskyUris, false, "at://", d, d.bluesky) && ok;
  ok = ReadReferences(dir + "/" + ex::kMastodonUrls, false, "https://", d, d.mastodon) && ok;
  return ReadHistory(dir + "/" + ex::kHistory, [&](Observation&&) { ++d.observations; }) && ok;
}

std::string CountsLiteral(const std::vector<Observation>& obs) {
  std::string s = "{";
  for (std::size_t i = 0; i < obs.size(); ++i) {
    s += i > 0 ? ",{" : "{";
    for (int k = 0; k < 6; ++k) {
      if (k) s += ',';
      s += obs[i].counts[k] ? std::to_string(*obs[i].counts[k]) : "NULL";
    }
    s += '}';
  }
  return s + "}";
}

struct Imported {
  std::uint64_t added = 0, stored = 0;
  std::string started;  // the transaction's time: reads after it are reads again
};

// Everything in one transaction: all or nothing.
void Write(pqxx::connection& conn, const std::string& dir, const Dataset& d, const std::string& collection,
           Imported& r) {
  pqxx::work tx(conn);
  r.started = tx.exec1("SELECT now()::text")[0].as<std::string>();
  tx.exec_params("SELECT tweetkeeper.create_collection($1, 'import')", collection);
  for (std::size_t i = 0; i < d.x_ids.size(); i += kChunk) {
    const std::vector<std::int64_t> ids(d.x_ids.begin() + i, d.x_ids.begin() + std::min(i + kChunk, d.x_ids.size()));
    r.added += tx.exec_params1("SELECT tweetkeeper.schedule_tweets($1::bigint[])", ArrayLiteral(ids))[0].as<std::uint64_t>();
    tx.exec_params("SELECT tweetkeeper.collect($1, $2::bigint[])", collection, ArrayLiteral(ids));
  }
  for (std::size_t i = 0; i < d.urls.size(); i += kChunk) {
    const std::vector<std::string> urls(d.urls.begin() + i, d.urls.begin() + std::min(i + kChunk, d.urls.size()));
    r.added += tx.exec_params1("SELECT tweetkeeper.schedule_posts($1::text[])", TextArrayLiteral(urls))[0].as<std::uint64_t>();
    tx.exec_params("SELECT tweetkeeper.collect_posts($1, $2::text[])", collection, TextArrayLiteral(urls));
  }
  // history.csv read again (checked whole before), kChunk observations a call: memory stays
  // small however long the history.
  std::vector<Observation> chunk;
  const auto send = [&] {
    if (chunk.empty()) return;
    std::vector<std::string> urls, times;
    for (const Observation& o : chunk) {
      urls.push_back(o.url);
      times.push_back(o.observed_at);
    }
    r.stored += tx.exec_params1("SELECT tweetkeeper.import_history($1::text[], $2::timestamptz[], $3::bigint[])",
                                TextArrayLiteral(urls), TextArrayLiteral(times), CountsLiteral(chunk))[0]
                    .as<std::uint64_t>();
    chunk.clear();
  };
  if (!ReadHistory(dir + "/" + ex::kHistory, [&](Observation&& o) {
        chunk.push_back(std::move(o));
        if (chunk.size() == kChunk) send();
      }))
    throw std::runtime_error(dir + "/" + ex::kHistory + " changed while it was imported");
  send();
  // The dataset's posts, by id, for the wait (want: as tweetkeeper-export --ids reads them).
  ex::CreateWant(tx);
  std::vector<std::int64_t> ids = d.x_ids;
  std::vector<std::string> urls = d.urls;
  ex::AddWant(tx, ids, urls);
  ex::ResolveWant(tx);
  tx.commit();
}

// How many of the dataset's posts were read here since `started`, found gone (by reason, whenever:
// a deleted post is not read again), or neither yet.
struct ReadAgain {
  std::uint64_t posts = 0, read = 0, gone = 0, waiting = 0;
  std::string reasons;  // "deleted 3, missing 2"
};
ReadAgain Tally(pqxx::connection& conn, const std::string& started) {
  pqxx::nontransaction tx(conn);
  const pqxx::row row = tx.exec_params1(
      "WITH s AS (SELECT DISTINCT w.id, a.last_seen >= $1::timestamptz AS read, a.reason, "
      "                  a.reason IS NOT NULL AS gone "
      "             FROM want w JOIN tweetkeeper.post_availability a ON a.post_id = w.id) "
      "SELECT count(*), count(*) FILTER (WHERE read AND reason IS NULL), count(*) FILTER (WHERE gone), "
      "       count(*) FILTER (WHERE NOT coalesce(read AND reason IS NULL, false) AND NOT coalesce(gone, false)), "
      "       coalesce((SELECT string_agg(x.reason || ' ' || x.n, ', ' ORDER BY x.reason) "
      "                   FROM (SELECT reason, count(*) AS n FROM s WHERE gone GROUP BY 1) x), '') FROM s",
      started);
  return {row[0].as<std::uint64_t>(), row[1].as<std::uint64_t>(), row[2].as<std::uint64_t>(),
          row[3].as<std::uint64_t>(), row[4].as<std::string>()};
}

}  // namespace

int ImportDataset(const DatasetOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  if (!Verify(o.dir)) {
    std::cerr << "tweetkeeper-import: " << o.dir << ": refused, nothing imported" << std::endl;
    return kExitUsage;
  }
  Dataset d;
  if (!ReadDataset(o.dir, d)) {
    std::cerr << "tweetkeeper-import: " << o.dir << ": refused, nothing imported" << std::endl;
    return kExitUsage;
  }
  const std::string collection = o.collection.empty() ? d.name : o.collection;
  Imported r;
  std::unique_ptr<pqxx::connection> conn = ex::ConnectOrSay(o.dsn, "tweetkeeper-import");
  if (!conn) return kExitDatabase;
  try {
    Write(*conn, o.dir, d, collection, r);
  } catch (const pqxx::sql_error& e) {
    std::cerr << "tweetkeeper-import: " << o.dir << ": nothing imported: "
              << tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn);
    return e.sqlstate() == "22023" ? kExitUsage : kExitDatabase;
  } catch (const std::exception& e) {
    std::cerr << "tweetkeeper-import: " << o.dir << ": nothing imported: "
              << tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn) << std::endl;
    return kExitDatabase;
  }
  const std::uint64_t posts = d.x_ids.size() + d.urls.size();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cerr << fmt::format(
                   "tweetkeeper-import: dataset {}: {} posts ({} X, {} Bluesky, {} Mastodon): {} new, {} already "
                   "tracked, in collection {}; {} of {} observations stored as history (the others were there); "
                   "{:.1f} s",
                   o.dir, Thousands(posts), Thousands(d.x_ids.size()), Thousands(d.bluesky), Thousands(d.mastodon),
                   Thousands(r.added), Thousands(posts - r.added), conn->quote(collection), Thousands(r.stored),
                   Thousands(d.observations), secs)
            << std::endl;
  if (o.wait_seconds <= 0) return 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(o.wait_seconds);
  const auto every = std::chrono::seconds(std::max(1, o.progress_every));
  auto said = std::chrono::steady_clock::now();
  try {
    for (;;) {
      const ReadAgain t = Tally(*conn, r.started);
      const bool done = t.waiting == 0;
      const auto now = std::chrono::steady_clock::now();
      if (done || now >= until || now - said >= every) {
        std::cerr << fmt::format("tweetkeeper-import: {} of {} read again, {} gone{}{}", Thousands(t.read),
                                 Thousands(t.posts), Thousands(t.gone), t.reasons.empty() ? "" : " (" + t.reasons + ")",
                                 done ? "" : fmt::format(", {} not read yet", Thousands(t.waiting)))
                  << std::endl;
        said = now;
      }
      if (done) return 0;
      if (now >= until) {
        std::cerr << "tweetkeeper-import: --wait-read: " << o.wait_seconds
                  << " s passed before every post was read again or found gone (are workers running?)" << std::endl;
        return kExitDatabase;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  } catch (const std::exception& e) {
    std::cerr << "tweetkeeper-import: " << tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn) << std::endl;
    return kExitDatabase;
  }
}

}  // namespace tweetkeeper::importer
