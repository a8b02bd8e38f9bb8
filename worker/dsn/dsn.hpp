#pragma once
// Keeping the database password out of every message we print. libpq's own errors can echo
// parts of the connection string (a malformed URI is quoted whole), so each message is redacted.

#include <optional>
#include <string>

namespace tweetkeeper::worker {

// Why libpq cannot parse `dsn` (already redacted), or nullopt when it can.
std::optional<std::string> DsnError(const std::string& dsn);

// `message` on one line, with any password found in `dsn` (key=value, URI user:password@,
// URI ?password=, as written and percent-decoded) replaced by "***".
std::string RedactDsnSecrets(const std::string& message, const std::string& dsn);

}  // namespace tweetkeeper::worker
