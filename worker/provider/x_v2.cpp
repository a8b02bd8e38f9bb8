#include "provider/x_v2.hpp"
#include "json/bounded.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <unordered_set>

#include "provider/json_fields.hpp"
#include "provider/answer_status.hpp"
#include "provider/content_hash.hpp"

namespace tweetkeeper::worker {
namespace {

using rapidjson::Value;

std::optional<std::int64_t> IdOf(const Value& id) {
  if (id.IsString()) return ParseTweetId({id.GetString(), id.GetStringLength()});
  if (id.IsInt64() && id.GetInt64() > 0) return id.GetInt64();  // lenient: spec says string
  return std::nullopt;
}

// A tweet's counts (public_metrics) and, when it was edited, its newest version (the last of
// edit_history_tweet_ids, a default field), into obs (whose id is the tweet's).
void ReadCounts(const Value& tweet, Observation& obs) {
  auto pm = tweet.FindMember("public_metrics");
  if (pm != tweet.MemberEnd() && pm->value.IsObject()) {
    const Value& m = pm->value;
    obs.metrics.retweet_count = CountMember(m, "retweet_count", &obs.invalid);
    if (!obs.metrics.retweet_count) obs.metrics.retweet_count = CountMember(m, "repost_count", &obs.invalid);
    obs.metrics.reply_count = CountMember(m, "reply_count", &obs.invalid);
    obs.metrics.like_count = CountMember(m, "like_count", &obs.invalid);
    obs.metrics.quote_count = CountMember(m, "quote_count", &obs.invalid);
    obs.metrics.bookmark_count = CountMember(m, "bookmark_count", &obs.invalid);
    obs.metrics.impression_count = CountMember(m, "impression_count", &obs.invalid);
  }
  auto history = tweet.FindMember("edit_history_tweet_ids");
  if (history != tweet.MemberEnd() && history->value.IsArray() && !history->value.Empty()) {
    const Value& last = history->value[history->value.Size() - 1];
    if (std::optional<std::int64_t> newest = IdOf(last); newest && *newest > obs.id) obs.newest_id = newest;
  }
}

// The answer's authors (includes.users), by id.
std::unordered_map<std::string_view, const Value*> AuthorsById(const Value& doc) {
  std::unordered_map<std::string_view, const Value*> users;
  auto includes = doc.FindMember("includes");
  if (includes != doc.MemberEnd() && includes->value.IsObject()) {
    auto list = includes->value.FindMember("users");
    if (list != includes->value.MemberEnd() && list->value.IsArray()) {
      for (const Value& user : list->value.GetArray()) {
        if (user.IsObject()) users.emplace(StringMember(user, "id"), &user);
      }
    }
  }
  return users;
}

}  // namespace

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

std::string RepeatedQuery(std::string_view name, const std::vector<std::string>& values, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < values.size() && i < count; ++i) {
    out += i == 0 ? '?' : '&';
    out += name;
    out += '=';
    out += EncodeQueryValue(values[i]);
  }
  return out;
}

XV2Provider::XV2Provider(std::string api_url) : base_(std::move(api_url)) {
  while (!base_.empty() && base_.back() == '/') base_.pop_back();
}

namespace {
// twarc2's defaults (FACTS: twarc 2.14.1 expansions.py), so an export reads as twarc2's output.
constexpr const char* kPayloadTweetFields =
    "attachments,author_id,context_annotations,conversation_id,created_at,edit_controls,edit_history_tweet_ids,"
    "entities,geo,id,in_reply_to_user_id,lang,possibly_sensitive,public_metrics,referenced_tweets,reply_settings,"
    "source,text,withheld";
constexpr const char* kPayloadUserFields =
    "created_at,description,entities,id,location,name,pinned_tweet_id,profile_image_url,protected,public_metrics,"
    "url,username,verified,verified_type,withheld";
}  // namespace

std::string XV2Provider::RequestUrl(const std::vector<std::int64_t>& ids) const { return RequestUrl(ids, PostKeys{}); }

std::string XV2Provider::RequestUrl(const std::vector<std::int64_t>& ids, const PostKeys& keys) const {
  std::string joined;
  for (std::int64_t id : ids) {
    if (!joined.empty()) joined.push_back(',');
    joined += std::to_string(id);
  }
  if (keys.payloads) {
    return base_ + "/2/tweets?ids=" + EncodeQueryValue(joined) + "&tweet.fields=" + EncodeQueryValue(kPayloadTweetFields) +
           "&expansions=author_id&user.fields=" + EncodeQueryValue(kPayloadUserFields);
  }
  return base_ + "/2/tweets?ids=" + EncodeQueryValue(joined) +
         "&tweet.fields=" + EncodeQueryValue("public_metrics,created_at");
}

BatchResult XV2Provider::ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids) const {
  return ParseAnswer(response, ids, PostKeys{});
}

BatchResult XV2Provider::ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids,
                                     const PostKeys& keys) const {
  if (response.status != 200) return FailedAnswer(response);
  auto content_type = response.headers.find("content-type");
  BatchResult result =
      ParseOk(response.body, content_type == response.headers.end() ? "" : content_type->second, ids, keys);
  result.rate_limit = ParseRateLimit(response.headers);
  return result;
}

BatchResult XV2Provider::ParseOk(std::string_view body, std::string_view content_type,
                                 const std::vector<std::int64_t>& ids, const PostKeys& keys) {
  rapidjson::Document doc;
  // Iterative and bounded in depth: deeply nested garbage must not overflow the stack. Invalid
  // UTF-8 would later be refused by jsonb, so it is refused here.
  const std::string parse_error = json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, body);
  if (!parse_error.empty()) {
    // Type and size tell a cut-off answer (error at its end) from an HTML page; for the latter
    // its first words say what sent it (a proxy, a captive portal, a maintenance page).
    std::string reason = "unparsable 200 body (" +
                         (content_type.empty() ? "no content type" : CleanText(content_type)) + ", " +
                         std::to_string(body.size()) + " bytes): " + parse_error;
    const auto first = body.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && body[first] != '{' && body[first] != '[') reason += ": " + Snippet(body);
    return Failed(FailureKind::kUnparsable, std::move(reason));
  }
  if (!doc.IsObject()) return Failed(FailureKind::kUnparsable, "unparsable 200 body: not a JSON object");

  const std::unordered_set<std::int64_t> requested(ids.begin(), ids.end());
  std::unordered_set<std::int64_t> seen;  // an id is reported once; `data` wins over `errors`
  BatchResult result;

  // The authors (includes.users, with payloads on), by id.
  const std::unordered_map<std::string_view, const Value*> users =
      keys.payloads ? AuthorsById(doc) : std::unordered_map<std::string_view, const Value*>{};

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
        ReadCounts(tweet, obs);
        if (keys.payloads) {
          const auto user = users.find(StringMember(tweet, "author_id"));
          AttachPayload(obs, tweet, user != users.end() ? user->second : nullptr, keys);
        }
        result.observations.push_back(std::move(obs));
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

  // An answer about none of our ids: if it holds nothing else either ({} is a valid answer),
  // every id was left out, and complete_batch puts each off (a batch of only such ids, the
  // recheck of a missing tweet, must not come back at once, forever). If it holds entries about
  // other ids or errors about none, it is more likely broken: a failed request (release + back
  // off).
  if (result.observations.empty() && result.problems.empty() && result.ignored > 0) {
    std::string reason = "200 answer accounts for none of the " + std::to_string(requested.size()) + " requested ids";
    if (!first_unattributed.empty()) reason += ": " + first_unattributed;
    return Failed(FailureKind::kUnparsable, std::move(reason));
  }
  for (std::int64_t id : ids) {
    if (seen.insert(id).second) result.omitted.push_back(id);  // once, however often it was asked
  }
  return result;
}

}  // namespace tweetkeeper::worker
