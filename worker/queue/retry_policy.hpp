#pragma once
// What a slot does when a call to the database fails: how long it reconnects before a call is
// given up (the RetryPolicy each Queue call takes), and what it makes of an error that ends a call
// (GuardDb: one log line and an outcome, never a retry of its own).

#include <cstdint>
#include <functional>
#include <pqxx/except>
#include <string>

#include "queue/queue.hpp"
#include "service/backoff.hpp"
#include "service/connect.hpp"
#include "stop/stop_signal.hpp"

namespace tweetkeeper::worker {

inline constexpr int kFinishAttempts = 5;  // reconnects to complete/release before leaving it to expiry

// Claims wait for the database as long as it takes, until shutdown. `label` (e.g. "slot 1")
// prefixes the log lines; `backoff` and `stop` outlive the policy.
RetryPolicy ClaimRetry(const std::string& label, Backoff& backoff, StopSignal& stop);

// Complete/release of a claimed batch: a few tries, also during a graceful shutdown, none after
// a second signal. Giving up is safe: the lease expires.
RetryPolicy FinishRetry(const std::string& label, Backoff& backoff, StopSignal& stop);

enum class DbOutcome { kOk, kSqlError, kUnavailable, kOther };

// Runs `call` and turns its database exceptions into log lines, "<label>: [lease <id>: ]<what>
// failed: ..." (a lease id of 0: none). A lost connection is only logged for a lease (it will
// expire); the password in `dsn` never reaches the log.
DbOutcome GuardDb(const std::string& label, const char* what, std::int64_t lease_id, const std::string& dsn,
                  const std::function<void()>& call);

}  // namespace tweetkeeper::worker
