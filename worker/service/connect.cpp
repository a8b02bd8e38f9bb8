#include "service/connect.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

#include "dsn/dsn.hpp"
#include "service/database_state.hpp"

namespace tweetkeeper::worker {

DatabaseWait::DatabaseWait(std::string dsn, std::chrono::seconds startup_timeout, StopSignal& stop, std::string sql_api)
    : dsn_(std::move(dsn)), limit_(startup_timeout), stop_(stop), sql_api_(std::move(sql_api)), backoff_(ReconnectBackoff()) {}

bool DatabaseWait::Connect(const std::function<void()>& connect) {
  if (!started_set_) started_ = std::chrono::steady_clock::now(), started_set_ = true;
  for (int attempt = 0;;) {
    std::string state, error;
    try {
      connect();
      if (!waiting_for_.empty()) {
        spdlog::info("database available after {:.1f} s",
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
        waiting_for_.clear();
      }
      return true;
    } catch (const DatabaseUnusable& e) {
      throw std::runtime_error(e.what());
    } catch (const DatabaseInRecovery& e) {
      state = "in recovery (a standby, not yet promoted)";
      error = e.what();
    } catch (const pqxx::sql_error& e) {
      throw std::runtime_error("the database has no usable " + sql_api_ + ": SQLSTATE " + e.sqlstate() + ": " +
                               SqlMessage(e, dsn_));
    } catch (const pqxx::broken_connection& e) {
      error = RedactDsnSecrets(e.what(), dsn_);
      const ConnectFailure failure = ClassifyConnectFailure(dsn_, e.what());
      if (failure == ConnectFailure::kRefused) throw std::runtime_error("cannot connect to the database: " + error);
      state = ConnectFailureName(failure);
    } catch (const std::exception& e) {
      throw std::runtime_error("cannot connect to the database: " + RedactDsnSecrets(e.what(), dsn_));
    }
    // Worth waiting for. Said once per state, not once per attempt.
    if (state != waiting_for_) {
      spdlog::warn("database {}: {}; waiting for it (retrying every {:.1f} to {:.0f} s{})", state, error,
                   Secs(kReconnectBase), Secs(kReconnectCap),
                   limit_.count() ? fmt::format(", for at most {} s: --startup-timeout", limit_.count()) : "");
      waiting_for_ = state;
    }
    Millis delay = backoff_.Next(++attempt);
    if (limit_.count()) {
      const auto left = std::chrono::duration_cast<Millis>(started_ + limit_ - std::chrono::steady_clock::now());
      if (left <= Millis{0}) {
        throw std::runtime_error(
            fmt::format("database still {} after {} s (--startup-timeout): {}", state, limit_.count(), error));
      }
      delay = std::min(delay, left);
    }
    if (!stop_.SleepUnlessStopped(delay)) {
      spdlog::info("stopped while waiting for the database");
      return false;
    }
  }
}

std::string SqlMessage(const pqxx::sql_error& e, const std::string& dsn) {
  std::string what = e.what();
  what = what.substr(0, what.find('\n'));
  if (what.rfind("ERROR:", 0) == 0) what.erase(0, 6);
  return RedactDsnSecrets(what, dsn);
}

}  // namespace tweetkeeper::worker
