// How many observations of a tweet's life history keeps: reads the ages (seconds since creation)
// at which the age policy refreshes a tweet, one per line on stdin, and replays them for --tweets
// ids of the mock's world (tests/mock_api/tweet_model.cpp, the metrics every test sees). An
// observation is stored when it is the first or when any count differs from the one before, the
// rule of complete_batch with tweetkeeper.history_keep_unchanged off. Prints
// "refreshes R stored S" (per tweet, averaged) for tests/bench/history.sh.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "mock_api/tweet_model.hpp"

int main(int argc, char** argv) {
  long tweets = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--tweets") tweets = std::stol(argv[i + 1]);
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
  uint64_t stored = 0;
  // Ids of tweets made a second apart in 2024, with their low bits varied as real ids have them.
  const uint64_t first = (uint64_t{1704067200000} - tweetkeeper::mock::kTwitterEpochMs) << 22;
  for (long t = 0; t < tweets; ++t) {
    const uint64_t id = first + (static_cast<uint64_t>(t) * 1000 << 22) + static_cast<uint64_t>(t % 4096);
    bool have = false;
    decltype(key(MetricsAt(id, 0))) last;
    for (int64_t a : ages) {
      auto now = key(MetricsAt(id, a));
      if (!have || now != last) ++stored;
      last = now;
      have = true;
    }
  }
  std::printf("refreshes %zu stored %.2f\n", ages.size(), static_cast<double>(stored) / static_cast<double>(tweets));
  return 0;
}
