#include "compliance/compliance_answers.hpp"

#include <rapidjson/document.h>

#include "json/bounded.hpp"

namespace tweetkeeper::worker::compliance {
namespace {

using rapidjson::Value;

constexpr std::size_t kMaxLine = 4096;

std::string_view StringMember(const Value& v, const char* name) {
  if (!v.IsObject()) return {};
  const auto it = v.FindMember(name);
  if (it == v.MemberEnd() || !it->value.IsString()) return {};
  return {it->value.GetString(), it->value.GetStringLength()};
}

bool Digits(std::string_view s, std::size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (const char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool ReasonOk(std::string_view s) {
  if (s.empty() || s.size() > 40) return false;
  for (const char c : s)
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  return true;
}

// At most n bytes of s, printable ASCII only (one log line).
std::string Snippet(std::string_view s, std::size_t n = 80) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && out.size() < n; ++i) out += (s[i] >= ' ' && s[i] <= '~') ? s[i] : '?';
  return out;
}

// "host[:port]" of an http(s) URL, lower case; empty when it is not one.
std::string Authority(const std::string& url, std::string* scheme) {
  const std::size_t colon = url.find("://");
  if (colon == std::string::npos) return {};
  *scheme = url.substr(0, colon);
  if (*scheme != "http" && *scheme != "https") return {};
  const std::size_t start = colon + 3;
  std::size_t end = url.find_first_of("/?#", start);
  if (end == std::string::npos) end = url.size();
  std::string host = url.substr(start, end - start);
  if (host.find('@') != std::string::npos) return {};  // no userinfo
  for (char& c : host) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return host;
}

std::string HostOnly(const std::string& authority) {
  if (!authority.empty() && authority[0] == '[') return authority.substr(0, authority.find(']') + 1);
  return authority.substr(0, authority.find(':'));
}

}  // namespace

bool ParseJob(std::string_view body, Job* job, std::string* why) {
  if (body.size() > (1u << 20)) {
    *why = "a compliance job answer larger than 1 MiB";
    return false;
  }
  rapidjson::Document doc;
  const std::string error = json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, body);
  if (!error.empty() || !doc.IsObject()) {
    *why = "not a JSON object: " + (error.empty() ? std::string("another value") : error);
    return false;
  }
  const auto data = doc.FindMember("data");
  if (data == doc.MemberEnd() || !data->value.IsObject()) {
    // A problem (application/problem+json) or {"errors": [...]}: X's words, no more.
    std::string title(StringMember(doc, "title")), detail(StringMember(doc, "detail"));
    const auto errors = doc.FindMember("errors");
    if (title.empty() && errors != doc.MemberEnd() && errors->value.IsArray() && !errors->value.Empty()) {
      title = std::string(StringMember(errors->value[0], "title"));
      detail = std::string(StringMember(errors->value[0], "message"));
      if (detail.empty()) detail = std::string(StringMember(errors->value[0], "detail"));
    }
    *why = "no job in the answer" + (title.empty() ? std::string() : ": " + Snippet(title)) +
           (detail.empty() ? std::string() : " (" + Snippet(detail, 200) + ")");
    return false;
  }
  const Value& d = data->value;
  Job j;
  j.id = std::string(StringMember(d, "id"));
  j.status = std::string(StringMember(d, "status"));
  j.upload_url = std::string(StringMember(d, "upload_url"));
  j.download_url = std::string(StringMember(d, "download_url"));
  if (!Digits(j.id, 19)) {
    *why = "a compliance job without a valid id";
    return false;
  }
  if (j.status != "created" && j.status != "in_progress" && j.status != "complete" && j.status != "failed" &&
      j.status != "expired") {
    *why = "compliance job " + j.id + " has an unknown status: " + Snippet(j.status, 40);
    return false;
  }
  if (StringMember(d, "type") != "tweets") {
    *why = "compliance job " + j.id + " is not of type tweets";
    return false;
  }
  *job = std::move(j);
  return true;
}

std::string CreateJobBody(const std::string& name) {
  std::string clean;
  for (const char c : name)
    if (clean.size() < 64 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
      clean += c;
  return R"({"type":"tweets","name":")" + clean + R"("})";
}

std::string IdsFile(const std::vector<std::int64_t>& ids) {
  std::string out;
  out.reserve(ids.size() * 20);
  for (const std::int64_t id : ids) out.append(std::to_string(id)).push_back('\n');
  return out;
}

Results ParseResults(std::string_view body, std::size_t max_lines) {
  Results r;
  const auto refuse = [&r](const std::string& why) {
    if (r.refused++ == 0) r.first_refusal = why;
  };
  std::size_t start = 0;
  while (start < body.size() && r.ids.size() < max_lines) {
    std::size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line.size() > kMaxLine) {
      refuse("a line longer than 4 KiB");
      continue;
    }
    rapidjson::Document doc;
    const std::string error = json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, line);
    if (!error.empty() || !doc.IsObject()) {
      refuse("not a JSON object: " + Snippet(line));
      continue;
    }
    const std::string_view id = StringMember(doc, "id");
    const std::string_view reason = StringMember(doc, "reason");
    if (!Digits(id, 19) || !ReasonOk(reason)) {
      refuse("no post id or reason: " + Snippet(line));
      continue;
    }
    const std::string sid(id);
    if (sid.size() == 19 && sid > "9223372036854775807") {
      refuse("an id past 2^63: " + Snippet(line));
      continue;
    }
    r.ids.push_back(std::stoll(sid));
    r.reasons.emplace_back(reason);
  }
  return r;
}

std::string StorageUrlRefusal(const std::string& url, const std::string& api_base, bool* same_host_as_api) {
  std::string scheme, api_scheme;
  const std::string authority = Authority(url, &scheme);
  if (authority.empty()) return "not an http(s) URL";
  const std::string api = Authority(api_base, &api_scheme);
  *same_host_as_api = !api.empty() && HostOnly(api) == HostOnly(authority);
  if (!*same_host_as_api && scheme != "https") return "an http:// URL on a host other than --api-url's";
  return {};
}

}  // namespace tweetkeeper::worker::compliance
