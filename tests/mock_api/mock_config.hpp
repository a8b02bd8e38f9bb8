#pragma once

#include <cstdint>
#include <set>
#include <string>

namespace tweetkeeper::mock {

// Faults the server injects on purpose. A new knob is a field here plus one line in PlanFaults().
struct FaultConfig {
  int64_t latency_ms = 0;  // added to every provider request
};

// Everything the command line can change; the defaults are the real API's current app limits.
struct MockConfig {
  uint64_t deleted_every = 53;      // id % D == 7  -> "deleted" (0 disables)
  uint64_t protected_every = 61;    // id % P == 11 -> "protected" (0 disables)
  bool repost_count_alias = false;  // spec 2.167 renames retweet_count to repost_count
  int64_t rate_limit = 3500;        // requests per window, per token
  int64_t window_seconds = 900;
  std::set<std::string> tokens;  // empty: any non-empty bearer token is accepted
  FaultConfig faults;
};

// What the edge must do to one request besides answering it.
struct FaultPlan {
  int64_t delay_ms = 0;
};

// Pure so tests can check it; request_seq lets future knobs (error rate, drops) stay deterministic.
inline FaultPlan PlanFaults(const FaultConfig& config, uint64_t /*request_seq*/) {
  FaultPlan plan;
  plan.delay_ms = config.latency_ms;
  return plan;
}

}  // namespace tweetkeeper::mock
