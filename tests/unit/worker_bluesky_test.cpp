// Bluesky provider: getPosts URLs from the claim's at:// URIs, answers matched by uri, counts
// mapped (unreported ones empty), the creation time (sortAt rule), omissions, failures, headers.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "provider/bluesky.hpp"
#include "worker_test_answers.hpp"

namespace tweetkeeper::worker {
namespace {

const BlueskyProvider kApi("https://public.api.bsky.app/");
const std::string kA = "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l";
const std::string kB = "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2m";
const std::vector<std::int64_t> kIds{-11, -22};
const PostKeys kKeys{{kA, kB}, "bluesky"};

TEST(BlueskyUrl, RepeatsUrisEncoded) {
  EXPECT_EQ(kApi.RequestUrl(kIds, kKeys),
            "https://public.api.bsky.app/xrpc/app.bsky.feed.getPosts?uris=at%3A%2F%2Fdid%3Aplc%3Az72i7hdynmk6r22z27h6tvur"
            "%2Fapp.bsky.feed.post%2F3l6oveex3ii2l&uris=at%3A%2F%2Fdid%3Aplc%3Az72i7hdynmk6r22z27h6tvur%2Fapp.bsky.feed."
            "post%2F3l6oveex3ii2m");
  EXPECT_TRUE(kApi.Keyed());
  EXPECT_EQ(kApi.MaxBatch(), 25);
  EXPECT_FALSE(kApi.NeedsToken());
}

TEST(BlueskyAnswer, MatchesByUriMapsCountsAndTakesTheEarlierTime) {
  const auto result = kApi.ParseAnswer(Ok(R"({"posts":[
    {"uri":")" + kB + R"(","cid":"x","author":{"did":"d","handle":"h"},"record":{"createdAt":"2024-10-01T12:00:00.000Z"},
     "indexedAt":"2024-10-01T12:00:03.500Z","likeCount":7,"repostCount":2,"replyCount":1,"quoteCount":0,"bookmarkCount":3}]})"),
                                       kIds, kKeys);
  ASSERT_TRUE(result.ok()) << result.reason;
  ASSERT_EQ(result.observations.size(), 1u);
  const Observation& o = result.observations[0];
  EXPECT_EQ(o.id, -22);
  EXPECT_EQ(CountsOf(o.metrics), (Counts{2, 1, 7, 0, 3, std::nullopt}));  // no views on Bluesky: NULL, never 0
  EXPECT_EQ(o.created_ms, 1727784000000);
  EXPECT_EQ(result.omitted, std::vector<std::int64_t>{-11});  // left out: deleted or hidden
}

TEST(BlueskyAnswer, IndexedEarlierThanClaimedWinsAndMissingCountsStayEmpty) {
  const auto result = kApi.ParseAnswer(Ok(R"({"posts":[{"uri":")" + kA + R"(","record":{"createdAt":"2030-01-01T00:00:00Z"},
     "indexedAt":"2024-10-01T12:00:00.25+02:00"}]})"),
                                       kIds, kKeys);
  ASSERT_TRUE(result.ok()) << result.reason;
  ASSERT_EQ(result.observations.size(), 1u);
  EXPECT_EQ(result.observations[0].created_ms, 1727776800250);
  EXPECT_FALSE(result.observations[0].metrics.like_count);
}

TEST(BlueskyAnswer, GarbageIsAFailureNotAnOmission) {
  EXPECT_EQ(kApi.ParseAnswer(Ok("<html>"), kIds, kKeys).failure, FailureKind::kUnparsable);
  EXPECT_EQ(kApi.ParseAnswer(Ok(R"({"feed":[]})"), kIds, kKeys).failure, FailureKind::kUnparsable);
  EXPECT_EQ(kApi.ParseAnswer(Ok(R"({"posts":[{"uri":"at://other"}]})"), kIds, kKeys).failure, FailureKind::kUnparsable);
  const auto empty = kApi.ParseAnswer(Ok(R"({"posts":[]})"), kIds, kKeys);  // all left out
  EXPECT_TRUE(empty.ok());
  EXPECT_EQ(empty.omitted.size(), 2u);
  const auto bad = kApi.ParseAnswer(Ok(R"({"posts":[{"uri":")" + kA + R"(","likeCount":-3}]})"), kIds, kKeys);
  EXPECT_EQ(bad.observations[0].invalid, "likeCount -3");
}

TEST(BlueskyAnswer, RateLimitsAndFailures) {
  HttpResponse r;
  r.status = 429;
  r.body = R"({"error":"RateLimitExceeded","message":"Rate Limit Exceeded"})";
  r.headers = {{"ratelimit-limit", "3000"}, {"ratelimit-remaining", "0"}, {"ratelimit-reset", "1744582868"}};
  auto result = kApi.ParseAnswer(r, kIds, kKeys);
  EXPECT_EQ(result.failure, FailureKind::kRateLimited);
  EXPECT_EQ(result.rate_limit.limit, 3000);
  EXPECT_EQ(result.rate_limit.remaining, 0);
  EXPECT_EQ(result.rate_limit.reset_epoch_s, 1744582868);
  r.headers = {{"retry-after", "30"}};
  const auto retry = ParseXrpcRateLimit(r.headers, 1000);
  EXPECT_EQ(retry.reset_epoch_s, 1030);
  r.status = 400;
  r.body = R"({"error":"InvalidRequest","message":"Error: uris/0 must be a valid at-uri"})";
  EXPECT_EQ(kApi.ParseAnswer(r, kIds, kKeys).failure, FailureKind::kOurRequestInvalid);
  r.status = 502;
  EXPECT_EQ(kApi.ParseAnswer(r, kIds, kKeys).failure, FailureKind::kServer);
}

TEST(BlueskyHandles, ABatchOfHandlesNamesEachOnce) {
  EXPECT_TRUE(kApi.ResolvesNames("bluesky-handle"));
  EXPECT_FALSE(kApi.ResolvesNames("bluesky"));
  EXPECT_FALSE(kApi.EndpointToken("bluesky")) << "no token: the public AppView";
  const PostKeys keys{{"at://alice.example.com/app.bsky.feed.post/3l6oveex3ii2l",
                       "at://bob.example.com/app.bsky.feed.post/3l6oveex3ii2m",
                       "at://alice.example.com/app.bsky.feed.post/3l6oveex3ii2n"},
                      "bluesky-handle"};
  EXPECT_EQ(kApi.NamesToResolve(keys), (std::vector<std::string>{"alice.example.com", "bob.example.com"}));
  EXPECT_EQ(kApi.ResolveUrl("bob.example.com"),
            "https://public.api.bsky.app/xrpc/com.atproto.identity.resolveHandle?handle=bob.example.com");
}

TEST(BlueskyHandles, ResolveToADidOrSayWhyNot) {
  EXPECT_EQ(kApi.ResolveHandleUrl("alice.example.com"),
            "https://public.api.bsky.app/xrpc/com.atproto.identity.resolveHandle?handle=alice.example.com");
  HttpResponse r = Ok(R"({"did":"did:plc:z72i7hdynmk6r22z27h6tvur"})");
  auto res = BlueskyProvider::ParseResolveHandle(r);
  EXPECT_TRUE(res.failure.ok());
  EXPECT_EQ(res.key, "did:plc:z72i7hdynmk6r22z27h6tvur");
  r.status = 400;
  r.body = R"({"error":"InvalidRequest","message":"Unable to resolve handle"})";
  res = BlueskyProvider::ParseResolveHandle(r);
  EXPECT_TRUE(res.failure.ok());
  EXPECT_TRUE(res.key.empty());
  EXPECT_EQ(res.problem, "Unable to resolve handle");
  r.body = R"({"error":"HandleNotFound"})";
  EXPECT_EQ(BlueskyProvider::ParseResolveHandle(r).problem, "HandleNotFound");
  // Nothing learnt: the batch goes back.
  r.body = R"({"error":"RateLimitExceeded","message":"Rate Limit Exceeded"})";
  r.status = 429;
  EXPECT_EQ(BlueskyProvider::ParseResolveHandle(r).failure.failure, FailureKind::kRateLimited);
  r.status = 502;
  r.body = "<html>bad gateway</html>";
  EXPECT_EQ(BlueskyProvider::ParseResolveHandle(r).failure.failure, FailureKind::kServer);
  EXPECT_EQ(BlueskyProvider::ParseResolveHandle(Ok(R"({"did":"alice"})")).failure.failure, FailureKind::kUnparsable);
  EXPECT_EQ(BlueskyProvider::ParseResolveHandle(Ok("not json")).failure.failure, FailureKind::kUnparsable);
  r.status = 400;
  r.body = "garbage";
  EXPECT_EQ(BlueskyProvider::ParseResolveHandle(r).failure.failure, FailureKind::kOurRequestInvalid);
}

TEST(Rfc3339, ReadsWhatBlueskyAndMastodonSend) {
  EXPECT_EQ(ParseRfc3339Millis("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ParseRfc3339Millis("2024-10-01T12:00:00.123456Z"), 1727784000123);
  EXPECT_EQ(ParseRfc3339Millis("2024-10-01T14:00:00+02:00"), 1727784000000);
  EXPECT_FALSE(ParseRfc3339Millis("2024-10-01T12:00:00"));  // no zone
  EXPECT_FALSE(ParseRfc3339Millis("2024-13-01T12:00:00Z"));
  EXPECT_FALSE(ParseRfc3339Millis("yesterday"));
  EXPECT_FALSE(ParseRfc3339Millis(""));
}

}  // namespace
}  // namespace tweetkeeper::worker
