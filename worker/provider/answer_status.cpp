#include "provider/answer_status.hpp"
#include "json/bounded.hpp"

#include <rapidjson/document.h>

#include <charconv>
#include <optional>
#include <string>

#include "provider/json_fields.hpp"

namespace tweetkeeper::worker {
namespace {

using rapidjson::Value;

// v1.1 error codes that mean "this credential is not accepted here" whatever the status (215
// "Bad Authentication data" comes with a 400): 32 could not authenticate, 64 account
// suspended, 89 invalid or expired token, 99 unable to verify credentials, 135 timestamp out
// of bounds, 215 bad authentication data, 220 credentials do not allow access, 261 app cannot
// act, 326 account locked, 453 access level does not include this endpoint.
bool V11AuthCode(std::int64_t code) {
  switch (code) {
    case 32:
    case 64:
    case 89:
    case 99:
    case 135:
    case 215:
    case 220:
    case 261:
    case 326:
    case 453:
      return true;
    default:
      return false;
  }
}

constexpr std::int64_t kV11RateLimitCode = 88;

std::optional<std::int64_t> FirstErrorCode(const Value& doc) {
  if (!doc.IsObject()) return std::nullopt;
  auto errors = doc.FindMember("errors");
  if (errors == doc.MemberEnd() || !errors->value.IsArray() || errors->value.Empty()) return std::nullopt;
  const Value& first = errors->value[0];
  if (!first.IsObject()) return std::nullopt;
  auto code = first.FindMember("code");
  if (code == first.MemberEnd() || !code->value.IsInt64()) return std::nullopt;
  return code->value.GetInt64();
}

// "Too Many Requests: details (first error message)" from a v2 problem body, "Rate limit
// exceeded (code 88)" from a v1.1 error body, "InvalidRequest: Error: uris/3 must be a valid
// at-uri" from Bluesky's, "This API requires an authenticated user" from Mastodon's.
std::string DescribeErrorBody(const Value& doc) {
  std::string title = CleanText(StringMember(doc, "title"));
  std::string detail = CleanText(StringMember(doc, "detail"));
  std::string text = title;
  if (!detail.empty() && detail != title) text += text.empty() ? detail : ": " + detail;
  if (text.empty()) {
    // Bluesky's XRPC errors {"error":"InvalidRequest","message":"..."}; Mastodon's {"error":"..."}.
    const std::string error = CleanText(StringMember(doc, "error"));
    const std::string message = CleanText(StringMember(doc, "message"));
    text = error.empty() || message.empty() ? error + message : error + ": " + message;
  }
  auto errors = doc.FindMember("errors");
  if (errors != doc.MemberEnd() && errors->value.IsArray() && !errors->value.Empty()) {
    const Value& first = errors->value[0];
    std::string message = CleanText(StringMember(first, "message"));
    if (message.empty()) message = CleanText(StringMember(first, "detail"));
    if (auto code = FirstErrorCode(doc))
      message += (message.empty() ? "code " : " (code ") + std::to_string(*code) + (message.empty() ? "" : ")");
    if (!message.empty()) text += text.empty() ? message : " (" + message + ")";
  }
  return text;
}

FailureKind Classify(long status, const Value* doc) {
  if (status == 0) return FailureKind::kTransport;
  const std::optional<std::int64_t> code = doc ? FirstErrorCode(*doc) : std::nullopt;
  if (status == 429) {
    // The monthly cap also answers 429, but waiting for the 15-minute window does not help.
    const bool capped = doc && (ProblemType(StringMember(*doc, "type")) == "usage-capped" ||
                                StringMember(*doc, "title") == "UsageCapExceeded");
    return capped ? FailureKind::kUsageCapped : FailureKind::kRateLimited;
  }
  if (code == kV11RateLimitCode) return FailureKind::kRateLimited;
  if (status == 401 || status == 403 || (code && V11AuthCode(*code))) return FailureKind::kRejected;
  if (status == 400) return FailureKind::kOurRequestInvalid;
  if (status >= 500) return FailureKind::kServer;
  return FailureKind::kOtherClientError;
}

}  // namespace

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

FailureKind ClassifyFailure(long status, std::string_view body) {
  rapidjson::Document doc;
  const bool is_json = json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, body).empty() && doc.IsObject();
  return Classify(status, is_json ? &doc : nullptr);
}

BatchResult Failed(FailureKind kind, std::string reason) {
  BatchResult result;
  result.failure = kind;
  result.reason = std::move(reason);
  return result;
}

BatchResult FailedAnswer(const HttpResponse& response) {
  BatchResult result;
  result.rate_limit = ParseRateLimit(response.headers);
  if (response.status == 0) {
    result.failure = FailureKind::kTransport;
    // curl's own text, but it goes to release_batch() too: valid UTF-8 without NUL.
    result.reason = CleanText(response.error);
    if (result.reason.empty()) result.reason = "no HTTP answer";
    return result;
  }
  rapidjson::Document doc;
  const bool is_json =
      json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, response.body).empty() && doc.IsObject();
  const std::string text = is_json ? DescribeErrorBody(doc) : Snippet(response.body);
  result.failure = Classify(response.status, is_json ? &doc : nullptr);
  result.reason = "HTTP " + std::to_string(response.status);
  if (!text.empty()) result.reason += " " + text;
  return result;
}

}  // namespace tweetkeeper::worker
