#pragma once
// Where the worker's bearer tokens come from: a file of `name=token` lines (--credentials) or
// the TWEETKEEPER_BEARER_TOKEN environment variable. Tokens never appear in any message.

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tweetkeeper::worker {

// Credential name (as registered in tweetkeeper.credentials) -> bearer token.
using Credentials = std::map<std::string, std::string>;

// Either credentials or one line saying what is wrong and how to fix it.
struct CredentialsOrError {
  std::optional<Credentials> credentials;
  std::string error;  // set when `credentials` is empty; never contains a token

  bool ok() const { return credentials.has_value(); }
};

// The name the environment token is known by.
constexpr const char* kDefaultCredentialName = "default";

// Reads and validates a credentials file. Refuses a file that is not a regular file (after
// following symlinks), that group or others may read, write or execute (mode & 077), that is
// larger than 1 MiB, or whose content ParseCredentials refuses.
CredentialsOrError LoadCredentials(const std::string& path);

// TWEETKEEPER_BEARER_TOKEN as one credential named "default", then scrubbed (ScrubEnv) whether
// it was good or not. main calls it first, whichever provider it runs for.
CredentialsOrError CredentialsFromEnv();

// Removes the variable from this process's environment: its value's bytes zeroed where they are
// (what /proc/PID/environ reads), then unsetenv. Before any thread exists.
void ScrubEnv(const char* name);

// Helpers, exposed for the unit tests.

// The content of a credentials file: `name=token` lines; blank lines and lines starting with
// '#' (after leading blanks) are skipped; blanks around name and token and a trailing CR are
// ignored; the token is everything after the first '=' (tokens may contain '='). Names match
// ^[A-Za-z0-9_.-]{1,64}$ and are unique; tokens are non-empty printable ASCII without spaces.
// At least one credential. `source` names the file in messages.
CredentialsOrError ParseCredentials(std::string_view text, const std::string& source);

// The mode check alone: an error naming the file, its mode and the fix, or nullopt.
std::optional<std::string> CredentialsModeError(mode_t mode, const std::string& path);

// The owner check alone: the file must be the worker's user's (owner == user), or an error naming
// both.
std::optional<std::string> CredentialsOwnerError(uid_t owner, uid_t user, const std::string& path);

// The environment variable's value as a credential set (nullptr: unset).
CredentialsOrError CredentialsFromEnvValue(const char* token);

constexpr const char* kTokenEnvVar = "TWEETKEEPER_BEARER_TOKEN";

// The one rule for a bearer token, wherever it comes from: non-empty printable ASCII without
// spaces (it goes into an HTTP header as is). Why a token breaks it (never quoting it), or nullopt.
std::optional<std::string> CredentialTokenError(std::string_view token);

// The same rule for TWEETKEEPER_BEARER_TOKEN (nullptr: unset), in words that name the variable.
std::optional<std::string> TokenError(const char* token);

}  // namespace tweetkeeper::worker
