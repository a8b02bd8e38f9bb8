// How many observations of a tweet's life history keeps: reads the ages (seconds since creation)
// at which the age policy refreshes a tweet, one per line on stdin, and replays them for --tweets
// ids of the mock's world (tests/mock_api/tweet_model.cpp, the metrics every test sees). An
// observation is stored when it is the first or when any count differs from the one before, the
// rule of complete_batch with tweetkeeper.history_keep_unchanged off. Prints
// "refreshes R stored S" (per tweet, averaged) for tests/bench/history.sh.
//   --rows FILE   also writes the stored observations there, as metric_history's columns in CSV
//                 (tweet_id, lease_id, observed_at in microseconds since 1970-01-01 UTC, the six
//                 counts), for the compacted-history measure;
//   --views-tick  every refresh sees one view more (the worst case for keeping only changes: every
//                 refresh is stored).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "mock_api/tweet_model.hpp"

int main(int argc, char** argv) {
  long tweets = 10000;
  std::string rows_path;
  bool views_tick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--views-tick") {
      views_tick = true;
    } else if (arg == "--tweets" && i + 1 < argc) {
      tweets = std::stol(argv[++i]);
    } else if (arg == "--rows" && i + 1 < argc) {
      rows_path = argv[++i];
    } else {
      std::cerr << "history_life: unknown argument " << arg << "\n";
      return 2;
    }
  }
  if (tweets <= 0) {
    std::cerr << "history_life: --tweets must be positive\n";
    return 2;
  }
  std::vector<int64_t> ages;
  for (int64_t a; std::cin >> a;) ages.push_back(a);
  if (ages.empty()) {
    std::cerr << "history_life: no ages on stdin\n";
    return 2;
  }
  using tweetkeeper::mock::MetricsAt;
  auto key = [](const tweetkeeper::mock::PublicMetrics& m) {
    return std::make_tuple(m.retweet_count, m.reply_count, m.like_count, m.quote_count, m.bookmark_count,
                           m.impression_count);
  };
  std::ofstream rows;
  if (!rows_path.empty()) {
    rows.open(rows_path);
    if (!rows) {
      std::cerr << "history_life: cannot write " << rows_path << "\n";
      return 2;
    }
  }
  uint64_t stored = 0;
  // Ids of tweets made a second apart in 2024, with their low bits varied as real ids have them.
  const uint64_t first = (uint64_t{1704067200000} - tweetkeeper::mock::kTwitterEpochMs) << 22;
  for (long t = 0; t < tweets; ++t) {
    const uint64_t id = first + (static_cast<uint64_t>(t) * 1000 << 22) + static_cast<uint64_t>(t % 4096);
    bool have = false;
    decltype(key(MetricsAt(id, 0))) last;
    const int64_t created_ms = static_cast<int64_t>(id >> 22) + tweetkeeper::mock::kTwitterEpochMs;
    for (std::size_t i = 0; i < ages.size(); ++i) {
      const int64_t a = ages[i];
      auto metrics = MetricsAt(id, a);
      if (views_tick) metrics.impression_count += static_cast<int64_t>(i);
      auto now = key(metrics);
      if (!have || now != last) {
        ++stored;
        if (rows.is_open()) {
          // A lease of a system claiming ten batches a second: consecutive leases of one tweet
          // are as far apart as its refreshes.
          const int64_t at_ms = created_ms + a * 1000;
          rows << id << ',' << (at_ms / 100 + t % 100) << ',' << at_ms * 1000 + t % 1000 << ','
               << metrics.retweet_count << ',' << metrics.reply_count << ',' << metrics.like_count << ','
               << metrics.quote_count << ',' << metrics.bookmark_count << ',' << metrics.impression_count << '\n';
        }
      }
      last = now;
      have = true;
    }
  }
  std::printf("refreshes %zu stored %.2f\n", ages.size(), static_cast<double>(stored) / static_cast<double>(tweets));
  return 0;
}
