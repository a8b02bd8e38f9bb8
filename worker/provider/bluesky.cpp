#include "provider/bluesky.hpp"

#include "text/utc_time.hpp"
#include "json/bounded.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "provider/answer_status.hpp"
#include "provider/json_fields.hpp"
#include "provider/keyed_answer.hpp"
#include "provider/x_v2.hpp"  // RepeatedQuery

namespace tweetkeeper::worker {
namespace {

using rapidjson::Value;

std::optional<std::int64_t> HeaderNumber(const Headers& headers, const char* name) {
  const auto it = headers.find(name);
  if (it == headers.end()) return std::nullopt;
  std::int64_t value = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value < 0) return std::nullopt;
  return value;
}

bool Digits(std::string_view s, std::size_t pos, std::size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t DaysFromCivil(int y, int m, int d) {
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<std::int64_t>(era) * 146097 + doe - 719468;
}

}  // namespace

std::optional<std::int64_t> ParseRfc3339Millis(std::string_view s) {
  int y, mo, d, h, mi, sec;
  if (!Digits(s, 0, 4, &y) || s.size() < 19 || s[4] != '-' || !Digits(s, 5, 2, &mo) || s[7] != '-' ||
      !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !Digits(s, 11, 2, &h) ||
      s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' || !Digits(s, 17, 2, &sec)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  std::size_t pos = 19;
  std::int64_t ms = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 3) ms = ms * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (int i = digits; i < 3; ++i) ms *= 10;
  }
  std::int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' || !Digits(s, pos + 4, 2, &om) ||
        oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_s = (s[pos] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    return std::nullopt;  // RFC 3339 requires a zone
  }
  if (pos != s.size()) return std::nullopt;
  const std::int64_t secs = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + std::min(sec, 59) - offset_s;
  return secs * 1000 + ms;
}

RateLimit ParseXrpcRateLimit(const Headers& headers, std::int64_t now_epoch_s) {
  RateLimit rate;
  rate.limit = HeaderNumber(headers, "ratelimit-limit");
  rate.remaining = HeaderNumber(headers, "ratelimit-remaining");
  rate.reset_epoch_s = HeaderNumber(headers, "ratelimit-reset");
  if (!rate.reset_epoch_s) {
    if (auto retry = HeaderNumber(headers, "retry-after")) rate.reset_epoch_s = now_epoch_s + *retry;
  }
  return rate;
}

std::string BlueskyProvider::ResolveHandleUrl(const std::string& handle) const {
  return base_ + "/xrpc/com.atproto.identity.resolveHandle?handle=" + EncodeQueryValue(handle);
}

std::vector<std::string> BlueskyProvider::NamesToResolve(const PostKeys& keys) const {
  // at://<handle>/app.bsky.feed.post/<rkey> -> handle, each once.
  std::vector<std::string> handles;
  for (const std::string& key : keys.keys) {
    if (key.rfind("at://", 0) != 0) continue;
    const std::string handle = key.substr(5, key.find('/', 5) - 5);
    if (std::find(handles.begin(), handles.end(), handle) == handles.end()) handles.push_back(handle);
  }
  return handles;
}

Resolution BlueskyProvider::ParseResolveHandle(const HttpResponse& response) {
  Resolution r;
  rapidjson::Document doc;
  bool parsed = false;
  if (response.status == 200 || response.status == 400) {
    parsed = json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, response.body).empty();
  }
  const bool object = parsed && doc.IsObject();
  if (response.status == 200) {
    const std::string_view did = object ? StringMember(doc, "did") : std::string_view();
    if (did.rfind("did:", 0) == 0 && did.size() <= 2048) {
      r.key = std::string(did);
    } else {
      r.failure = Failed(FailureKind::kUnparsable, "resolveHandle answered 200 without a DID: " + Snippet(response.body));
    }
    return r;
  }
  if (response.status == 400 && object) {
    const std::string_view error = StringMember(doc, "error");
    if (error == "InvalidRequest" || error == "HandleNotFound") {
      r.problem = CleanText(StringMember(doc, "message"));
      if (r.problem.empty()) r.problem = std::string(error);
      return r;
    }
  }
  r.failure = FailedAnswer(response);
  if (r.failure.ok()) r.failure = Failed(FailureKind::kOtherClientError, "resolveHandle: HTTP " + std::to_string(response.status));
  const std::int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  r.failure.rate_limit = ParseXrpcRateLimit(response.headers, now_s);
  return r;
}

BlueskyProvider::BlueskyProvider(std::string api_url) : base_(std::move(api_url)) {
  while (!base_.empty() && base_.back() == '/') base_.pop_back();
}

std::string BlueskyProvider::RequestUrl(const std::vector<std::int64_t>& ids, const PostKeys& keys) const {
  return base_ + "/xrpc/app.bsky.feed.getPosts" + RepeatedQuery("uris", keys.keys, ids.size());
}

BatchResult BlueskyProvider::ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids,
                                         const PostKeys& keys) const {
  const std::int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  BatchResult result = response.status == 200 ? ParseOk(response.body, ids, keys) : FailedAnswer(response);
  result.rate_limit = ParseXrpcRateLimit(response.headers, now_s);
  // The AppView's counts are as of its Date (to the second): stream counts place the read by it.
  if (const auto date = response.headers.find("date"); date != response.headers.end())
    if (const std::optional<std::int64_t> as_of = ParseHttpDate(date->second))
      for (Observation& o : result.observations) o.as_of_ms = *as_of * 1000;
  return result;
}

std::optional<std::size_t> BlueskyProvider::RefusedKey(const HttpResponse& response) const {
  if (response.status != 400) return std::nullopt;
  rapidjson::Document doc;
  if (!json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, response.body).empty() || !doc.IsObject() ||
      StringMember(doc, "error") != "InvalidRequest") {
    return std::nullopt;
  }
  // The lexicon's validation error names the parameter and index: "Error: uris/3 must be ...".
  const std::string_view message = StringMember(doc, "message");
  const std::size_t at = message.find("uris/");
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t index = 0;
  std::size_t i = at + 5;
  const std::size_t digits_from = i;
  for (; i < message.size() && i - digits_from < 4 && message[i] >= '0' && message[i] <= '9'; ++i) {
    index = index * 10 + static_cast<std::size_t>(message[i] - '0');
  }
  if (i == digits_from || (i < message.size() && message[i] != ' ')) return std::nullopt;
  return index;
}

BatchResult BlueskyProvider::ParseOk(std::string_view body, const std::vector<std::int64_t>& ids,
                                     const PostKeys& keys) {
  rapidjson::Document doc;
  if (std::optional<BatchResult> failed = ParseOkBody(doc, body, '{')) return std::move(*failed);
  if (!doc.IsObject()) return Failed(FailureKind::kUnparsable, "unparsable 200 body: not a JSON object");
  const auto posts = doc.FindMember("posts");
  if (posts == doc.MemberEnd() || !posts->value.IsArray()) {
    return Failed(FailureKind::kUnparsable, "200 answer without a posts array");  // required by the lexicon
  }
  return MatchKeyedAnswer(posts->value, "uri", ids, keys, "posts", [](const Value& post, Observation& obs) {
    obs.metrics.like_count = CountMember(post, "likeCount", &obs.invalid);
    obs.metrics.retweet_count = CountMember(post, "repostCount", &obs.invalid);
    obs.metrics.reply_count = CountMember(post, "replyCount", &obs.invalid);
    obs.metrics.quote_count = CountMember(post, "quoteCount", &obs.invalid);
    obs.metrics.bookmark_count = CountMember(post, "bookmarkCount", &obs.invalid);
    std::optional<std::int64_t> created = ParseRfc3339Millis(StringMember(post, "indexedAt"));
    const auto record = post.FindMember("record");
    if (record != post.MemberEnd() && record->value.IsObject()) {
      if (auto c = ParseRfc3339Millis(StringMember(record->value, "createdAt")); c && (!created || *c < *created)) {
        created = c;
      }
    }
    obs.created_ms = created;
  });
}

}  // namespace tweetkeeper::worker
