#pragma once
// One slot of a Runner: a thread's own database connection (Queue), HTTP client, backoffs and
// retry policies. Shared by the runner/*.cpp files; nothing outside runner/ sees it.

#include <map>
#include <string>
#include <vector>

#include "queue/retry_policy.hpp"
#include "runner/runner.hpp"

namespace tweetkeeper::worker {

inline constexpr Millis kFailureBase{1000}, kFailureCap{60'000};  // API or SQL failure, per slot

struct Runner::Slot {
  // dsn: the database it claims from (one of the partitions, or options' dsn); partition: its
  // number among them, named in the label when there are several (0: only one).
  Slot(int index, const RunnerOptions& o, StopSignal& stop, std::string dsn_of_slot, int partition)
      : label("slot " + std::to_string(index) + (partition > 0 ? " (dsn " + std::to_string(partition) + ")" : "")),
        dsn(std::move(dsn_of_slot)),
        database(partition > 0 ? partition - 1 : 0),
        queue(dsn, o.name, label, o.provider, CredentialNames(o.tokens)),
        http(o.http),
        claim_retry(ClaimRetry(label, reconnect_backoff, stop)),
        finish_retry(FinishRetry(label, reconnect_backoff, stop)) {}

  // Next failure's wait (counting it).
  Millis Failed() { return failure_backoff.Next(++failures); }

  static std::vector<std::string> CredentialNames(const std::map<std::string, std::string>& tokens) {
    std::vector<std::string> names;
    for (const auto& [name, token] : tokens) names.push_back(name);
    return names;
  }

  std::string label;
  std::string dsn;
  int database;  // its dsn's index among the partitions (0: the only one)
  Queue queue;
  HttpClient http;
  Backoff failure_backoff{kFailureBase, kFailureCap};
  Backoff reconnect_backoff = ReconnectBackoff();
  int failures = 0;          // consecutive failed batches or claims
  RetryPolicy claim_retry;   // as long as it takes, until shutdown
  RetryPolicy finish_retry;  // complete/release: a few tries
};

}  // namespace tweetkeeper::worker
