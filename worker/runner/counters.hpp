#pragma once
// What the slots of a process did, counted for the summaries the worker logs: one per
// --summary-interval that saw work, and one when it stops.

#include <atomic>
#include <cstdint>
#include <string>

namespace tweetkeeper::worker {

struct Totals {
  std::uint64_t batches = 0, tweets = 0, found = 0, problems = 0, errors = 0, expired = 0;
};

// Counted by every slot: requests answered (batches) and the tweets they asked for, what the
// answers found, failed batches and claims (errors), leases that had expired by completion.
struct Counters {
  std::atomic<std::uint64_t> batches{0}, tweets{0}, found{0}, problems{0}, errors{0}, expired{0};

  Totals Snapshot() const;
};

// "N batches, N tweets (N found, N problems), N errors, N expired leases" between two snapshots.
std::string Describe(const Totals& now, const Totals& before);

}  // namespace tweetkeeper::worker
