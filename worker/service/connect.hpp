#pragma once
// Waiting for the database at start-up, the one way every service of the worker does it (the
// refresher's slots and the follower): a database that is down, starting, shutting down, out of
// connection slots or in recovery is waited for with backoff (0.5 s to 30 s), said once per state,
// up to --startup-timeout; what waiting cannot fix (a refused login, no extension, no grants, no
// usable SQL API) ends the wait at once with a message that says what to do.

#include <chrono>
#include <functional>
#include <pqxx/except>
#include <string>

#include "service/backoff.hpp"
#include "stop/stop_signal.hpp"

namespace tweetkeeper::worker {

class DatabaseWait {
 public:
  // sql_api: what a missing function or grant is said to lack ("tweetkeeper SQL API", ...).
  DatabaseWait(std::string dsn, std::chrono::seconds startup_timeout, StopSignal& stop, std::string sql_api);

  // Calls `connect` until it returns (true), a stop comes first (false), or waiting cannot help
  // (std::runtime_error). `connect` throws pqxx::broken_connection (DatabaseInRecovery included)
  // for what may pass, DatabaseUnusable, pqxx::sql_error or another exception for what will not.
  // One DatabaseWait may connect several times (one per slot): the time limit counts from its
  // first call, the backoff starts again after each success.
  bool Connect(const std::function<void()>& connect);

 private:
  std::string dsn_;
  std::chrono::seconds limit_;
  StopSignal& stop_;
  std::string sql_api_;
  std::chrono::steady_clock::time_point started_;
  bool started_set_ = false;
  Backoff backoff_;
  std::string waiting_for_;  // the state last logged; empty: not waiting
};

// The server's message without the "LINE 1: <query>" context libpq appends, password redacted.
std::string SqlMessage(const pqxx::sql_error& e, const std::string& dsn);

}  // namespace tweetkeeper::worker
