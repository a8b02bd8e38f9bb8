#include "provider/x_v1_1.hpp"
#include "json/bounded.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <array>
#include <unordered_set>

#include "provider/json_fields.hpp"
#include "provider/answer_status.hpp"

namespace tweetkeeper::worker {
namespace {

using rapidjson::Value;

// The id a tweet object names, when it names one (id_str preferred: `id` exceeds 2^53).
std::optional<std::int64_t> OwnId(const Value& tweet) {
  if (auto id = ParseTweetId(StringMember(tweet, "id_str"))) return id;
  auto id = tweet.FindMember("id");
  if (id != tweet.MemberEnd() && id->value.IsInt64() && id->value.GetInt64() > 0) return id->value.GetInt64();
  return std::nullopt;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool Digits(std::string_view s, int& out) {
  out = 0;
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

}  // namespace

std::optional<std::int64_t> ParseV11CreatedAt(std::string_view text) {
  // "Www Mmm DD HH:MM:SS +hhmm YYYY": fixed width, 30 characters.
  static constexpr std::array<std::string_view, 7> kDays = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                               "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (text.size() != 30 || text[3] != ' ' || text[7] != ' ' || text[10] != ' ' || text[13] != ':' || text[16] != ':' ||
      text[19] != ' ' || text[25] != ' ' || (text[20] != '+' && text[20] != '-')) {
    return std::nullopt;
  }
  bool day_ok = false;
  for (auto d : kDays) day_ok = day_ok || text.substr(0, 3) == d;
  unsigned month = 0;
  for (unsigned i = 0; i < kMonths.size(); ++i) {
    if (text.substr(4, 3) == kMonths[i]) month = i + 1;
  }
  int day, hour, minute, second, off_h, off_m, year;
  if (!day_ok || month == 0 || !Digits(text.substr(8, 2), day) || !Digits(text.substr(11, 2), hour) ||
      !Digits(text.substr(14, 2), minute) || !Digits(text.substr(17, 2), second) ||
      !Digits(text.substr(21, 2), off_h) || !Digits(text.substr(23, 2), off_m) || !Digits(text.substr(26, 4), year)) {
    return std::nullopt;
  }
  static constexpr std::array<int, 12> kMonthDays = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (day < 1 || day > kMonthDays[month - 1] || (month == 2 && day == 29 && !leap) || hour > 23 || minute > 59 ||
      second > 60 || off_h > 23 || off_m > 59 || year < 1970) {
    return std::nullopt;
  }
  const std::int64_t offset = (off_h * 3600 + off_m * 60) * (text[20] == '-' ? -1 : 1);
  return DaysFromCivil(year, month, static_cast<unsigned>(day)) * 86400 + hour * 3600 + minute * 60 + second - offset;
}

XV11Provider::XV11Provider(std::string api_url) : base_(std::move(api_url)) {
  while (!base_.empty() && base_.back() == '/') base_.pop_back();
}

std::string XV11Provider::RequestUrl(const std::vector<std::int64_t>& ids) const {
  std::string joined;
  for (std::int64_t id : ids) {
    if (!joined.empty()) joined.push_back(',');
    joined += std::to_string(id);
  }
  // map=true: a missing tweet shows as null instead of silently vanishing from the answer.
  return base_ + "/1.1/statuses/lookup.json?id=" + joined + "&map=true";
}

BatchResult XV11Provider::ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids) const {
  if (response.status != 200) return FailedAnswer(response);
  const RateLimit rate_limit = ParseRateLimit(response.headers);
  auto fail = [&](std::string reason) {
    BatchResult r = Failed(FailureKind::kUnparsable, std::move(reason));
    r.rate_limit = rate_limit;
    return r;
  };

  const std::string& body = response.body;
  rapidjson::Document doc;
  // Iterative and bounded in depth: deeply nested garbage must not overflow the stack; invalid
  // UTF-8 is refused.
  const std::string parse_error = json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, body);
  if (!parse_error.empty()) {
    auto content_type = response.headers.find("content-type");
    std::string reason =
        "unparsable 200 body (" +
        (content_type == response.headers.end() ? std::string("no content type") : CleanText(content_type->second)) +
        ", " + std::to_string(body.size()) + " bytes): " + parse_error;
    const auto first = body.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && body[first] != '{' && body[first] != '[') reason += ": " + Snippet(body);
    return fail(std::move(reason));
  }
  if (!doc.IsObject()) return fail("unparsable 200 body: not a JSON object");
  auto map = doc.FindMember("id");
  if (map == doc.MemberEnd() || !map->value.IsObject()) {
    return fail("unparsable 200 body: no \"id\" object (was map=true dropped on the way?)");
  }

  const std::unordered_set<std::int64_t> requested(ids.begin(), ids.end());
  std::unordered_set<std::int64_t> seen;
  BatchResult result;
  result.rate_limit = rate_limit;
  for (const auto& member : map->value.GetObject()) {
    const std::optional<std::int64_t> id = ParseTweetId({member.name.GetString(), member.name.GetStringLength()});
    if (!id || !requested.count(*id) || !seen.insert(*id).second) {
      ++result.ignored;
      continue;
    }
    const Value& tweet = member.value;
    if (tweet.IsNull()) {
      result.problems.push_back({*id, kV11MissingProblem,
                                 "statuses/lookup answered null: deleted, protected or suspended "
                                 "(v1.1 does not say which)"});
      continue;
    }
    // A tweet under another id's key is not this id's answer.
    const std::optional<std::int64_t> own = tweet.IsObject() ? OwnId(tweet) : std::nullopt;
    if (!tweet.IsObject() || (own && *own != *id)) {
      seen.erase(*id);
      ++result.ignored;
      continue;
    }
    Observation obs;
    obs.id = *id;
    obs.metrics.retweet_count = CountMember(tweet, "retweet_count", &obs.invalid);
    obs.metrics.like_count = CountMember(tweet, "favorite_count", &obs.invalid);
    result.observations.push_back(obs);
  }

  // As in v2: an answer about none of our ids and nothing else left them all out; one with
  // only entries we cannot use is a failed request.
  if (result.observations.empty() && result.problems.empty() && result.ignored > 0) {
    return fail("200 answer accounts for none of the " + std::to_string(requested.size()) + " requested ids");
  }
  for (std::int64_t id : ids) {
    if (seen.insert(id).second) result.omitted.push_back(id);  // once, however often it was asked
  }
  return result;
}

}  // namespace tweetkeeper::worker
