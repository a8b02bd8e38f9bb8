// The mock's posting accounts (follow_world.hpp) and what the followers read of them: every post
// /mock/follow/posts says was made appears exactly once on its account's timeline, paged as each
// network pages (X since_id and next_token, Mastodon min_id, Bluesky's cursor), with its creation
// time, by that account in the model's other answers too (X's author_id, Mastodon's account,
// Bluesky's author), and quiet accounts post nothing.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <map>
#include <set>
#include <string>

#include "mock_api/bluesky_endpoint.hpp"
#include "mock_api/follow_world.hpp"
#include "mock_api/mastodon_endpoint.hpp"
#include "mock_api/tweet_model.hpp"
#include "mock_api/x_users_endpoint.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kNow = 1795795800000;  // 2026-11-27

MockConfig World(uint64_t accounts, double rate) {
  MockConfig c;  // the default fates: the followed posts must avoid them
  c.follow_accounts = accounts;
  c.follow_rate = rate;
  return c;
}

rapidjson::Document Parse(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str());
  EXPECT_FALSE(doc.HasParseError()) << body;
  return doc;
}

TEST(MockFollowWorld, CadencesShareTheRateAsZipfDoes) {
  const MockConfig c = World(10, 5.0);
  double total = 0;
  for (uint64_t k = 0; k < 10; ++k) total += CadenceOf("x", k, c).per_second();
  EXPECT_NEAR(total, 5.0, 0.05);
  EXPECT_NEAR(CadenceOf("x", 0, c).per_second() / CadenceOf("x", 9, c).per_second(), 10.0, 0.2);
  EXPECT_EQ(CadenceOf("x", 10, c).period_ms, 0);  // not a posting account
  EXPECT_NE(CadenceOf("x", 3, c).phase_ms, CadenceOf("a.social", 3, c).phase_ms);
}

TEST(MockFollowWorld, PostTimesAreTheCadencesWithinBounds) {
  const Cadence c{1000, 250};
  EXPECT_EQ(PostTimes(c, 0, 3250, 10, false), (std::vector<int64_t>{250, 1250, 2250, 3250}));
  EXPECT_EQ(PostTimes(c, 251, 3249, 10, true), (std::vector<int64_t>{2250, 1250}));
  EXPECT_EQ(PostTimes(c, -2000, 300, 1, true), (std::vector<int64_t>{250}));
  EXPECT_EQ(PostTimes(c, -2000, 300, 2, false), (std::vector<int64_t>{-1750, -750}));
  EXPECT_TRUE(PostTimes(Cadence{}, 0, 100000, 10, true).empty());
}

TEST(MockFollowWorld, XTimelinePagesEveryPostOnceWithItsAuthor) {
  const MockConfig c = World(3, 2.0);
  const int64_t from = kNow - 60'000;
  std::set<std::string> made;
  for (const MadePost& p : XMadePosts(from, kNow, c)) made.insert(p.url.substr(p.url.rfind('/') + 1));
  ASSERT_GT(made.size(), 100u);
  std::set<std::string> read;
  for (uint64_t user = 100000; user < 100003; ++user) {
    std::string token;
    for (int page = 0; page < 50; ++page) {
      QueryParams p{{":id", std::to_string(user)}, {"max_results", "100"}, {"tweet.fields", "created_at,author_id"},
                    {"start_time", FormatCreatedAt(from)}};
      if (!token.empty()) p.emplace("pagination_token", token);
      const EndpointReply r = GetUserTweets(p, c, kNow);
      ASSERT_EQ(r.status, 200) << r.body;
      const auto doc = Parse(r.body);
      if (doc.HasMember("data")) {
        for (const auto& t : doc["data"].GetArray()) {
          EXPECT_EQ(t["author_id"].GetString(), std::to_string(user));
          const uint64_t id = std::stoull(t["id"].GetString());
          EXPECT_EQ(ClassifyTweet(id, c, kNow), TweetState::kVisible);
          EXPECT_EQ(AuthorOf(id), user);
          EXPECT_TRUE(read.insert(t["id"].GetString()).second) << "twice: " << t["id"].GetString();
        }
      }
      EXPECT_EQ(r.returned.size(), doc["meta"]["result_count"].GetUint64());
      if (!doc["meta"].HasMember("next_token")) break;
      token = doc["meta"]["next_token"].GetString();
    }
  }
  EXPECT_EQ(read, made);
  // since_id: only what came after it.
  const std::string newest = *made.rbegin();
  const EndpointReply later =
      GetUserTweets({{":id", "100000"}, {"since_id", newest}, {"max_results", "5"}}, c, kNow);
  EXPECT_EQ(later.body, R"({"meta":{"result_count":0}})");
}

TEST(MockFollowWorld, XUsersAnswerAsXDoes) {
  const MockConfig c = World(3, 2.0);
  EXPECT_NE(GetUserByUsername({{":username", "gone_away"}}, c, kNow).body.find("resource-not-found"), std::string::npos);
  const auto locked = Parse(GetUserByUsername({{":username", "locked_one"}, {"user.fields", "protected"}}, c, kNow).body);
  EXPECT_TRUE(locked["data"]["protected"].GetBool());
  const std::string id = locked["data"]["id"].GetString();
  EXPECT_NE(GetUserTweets({{":id", id}}, c, kNow).body.find("not-authorized-for-resource"), std::string::npos);
  EXPECT_EQ(GetUserByUsername({{":username", "not valid!"}}, c, kNow).status, 400);
  EXPECT_EQ(GetUserTweets({{":id", "100000"}, {"max_results", "4"}}, c, kNow).status, 400);
  EXPECT_EQ(GetUserTweets({{":id", "100000"}, {"start_time", "yesterday"}}, c, kNow).status, 400);
  // A user who exists and never posts; one who does not exist.
  const auto quiet = Parse(GetUserByUsername({{":username", "someone"}}, c, kNow).body);
  EXPECT_EQ(GetUserTweets({{":id", quiet["data"]["id"].GetString()}}, c, kNow).body, R"({"meta":{"result_count":0}})");
  EXPECT_NE(GetUserTweets({{":id", "42"}}, c, kNow).body.find("resource-not-found"), std::string::npos);
}

TEST(MockFollowWorld, MastodonStatusesByMinIdReadForwardWithoutGaps) {
  const MockConfig c = World(2, 3.0);
  const std::string host = "a.social";
  const int64_t from = kNow - 30'000;
  std::map<std::string, int64_t> made;
  for (const MadePost& p : MastodonMadePosts(host, from, kNow, c)) made.emplace(p.url, p.created_ms);
  ASSERT_GT(made.size(), 50u);
  std::map<std::string, int64_t> read;
  for (const auto& [profile, rate] : MastodonPosters(host, c)) {
    const std::string user = profile.substr(profile.find('@') + 1);
    const auto account = Parse(MastodonApi(host, "/api/v1/accounts/lookup", {{"acct", user}}, false, c, kNow).body);
    ASSERT_TRUE(account.IsObject());
    const std::string id = account["id"].GetString();
    std::string min_id = std::to_string(static_cast<uint64_t>(from) << 16);
    for (int page = 0; page < 20; ++page) {
      const EndpointReply r = MastodonApi(host, "/api/v1/accounts/" + id + "/statuses",
                                          {{"min_id", min_id}, {"limit", "40"}, {"exclude_reblogs", "true"}}, false, c, kNow);
      ASSERT_EQ(r.status, 200) << r.body;
      const auto doc = Parse(r.body);
      if (doc.Empty()) break;
      uint64_t previous = UINT64_MAX;
      for (const auto& s : doc.GetArray()) {
        const uint64_t sid = std::stoull(s["id"].GetString());
        EXPECT_LT(sid, previous);  // newest first
        previous = sid;
        EXPECT_EQ(std::string(s["account"]["username"].GetString()), user);
        EXPECT_TRUE(s["reblog"].IsNull());
        // The same status by id says the same author.
        const auto again = Parse(MastodonApi(host, "/api/v1/statuses/" + std::string(s["id"].GetString()), {}, false, c, kNow).body);
        EXPECT_EQ(std::string(again["account"]["username"].GetString()), user);
        EXPECT_TRUE(read.emplace(s["url"].GetString(), static_cast<int64_t>(sid >> 16)).second);
      }
      min_id = doc[0]["id"].GetString();  // the newest of the page: the next page starts after it
    }
  }
  EXPECT_EQ(read, made);
  EXPECT_EQ(MastodonApi(host, "/api/v1/accounts/lookup", {{"acct", "nobody"}}, false, c, kNow).status, 404);
  EXPECT_EQ(MastodonApi(host, "/api/v1/accounts/123/statuses", {}, false, c, kNow).status, 404);
}

TEST(MockFollowWorld, BlueskyAuthorFeedPagesByCursor) {
  const MockConfig c = World(2, 2.0);
  const int64_t from = kNow - 40'000;
  std::set<std::string> made;
  for (const MadePost& p : BlueskyMadePosts(from, kNow, c)) made.insert(p.url);
  ASSERT_GT(made.size(), 50u);
  std::set<std::string> read;
  for (int k = 0; k < 2; ++k) {
    const std::string handle = "user" + std::to_string(k) + ".bsky.social";
    const auto profile = Parse(GetBlueskyProfile({{"actor", handle}}, c, kNow).body);
    const std::string did = profile["did"].GetString();
    EXPECT_EQ(did, MockDid(handle));
    EXPECT_EQ(std::string(profile["handle"].GetString()), handle);
    std::string cursor;
    bool older = false;
    for (int page = 0; page < 10 && !older; ++page) {
      QueryParams p{{"actor", did}, {"limit", "7"}};
      if (!cursor.empty()) p.emplace("cursor", cursor);
      const auto doc = Parse(GetAuthorFeed(p, c, kNow).body);
      for (const auto& item : doc["feed"].GetArray()) {
        const auto& post = item["post"];
        EXPECT_EQ(std::string(post["author"]["did"].GetString()), did);
        EXPECT_EQ(std::string(post["author"]["handle"].GetString()), handle);
        const std::string uri = post["uri"].GetString();
        if (made.count(uri) == 0) {
          older = true;  // before `from`
          continue;
        }
        EXPECT_TRUE(read.insert(uri).second);
      }
      ASSERT_TRUE(doc.HasMember("cursor"));
      cursor = doc["cursor"].GetString();
    }
  }
  EXPECT_EQ(read, made);
  EXPECT_EQ(GetBlueskyProfile({{"actor", "gone.bsky.social"}}, c, kNow).status, 400);
  EXPECT_EQ(GetAuthorFeed({{"actor", "user1.bsky.social"}, {"limit", "101"}}, c, kNow).status, 400);
  EXPECT_EQ(GetAuthorFeed({{"actor", "quiet.example.com"}}, c, kNow).body, R"({"feed":[]})");
}

}  // namespace
}  // namespace tweetkeeper::mock

namespace tweetkeeper::mock {
namespace {

TEST(MockFollowWorld, JetstreamEventsAreTheMadePostsAndTheirDeletesInTimeOrder) {
  MockConfig c = World(3, 3.0);
  c.follow_delete_every = 4;
  const int64_t from = kNow - 60'000, to = kNow;
  const std::string did0 = MockDid("user0.bsky.social"), did2 = MockDid("user2.bsky.social");
  const auto events = JetstreamEvents({did0, did2, MockDid("someone.else")}, from * 1000, to * 1000, c);
  std::set<std::string> created, deleted;
  int64_t last = 0;
  for (const auto& [time_us, json] : events) {
    EXPECT_GE(time_us, last);
    last = time_us;
    const auto e = Parse(json);
    EXPECT_EQ(e["time_us"].GetInt64(), time_us);
    EXPECT_STREQ(e["kind"].GetString(), "commit");
    const std::string did = e["did"].GetString();
    EXPECT_TRUE(did == did0 || did == did2) << did;
    const std::string uri = "at://" + did + "/app.bsky.feed.post/" + e["commit"]["rkey"].GetString();
    if (std::string(e["commit"]["operation"].GetString()) == "create") {
      EXPECT_TRUE(e["commit"].HasMember("record") && e["commit"].HasMember("cid"));
      created.insert(uri);
    } else {
      EXPECT_FALSE(e["commit"].HasMember("record"));
      deleted.insert(uri);
    }
  }
  std::set<std::string> made, gone;
  for (const MadePost& p : BlueskyMadePosts(from - 10'000, to, c)) {
    if (p.url.rfind("at://" + did0, 0) != 0 && p.url.rfind("at://" + did2, 0) != 0) continue;
    if (p.created_ms >= from && p.created_ms < to) made.insert(p.url);
    if (p.deleted_ms >= from && p.deleted_ms < to) gone.insert(p.url);
  }
  EXPECT_EQ(created, made);
  EXPECT_EQ(deleted, gone);
  EXPECT_FALSE(deleted.empty());
  // A deleted post: getPosts stops showing it once it is gone.
  const std::string victim = *deleted.begin();
  const auto shown = Parse(GetBlueskyPosts({{"uris", victim}}, c, kNow).body);
  EXPECT_EQ(shown["posts"].Size(), 0u);
}

}  // namespace
}  // namespace tweetkeeper::mock
