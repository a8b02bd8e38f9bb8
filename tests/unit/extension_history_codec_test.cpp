// extension/history_codec: compacted history reads back exactly what was packed, is small for
// the usual series, and refuses what it cannot read.
#include "history_codec.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>

namespace tweetkeeper {
namespace {

HistoryRow Row(std::int64_t at, std::int64_t lease, std::array<std::optional<std::int64_t>, 6> counts) {
  HistoryRow r;
  r.observed_at = at;
  r.lease_id = lease;
  r.counts = counts;
  return r;
}

TEST(HistoryCodec, EmptyRoundTrips) {
  EXPECT_TRUE(UnpackHistory(PackHistory({})).empty());
  EXPECT_EQ(PackHistory({}).size(), 2u);
}

TEST(HistoryCodec, NullsAndExtremesRoundTrip) {
  constexpr auto lo = std::numeric_limits<std::int64_t>::min();
  constexpr auto hi = std::numeric_limits<std::int64_t>::max();
  const std::vector<HistoryRow> rows = {
      Row(lo, hi, {0, std::nullopt, hi, lo, -1, std::nullopt}),
      Row(-5, lo, {std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt}),
      Row(-5, hi, {hi, 7, lo, 0, std::nullopt, 3}),
      Row(hi, 0, {lo, hi, 0, -1, 1, lo}),
  };
  EXPECT_EQ(UnpackHistory(PackHistory(rows)), rows);
}

TEST(HistoryCodec, RandomSeriesRoundTrip) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<HistoryRow> rows;
    std::int64_t at = static_cast<std::int64_t>(rng() >> 2), lease = static_cast<std::int64_t>(rng() >> 3);
    std::array<std::int64_t, 6> v{};
    const int n = static_cast<int>(rng() % 120);
    for (int i = 0; i < n; ++i) {
      at += static_cast<std::int64_t>(rng() % 4'000'000'000ULL);  // up to an hour apart, same time allowed
      lease += static_cast<std::int64_t>(rng() % 1'000'000) + 1;
      HistoryRow r;
      r.observed_at = at;
      r.lease_id = lease;
      for (int c = 0; c < 6; ++c) {
        v[c] += static_cast<std::int64_t>(rng() % 1000) - (trial % 7 == 0 ? 500 : 0);  // counts fall too
        if (rng() % 9 != 0) r.counts[c] = v[c];
      }
      rows.push_back(r);
    }
    ASSERT_EQ(UnpackHistory(PackHistory(rows)), rows) << "trial " << trial;
  }
}

TEST(HistoryCodec, AUsualSeriesTakesAFewBytesPerObservation) {
  // Refreshes 10 minutes apart, leases a million apart, counts growing by a few, no views.
  std::vector<HistoryRow> rows;
  for (int i = 0; i < 84; ++i) {
    rows.push_back(Row(800'000'000'000'000 + i * 600'000'000LL, 5'000'000 + i * 1'000'000LL,
                       {10 + i, 2 + i / 10, 100 + 3 * i, i / 20, std::nullopt, std::nullopt}));
  }
  const std::string packed = PackHistory(rows);
  EXPECT_LT(packed.size(), 84u * 16) << "bytes per observation: " << packed.size() / 84.0;
  EXPECT_EQ(UnpackHistory(packed), rows);
}

TEST(HistoryCodec, RefusesRowsOutOfOrderOrTwice) {
  EXPECT_THROW(PackHistory({Row(2, 1, {}), Row(1, 1, {})}), std::invalid_argument);
  EXPECT_THROW(PackHistory({Row(1, 1, {}), Row(1, 1, {})}), std::invalid_argument);
  EXPECT_NO_THROW(PackHistory({Row(1, 1, {}), Row(1, 2, {})}));
}

TEST(HistoryCodec, RefusesWhatItCannotRead) {
  const std::string good = PackHistory({Row(1, 1, {1, 2, 3, 4, 5, 6}), Row(2, 2, {7, 8, 9, 10, 11, 12})});
  EXPECT_THROW(UnpackHistory(""), HistoryCodecError);
  EXPECT_THROW(UnpackHistory(std::string("\x02\x00", 2)), HistoryCodecError);  // unknown version
  for (std::size_t cut = 1; cut < good.size(); ++cut) {
    EXPECT_THROW(UnpackHistory(good.substr(0, cut)), HistoryCodecError) << "cut at " << cut;
  }
  EXPECT_THROW(UnpackHistory(good + "x"), HistoryCodecError);
  std::string bad_nulls = PackHistory({Row(1, 1, {})});
  bad_nulls.back() = static_cast<char>(0x40 | 0x3f);  // a seventh null bit
  EXPECT_THROW(UnpackHistory(bad_nulls), HistoryCodecError);
  // A count of rows far beyond the bytes there: refused before anything is allocated.
  EXPECT_THROW(UnpackHistory(std::string("\x01\xff\xff\xff\xff\x0f", 6)), HistoryCodecError);
  // A varint beyond 64 bits.
  EXPECT_THROW(UnpackHistory(std::string("\x01\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 12)),
               HistoryCodecError);
}

TEST(HistoryCodec, MergeInterleavesAndKeepsEachObservationOnce) {
  const std::vector<HistoryRow> a = {Row(1, 10, {1}), Row(5, 50, {5}), Row(9, 90, {9})};
  const std::vector<HistoryRow> b = {Row(3, 30, {3}), Row(5, 50, {5}), Row(11, 110, {11})};
  const std::vector<HistoryRow> want = {Row(1, 10, {1}), Row(3, 30, {3}), Row(5, 50, {5}), Row(9, 90, {9}),
                                        Row(11, 110, {11})};
  EXPECT_EQ(UnpackHistory(MergeHistory(PackHistory(a), PackHistory(b))), want);
  EXPECT_EQ(UnpackHistory(MergeHistory(PackHistory(b), PackHistory(a))), want);
  EXPECT_EQ(UnpackHistory(MergeHistory(PackHistory({}), PackHistory(a))), a);
  EXPECT_THROW(MergeHistory("", PackHistory(a)), HistoryCodecError);
}

TEST(HistoryCodec, AtMostAMillionObservationsEitherWay) {
  // Packing: as many as the bound, not one more (what is packed must read back).
  std::vector<HistoryRow> rows(kMaxHistoryRows + 1);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = Row(static_cast<std::int64_t>(i), 1, {1});
  EXPECT_THROW(PackHistory(rows), std::invalid_argument);
  rows.pop_back();
  const std::string packed = PackHistory(rows);
  EXPECT_EQ(UnpackHistory(packed).size(), kMaxHistoryRows);
  // Unpacking: a value of 10 MB that says it holds more than the bound is refused by its header,
  // before rows are allocated for it.
  std::string hostile("\x01", 1);
  std::uint64_t n = kMaxHistoryRows + 1;  // (a varint: 7 bits a byte, the lowest first)
  for (; n >= 0x80; n >>= 7) hostile.push_back(static_cast<char>(0x80 | (n & 0x7f)));
  hostile.push_back(static_cast<char>(n));
  hostile.resize(10 << 20, '\0');
  try {
    UnpackHistory(hostile);
    ADD_FAILURE() << "a packed value of more than the bound was read";
  } catch (const HistoryCodecError& e) {
    EXPECT_EQ(std::string(e.what()), "packed history holds 1000001 observations; at most 1000000");
  }
}

TEST(HistoryCodec, WithoutTakesOutOneObservation) {
  const std::vector<HistoryRow> rows = {Row(1, 10, {1}), Row(5, 50, {5}), Row(5, 51, {6})};
  EXPECT_EQ(UnpackHistory(HistoryWithout(PackHistory(rows), 5, 50)),
            (std::vector<HistoryRow>{Row(1, 10, {1}), Row(5, 51, {6})}));
  EXPECT_EQ(UnpackHistory(HistoryWithout(PackHistory(rows), 5, 52)), rows);
  EXPECT_TRUE(UnpackHistory(HistoryWithout(PackHistory({Row(1, 10, {1})}), 1, 10)).empty());
  EXPECT_THROW(HistoryWithout("x", 1, 1), HistoryCodecError);
}

}  // namespace
}  // namespace tweetkeeper
