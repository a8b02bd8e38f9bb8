#include "follow/timeline.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <ctime>

#include "follow/answer.hpp"
#include "follow/names.hpp"
#include "provider/bluesky.hpp"  // ParseRfc3339Millis
#include "provider/json_fields.hpp"
#include "provider/x_v2.hpp"  // EncodeQueryValue
#include "text/utc_time.hpp"

namespace tweetkeeper::worker::follow {
namespace {

Account Failed(std::string reason) {
  Account a;
  a.reason = std::move(reason);
  return a;
}

Account Marked(Account::Status status, std::string reason) {
  Account a;
  a.status = status;
  a.reason = std::move(reason);
  return a;
}

// What a Mastodon server's refusal says of the account: 404 or 410, not there; 401 or 403, it
// answers only with a token. nullopt for any other answer.
std::optional<Account> MastodonAccountRefused(const HttpResponse& r) {
  if (r.status == 404 || r.status == 410) return Marked(Account::Status::kMissing, AnswerReason(r));
  if (r.status == 401 || r.status == 403)
    return Marked(Account::Status::kPrivate, AnswerReason(r) + " (the server answers only with a token)");
  return std::nullopt;
}

// X's answer for an account that is not there or not readable: in `errors` (a 200 with no data,
// as X answers a lookup of an unknown, suspended or protected user). Empty when none.
std::optional<Account> XAccountProblem(const rapidjson::Document& doc) {
  const auto errors = doc.FindMember("errors");
  if (errors == doc.MemberEnd() || !errors->value.IsArray() || errors->value.Empty()) return std::nullopt;
  const rapidjson::Value& e = errors->value[0];
  if (!e.IsObject()) return std::nullopt;
  const std::string_view type = StringMember(e, "type");
  std::string detail = CleanText(StringMember(e, "detail"), 300);
  if (detail.empty()) detail = CleanText(StringMember(e, "title"), 100);
  if (type.find("resource-not-found") != std::string_view::npos) return Marked(Account::Status::kMissing, detail);
  if (type.find("not-authorized-for-resource") != std::string_view::npos)
    return Marked(Account::Status::kPrivate, detail);
  return std::nullopt;
}

}  // namespace

std::string MastodonIdAt(std::int64_t epoch_ms) { return std::to_string(std::max<std::int64_t>(epoch_ms, 1) << 16); }

std::string MastodonLookupUrl(const std::string& base, const std::string& user) {
  return base + "/api/v1/accounts/lookup?acct=" + EncodeQueryValue(user);
}

Account ParseMastodonLookup(const HttpResponse& r) {
  if (auto refused = MastodonAccountRefused(r)) return *refused;
  std::string reason;
  rapidjson::Document doc;
  if (!ParseOkBody(doc, r, rapidjson::kObjectType, "not an account object", &reason)) return Failed(reason);
  const std::string_view id = StringMember(doc, "id");
  const std::string_view username = StringMember(doc, "username");
  if (!IsDecimalId(id) || !ProfileOf("@" + std::string(username) + "@example.org"))
    return Failed("the account's id or username is not what a Mastodon server sends: " + Snippet(r.body));
  const auto suspended = doc.FindMember("suspended");
  if (suspended != doc.MemberEnd() && suspended->value.IsBool() && suspended->value.GetBool())
    return Marked(Account::Status::kMissing, "suspended");
  Account a;
  a.status = Account::Status::kFound;
  a.account_id = std::string(id);
  a.handle = std::string(username);
  return a;
}

std::string MastodonStatusesUrl(const std::string& base, const std::string& account_id, const std::string& min_id) {
  return base + "/api/v1/accounts/" + EncodeQueryValue(account_id) + "/statuses?min_id=" + EncodeQueryValue(min_id) +
         "&limit=" + std::to_string(kMastodonPageSize) + "&exclude_reblogs=true";
}

TimelinePage ParseMastodonStatuses(const HttpResponse& r, const std::string& host) {
  TimelinePage page;
  page.account = MastodonAccountRefused(r);
  if (page.account) {
    page.ok = true;
    return page;
  }
  rapidjson::Document doc;
  if (!ParseOkBody(doc, r, rapidjson::kArrayType, "not a JSON array of statuses", &page.reason)) return page;
  page.more = doc.Size() >= static_cast<rapidjson::SizeType>(kMastodonPageSize);
  for (const rapidjson::Value& status : doc.GetArray()) {
    if (!status.IsObject()) continue;
    const auto reblog = status.FindMember("reblog");
    if (reblog != status.MemberEnd() && !reblog->value.IsNull()) continue;  // a boost: not the account's post
    const std::string_view id = StringMember(status, "id");
    const auto account = status.FindMember("account");
    const std::string_view username =
        account != status.MemberEnd() && account->value.IsObject() ? StringMember(account->value, "username") : "";
    const auto created = ParseRfc3339Millis(StringMember(status, "created_at"));
    std::string url = "https://" + host + "/@" + std::string(username) + "/" + std::string(id);
    const auto post = PostOf(url);
    if (!post || post->network != Network::kMastodon || post->key != id || !created) {
      page.reason = "a status left out: no id, username or creation time as a Mastodon server sends them";
      continue;
    }
    page.posts.push_back({std::string(id), std::move(url), *created});
  }
  page.ok = true;
  return page;
}

std::string XLookupUrl(const std::string& base, const std::string& username) {
  return base + "/2/users/by/username/" + EncodeQueryValue(username) + "?user.fields=protected";
}

Account ParseXLookup(const HttpResponse& r) {
  std::string reason;
  rapidjson::Document doc;
  if (r.status == 404) return Marked(Account::Status::kMissing, AnswerReason(r));
  if (!ParseOkBody(doc, r, rapidjson::kObjectType, "not an object", &reason)) return Failed(reason);
  const auto data = doc.FindMember("data");
  if (data == doc.MemberEnd() || !data->value.IsObject()) {
    if (auto problem = XAccountProblem(doc)) return *problem;
    return Failed("a 200 with neither the user nor an error for it: " + Snippet(r.body));
  }
  const std::string_view id = StringMember(data->value, "id");
  const std::string_view username = StringMember(data->value, "username");
  const auto profile = ProfileOf("https://x.com/" + std::string(username));
  if (!IsDecimalId(id) || !profile || profile->handle.empty())
    return Failed("the user's id or username is not what X sends: " + Snippet(r.body));
  const auto prot = data->value.FindMember("protected");
  Account a;
  a.status = prot != data->value.MemberEnd() && prot->value.IsBool() && prot->value.GetBool() ? Account::Status::kPrivate
                                                                                                : Account::Status::kFound;
  if (a.status == Account::Status::kPrivate) a.reason = "protected";
  a.account_id = std::string(id);
  a.handle = profile->handle;
  return a;
}

std::string XTimelineUrl(const std::string& base, const std::string& user_id, const std::string& since_id,
                         std::int64_t start_ms, const std::string& next_token) {
  std::string url = base + "/2/users/" + EncodeQueryValue(user_id) + "/tweets?max_results=" +
                    std::to_string(kXPageSize) + "&tweet.fields=created_at&exclude=retweets";
  url += since_id.empty() ? "&start_time=" + EncodeQueryValue(Rfc3339Utc(static_cast<std::time_t>(start_ms / 1000)))
                          : "&since_id=" + EncodeQueryValue(since_id);
  if (!next_token.empty()) url += "&pagination_token=" + EncodeQueryValue(next_token);
  return url;
}

TimelinePage ParseXTimeline(const HttpResponse& r) {
  TimelinePage page;
  rapidjson::Document doc;
  if (!ParseOkBody(doc, r, rapidjson::kObjectType, "not an object", &page.reason)) return page;
  const auto data = doc.FindMember("data");
  if (data == doc.MemberEnd()) {
    page.account = XAccountProblem(doc);  // the account is gone or hidden; or simply no new post
  } else if (!data->value.IsArray()) {
    page.reason = "unparsable 200 body: data is not an array of posts";
    return page;
  } else {
    for (const rapidjson::Value& tweet : data->value.GetArray()) {
      if (!tweet.IsObject()) continue;
      const std::string_view id = StringMember(tweet, "id");
      const auto created = ParseRfc3339Millis(StringMember(tweet, "created_at"));
      const auto post = PostOf("https://x.com/i/web/status/" + std::string(id));
      if (!post || post->key != id || !created) {
        page.reason = "a post left out: no id or creation time as X sends them";
        continue;
      }
      // created_at comes in whole seconds; the Snowflake id holds the millisecond (its first
      // 41 bits since 2010-11-04T01:42:54.657Z), which schedules the first refresh exactly.
      std::int64_t created_ms = *created;
      const std::int64_t snowflake_ms = static_cast<std::int64_t>(std::stoull(std::string(id)) >> 22) + 1288834974657;
      if (snowflake_ms / 1000 == *created / 1000) created_ms = snowflake_ms;
      page.posts.push_back({std::string(id), post->canonical, created_ms});
    }
  }
  const auto meta = doc.FindMember("meta");
  if (meta != doc.MemberEnd() && meta->value.IsObject()) page.next_token = CleanText(StringMember(meta->value, "next_token"), 200);
  page.ok = true;
  return page;
}

}  // namespace tweetkeeper::worker::follow
