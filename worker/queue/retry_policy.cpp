#include "queue/retry_policy.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "dsn/dsn.hpp"

namespace tweetkeeper::worker {
RetryPolicy ClaimRetry(const std::string& label, Backoff& backoff, StopSignal& stop) {
  return [&label, &backoff, &stop](int attempt, const std::string& error) {
    if (stop.stopping()) return false;
    const Millis delay = backoff.Next(attempt);
    spdlog::warn("{}: database unavailable ({}); reconnect attempt {} in {:.1f} s", label, error, attempt, Secs(delay));
    return stop.SleepUnlessStopped(delay);
  };
}

RetryPolicy FinishRetry(const std::string& label, Backoff& backoff, StopSignal& stop) {
  return [&label, &backoff, &stop](int attempt, const std::string& error) {
    if (stop.aborting() || attempt > kFinishAttempts) return false;
    const Millis delay = std::min(backoff.Next(attempt), Millis{10'000});
    spdlog::warn("{}: database unavailable ({}); reconnect attempt {}/{} in {:.1f} s", label, error, attempt,
                 kFinishAttempts, Secs(delay));
    return stop.SleepUnlessAborted(delay);
  };
}

DbOutcome GuardDb(const std::string& label, const char* what, std::int64_t lease_id, const std::string& dsn,
                  const std::function<void()>& call) {
  const std::string where =
      lease_id ? fmt::format("{}: lease {}: {}", label, lease_id, what) : fmt::format("{}: {}", label, what);
  try {
    call();
    return DbOutcome::kOk;
  } catch (const pqxx::sql_error& e) {
    spdlog::error("{} failed: SQLSTATE {}: {}", where, e.sqlstate(), SqlMessage(e, dsn));
    return DbOutcome::kSqlError;
  } catch (const pqxx::broken_connection& e) {
    if (lease_id) {
      spdlog::warn("{} given up, database unavailable; the lease will expire and its tweets come due again: {}", where,
                   RedactDsnSecrets(e.what(), dsn));
    }
    return DbOutcome::kUnavailable;
  } catch (const std::exception& e) {
    spdlog::error("{} failed: {}", where, RedactDsnSecrets(e.what(), dsn));
    return DbOutcome::kOther;
  }
}

}  // namespace tweetkeeper::worker
