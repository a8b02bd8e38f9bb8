#pragma once
// Keeping the database password out of every message we print. libpq's own errors can echo
// parts of the connection string (a malformed URI is quoted whole), so each message is redacted.

#include <optional>
#include <string>

namespace tweetkeeper::worker {

// The connection string a program uses: --dsn's (`dsn`, given: `dsn_given`), or the first line of
// --dsn-file's file that is neither blank nor a comment (#), trimmed, or "" when neither is given
// (libpq then takes everything from the environment: PGHOST, PGDATABASE, PGSERVICE and its
// service file, ~/.pgpass). The file may hold a password, so, as libpq asks of ~/.pgpass, it must
// be a regular file of this user's that no one else may read (at most 64 KiB). Sets *error (one
// line, naming the option and the fix, never a password) and returns nullopt when it cannot be
// used, when libpq cannot parse it (DsnError), or when both options are given.
std::optional<std::string> ChosenDsn(const std::string& dsn, bool dsn_given, const std::string& dsn_file,
                                     std::string* error);

// ChosenDsn for a tool's command line (tweetkeeper-import, -export, -report): `dsn` replaced by
// the connection string chosen, or false after "<program>: <why>" on stderr.
bool ChooseDsnOrSay(std::string& dsn, bool dsn_given, const std::string& dsn_file, const char* program);

// Why libpq cannot parse `dsn` (already redacted), or nullopt when it can.
std::optional<std::string> DsnError(const std::string& dsn);

// `message` on one line, with any password found in `dsn` (key=value, URI user:password@,
// URI ?password=, as written and percent-decoded) replaced by "***".
std::string RedactDsnSecrets(const std::string& message, const std::string& dsn);

}  // namespace tweetkeeper::worker
