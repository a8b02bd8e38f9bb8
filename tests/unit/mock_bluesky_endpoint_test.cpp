// The mock's Bluesky AppView: getPosts' limits and error bodies (FACTS.md 1.1), omissions, dedupe,
// order, counts and times; resolveHandle.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <set>
#include <string>

#include "mock_api/bluesky_endpoint.hpp"
#include "mock_test_config.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kNow = 1767225600000;  // 2026-01-01T00:00:00Z
const std::string kDid = "did:plc:z72i7hdynmk6r22z27h6tvur";

std::string Uri(const std::string& rkey, const std::string& who = kDid) {
  return "at://" + who + "/app.bsky.feed.post/" + rkey;
}

rapidjson::Document Parse(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str());
  EXPECT_FALSE(doc.HasParseError()) << body;
  return doc;
}

EndpointReply Get(const std::vector<std::string>& uris, const MockConfig& config = MockConfig()) {
  QueryParams params;
  for (const auto& u : uris) params.emplace("uris", u);
  return GetBlueskyPosts(params, config, kNow);
}

TEST(MockBlueskyTid, DecodesTheRecordKeysTime) {
  // 3l6oveex3ii2l: 2024-10-17T07:06:51.642Z (microseconds << 10, base32-sortable).
  EXPECT_EQ(TidMillis("3l6oveex3ii2l"), 1729148811642);
  EXPECT_EQ(TidMillis("2222222222222"), 0);
  EXPECT_FALSE(TidMillis("3l6oveex3ii2"));   // 12 characters
  EXPECT_FALSE(TidMillis("3l6oveex3ii21"));  // '1' is not base32-sortable
  EXPECT_FALSE(TidMillis("kl6oveex3ii2l"));  // the top bit set
}

TEST(MockBlueskyPosts, AnswersEachPostOnceNotInRequestOrder) {
  const auto reply = Get({Uri("3l6oveex3ii2l"), Uri("3l6oveex3ii2m"), Uri("3l6oveex3ii2l")}, NoFates());
  ASSERT_EQ(reply.status, 200) << reply.body;
  const auto doc = Parse(reply.body);
  ASSERT_EQ(doc["posts"].Size(), 2u);
  EXPECT_EQ(std::string(doc["posts"][0]["uri"].GetString()), Uri("3l6oveex3ii2m"));  // reversed
  const auto& post = doc["posts"][1];
  EXPECT_EQ(std::string(post["author"]["did"].GetString()), kDid);
  for (const char* count : {"likeCount", "repostCount", "replyCount", "quoteCount", "bookmarkCount"}) {
    EXPECT_TRUE(post[count].IsInt64()) << count;
  }
  EXPECT_FALSE(post.HasMember("viewCount"));
  EXPECT_TRUE(post.HasMember("cid"));
  EXPECT_STREQ(post["record"]["$type"].GetString(), "app.bsky.feed.post");
  // indexedAt is at or after createdAt, both RFC 3339 with milliseconds.
  EXPECT_LE(std::string(post["record"]["createdAt"].GetString()), std::string(post["indexedAt"].GetString()));
  EXPECT_EQ(std::string(post["indexedAt"].GetString()).size(), 24u);
}

TEST(MockBlueskyPosts, CountsGrowWithAge) {
  const std::string uri = Uri("3l6oveex3ii2l");
  QueryParams p{{"uris", uri}};
  const auto early = Parse(GetBlueskyPosts(p, NoFates(), TidMillis("3l6oveex3ii2l").value() + 60'000).body);
  const auto late = Parse(GetBlueskyPosts(p, NoFates(), kNow).body);
  EXPECT_LE(early["posts"][0]["likeCount"].GetInt64(), late["posts"][0]["likeCount"].GetInt64());
  EXPECT_GT(late["posts"][0]["likeCount"].GetInt64(), 0);
}

TEST(MockBlueskyPosts, LeavesOutWhatItWillNotShow) {
  // A handle in the URI finds nothing; a post from the future is not there; a key that is no TID neither.
  const auto doc = Parse(Get({Uri("3l6oveex3ii2l", "alice.bsky.social"), Uri("3zzzzzzzzzzzz"), Uri("self")}, NoFates()).body);
  EXPECT_EQ(doc["posts"].Size(), 0u);
  // With the default fates some of 200 posts are deleted or taken down: left out, no error entry.
  MockConfig config;
  std::vector<std::string> uris;
  int answered = 0;
  for (int i = 0; i < 8; ++i) {
    uris.clear();
    for (int j = 0; j < 25; ++j) uris.push_back(Uri("3l6oveex3i" + std::string(1, "abcdefgh"[i]) + std::string(1, "234567ab"[j % 8]) + std::string(1, "cdefghij"[j / 8 % 8])));
    const auto d = Parse(Get(uris, config).body);
    answered += static_cast<int>(d["posts"].Size());
    EXPECT_FALSE(d.HasMember("errors"));
  }
  EXPECT_LT(answered, 200);
  EXPECT_GT(answered, 150);
}

TEST(MockBlueskyPosts, RefusesTheWholeBatchAsTheAppViewDoes) {
  std::vector<std::string> uris(26, Uri("3l6oveex3ii2l"));
  auto reply = Get(uris);
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(reply.body, R"({"error":"InvalidRequest","message":"Error: uris must not have more than 25 elements"})");
  reply = Get({Uri("3l6oveex3ii2l"), "at://not a uri"});
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(reply.body, R"({"error":"InvalidRequest","message":"Error: uris/1 must be a valid at-uri"})");
  reply = Get({});
  EXPECT_EQ(reply.status, 400);
  EXPECT_NE(reply.body.find("Params must have the property"), std::string::npos);
}

TEST(MockBlueskyPosts, AtUrisOfNoPostAreLeftOut) {
  // The lexicon's at-uri format takes a repository, a collection, another collection's record:
  // the AppView answers, leaving them out. A collection that is no NSID is no at-uri: refused.
  const std::string post = Uri("3l6oveex3ii2m");
  const std::string repo = post.substr(0, post.find("/app.bsky.feed.post/"));
  auto reply = Get({post, repo + "/app.bsky.feed.like/3l6oveex3ii2m", repo + "/app.bsky.feed.post", repo}, NoFates());
  ASSERT_EQ(reply.status, 200) << reply.body;
  rapidjson::Document d;
  d.Parse(reply.body.c_str());
  ASSERT_TRUE(d.IsObject() && d.HasMember("posts"));
  ASSERT_EQ(d["posts"].Size(), 1u);
  EXPECT_EQ(std::string(d["posts"][0]["uri"].GetString()), post);
  EXPECT_EQ(Get({repo + "/app.bsky/3l6oveex3ii2m"}, NoFates()).status, 400) << "a collection of two segments";
  EXPECT_EQ(Get({repo + "/app.bsky.feed.post/"}, NoFates()).status, 400) << "an empty record key";
}

TEST(MockBlueskyPosts, RefusesAUriByItsClockIdWhenAsked) {
  MockConfig c = NoFates();
  c.bluesky_refused_every = 12;  // 3l6oveex3ii2l's clock id is 17: 17 % 12 == 5
  auto reply = Get({Uri("3l6oveex3ii2m"), Uri("3l6oveex3ii2l")}, c);
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(reply.body, R"({"error":"InvalidRequest","message":"Error: uris/1 must be a valid at-uri"})");
  reply = Get({Uri("3l6oveex3ii2m")}, c);
  EXPECT_EQ(reply.status, 200) << "the others are answered";
  c.bluesky_refused_every = 0;
  EXPECT_EQ(Get({Uri("3l6oveex3ii2l")}, c).status, 200) << "off by default";
}

TEST(MockBlueskyHandles, ResolveToAStableDidOrNot) {
  QueryParams p{{"handle", "Alice.Example.COM"}};
  const auto reply = ResolveHandle(p, MockConfig(), kNow);
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "{\"did\":\"" + MockDid("alice.example.com") + "\"}");
  EXPECT_EQ(MockDid("alice.example.com").size(), 32u);
  EXPECT_NE(MockDid("alice.example.com"), MockDid("bob.example.com"));
  QueryParams gone{{"handle", "gone.example.com"}};
  const auto refused = ResolveHandle(gone, MockConfig(), kNow);
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.body, R"({"error":"InvalidRequest","message":"Unable to resolve handle"})");
}

}  // namespace
}  // namespace tweetkeeper::mock
