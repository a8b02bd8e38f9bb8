#include "history_codec.hpp"

#include <algorithm>
#include <tuple>

#include "cpp_only.hpp"

namespace tweetkeeper {
namespace {

constexpr unsigned char kVersion = 1;

std::uint64_t ZigZag(std::uint64_t delta) {
  const auto v = static_cast<std::int64_t>(delta);
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}

std::uint64_t UnZigZag(std::uint64_t z) { return (z >> 1) ^ (~(z & 1) + 1); }

void PutVarint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// v minus prev, modulo 2^64.
std::uint64_t Delta(std::int64_t v, std::int64_t prev) {
  return static_cast<std::uint64_t>(v) - static_cast<std::uint64_t>(prev);
}

std::int64_t Apply(std::int64_t prev, std::uint64_t delta) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(prev) + delta);
}

bool Before(const HistoryRow& a, const HistoryRow& b) {
  return std::tie(a.observed_at, a.lease_id) < std::tie(b.observed_at, b.lease_id);
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool done() const { return pos_ == in_.size(); }
  unsigned char Byte() {
    if (pos_ >= in_.size()) throw HistoryCodecError("packed history is truncated");
    return static_cast<unsigned char>(in_[pos_++]);
  }
  std::uint64_t Varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const unsigned char b = Byte();
      if (shift == 63 && b > 1) throw HistoryCodecError("packed history has a varint beyond 64 bits");
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw HistoryCodecError("packed history has a varint beyond 64 bits");
  }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string PackHistory(const std::vector<HistoryRow>& rows) {
  if (rows.size() > kMaxHistoryRows)
    throw std::invalid_argument(std::to_string(rows.size()) + " observations in one packed span; at most " +
                                std::to_string(kMaxHistoryRows));
  std::string out;
  out.reserve(2 + rows.size() * 12);
  out.push_back(static_cast<char>(kVersion));
  PutVarint(out, rows.size());
  HistoryRow prev;
  std::array<std::int64_t, kHistoryCounts> last{};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const HistoryRow& r = rows[i];
    if (i > 0 && !Before(prev, r)) {
      throw std::invalid_argument("history rows must be in (observed_at, lease_id) order, each once");
    }
    PutVarint(out, ZigZag(Delta(r.observed_at, prev.observed_at)));
    PutVarint(out, ZigZag(Delta(r.lease_id, prev.lease_id)));
    unsigned char nulls = 0;
    for (int c = 0; c < kHistoryCounts; ++c) {
      if (!r.counts[c]) nulls |= static_cast<unsigned char>(1u << c);
    }
    out.push_back(static_cast<char>(nulls));
    for (int c = 0; c < kHistoryCounts; ++c) {
      if (!r.counts[c]) continue;
      PutVarint(out, ZigZag(Delta(*r.counts[c], last[c])));
      last[c] = *r.counts[c];
    }
    prev = r;
  }
  return out;
}

std::vector<HistoryRow> UnpackHistory(std::string_view packed) {
  Reader in(packed);
  if (in.Byte() != kVersion) throw HistoryCodecError("packed history has an unknown version");
  const std::uint64_t n = in.Varint();
  // Each row takes at least 3 bytes: a count beyond that is corrupt, not a reason to allocate.
  if (n > packed.size() / 3) throw HistoryCodecError("packed history is truncated");
  if (n > kMaxHistoryRows)
    throw HistoryCodecError("packed history holds " + std::to_string(n) + " observations; at most " +
                            std::to_string(kMaxHistoryRows));
  std::vector<HistoryRow> rows;
  rows.reserve(n);
  HistoryRow prev;
  std::array<std::int64_t, kHistoryCounts> last{};
  for (std::uint64_t i = 0; i < n; ++i) {
    HistoryRow r;
    r.observed_at = Apply(prev.observed_at, UnZigZag(in.Varint()));
    r.lease_id = Apply(prev.lease_id, UnZigZag(in.Varint()));
    const unsigned char nulls = in.Byte();
    if (nulls >> kHistoryCounts) throw HistoryCodecError("packed history has an unknown null bit");
    for (int c = 0; c < kHistoryCounts; ++c) {
      if (nulls & (1u << c)) continue;
      last[c] = Apply(last[c], UnZigZag(in.Varint()));
      r.counts[c] = last[c];
    }
    if (i > 0 && !Before(prev, r)) throw HistoryCodecError("packed history is out of order");
    rows.push_back(r);
    prev = r;
  }
  if (!in.done()) throw HistoryCodecError("packed history has trailing bytes");
  return rows;
}

std::string MergeHistory(std::string_view a, std::string_view b) {
  const std::vector<HistoryRow> x = UnpackHistory(a);
  const std::vector<HistoryRow> y = UnpackHistory(b);
  std::vector<HistoryRow> all;
  all.reserve(x.size() + y.size());
  std::size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    if (j == y.size() || (i < x.size() && Before(x[i], y[j]))) {
      all.push_back(x[i++]);
    } else if (i == x.size() || Before(y[j], x[i])) {
      all.push_back(y[j++]);
    } else {  // the same observation in both: once
      all.push_back(x[i++]);
      ++j;
    }
  }
  return PackHistory(all);
}

std::string HistoryWithout(std::string_view packed, std::int64_t observed_at, std::int64_t lease_id) {
  std::vector<HistoryRow> rows = UnpackHistory(packed);
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [&](const HistoryRow& r) { return r.observed_at == observed_at && r.lease_id == lease_id; }),
             rows.end());
  return PackHistory(rows);
}

}  // namespace tweetkeeper
