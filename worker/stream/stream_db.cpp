#include "stream/stream_db.hpp"

#include <pqxx/pqxx>

#include "queue/payload.hpp"
#include "service/database_state.hpp"

namespace tweetkeeper::worker::stream {
namespace {

template <typename T>
std::string ArrayLiteral(const std::vector<T>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out + "}";
}

std::string ResultsLiteral(const std::vector<ReadResult>& results) {
  std::string out = "{";
  for (std::size_t i = 0; i < results.size(); ++i) out += std::string(i ? "," : "") + ResultName(results[i]);
  return out + "}";
}

// Counts from a bigint[] of four ("{1,2,3,4}"; NULL elements: 0).
Counts ParseCounts(const pqxx::field& f) {
  Counts c{};
  if (f.is_null()) return c;
  auto array = f.as_array();
  std::size_t k = 0;
  for (auto item = array.get_next(); item.first != pqxx::array_parser::juncture::done && k < kKinds;
       item = array.get_next()) {
    if (item.first == pqxx::array_parser::juncture::string_value) c[k++] = std::stoll(item.second);
    else if (item.first == pqxx::array_parser::juncture::null_value) ++k;
  }
  return c;
}

// Microseconds to timestamptz, in SQL.
constexpr const char* kUsArray =
    "(SELECT coalesce(array_agg(to_timestamp(x / 1e6) ORDER BY i), '{}') FROM unnest(%s::bigint[]) WITH ORDINALITY u(x, i))";

std::string UsArray(int param) {
  char buf[160];
  std::snprintf(buf, sizeof buf, kUsArray, ("$" + std::to_string(param)).c_str());
  return buf;
}

}  // namespace

StreamDb::StreamDb(std::string dsn, std::string reader) : dsn_(std::move(dsn)), reader_(std::move(reader)) {}

bool StreamDb::connected() const { return connection_ && connection_->is_open(); }

void StreamDb::Connect() {
  connection_.reset();
  connection_ = ConnectServing(dsn_, {"tweetkeeper.stream_take(text,interval,interval)"}, "read the stream");
}

std::optional<Taken> StreamDb::Take(int lease_seconds, const std::string& replay_window) {
  pqxx::work tx(*connection_);
  const pqxx::result r = tx.exec_params(
      "SELECT coalesce(position_us, 0), gap FROM tweetkeeper.stream_take($1, make_interval(secs => $2), $3::interval)",
      reader_, lease_seconds, replay_window);
  tx.commit();
  if (r.empty()) return std::nullopt;
  return Taken{r[0][0].as<std::int64_t>(), r[0][1].as<bool>()};
}

void StreamDb::Load(Counter& counter) {
  pqxx::work tx(*connection_);
  for (const auto& row : tx.exec("SELECT tweet_id, did, rkey, counts FROM tweetkeeper.stream_held_posts()"))
    counter.AddPost(row[0].as<std::int64_t>(), row[1].as<std::string>() + "/" + row[2].as<std::string>(),
                    ParseCounts(row[3]));
  for (const auto& row : tx.exec("SELECT record_key, tweet_id, kind, did, rkey FROM tweetkeeper.stream_held_records()"))
    counter.AddRecord(static_cast<std::uint64_t>(row[0].as<std::int64_t>()), row[1].as<std::int64_t>(),
                      static_cast<Kind>(row[2].as<int>() - 1), row[3].as<std::string>() + "/" + row[4].as<std::string>());
  tx.commit();
}

std::vector<WaitingRead> StreamDb::ReadsDue(std::int64_t upto_us, int max_reads) {
  pqxx::work tx(*connection_);
  const pqxx::result r = tx.exec_params(
      "SELECT tweet_id, did, rkey, (extract(epoch FROM as_of) * 1e6)::bigint, counts, counted"
      "  FROM tweetkeeper.stream_reads_due(to_timestamp($1 / 1e6), $2)",
      upto_us, max_reads);
  tx.commit();
  std::vector<WaitingRead> out;
  out.reserve(r.size());
  for (const auto& row : r)
    out.push_back({row[0].as<std::int64_t>(), row[1].as<std::string>() + "/" + row[2].as<std::string>(),
                   row[3].as<std::int64_t>(), ParseCounts(row[4]), row[5].as<bool>()});
  return out;
}

std::vector<std::int64_t> StreamDb::Store(const Flush& f) {
  pqxx::work tx(*connection_);
  // The account events first: a post gone with its account is not counted by this flush.
  if (!f.account_dids.empty()) {
    std::string actives = "{";
    for (std::size_t i = 0; i < f.account_actives.size(); ++i) actives += std::string(i ? "," : "") + (f.account_actives[i] ? "t" : "f");
    actives += "}";
    tx.exec_params("SELECT tweetkeeper.store_stream_accounts($1::text[], $2::boolean[], $3::text[])",
                   TextArrayLiteral(f.account_dids), actives, TextArrayLiteral(f.account_statuses));
  }
  const std::string sql = "SELECT unnest(tweetkeeper.store_stream_counts($1, $2, $3, $4::bigint[], " + UsArray(5) +
                          ", $6::bigint[], $7::bigint[], $8::bigint[], $9::smallint[], $10::bigint[], $11::bigint[], " +
                          UsArray(12) + ", $13::text[], $14::bigint[]))";
  const pqxx::result r =
      tx.exec_params(sql, f.position_us, f.events, f.counted, ArrayLiteral(f.ids), ArrayLiteral(f.at_us),
                     ArrayLiteral(f.counts), ArrayLiteral(f.keys), ArrayLiteral(f.key_ids), ArrayLiteral(f.kinds),
                     ArrayLiteral(f.gone), ArrayLiteral(f.read_ids), ArrayLiteral(f.read_as_of_us),
                     ResultsLiteral(f.read_results), ArrayLiteral(f.differences));
  tx.commit();
  std::vector<std::int64_t> forgotten;
  for (const auto& row : r) forgotten.push_back(row[0].as<std::int64_t>());
  return forgotten;
}

}  // namespace tweetkeeper::worker::stream
