#include "export/selection.hpp"

#include <chrono>
#include <fstream>
#include <iostream>
#include <string_view>
#include <tuple>
#include <vector>

#include "dsn/dsn.hpp"
#include "ids/id_reader.hpp"
#include "queue/payload.hpp"

namespace tweetkeeper::exporter {

void AddSelectionOptions(CLI::App& app, PostFilter& filter) {
  app.add_option("--network", filter.network, "Only this network's posts: x, bluesky or mastodon")
      ->check(CLI::IsMember({"x", "bluesky", "mastodon"}));
  app.add_option("--since", filter.since,
                 "Only posts created at or after this time (e.g. 2026-11-01 or 2026-11-01T12:00Z)");
  app.add_option("--until", filter.until, "Only posts created before this time");
  app.add_option("--collection", filter.collection, "Only the posts of this collection (tweetkeeper.collections)")
      ->type_name("NAME");
  app.add_option("--ids", filter.ids_file, "Only the posts in this file: one id or post URL per line");
}

namespace im = tweetkeeper::importer;
using tweetkeeper::worker::ArrayLiteral;
using tweetkeeper::worker::TextArrayLiteral;

std::unique_ptr<pqxx::connection> ConnectOrSay(const std::string& dsn, const char* program) {
  try {
    return std::make_unique<pqxx::connection>(dsn);
  } catch (const std::exception& e) {
    std::cerr << program << ": cannot connect: " << tweetkeeper::worker::RedactDsnSecrets(e.what(), dsn) << std::endl;
    return nullptr;
  }
}

void CreateWant(pqxx::transaction_base& tx) { tx.exec("CREATE TEMP TABLE want (id bigint, url text)"); }

void AddWant(pqxx::transaction_base& tx, std::vector<std::int64_t>& ids, std::vector<std::string>& urls) {
  if (!ids.empty()) tx.exec_params("INSERT INTO want (id) SELECT unnest($1::bigint[])", ArrayLiteral(ids));
  if (!urls.empty()) tx.exec_params("INSERT INTO want (url) SELECT unnest($1::text[])", TextArrayLiteral(urls));
  ids.clear();
  urls.clear();
}

void ResolveWant(pqxx::transaction_base& tx) {
  // A Bluesky or Mastodon URL names its post by network, server and key (Bluesky: and author).
  tx.exec(
      "UPDATE want w SET id = (SELECT r.tweet_id FROM tweetkeeper.parse_post_url(w.url) p "
      "JOIN tweetkeeper.post_refs r ON r.network = p.network AND r.host = coalesce(p.host, '') "
      "AND r.post_key = p.post_key AND (r.network <> 'bluesky' OR r.author = p.author) LIMIT 1) "
      "WHERE w.url IS NOT NULL");
  tx.exec("CREATE INDEX ON want (id)");
  tx.exec("ANALYZE want");
}

std::optional<std::uint64_t> LoadIds(pqxx::connection& c, const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  pqxx::nontransaction tx(c);
  CreateWant(tx);
  im::IdReader reader(im::Format::kLines);
  std::vector<std::int64_t> ids;
  std::vector<std::string> urls;
  const auto flush = [&] { AddWant(tx, ids, urls); };
  const std::int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::uint64_t bad = 0, number = 0;
  std::string_view line;
  std::vector<char> buffer(8 * 1024 + 1);  // an id or a post URL a line (2,048 bytes at most)
  for (im::LineRead got; (got = im::ReadLine(file, buffer, &line)) != im::LineRead::kEnd;) {
    ++number;
    if (got == im::LineRead::kTooLong) {
      ++bad;
      std::cerr << path << ":" << number << ": the line is longer than " << buffer.size() - 1 << " bytes: skipped\n";
      continue;
    }
    im::LineResult r = reader.Parse(line, now_ms);
    if (!r.error.empty()) {
      ++bad;
      std::cerr << path << ":" << number << ": " << r.error << "\n";
      continue;
    }
    for (const im::Tweet& t : r.tweets) {
      if (t.url.empty())
        ids.push_back(t.id);
      else
        urls.push_back(t.url);
    }
    if (ids.size() + urls.size() >= 10'000) flush();
  }
  if (file.bad()) return std::nullopt;
  flush();
  ResolveWant(tx);
  return bad;
}

std::optional<int> Select(pqxx::connection& conn, const PostFilter& o, Selection& selection, const char* program) {
  std::string common;
  try {
    pqxx::nontransaction tx(conn);
    for (const auto& [name, value, op] : {std::tuple{"--since", o.since, ">="}, std::tuple{"--until", o.until, "<"}}) {
      if (value.empty()) continue;
      try {
        const std::string t = tx.exec_params1("SELECT $1::timestamptz::text", value)[0].as<std::string>();
        common += std::string(" AND p.created_at ") + op + " " + tx.quote(t) + "::timestamptz";
      } catch (const pqxx::data_exception& e) {
        std::cerr << program << ": " << name << ": not a time: " << value << std::endl;
        return kExitUsage;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << program << ": " << tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn) << std::endl;
    return kExitDatabase;
  }
  if (!o.collection.empty()) {
    try {
      pqxx::nontransaction tx(conn);
      if (tx.exec_params("SELECT 1 FROM tweetkeeper.collections c WHERE c.name = $1", o.collection).empty()) {
        std::cerr << program << ": --collection: no collection " << tx.quote(o.collection)
                  << " (tweetkeeper.collections lists them)" << std::endl;
        return kExitUsage;
      }
      common += " AND EXISTS (SELECT 1 FROM tweetkeeper.collection_posts c WHERE c.tweet_id = p.post_id AND c.collection = " +
                tx.quote(o.collection) + ")";
    } catch (const std::exception& e) {
      std::cerr << program << ": " << tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn) << std::endl;
      return kExitDatabase;
    }
  }
  if (o.x_only)
    common += " AND p.network = 'x'";
  else if (!o.network.empty())
    common += " AND p.network = " + conn.quote(o.network);

  if (!o.ids_file.empty()) {
    try {
      std::optional<std::uint64_t> bad = LoadIds(conn, o.ids_file);
      if (!bad) {
        std::cerr << program << ": cannot read --ids " << o.ids_file << std::endl;
        return kExitUsage;
      }
      selection.bad_lines = *bad;
      pqxx::nontransaction tx(conn);
      selection.not_tracked = tx.exec1(
                                    "SELECT count(*) FROM want w WHERE w.id IS NULL OR NOT EXISTS "
                                    "(SELECT 1 FROM tweetkeeper.tweets t WHERE t.tweet_id = w.id)")[0]
                                  .as<std::uint64_t>();
    } catch (const std::exception& e) {
      std::cerr << program << ": " << tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn) << std::endl;
      return kExitDatabase;
    }
    common += " AND p.post_id IN (SELECT w.id FROM want w WHERE w.id IS NOT NULL)";
  }
  selection.exported += common;
  selection.left_out += common;
  return std::nullopt;
}


}  // namespace tweetkeeper::exporter
