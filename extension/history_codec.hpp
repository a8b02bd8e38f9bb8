// Compacted history: one post's observations over a span, stored together and delta-encoded
// (as time-series stores keep a series: TimescaleDB's compressed segments, Gorilla). Pure C++,
// unit-tested without a server; extension/history_sql.cpp gives it to SQL.
//
// Format, version 1 (bytes):
//   1                 the version
//   varint n          the number of observations, in (observed_at, lease_id) order
//   then per observation:
//     zigzag varint   observed_at minus the previous one's (microseconds; the first: minus 0)
//     zigzag varint   lease_id minus the previous one's
//     1 byte          which of the six counts are NULL (bit i: count i), the rest bits zero
//     per count not NULL, in column order (retweet, reply, like, quote, bookmark, impression):
//       zigzag varint the count minus that column's last count not NULL (first: minus 0)
// Differences are taken modulo 2^64, so every int64 round-trips (lossless), and small changes
// (the usual case: counts that grow slowly, refreshes minutes apart) take one to four bytes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tweetkeeper {

inline constexpr int kHistoryCounts = 6;

struct HistoryRow {
  std::int64_t observed_at = 0;  // microseconds, as PostgreSQL's timestamptz
  std::int64_t lease_id = 0;
  std::array<std::optional<std::int64_t>, kHistoryCounts> counts{};
  bool operator==(const HistoryRow& o) const {
    return observed_at == o.observed_at && lease_id == o.lease_id && counts == o.counts;
  }
};

// Packed data that does not read back: truncated, a wrong version, trailing bytes, bits set
// that no count has.
class HistoryCodecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// rows in (observed_at, lease_id) order; throws std::invalid_argument otherwise.
// At most this many observations in one packed value (one post's week: a watch every minute is
// 10,080). A bound both ways, so that everything packed reads back, and a hostile or corrupt value
// cannot make unpacking allocate more than about 100 MiB.
constexpr std::size_t kMaxHistoryRows = 1'000'000;

// Throws std::invalid_argument for rows out of order, or more than kMaxHistoryRows of them.
std::string PackHistory(const std::vector<HistoryRow>& rows);
std::vector<HistoryRow> UnpackHistory(std::string_view packed);
// The rows of both, in order; a row that both hold (same observed_at and lease_id) once, as the
// first holds it.
std::string MergeHistory(std::string_view a, std::string_view b);
// The rows of packed without the one observed at observed_at by lease_id (all of them if none is).
std::string HistoryWithout(std::string_view packed, std::int64_t observed_at, std::int64_t lease_id);

}  // namespace tweetkeeper
