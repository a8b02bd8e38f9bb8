#include "credentials/credentials.hpp"

#include "private_file/private_file.hpp"
#include "text/one_line.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>


namespace tweetkeeper::worker {
namespace {

constexpr std::size_t kMaxFileBytes = 1 << 20;  // a few hundred tokens fit many times over
constexpr std::size_t kMaxNameBytes = 64;

CredentialsOrError Error(std::string message) {
  CredentialsOrError out;
  out.error = std::move(message);
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool NameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}


std::string Octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace

std::optional<std::string> CredentialTokenError(std::string_view token) {
  if (token.empty()) return std::string("the token is empty");
  for (char c : token) {
    const auto u = static_cast<unsigned char>(c);
    // It goes into an HTTP header as is: a space, control character or non-ASCII byte would
    // break it or smuggle something into the request.
    if (u <= 0x20 || u >= 0x7f)
      return std::string("the token contains a space, a control character or a non-ASCII byte");
  }
  return std::nullopt;
}

CredentialsOrError ParseCredentials(std::string_view text, const std::string& source) {
  Credentials out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const std::size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty() || line.front() == '#') continue;

    const std::string where = source + " line " + std::to_string(line_no) + ": ";
    const std::size_t eq = line.find('=');
    // Neither the line nor a malformed name is quoted: a line without '=' may be a bare token.
    if (eq == std::string_view::npos) return Error(where + "expected name=token (no '=' found)");
    const std::string_view name = Trim(line.substr(0, eq));
    const std::string_view token = Trim(line.substr(eq + 1));
    if (name.empty() || name.size() > kMaxNameBytes || !std::all_of(name.begin(), name.end(), NameChar)) {
      return Error(where + "the name before '=' must be 1 to 64 characters of A-Z a-z 0-9 _ . -");
    }
    if (auto error = CredentialTokenError(token))
      return Error(where + *error + " (credential '" + std::string(name) + "')");
    if (!out.emplace(std::string(name), std::string(token)).second) {
      return Error(where + "credential '" + std::string(name) + "' is defined twice");
    }
  }
  if (out.empty()) return Error(source + " holds no credentials: add a name=token line");
  CredentialsOrError result;
  result.credentials = std::move(out);
  return result;
}

std::optional<std::string> CredentialsModeError(mode_t mode, const std::string& path) {
  if (!S_ISREG(mode)) return "credentials file " + OneLine(path) + " is not a regular file";
  if ((mode & 077) != 0) {
    return "credentials file " + OneLine(path) + " has mode " + Octal(mode) +
           ": group or others have access to the tokens in it; run chmod 600 " + OneLine(path);
  }
  return std::nullopt;
}

std::optional<std::string> CredentialsOwnerError(uid_t owner, uid_t user, const std::string& path) {
  if (owner == user) return std::nullopt;
  return "credentials file " + OneLine(path) + " belongs to uid " + std::to_string(owner) + ", not to this worker's (" +
         std::to_string(user) + "): whoever owns it can change the tokens; chown it to the worker's user";
}

CredentialsOrError LoadCredentials(const std::string& path) {
  if (path.empty()) return Error("the credentials file name is empty");
  const std::string file = "credentials file " + OneLine(path);
  PrivateFileRead read = ReadPrivateFile(path, kMaxFileBytes);
  switch (read.problem) {
    case PrivateFileProblem::kNone: break;
    case PrivateFileProblem::kCannotOpen:
      return Error("cannot open " + file + ": " + std::strerror(read.errno_value));
    case PrivateFileProblem::kCannotStat:
      return Error("cannot stat " + file + ": " + std::strerror(read.errno_value));
    case PrivateFileProblem::kNotRegular:
    case PrivateFileProblem::kOpenToOthers: return Error(*CredentialsModeError(read.mode, path));
    case PrivateFileProblem::kOtherOwner: return Error(*CredentialsOwnerError(read.owner, geteuid(), path));
    case PrivateFileProblem::kCannotRead:
      return Error("cannot read " + file + ": " + std::strerror(read.errno_value));
    case PrivateFileProblem::kTooLarge: return Error(file + " is larger than 1 MiB; is it the right file?");
  }
  return ParseCredentials(read.text, file);
}

std::optional<std::string> TokenError(const char* token) {
  if (token == nullptr || *token == '\0') {
    return std::string(kTokenEnvVar) + " is not set: export the X API bearer token in it";
  }
  if (auto error = CredentialTokenError(token)) return std::string(kTokenEnvVar) + ": " + *error;
  return std::nullopt;
}

CredentialsOrError CredentialsFromEnvValue(const char* token) {
  if (auto error = TokenError(token)) return Error(*error);
  CredentialsOrError result;
  result.credentials = Credentials{{kDefaultCredentialName, token}};
  return result;
}

void ScrubEnv(const char* name) {
  // unsetenv() takes the pointer out of environ and nothing else: /proc/PID/environ shows the
  // strings the process was started with, where execve put them (the top of its stack), for as
  // long as it runs. So each NAME=value string's value is zeroed where it is first (every one: an
  // environment may name a variable twice, and getenv reads only the first).
  const std::size_t n = std::strlen(name);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') explicit_bzero(*e + n + 1, std::strlen(*e + n + 1));
  }
  unsetenv(name);
}

CredentialsOrError CredentialsFromEnv() {
  CredentialsOrError result = CredentialsFromEnvValue(std::getenv(kTokenEnvVar));
  // Read once, then gone from this process's environment, bytes and all: not left in
  // /proc/PID/environ for as long as the worker runs, nor handed to anything it starts. (Called
  // before any thread exists.)
  ScrubEnv(kTokenEnvVar);
  return result;
}

}  // namespace tweetkeeper::worker
