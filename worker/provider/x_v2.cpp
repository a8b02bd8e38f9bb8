#include "provider/x_v2.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <charconv>
#include <unordered_set>

namespace tweetkeeper::worker {
namespace {

using rapidjson::Value;

constexpr std::size_t kMaxTextBytes = 500;  // details are for humans; keep rows and logs small

// Text from the API as PostgreSQL stores it: valid UTF-8 without NUL, at most `max_bytes`, cut
// at a character boundary. RapidJSON 1.1 validates the raw bytes but turns a lone surrogate
// escape ("\udc00") into ED B0 80, which PostgreSQL refuses: such bytes become U+FFFD.
std::string CleanText(std::string_view text, std::size_t max_bytes = kMaxTextBytes) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(std::min(text.size(), max_bytes));
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* const end = p + text.size();
  while (p < end) {
    const unsigned char c = *p;
    if (c == 0) {
      ++p;
      continue;
    }
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (no overlongs, surrogates, > U+10FFFF)
    if (c < 0x80) {
      n = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool valid = n != 0 && static_cast<std::size_t>(end - p) >= n && (n == 1 || (p[1] >= lo && p[1] <= hi));
    for (std::size_t i = 2; valid && i < n; ++i) valid = (p[i] & 0xC0) == 0x80;
    const std::string_view ch = valid ? std::string_view(reinterpret_cast<const char*>(p), n) : kReplacement;
    if (out.size() + ch.size() > max_bytes) break;
    out.append(ch);
    p += valid ? n : 1;
  }
  return out;
}

std::string_view StringMember(const Value& object, const char* name) {
  if (!object.IsObject()) return {};
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsString()) return {};
  return {it->value.GetString(), it->value.GetStringLength()};
}

// A count is a non-negative integer that fits in int64; anything else is "not sent".
std::optional<std::int64_t> CountMember(const Value& object, const char* name) {
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsInt64()) return std::nullopt;
  std::int64_t v = it->value.GetInt64();
  if (v < 0) return std::nullopt;
  return v;
}

std::optional<std::int64_t> IdOf(const Value& id) {
  if (id.IsString()) return ParseTweetId({id.GetString(), id.GetStringLength()});
  if (id.IsInt64() && id.GetInt64() > 0) return id.GetInt64();  // lenient: spec says string
  return std::nullopt;
}

// Printable ASCII prefix of a body that is not JSON (an HTML error page from a proxy, ...).
std::string Snippet(std::string_view body) {
  std::string out;
  for (char c : body) {
    if (out.size() >= 120) {
      out += "...";
      break;
    }
    out.push_back(c >= 0x20 && c < 0x7f ? c : ' ');
  }
  return out;
}

// "Too Many Requests: details (first error message)" from a problem+json body, if any.
std::string DescribeProblemBody(const rapidjson::Document& doc) {
  std::string title = CleanText(StringMember(doc, "title"));
  std::string detail = CleanText(StringMember(doc, "detail"));
  std::string text = title;
  if (!detail.empty() && detail != title) text += text.empty() ? detail : ": " + detail;
  auto errors = doc.FindMember("errors");
  if (errors != doc.MemberEnd() && errors->value.IsArray() && !errors->value.Empty()) {
    const Value& first = errors->value[0];
    std::string message = CleanText(StringMember(first, "message"));
    if (message.empty()) message = CleanText(StringMember(first, "detail"));
    if (!message.empty()) text += text.empty() ? message : " (" + message + ")";
  }
  return text;
}

BatchResult Failed(FailureKind kind, std::string reason) {
  BatchResult result;
  result.failure = kind;
  result.reason = std::move(reason);
  return result;
}

BatchResult ParseErrorStatus(const HttpResponse& response) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(response.body.data(),
                                                                                    response.body.size());
  const bool json = !doc.HasParseError() && doc.IsObject();
  std::string text = json ? DescribeProblemBody(doc) : Snippet(response.body);
  std::string reason = "HTTP " + std::to_string(response.status);
  if (!text.empty()) reason += " " + text;

  FailureKind kind = FailureKind::kBadRequest;
  if (response.status == 429) {
    // The monthly cap also answers 429, but waiting for the 15-minute window does not help.
    const bool capped = json && (ProblemType(StringMember(doc, "type")) == "usage-capped" ||
                                 StringMember(doc, "title") == "UsageCapExceeded");
    kind = capped ? FailureKind::kUsageCapped : FailureKind::kRateLimited;
  } else if (response.status == 401 || response.status == 403) {
    kind = FailureKind::kAuth;
  } else if (response.status >= 500) {
    kind = FailureKind::kServer;
  }
  return Failed(kind, std::move(reason));
}

}  // namespace

const char* FailureKindName(FailureKind kind) {
  switch (kind) {
    case FailureKind::kNone:
      return "none";
    case FailureKind::kTransport:
      return "transport";
    case FailureKind::kRateLimited:
      return "rate-limited";
    case FailureKind::kUsageCapped:
      return "usage-capped";
    case FailureKind::kAuth:
      return "auth";
    case FailureKind::kBadRequest:
      return "bad-request";
    case FailureKind::kServer:
      return "server";
    case FailureKind::kUnparsable:
      return "unparsable";
  }
  return "?";
}

std::string ProblemType(std::string_view type_url) {
  constexpr std::string_view kMarker = "/2/problems/";
  auto pos = type_url.find(kMarker);
  std::string_view type = pos == std::string_view::npos ? type_url : type_url.substr(pos + kMarker.size());
  std::string out = CleanText(type, 100);
  return out.empty() ? "unknown" : out;
}

std::optional<std::int64_t> ParseTweetId(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

RateLimit ParseRateLimit(const Headers& headers) {
  auto number = [&](const char* name) -> std::optional<std::int64_t> {
    auto it = headers.find(name);
    if (it == headers.end()) return std::nullopt;
    std::string_view v = it->second;
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    std::int64_t out = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || out < 0) return std::nullopt;
    return out;
  };
  return {number("x-rate-limit-limit"), number("x-rate-limit-remaining"), number("x-rate-limit-reset")};
}

std::string EncodeQueryValue(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~' || c == ',') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

XV2Provider::XV2Provider(std::string api_url) : base_(std::move(api_url)) {
  while (!base_.empty() && base_.back() == '/') base_.pop_back();
}

std::string XV2Provider::RequestUrl(const std::vector<std::int64_t>& ids) const {
  std::string joined;
  for (std::int64_t id : ids) {
    if (!joined.empty()) joined.push_back(',');
    joined += std::to_string(id);
  }
  return base_ + "/2/tweets?ids=" + EncodeQueryValue(joined) +
         "&tweet.fields=" + EncodeQueryValue("public_metrics,created_at");
}

BatchResult XV2Provider::ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids) const {
  BatchResult result;
  if (response.status == 0) {
    result = Failed(FailureKind::kTransport, response.error.empty() ? "no HTTP answer" : response.error);
  } else if (response.status != 200) {
    result = ParseErrorStatus(response);
  } else {
    auto content_type = response.headers.find("content-type");
    result = ParseOk(response.body, content_type == response.headers.end() ? "" : content_type->second, ids);
  }
  result.rate_limit = ParseRateLimit(response.headers);
  return result;
}

BatchResult XV2Provider::ParseOk(std::string_view body, std::string_view content_type,
                                 const std::vector<std::int64_t>& ids) {
  rapidjson::Document doc;
  // Iterative: deeply nested garbage must not overflow the stack. Invalid UTF-8 would later be
  // refused by jsonb, so it is refused here.
  doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(body.data(), body.size());
  if (doc.HasParseError()) {
    // Type and size tell a cut-off answer (error at its end) from an HTML page; for the latter
    // its first words say what sent it (a proxy, a captive portal, a maintenance page).
    std::string reason = "unparsable 200 body (" +
                         (content_type.empty() ? "no content type" : CleanText(content_type)) + ", " +
                         std::to_string(body.size()) + " bytes): " + rapidjson::GetParseError_En(doc.GetParseError()) +
                         " at offset " + std::to_string(doc.GetErrorOffset());
    const auto first = body.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && body[first] != '{' && body[first] != '[') reason += ": " + Snippet(body);
    return Failed(FailureKind::kUnparsable, std::move(reason));
  }
  if (!doc.IsObject()) return Failed(FailureKind::kUnparsable, "unparsable 200 body: not a JSON object");

  const std::unordered_set<std::int64_t> requested(ids.begin(), ids.end());
  std::unordered_set<std::int64_t> seen;  // an id is reported once; `data` wins over `errors`
  BatchResult result;

  auto data = doc.FindMember("data");
  if (data != doc.MemberEnd()) {
    if (!data->value.IsArray()) {
      ++result.ignored;
    } else {
      for (const Value& tweet : data->value.GetArray()) {
        std::optional<std::int64_t> id;
        if (tweet.IsObject() && tweet.HasMember("id")) id = IdOf(tweet["id"]);
        if (!id || !requested.count(*id) || !seen.insert(*id).second) {
          ++result.ignored;
          continue;
        }
        Observation obs;
        obs.id = *id;
        auto pm = tweet.FindMember("public_metrics");
        if (pm != tweet.MemberEnd() && pm->value.IsObject()) {
          const Value& m = pm->value;
          obs.metrics.retweet_count = CountMember(m, "retweet_count");
          if (!obs.metrics.retweet_count) obs.metrics.retweet_count = CountMember(m, "repost_count");
          obs.metrics.reply_count = CountMember(m, "reply_count");
          obs.metrics.like_count = CountMember(m, "like_count");
          obs.metrics.quote_count = CountMember(m, "quote_count");
          obs.metrics.bookmark_count = CountMember(m, "bookmark_count");
          obs.metrics.impression_count = CountMember(m, "impression_count");
        }
        result.observations.push_back(obs);
      }
    }
  }

  std::string first_unattributed;  // a problem about no id of ours explains an empty answer
  auto errors = doc.FindMember("errors");
  if (errors != doc.MemberEnd() && errors->value.IsArray()) {
    for (const Value& error : errors->value.GetArray()) {
      std::optional<std::int64_t> id;
      if (error.IsObject()) {
        id = ParseTweetId(StringMember(error, "resource_id"));
        if (!id) id = ParseTweetId(StringMember(error, "value"));
      }
      if (!id || !requested.count(*id)) {
        ++result.ignored;
        if (first_unattributed.empty() && error.IsObject()) {
          first_unattributed = CleanText(StringMember(error, "detail"));
          if (first_unattributed.empty()) first_unattributed = CleanText(StringMember(error, "message"));
          if (first_unattributed.empty()) first_unattributed = CleanText(StringMember(error, "title"));
        }
        continue;
      }
      if (!seen.insert(*id).second) continue;
      std::string detail = CleanText(StringMember(error, "detail"));
      if (detail.empty()) detail = CleanText(StringMember(error, "title"));
      result.problems.push_back({*id, ProblemType(StringMember(error, "type")), std::move(detail)});
    }
  } else if (errors != doc.MemberEnd()) {
    ++result.ignored;
  }

  // An answer about none of our ids is not progress: completing it would hand every id back
  // as due now and loop; treat it as a failed request (release + back off) instead.
  if (result.observations.empty() && result.problems.empty()) {
    std::string reason = "200 answer accounts for none of the " + std::to_string(requested.size()) + " requested ids";
    if (!first_unattributed.empty()) reason += ": " + first_unattributed;
    return Failed(FailureKind::kUnparsable, std::move(reason));
  }
  return result;
}

}  // namespace tweetkeeper::worker
