#pragma once
// Why the database cannot serve the worker right now, and whether waiting helps. At start-up
// the worker waits (with backoff) for a database that is down, starting, shutting down, out of
// connection slots or in recovery; it exits at once for what waiting cannot fix: a refused login
// (password, role, database), no extension, no grants.

#include <memory>
#include <pqxx/connection>
#include <pqxx/except>
#include <stdexcept>
#include <string>
#include <vector>

namespace tweetkeeper::worker {

// The server is up but cannot take writes: a standby, or a primary not yet promoted. Retried
// like a broken connection (it is one, as far as the queue is concerned).
class DatabaseInRecovery : public pqxx::broken_connection {
 public:
  DatabaseInRecovery() : pqxx::broken_connection("pg_is_in_recovery() is true") {}
};

// The database can never serve this worker as it is: waiting will not help.
class DatabaseUnusable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ConnectFailure {
  kUnreachable,  // nothing answers: down, restarting, wrong host or port, network
  kNotAccepting, // the server answers but takes no connections yet: starting, shutting down, crash recovery
  kNoSlots,      // too many connections: a slot may free up
  kRefused,      // the server refused this login: password, role or database; permanent
};

// Classifies a failed connection attempt by asking the server again with PQping (which tells a
// server that is down from one that refused us) and, for a refusal, by the message: "too many
// clients" passes, and so does a server that was not accepting connections at the attempt
// ("the database system is starting up", ...) and is up by the time PQping asks.
ConnectFailure ClassifyConnectFailure(const std::string& dsn, const std::string& message);

// For the log: what the database is doing, in a few words.
const char* ConnectFailureName(ConnectFailure failure);

// A connection to a database that serves a service: the extension is there, this role may call
// each of `functions` (signatures as to_regprocedure reads them; the first names the API in the
// refusal), and the server takes writes. Throws DatabaseInRecovery (waited for, as by the
// refresher's slots), or DatabaseUnusable: "this role may not <what>: it needs
// tweetkeeper_worker, and the extension 0.5.0 or later (<the first function>)".
std::unique_ptr<pqxx::connection> ConnectServing(const std::string& dsn, const std::vector<std::string>& functions,
                                                 const std::string& what);

}  // namespace tweetkeeper::worker
