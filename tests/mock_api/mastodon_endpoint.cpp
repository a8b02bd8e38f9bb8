#include "mock_api/mastodon_endpoint.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>
#include <cstdio>
#include <ctime>
#include <set>
#include <vector>

#include "mock_api/json_fields.hpp"
#include "mock_api/mix.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr size_t kMaxStatuses = 20;  // DEFAULT_STATUSES_LIMIT

EndpointReply Error(int status, const std::string& message) {
  EndpointReply r;
  r.status = status;
  r.body = "{\"error\":\"" + message + "\"}";
  return r;
}

std::optional<uint64_t> StatusId(const std::string& s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v == 0) return std::nullopt;
  return v;
}

// Mastodon's ids: milliseconds << 16 (FACTS.md 2.6).
int64_t StatusMillis(uint64_t id) { return static_cast<int64_t>(id >> 16); }

// Whether the server shows status `id` now: not from the future, not deleted or hidden.
bool Shown(uint64_t id, const MockConfig& config, int64_t now_ms) {
  if (StatusMillis(id) > now_ms) return false;
  if (config.omitted_every != 0 && id % config.omitted_every == 13) return false;
  if (config.deleted_every != 0 && id % config.deleted_every == 7) return false;
  if (config.protected_every != 0 && id % config.protected_every == 11) return false;
  return true;
}

void WriteStatus(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::string& host, uint64_t id, int64_t now_ms,
                 bool with_quotes) {
  const uint64_t h = Mix(id ^ Mix(host.size()));
  const int64_t created_ms = StatusMillis(id);
  const PublicMetrics m = MetricsAt(h, std::max<int64_t>(0, (now_ms - created_ms) / 1000));
  const std::string user = "user" + std::to_string(h % 10000);
  const std::string sid = std::to_string(id);
  w.StartObject();
  w.Key("id");
  w.String(sid.c_str());
  w.Key("created_at");
  w.String(FormatCreatedAt(created_ms).c_str());
  w.Key("visibility");
  w.String("public");
  w.Key("uri");
  w.String(("https://" + host + "/users/" + user + "/statuses/" + sid).c_str());
  w.Key("url");
  w.String(("https://" + host + "/@" + user + "/" + sid).c_str());
  WriteCounts(w, {{"replies_count", m.reply_count}, {"reblogs_count", m.retweet_count}, {"favourites_count", m.like_count}});
  if (with_quotes) {  // 4.5 and later
    WriteCounts(w, {{"quotes_count", m.quote_count}});
  }
  w.Key("edited_at");
  w.Null();
  w.Key("content");
  w.String(("<p>Mock status " + sid + "</p>").c_str());
  w.Key("account");
  w.StartObject();
  w.Key("id");
  w.String(std::to_string(h % 100000 + 1).c_str());
  w.Key("username");
  w.String(user.c_str());
  w.Key("acct");
  w.String(user.c_str());
  w.EndObject();
  w.EndObject();
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::string MastodonResetTime(int64_t unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.000000Z", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

EndpointReply MastodonApi(const std::string& host, const std::string& path, const QueryParams& params,
                          bool authorized, const MockConfig& config, int64_t now_ms) {
  const bool old = StartsWith(host, "old");
  if (path == "/api/v2/instance") {
    EndpointReply r;
    r.body = "{\"domain\":\"" + host + "\",\"title\":\"Mock " + host + "\",\"version\":\"" +
             (old ? "4.2.10" : "4.5.0") + "\"}";
    return r;
  }
  if (StartsWith(host, "locked") && !authorized) return Error(401, "This API requires an authenticated user");
  if (path == "/api/v1/statuses") {
    if (old) return Error(404, "Record not found");  // no such route before 4.3
    std::vector<uint64_t> ids;
    std::set<uint64_t> seen;
    const auto range = params.equal_range("id[]");
    for (auto it = range.first; it != range.second; ++it) {
      const std::optional<uint64_t> id = StatusId(it->second);
      if (id && seen.insert(*id).second) ids.push_back(*id);  // Array(...).uniq.map(&:to_i)
    }
    if (ids.size() > kMaxStatuses) return Error(422, "Mastodon::ValidationError");
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    w.StartArray();
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) {  // not the request's order
      if (Shown(*it, config, now_ms)) WriteStatus(w, host, *it, now_ms, true);
    }
    w.EndArray();
    EndpointReply r;
    r.body = buf.GetString();
    return r;
  }
  static const std::string kOne = "/api/v1/statuses/";
  if (StartsWith(path, kOne.c_str()) && path.find('/', kOne.size()) == std::string::npos) {
    const std::optional<uint64_t> id = StatusId(path.substr(kOne.size()));
    if (!id || !Shown(*id, config, now_ms)) return Error(404, "Record not found");
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    WriteStatus(w, host, *id, now_ms, !old);
    EndpointReply r;
    r.body = buf.GetString();
    return r;
  }
  return Error(404, "Record not found");
}

}  // namespace tweetkeeper::mock
