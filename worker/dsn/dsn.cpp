#include "dsn/dsn.hpp"

#include <iostream>

#include "private_file/private_file.hpp"

#include <libpq-fe.h>

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

namespace tweetkeeper::worker {
namespace {

std::string PercentDecode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Password candidates found by hand, so that even a DSN libpq rejects is redacted.
std::vector<std::string> PasswordCandidates(const std::string& dsn) {
  std::vector<std::string> found;
  // URI: scheme://user:password@host... (libpq ends the userinfo at the first '@' or '/').
  if (auto scheme = dsn.find("://"); scheme != std::string::npos) {
    std::size_t start = scheme + 3;
    std::size_t end = dsn.find_first_of("@/", start);
    if (end != std::string::npos && dsn[end] == '@') {
      if (auto colon = dsn.find(':', start); colon != std::string::npos && colon < end) {
        found.push_back(dsn.substr(colon + 1, end - colon - 1));
      }
    }
  }
  // key=value ("password = 'x y'") and URI query (?password=x&...).
  for (std::size_t pos = dsn.find("password"); pos != std::string::npos; pos = dsn.find("password", pos + 1)) {
    std::size_t i = pos + 8;
    while (i < dsn.size() && dsn[i] == ' ') ++i;
    if (i >= dsn.size() || dsn[i] != '=') continue;
    ++i;
    while (i < dsn.size() && dsn[i] == ' ') ++i;
    std::string value;
    if (i < dsn.size() && dsn[i] == '\'') {
      for (++i; i < dsn.size() && dsn[i] != '\''; ++i) {
        if (dsn[i] == '\\' && i + 1 < dsn.size()) ++i;
        value.push_back(dsn[i]);
      }
    } else {
      while (i < dsn.size() && dsn[i] != ' ' && dsn[i] != '&') value.push_back(dsn[i++]);
    }
    found.push_back(value);
  }
  std::vector<std::string> all;
  for (const std::string& f : found) {
    all.push_back(f);
    all.push_back(PercentDecode(f));
  }
  return all;
}

void ReplaceAll(std::string& s, const std::string& what, const std::string& with) {
  if (what.empty()) return;
  for (std::size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + with.size())) {
    s.replace(pos, what.size(), with);
  }
}

}  // namespace

bool ChooseDsnOrSay(std::string& dsn, bool dsn_given, const std::string& dsn_file, const char* program) {
  std::string error;
  const std::optional<std::string> chosen = ChosenDsn(dsn, dsn_given, dsn_file, &error);
  if (!chosen) {
    std::cerr << program << ": " << error << std::endl;
    return false;
  }
  dsn = *chosen;
  return true;
}

std::optional<std::string> ChosenDsn(const std::string& dsn, bool dsn_given, const std::string& dsn_file,
                                     std::string* error) {
  if (dsn_file.empty()) {  // ("" when not given: the environment)
    if (auto bad = DsnError(dsn)) {
      *error = "--dsn is not a valid libpq connection string or URI: " + *bad;
      return std::nullopt;
    }
    return dsn;
  }
  if (dsn_given) {
    *error = "--dsn and --dsn-file are both given: the connection string comes from one of them";
    return std::nullopt;
  }
  const std::string name = "--dsn-file " + dsn_file;
  const PrivateFileRead read = ReadPrivateFile(dsn_file, 64 * 1024);
  switch (read.problem) {
    case PrivateFileProblem::kNone: break;
    case PrivateFileProblem::kCannotOpen: *error = name + ": cannot open it: " + std::strerror(read.errno_value); break;
    case PrivateFileProblem::kCannotStat: *error = name + ": cannot stat it: " + std::strerror(read.errno_value); break;
    case PrivateFileProblem::kNotRegular: *error = name + ": not a regular file"; break;
    case PrivateFileProblem::kOtherOwner:
      *error = name + ": belongs to uid " + std::to_string(read.owner) + ", not to this user (" +
               std::to_string(geteuid()) + "): whoever owns it chooses the database; chown it";
      break;
    case PrivateFileProblem::kOpenToOthers:
      *error = name + ": group or others may read it (it may hold a password); run chmod 600 " + dsn_file;
      break;
    case PrivateFileProblem::kCannotRead: *error = name + ": cannot read it: " + std::strerror(read.errno_value); break;
    case PrivateFileProblem::kTooLarge: *error = name + ": larger than 64 KiB; is it the right file?"; break;
  }
  if (!error->empty()) return std::nullopt;
  const std::string& text = read.text;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    const auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
    while (!line.empty() && blank(line.back())) line.pop_back();
    std::size_t first = 0;
    while (first < line.size() && blank(line[first])) ++first;
    line.erase(0, first);
    if (line.empty() || line[0] == '#') continue;
    if (auto bad = DsnError(line)) {
      *error = name + ": not a valid libpq connection string or URI: " + *bad;
      return std::nullopt;
    }
    return line;
  }
  *error = name + ": holds no connection string (one line: a libpq conninfo or URI)";
  return std::nullopt;
}

std::optional<std::string> DsnError(const std::string& dsn) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(dsn.c_str(), &error);
  if (options) {
    PQconninfoFree(options);
    return std::nullopt;
  }
  std::string message = error ? error : "out of memory";
  if (error) PQfreemem(error);
  return RedactDsnSecrets(message, dsn);
}

std::string RedactDsnSecrets(const std::string& message, const std::string& dsn) {
  std::string out = message;
  std::vector<std::string> secrets = PasswordCandidates(dsn);
  char* error = nullptr;
  if (PQconninfoOption* options = PQconninfoParse(dsn.c_str(), &error)) {
    for (PQconninfoOption* o = options; o->keyword; ++o) {
      if (std::string(o->keyword) == "password" && o->val) secrets.emplace_back(o->val);
    }
    PQconninfoFree(options);
  }
  if (error) PQfreemem(error);
  ReplaceAll(out, dsn, "<dsn>");  // a message quoting the whole URI
  for (const std::string& secret : secrets) ReplaceAll(out, secret, "***");

  // One line: libpq messages end with '\n' and may carry an indented hint line.
  std::string line;
  for (char c : out) {
    const bool space = c == '\n' || c == '\r' || c == '\t' || c == ' ';
    if (space) {
      if (!line.empty() && line.back() != ' ') line.push_back(' ');
    } else {
      line.push_back(c);
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

}  // namespace tweetkeeper::worker
