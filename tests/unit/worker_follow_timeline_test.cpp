// What a follower reads of followed accounts on Mastodon and X: lookups and timelines as the
// services answer them (shapes from mastodon/documentation's entities and X's OpenAPI and
// documented error bodies), and hostile or broken answers refused with a reason.

#include <gtest/gtest.h>

#include <string>

#include "worker_test_answers.hpp"
#include "follow/timeline.hpp"

namespace tweetkeeper::worker::follow {
namespace {

using tweetkeeper::worker::Answer;

TEST(MastodonFollow, Urls) {
  EXPECT_EQ(MastodonLookupUrl("https://mastodon.social", "Gargron"),
            "https://mastodon.social/api/v1/accounts/lookup?acct=Gargron");
  EXPECT_EQ(MastodonStatusesUrl("https://mastodon.social", "1", "113310863287398209"),
            "https://mastodon.social/api/v1/accounts/1/statuses?min_id=113310863287398209&limit=40&exclude_reblogs=true");
  // 2024-10-16T00:00:00Z in milliseconds, shifted as Mastodon's ids are.
  EXPECT_EQ(MastodonIdAt(1729036800000), std::to_string(INT64_C(1729036800000) << 16));
}

TEST(MastodonFollow, Lookup) {
  const Account found = ParseMastodonLookup(Answer(200, R"({"id":"1","username":"Gargron","acct":"Gargron",
      "display_name":"Eugen","locked":false,"bot":false,"created_at":"2016-03-16T00:00:00.000Z","statuses_count":77000})"));
  EXPECT_EQ(found.status, Account::Status::kFound);
  EXPECT_EQ(found.account_id, "1");
  EXPECT_EQ(found.handle, "Gargron");
  EXPECT_EQ(ParseMastodonLookup(Answer(404, R"({"error":"Record not found"})")).status, Account::Status::kMissing);
  const Account suspended = ParseMastodonLookup(Answer(200, R"({"id":"2","username":"gone","suspended":true})"));
  EXPECT_EQ(suspended.status, Account::Status::kMissing);
  EXPECT_EQ(suspended.reason, "suspended");
  EXPECT_EQ(ParseMastodonLookup(Answer(401, R"({"error":"This API requires an authenticated user"})")).status,
            Account::Status::kPrivate);
  const Account limited = ParseMastodonLookup(Answer(429, R"({"error":"Too many requests"})"));
  EXPECT_EQ(limited.status, Account::Status::kFailed);
  EXPECT_NE(limited.reason.find("HTTP 429"), std::string::npos);
  // Hostile: an id that is no id, a username with a slash, not JSON, nested too deep.
  EXPECT_EQ(ParseMastodonLookup(Answer(200, R"({"id":"1/../2","username":"a"})")).status, Account::Status::kFailed);
  EXPECT_EQ(ParseMastodonLookup(Answer(200, R"({"id":"3","username":"a/b"})")).status, Account::Status::kFailed);
  EXPECT_EQ(ParseMastodonLookup(Answer(200, "<html>")).status, Account::Status::kFailed);
  EXPECT_EQ(ParseMastodonLookup(Answer(200, std::string(100000, '['))).status, Account::Status::kFailed);
}

TEST(MastodonFollow, Statuses) {
  const TimelinePage page = ParseMastodonStatuses(
      Answer(200, R"([{"id":"113310863287398210","created_at":"2024-10-16T12:00:01.000Z","visibility":"public",
                       "account":{"id":"1","username":"Gargron","acct":"Gargron"},"reblog":null,"content":"<p>b</p>"},
                      {"id":"113310863287398209","created_at":"2024-10-16T12:00:00.000Z","visibility":"public",
                       "account":{"id":"1","username":"Gargron","acct":"Gargron"},
                       "reblog":{"id":"5","account":{"username":"other"}}}])"),
      "mastodon.social");
  ASSERT_TRUE(page.ok) << page.reason;
  ASSERT_EQ(page.posts.size(), 1u) << "a boost is not the account's post";
  EXPECT_EQ(page.posts[0].id, "113310863287398210");
  EXPECT_EQ(page.posts[0].url, "https://mastodon.social/@Gargron/113310863287398210");
  EXPECT_EQ(page.posts[0].created_ms, INT64_C(1729080001000));
  EXPECT_FALSE(page.more);
  std::string full = "[";
  for (int i = 0; i < kMastodonPageSize; ++i)
    full += std::string(i ? "," : "") + R"({"id":")" + std::to_string(113310863287398300 + i) +
            R"(","created_at":"2024-10-16T12:00:00.000Z","account":{"username":"a"},"reblog":null})";
  const TimelinePage more = ParseMastodonStatuses(Answer(200, full + "]"), "m.social");
  EXPECT_TRUE(more.ok);
  EXPECT_EQ(more.posts.size(), static_cast<std::size_t>(kMastodonPageSize));
  EXPECT_TRUE(more.more) << "a full page: more may follow";
  const TimelinePage gone = ParseMastodonStatuses(Answer(404, R"({"error":"Record not found"})"), "m.social");
  ASSERT_TRUE(gone.account.has_value());
  EXPECT_EQ(gone.account->status, Account::Status::kMissing);
  const TimelinePage bad = ParseMastodonStatuses(
      Answer(200, R"([{"id":"7","created_at":"2024-10-16T12:00:00.000Z","account":{"username":"a b"},"reblog":null}])"),
      "m.social");
  EXPECT_TRUE(bad.ok);
  EXPECT_TRUE(bad.posts.empty()) << "a status whose URL would not parse is left out";
  EXPECT_FALSE(bad.reason.empty());
  EXPECT_FALSE(ParseMastodonStatuses(Answer(200, R"({"error":"x"})"), "m.social").ok);
  EXPECT_FALSE(ParseMastodonStatuses(Answer(503, ""), "m.social").ok);
}

TEST(XFollow, Urls) {
  EXPECT_EQ(XLookupUrl("https://api.x.com", "XDevelopers"),
            "https://api.x.com/2/users/by/username/XDevelopers?user.fields=protected");
  EXPECT_EQ(XTimelineUrl("https://api.x.com", "2244994945", "1460323737035677698", 0),
            "https://api.x.com/2/users/2244994945/tweets?max_results=100&tweet.fields=created_at&exclude=retweets"
            "&since_id=1460323737035677698");
  EXPECT_EQ(XTimelineUrl("https://api.x.com", "2244994945", "", 1729080000000, "7140dibdnow9c7btw3z2vwioavpvutgzrzm9icis4ndix"),
            "https://api.x.com/2/users/2244994945/tweets?max_results=100&tweet.fields=created_at&exclude=retweets"
            "&start_time=2024-10-16T12%3A00%3A00Z&pagination_token=7140dibdnow9c7btw3z2vwioavpvutgzrzm9icis4ndix");
}

TEST(XFollow, Lookup) {
  const Account found =
      ParseXLookup(Answer(200, R"({"data":{"id":"2244994945","name":"Developers","username":"XDevelopers","protected":false}})"));
  EXPECT_EQ(found.status, Account::Status::kFound);
  EXPECT_EQ(found.account_id, "2244994945");
  EXPECT_EQ(found.handle, "xdevelopers");
  EXPECT_EQ(ParseXLookup(Answer(200, R"({"data":{"id":"9","username":"locked","protected":true}})")).status,
            Account::Status::kPrivate);
  const Account missing = ParseXLookup(Answer(200, R"({"errors":[{"value":"nobody_here_x","detail":"Could not find user with username: [nobody_here_x].","title":"Not Found Error","resource_type":"user","parameter":"username","resource_id":"nobody_here_x","type":"https://api.twitter.com/2/problems/resource-not-found"}]})"));
  EXPECT_EQ(missing.status, Account::Status::kMissing);
  EXPECT_EQ(missing.reason, "Could not find user with username: [nobody_here_x].");
  const Account suspended = ParseXLookup(Answer(200, R"({"errors":[{"detail":"User has been suspended: [2881117795].","parameter":"id","resource_id":"2881117795","resource_type":"user","title":"Forbidden","type":"https://api.twitter.com/2/problems/resource-not-found","value":"2881117795"}]})"));
  EXPECT_EQ(suspended.status, Account::Status::kMissing);
  EXPECT_EQ(ParseXLookup(Answer(429, R"({"title":"Too Many Requests","type":"about:blank","status":429,"detail":"Too Many Requests"})")).status,
            Account::Status::kFailed);
  EXPECT_EQ(ParseXLookup(Answer(200, R"({"data":{"id":"-1","username":"x"}})")).status, Account::Status::kFailed);
  EXPECT_EQ(ParseXLookup(Answer(200, R"({"meta":{}})")).status, Account::Status::kFailed);
}

TEST(XFollow, Timeline) {
  const TimelinePage page = ParseXTimeline(Answer(200, R"({"data":[
      {"id":"1460323737035677699","text":"b","created_at":"2021-11-15T19:08:05.000Z","edit_history_tweet_ids":["1460323737035677699"]},
      {"id":"1460323737035677698","text":"a","created_at":"2021-11-15T19:08:04.000Z","edit_history_tweet_ids":["1460323737035677698"]}],
      "meta":{"result_count":2,"newest_id":"1460323737035677699","oldest_id":"1460323737035677698","next_token":"7140dibdnow9c7btw3z2vwioavpvutgzrzm9icis4ndix"}})"));
  ASSERT_TRUE(page.ok) << page.reason;
  ASSERT_EQ(page.posts.size(), 2u);
  EXPECT_EQ(page.posts[0].url, "https://x.com/i/web/status/1460323737035677699");
  EXPECT_EQ(page.posts[1].created_ms, INT64_C(1637003284000));
  EXPECT_EQ(page.next_token, "7140dibdnow9c7btw3z2vwioavpvutgzrzm9icis4ndix");
  // The id's millisecond, where it agrees with created_at's second (above, it does not).
  const TimelinePage exact = ParseXTimeline(Answer(200, R"({"data":[{"id":"1460323733066481669","text":"a","created_at":"2021-11-15T19:08:04.000Z","edit_history_tweet_ids":["1460323733066481669"]}],"meta":{"result_count":1}})"));
  ASSERT_EQ(exact.posts.size(), 1u);
  EXPECT_EQ(exact.posts[0].created_ms, INT64_C(1637003284123));
  const TimelinePage none = ParseXTimeline(Answer(200, R"({"meta":{"result_count":0}})"));
  EXPECT_TRUE(none.ok);
  EXPECT_TRUE(none.posts.empty());
  EXPECT_FALSE(none.account.has_value()) << "nothing new says nothing of the account";
  const TimelinePage hidden = ParseXTimeline(Answer(200, R"({"errors":[{"value":"123","parameter":"id","resource_type":"user","section":"data","title":"Authorization Error","detail":"Sorry, you are not authorized to see the user with id: [123].","type":"https://api.twitter.com/2/problems/not-authorized-for-resource"}]})"));
  ASSERT_TRUE(hidden.account.has_value());
  EXPECT_EQ(hidden.account->status, Account::Status::kPrivate);
  EXPECT_FALSE(ParseXTimeline(Answer(200, R"({"data":{"id":"1"}})")).ok);
  EXPECT_FALSE(ParseXTimeline(Answer(401, R"({"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"})")).ok);
  const TimelinePage bad = ParseXTimeline(Answer(200, R"({"data":[{"id":"12a","created_at":"2021-11-15T19:08:04.000Z"}],"meta":{"result_count":1}})"));
  EXPECT_TRUE(bad.posts.empty());
  EXPECT_FALSE(bad.reason.empty());
}

}  // namespace
}  // namespace tweetkeeper::worker::follow
