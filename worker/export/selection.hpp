#pragma once
// Which posts tweetkeeper-export and tweetkeeper-report read: all, a network, a creation time range,
// a collection (tweetkeeper.collections), the ids or post URLs of a file (--ids: read into the temporary table want, bad lines named with
// their number), as SQL conditions on tweetkeeper.posts p. Posts found deleted or unavailable
// (a tombstone) are left out, and counted apart.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

namespace tweetkeeper::exporter {

inline constexpr int kExitDatabase = 1, kExitUsage = 2, kExitBadLines = 3;

struct PostFilter {
  std::string dsn;  // (only to redact it from errors)
  std::string network, since, until, ids_file, collection;
  bool x_only = false;
};

// --network, --since, --until, --collection and --ids into filter: the selection options tweetkeeper-export
// and tweetkeeper-report share.
void AddSelectionOptions(CLI::App& app, PostFilter& filter);

// The conditions, and what --ids said.
struct Selection {
  std::string exported = "NOT EXISTS (SELECT 1 FROM tweetkeeper.tombstones x WHERE x.tweet_id = p.post_id)";
  std::string left_out = "EXISTS (SELECT 1 FROM tweetkeeper.tombstones x WHERE x.tweet_id = p.post_id)";
  std::uint64_t bad_lines = 0, not_tracked = 0;
};

// A connection to `dsn`, or nullptr after "<program>: cannot connect: <why>" on stderr (no password).
std::unique_ptr<pqxx::connection> ConnectOrSay(const std::string& dsn, const char* program);

// The temporary table want (id bigint, url text): made; ids and URLs added (the vectors emptied);
// each URL's post id filled in where the post is tracked (an X id is its own).
void CreateWant(pqxx::transaction_base& tx);
void AddWant(pqxx::transaction_base& tx, std::vector<std::int64_t>& ids, std::vector<std::string>& urls);
void ResolveWant(pqxx::transaction_base& tx);

// Reads --ids into the temporary table want; how many lines were bad, nullopt when the file
// cannot be read.
std::optional<std::uint64_t> LoadIds(pqxx::connection& c, const std::string& path);

// The filters, validated by PostgreSQL's own parser (a bad time is bad usage, not a failure). An
// exit code when the program cannot go on (said on stderr, after "program: ").
std::optional<int> Select(pqxx::connection& conn, const PostFilter& filter, Selection& selection, const char* program);

}  // namespace tweetkeeper::exporter
