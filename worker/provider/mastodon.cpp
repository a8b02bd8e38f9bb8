#include "provider/mastodon.hpp"
#include "json/bounded.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <charconv>
#include <unordered_map>
#include <unordered_set>

#include "provider/answer_status.hpp"
#include "provider/bluesky.hpp"  // ParseRfc3339Millis
#include "provider/json_fields.hpp"
#include "provider/keyed_answer.hpp"
#include "provider/x_v2.hpp"  // EncodeQueryValue, RepeatedQuery

namespace tweetkeeper::worker {

namespace {
std::optional<std::int64_t> Number(const Headers& headers, const char* name) {
  const auto it = headers.find(name);
  if (it == headers.end()) return std::nullopt;
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || end != it->second.data() + it->second.size() || v < 0) return std::nullopt;
  return v;
}
}  // namespace

RateLimit ParseMastodonRateLimit(const Headers& headers) {
  RateLimit rate;
  rate.limit = Number(headers, "x-ratelimit-limit");
  rate.remaining = Number(headers, "x-ratelimit-remaining");
  const auto reset = headers.find("x-ratelimit-reset");
  if (reset != headers.end()) {
    if (auto ms = ParseRfc3339Millis(reset->second); ms && *ms >= 0) rate.reset_epoch_s = (*ms + 999) / 1000;
  }
  return rate;
}

MastodonProvider::MastodonProvider(std::map<std::string, std::string> instances, bool allow_private_hosts)
    : instances_(std::move(instances)), allow_private_hosts_(allow_private_hosts) {
  for (auto& [host, url] : instances_) {
    while (!url.empty() && url.back() == '/') url.pop_back();
  }
}

std::string MastodonProvider::HostOf(const std::string& endpoint) {
  static const std::string kPrefix = "mastodon:";
  return endpoint.rfind(kPrefix, 0) == 0 ? endpoint.substr(kPrefix.size()) : endpoint;
}

std::string MastodonProvider::BaseUrl(const std::string& host) const {
  const auto it = instances_.find(host);
  return it != instances_.end() ? it->second : "https://" + host;
}

bool MastodonProvider::PublicAddressesOnly(const std::string& endpoint) const {
  return !allow_private_hosts_ && instances_.find(HostOf(endpoint)) == instances_.end();
}

std::string MastodonProvider::RequestUrl(const std::vector<std::int64_t>& ids, const PostKeys& keys) const {
  std::string url = BaseUrl(HostOf(keys.endpoint)) + "/api/v1/statuses";
  if (ids.size() == 1 && keys.keys.size() >= 1) return url + "/" + EncodeQueryValue(keys.keys[0]);
  return url + RepeatedQuery("id%5B%5D", keys.keys, ids.size());
}

BatchResult MastodonProvider::ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids,
                                          const PostKeys& keys) const {
  BatchResult result;
  if (ids.size() == 1 && response.status == 404) {
    result.omitted = ids;  // GET /api/v1/statuses/:id: not there (deleted, hidden)
  } else if (ids.size() == 1 && response.status == 200) {
    // One Status object: the same as an array of it.
    const auto first = response.body.find_first_not_of(" \t\r\n");
    const std::string as_array =
        first != std::string::npos && response.body[first] == '{' ? "[" + response.body + "]" : response.body;
    result = ParseOk(as_array, ids, keys);
  } else {
    result = response.status == 200 ? ParseOk(response.body, ids, keys) : FailedAnswer(response);
  }
  result.rate_limit = ParseMastodonRateLimit(response.headers);
  return result;
}

std::string MastodonProvider::DiagnosisUrl(const PostKeys& keys, std::size_t ids, const HttpResponse& failed) const {
  return ids > 1 && failed.status == 404 ? BaseUrl(HostOf(keys.endpoint)) + "/api/v2/instance" : "";
}

std::optional<Diagnosis> MastodonProvider::Diagnose(const HttpResponse& answer) const {
  std::optional<std::string> old = OldServer(answer);
  if (!old) return std::nullopt;
  return Diagnosis{"single-status", *old};
}

std::optional<std::string> MastodonProvider::OldServer(const HttpResponse& instance) {
  if (instance.status != 200) return std::nullopt;
  rapidjson::Document doc;
  if (!json::Parse(doc, instance.body).empty() || !doc.IsObject()) return std::nullopt;
  const std::string_view version = StringMember(doc, "version");
  int major = 0, minor = 0;
  const char* p = version.data();
  const char* end = version.data() + version.size();
  auto [m1, e1] = std::from_chars(p, end, major);
  if (e1 != std::errc() || m1 == end || *m1 != '.') return std::nullopt;
  auto [m2, e2] = std::from_chars(m1 + 1, end, minor);
  if (e2 != std::errc()) return std::nullopt;
  if (major > 4 || (major == 4 && minor >= 3)) return std::nullopt;
  return "the server runs Mastodon " + CleanText(version, 40) +
         ", older than 4.3 (no GET /api/v1/statuses): one status per request";
}

BatchResult MastodonProvider::ParseOk(std::string_view body, const std::vector<std::int64_t>& ids,
                                      const PostKeys& keys) {
  rapidjson::Document doc;
  if (std::optional<BatchResult> failed = ParseOkBody(doc, body, '[')) return std::move(*failed);
  if (!doc.IsArray()) return Failed(FailureKind::kUnparsable, "unparsable 200 body: not a JSON array of statuses");
  return MatchKeyedAnswer(doc, "id", ids, keys, "statuses", [](const rapidjson::Value& status, Observation& obs) {
    // A reblog (boost) is a status whose own counts are 0; the original it shares is in `reblog`,
    // with the counts that belong to it. Those are what a tracked reblog shows (docs/workers.md,
    // "Replies, quotes, reposts and reblogs"); its time stays its own.
    const auto reblog = status.FindMember("reblog");
    const rapidjson::Value& counted = reblog != status.MemberEnd() && reblog->value.IsObject() ? reblog->value : status;
    obs.metrics.like_count = CountMember(counted, "favourites_count", &obs.invalid);
    obs.metrics.retweet_count = CountMember(counted, "reblogs_count", &obs.invalid);
    obs.metrics.reply_count = CountMember(counted, "replies_count", &obs.invalid);
    obs.metrics.quote_count = CountMember(counted, "quotes_count", &obs.invalid);
    obs.created_ms = ParseRfc3339Millis(StringMember(status, "created_at"));
  });
}

}  // namespace tweetkeeper::worker
