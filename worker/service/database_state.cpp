#include "service/database_state.hpp"

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

}  // namespace tweetkeeper::worker
