#include "dsn/dsn.hpp"

#include <libpq-fe.h>

#include <cctype>
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
