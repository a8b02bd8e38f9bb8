#include "service/database_state.hpp"

#include <pqxx/pqxx>

#include <libpq-fe.h>


namespace tweetkeeper::worker {

ConnectFailure ClassifyConnectFailure(const std::string& dsn, const std::string& message) {
  switch (PQping(dsn.c_str())) {
    case PQPING_NO_RESPONSE:
      return ConnectFailure::kUnreachable;
    case PQPING_REJECT:
      return ConnectFailure::kNotAccepting;
    case PQPING_NO_ATTEMPT:
      return ConnectFailure::kRefused;  // the connection string itself is unusable
    case PQPING_OK:
      break;
  }
  // The server is up now, but it may not have been when the attempt failed: one that was
  // starting, shutting down or recovering then said so (SQLSTATE 57P03, whose messages all begin
  // so), and that passes as it does when PQping still sees it.
  if (message.find("the database system is ") != std::string::npos) return ConnectFailure::kNotAccepting;
  // The server is up and said no to us. Only running out of slots passes (SQLSTATE 53300, which
  // libpq does not expose for a failed connection; these are the server's two messages for it).
  if (message.find("too many clients") != std::string::npos ||
      message.find("remaining connection slots are reserved") != std::string::npos)
    return ConnectFailure::kNoSlots;
  return ConnectFailure::kRefused;
}

const char* ConnectFailureName(ConnectFailure failure) {
  switch (failure) {
    case ConnectFailure::kUnreachable:
      return "unreachable (down, restarting, or not listening there)";
    case ConnectFailure::kNotAccepting:
      return "not accepting connections yet (starting up, shutting down or recovering)";
    case ConnectFailure::kNoSlots:
      return "out of connection slots";
    case ConnectFailure::kRefused:
      return "refusing this login";
  }
  return "unavailable";
}

std::unique_ptr<pqxx::connection> ConnectServing(const std::string& dsn, const std::vector<std::string>& functions,
                                                 const std::string& what) {
  auto c = std::make_unique<pqxx::connection>(dsn);
  pqxx::work tx(*c);
  std::string may = "true";
  for (const std::string& f : functions)
    may += " AND to_regprocedure(" + tx.quote(f) + ") IS NOT NULL AND has_function_privilege(" + tx.quote(f) +
           ", 'EXECUTE')";
  const pqxx::row r = tx.exec1(
      "SELECT e.extversion IS NOT NULL,"
      "       CASE WHEN e.extversion IS NOT NULL AND has_schema_privilege(e.extnamespace, 'USAGE') THEN " + may + " END,"
      "       pg_is_in_recovery()"
      "  FROM (SELECT 1) one LEFT JOIN pg_extension e ON e.extname = 'tweetkeeper'");
  tx.commit();
  if (r[2].as<bool>()) throw DatabaseInRecovery();
  if (!r[0].as<bool>())
    throw DatabaseUnusable("the database has no tweetkeeper extension: CREATE EXTENSION tweetkeeper first");
  if (r[1].is_null() || !r[1].as<bool>()) {
    const std::string first = functions.empty() ? std::string() : functions.front().substr(0, functions.front().find('('));
    throw DatabaseUnusable("this role may not " + what + ": it needs tweetkeeper_worker, and the extension 0.5.0 or later (" +
                           first.substr(first.find('.') + 1) + ")");
  }
  return c;
}

}  // namespace tweetkeeper::worker
