#include "mock_api/mock_api.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "mock_api/engagement.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kNow = 1704067200000;

HttpCall Tweets(const std::string& authorization, const std::string& ids = "20,21") {
  return {"GET", "/2/tweets", {{"ids", ids}}, authorization};
}

std::string Header(const HttpReply& reply, const std::string& name) {
  for (const auto& [key, value] : reply.headers) {
    if (key == name) return value;
  }
  return "<absent>";
}

TEST(MockApi, ParsesBearerTokens) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer abc"), "abc");
  EXPECT_FALSE(BearerToken(""));
  EXPECT_FALSE(BearerToken("Bearer "));
  EXPECT_FALSE(BearerToken("Basic abc"));
  EXPECT_FALSE(BearerToken("Bearer a b"));
}

TEST(MockApi, RefusesMissingMalformedAndUnknownTokens) {
  MockConfig config;
  config.tokens = {"good"};
  MockApi api(config);
  for (const std::string auth : {"", "Bearer", "Token good", "Bearer other"}) {
    const HttpReply reply = api.Handle(Tweets(auth), kNow);
    EXPECT_EQ(reply.status, 401) << auth;
    EXPECT_EQ(reply.body, R"({"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"})");
    EXPECT_EQ(reply.content_type, kProblemJson);  // a Problem, as the spec maps it
    EXPECT_EQ(Header(reply, "x-rate-limit-limit"), "3500");  // every answer has them (FACTS.md)
    EXPECT_EQ(Header(reply, "x-rate-limit-remaining"), "3500");
    EXPECT_EQ(Header(reply, "Date"), "Mon, 01 Jan 2024 00:00:00 GMT");
  }
  EXPECT_EQ(api.Handle(Tweets("Bearer good"), kNow).status, 200);
  EXPECT_EQ(MockApi(MockConfig()).Handle(Tweets("Bearer anything"), kNow).status, 200);
}

TEST(MockApi, RoutesTheSingleLookupByItsPathOnly) {
  MockApi api{MockConfig()};
  const HttpReply one = api.Handle({"GET", "/2/tweets/20", {{":id", "21"}}, "Bearer a"}, kNow);
  EXPECT_EQ(one.status, 200);
  EXPECT_NE(one.body.find(R"("id":"20")"), std::string::npos) << one.body;  // the path's id, not the parameter's
  for (const char* path : {"/2/tweets/", "/2/tweets/20/liking_users", "/2/tweets/search/recent"}) {
    const HttpReply other = api.Handle({"GET", path, {}, "Bearer a"}, kNow);
    EXPECT_EQ(other.status, 404) << path;
    EXPECT_NE(Header(other, "x-rate-limit-limit"), "<absent>") << path;
    EXPECT_NE(Header(other, "Date"), "<absent>") << path;
  }
}

TEST(MockApi, RateLimitsPerTokenWithHeadersOnEveryAnswer) {
  MockConfig config;
  config.rate_limit = 2;
  config.window_seconds = 5;
  MockApi api(config);
  HttpReply reply = api.Handle(Tweets("Bearer t"), kNow);
  EXPECT_EQ(Header(reply, "x-rate-limit-limit"), "2");
  EXPECT_EQ(Header(reply, "x-rate-limit-remaining"), "1");
  EXPECT_EQ(Header(reply, "x-rate-limit-reset"), "1704067205");
  reply = api.Handle(Tweets("Bearer t", "x"), kNow + 1000);  // a 400 counts and carries headers too
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(Header(reply, "x-rate-limit-remaining"), "0");
  reply = api.Handle(Tweets("Bearer t"), kNow + 4999);
  EXPECT_EQ(reply.status, 429);
  EXPECT_EQ(reply.body,
            R"({"title":"Too Many Requests","type":"about:blank","status":429,"detail":"Too Many Requests"})");
  EXPECT_EQ(Header(reply, "x-rate-limit-remaining"), "0");
  EXPECT_EQ(Header(reply, "x-rate-limit-reset"), "1704067205");
  EXPECT_EQ(api.Handle(Tweets("Bearer other"), kNow + 4999).status, 200);
  reply = api.Handle(Tweets("Bearer t"), kNow + 5000);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(Header(reply, "x-rate-limit-reset"), "1704067210");
}

TEST(MockApi, BlueskyNeedsNoTokenAndSendsRateLimitHeaders) {
  MockConfig config;
  config.xrpc_rate_limit = 1;
  config.xrpc_window_seconds = 300;
  MockApi api(config);
  const HttpCall get{"GET", "/xrpc/app.bsky.feed.getPosts",
                     {{"uris", "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l"}}, ""};
  HttpReply reply = api.Handle(get, kNow);
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(Header(reply, "RateLimit-Limit"), "1");
  EXPECT_EQ(Header(reply, "RateLimit-Remaining"), "0");
  EXPECT_EQ(Header(reply, "RateLimit-Reset"), "1704067500");
  EXPECT_EQ(Header(reply, "RateLimit-Policy"), "1;w=300");
  reply = api.Handle(get, kNow + 1000);
  EXPECT_EQ(reply.status, 429);
  EXPECT_EQ(reply.body, R"({"error":"RateLimitExceeded","message":"Rate Limit Exceeded"})");
  EXPECT_EQ(Header(reply, "Retry-After"), "299");
  const HttpCall resolve{"GET", "/xrpc/com.atproto.identity.resolveHandle", {{"handle", "alice.example"}}, ""};
  EXPECT_EQ(api.Handle(resolve, kNow + 300'000).status, 200);
}

TEST(MockApi, CountsStatsAndResets) {
  MockConfig config;
  config.rate_limit = 3;
  MockApi api(config);
  api.Handle(Tweets("Bearer t", "20,21,22"), kNow);
  api.Handle(Tweets("Bearer t", "20"), kNow);
  api.Handle(Tweets(""), kNow);
  api.Handle(Tweets("Bearer t", "20,21,22"), kNow);
  api.Handle(Tweets("Bearer t", "20,21,22"), kNow);
  const HttpReply stats = api.Handle({"GET", "/mock/stats", {}, ""}, kNow);
  EXPECT_EQ(stats.status, 200);
  EXPECT_EQ(stats.body,
            R"({"requests":5,"ids_requested":7,"status_counts":{"200":3,"401":1,"429":1},"batch_sizes":{"1":1,"3":2},)"
            R"("faults":{"hang":0,"slow":0,"drop":0,"5xx":0,"truncated":0,"content-type":0,"huge":0},)"
            R"("drops_on_reused_connections":0,"tokens":{"e3b98a4da31a":{"200":3,"429":1}},)"
            R"("windows":{"e3b98a4da31a":[3]},"billed_reads":3,"billed":{"e3b98a4da31a":3}})");  // sha256("t")

  EXPECT_EQ(api.Handle({"POST", "/mock/reset", {}, ""}, kNow).status, 200);
  EXPECT_EQ(api.Handle({"GET", "/mock/stats", {}, ""}, kNow).body,
            R"({"requests":0,"ids_requested":0,"status_counts":{},"batch_sizes":{},)"
            R"("faults":{"hang":0,"slow":0,"drop":0,"5xx":0,"truncated":0,"content-type":0,"huge":0},)"
            R"("drops_on_reused_connections":0,"tokens":{},"windows":{},"billed_reads":0,"billed":{}})");
  EXPECT_EQ(api.Handle(Tweets("Bearer t"), kNow).status, 200);  // the window was forgotten too
}

TEST(MockApi, LogsOneLinePerRequestWithoutTheToken) {
  std::vector<std::string> lines;
  MockConfig config;
  config.faults.latency_ms = 25;
  MockApi api(config, [&lines](const std::string& line) { lines.push_back(line); });
  EXPECT_EQ(api.Handle(Tweets("Bearer abc", "20,21,22"), kNow).faults.delay_ms, 25);
  api.Handle(Tweets("", ""), kNow + 1);
  api.Handle({"GET", "/healthz", {}, ""}, kNow);  // not a provider request: not logged
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "1704067200000 200 3 ba7816bf8f01");  // sha256("abc")
  EXPECT_EQ(lines[1], "1704067200001 401 0 -");
}

constexpr const char* kUsageCapped =
    R"({"account_id":%ACCOUNT%,"product_name":"standard-basic","title":"UsageCapExceeded","period":"Monthly",)"
    R"("scope":"Product","detail":"Usage cap exceeded: Monthly product cap",)"
    R"("type":"https://api.twitter.com/2/problems/usage-capped"})";

// The usage-capped body with its account_id replaced, so the rest is compared key for key.
std::string WithoutAccount(std::string body) {
  const size_t start = body.find(':') + 1;
  const size_t end = body.find(',');
  if (body.rfind(R"({"account_id":)", 0) == 0 && end != std::string::npos) body.replace(start, end - start, "%ACCOUNT%");
  return body;
}

std::string Stat(MockApi& api) { return api.Handle({"GET", "/mock/stats", {}, ""}, kNow).body; }

// X bills each post returned once per UTC day and token; the cap counts those billed reads.
TEST(MockApi, MonthlyCapCountsBilledReadsPerTokenAndMonth) {
  MockConfig config;
  config.monthly_cap = 3;
  config.rate_limit = 100;
  config.window_seconds = 60;
  MockApi api(config);
  const int64_t jan31 = kNow + 30LL * 86400000 + 86399000;  // 2024-01-31T23:59:59Z
  EXPECT_EQ(api.Handle(Tweets("Bearer a"), kNow).status, 200);        // 2 posts: billed 2
  EXPECT_EQ(api.Handle(Tweets("Bearer a", "x"), kNow).status, 400);   // no post returned: nothing
  for (int i = 0; i < 5; ++i) EXPECT_EQ(api.Handle(Tweets("Bearer a"), kNow).status, 200);  // same day: 0
  EXPECT_EQ(api.Handle(Tweets("Bearer a"), jan31).status, 200);       // a new UTC day: 2 more, 4 >= 3
  for (int64_t at : {jan31, jan31 + 500}) {
    const HttpReply capped = api.Handle(Tweets("Bearer a"), at);
    EXPECT_EQ(capped.status, 429);
    EXPECT_EQ(capped.content_type, kProblemJson);
    EXPECT_EQ(WithoutAccount(capped.body), kUsageCapped);
    EXPECT_EQ(Header(capped, "x-rate-limit-limit"), "100");
    EXPECT_EQ(Header(capped, "x-rate-limit-remaining"), "99");  // the window is not what ran out
    EXPECT_EQ(Header(capped, "x-rate-limit-reset"), "1706745659");
  }
  // Same account behind the same token every time, another for another token.
  EXPECT_EQ(api.Handle(Tweets("Bearer a"), jan31).body, api.Handle(Tweets("Bearer a"), jan31).body);
  EXPECT_EQ(api.Handle(Tweets("Bearer b"), jan31).status, 200);  // caps are per token
  EXPECT_EQ(api.Handle(Tweets("Bearer a"), jan31 + 1000).status, 200);  // February: a new month
  EXPECT_NE(Stat(api).find(R"("ca978112ca1b":{"200":8,"400":1,"429":4})"), std::string::npos) << Stat(api);
  // a: 2 on the 1st, 2 on the 31st, 2 in February; b: 2.
  EXPECT_NE(Stat(api).find(R"("billed_reads":8,"billed":{"3e23e8160039":2,"ca978112ca1b":6})"), std::string::npos)
      << Stat(api);
}

TEST(MockApi, CapAndRevokeOneTokenMidRunUntilReset) {
  MockConfig config;
  config.tokens = {"a", "b", "c"};
  MockApi api(config);
  EXPECT_EQ(api.Handle(Tweets("Bearer a"), kNow).status, 200);
  const HttpReply cap = api.Handle({"POST", "/mock/cap", {{"token", "a"}}, ""}, kNow);
  EXPECT_EQ(cap.status, 200);
  EXPECT_EQ(cap.body, R"({"token":"ca978112ca1b","capped":true})");
  const HttpReply revoke = api.Handle({"POST", "/mock/revoke", {{"token", "b"}}, ""}, kNow);
  EXPECT_EQ(revoke.body, R"({"token":"3e23e8160039","revoked":true})");
  EXPECT_EQ(api.Handle({"POST", "/mock/cap", {}, ""}, kNow).status, 400);
  EXPECT_EQ(api.Handle({"GET", "/mock/cap", {{"token", "a"}}, ""}, kNow).status, 404);

  HttpReply reply = api.Handle(Tweets("Bearer a"), kNow + 1);
  EXPECT_EQ(reply.status, 429);
  EXPECT_EQ(WithoutAccount(reply.body), kUsageCapped);
  EXPECT_EQ(Header(reply, "x-rate-limit-remaining"), "3499");
  reply = api.Handle(Tweets("Bearer b"), kNow + 1);
  EXPECT_EQ(reply.status, 403);
  EXPECT_EQ(reply.body, R"({"title":"Forbidden","type":"about:blank","status":403,"detail":"Forbidden"})");
  EXPECT_EQ(reply.content_type, kProblemJson);
  EXPECT_EQ(Header(reply, "x-rate-limit-remaining"), "3500");  // refused before it counts
  reply = api.Handle({"GET", "/1.1/statuses/lookup.json", {{"id", "20"}}, "Bearer b"}, kNow + 1);
  EXPECT_EQ(reply.status, 403);
  EXPECT_EQ(reply.body, R"({"errors":[{"code":200,"message":"Forbidden."}]})");
  EXPECT_EQ(api.Handle(Tweets("Bearer c"), kNow + 1).status, 200);  // the others go on
  EXPECT_EQ(api.Handle(Tweets("Bearer d"), kNow + 1).status, 401);  // still only known tokens

  api.Handle({"POST", "/mock/reset", {}, ""}, kNow);
  EXPECT_EQ(api.Handle(Tweets("Bearer a"), kNow + 2).status, 200);
  EXPECT_EQ(api.Handle(Tweets("Bearer b"), kNow + 2).status, 200);
}

TEST(MockApi, StatsCountTwoHundredsPerTokenAndWindow) {
  MockConfig config;
  config.rate_limit = 3;
  config.window_seconds = 10;
  MockApi api(config);
  for (int i = 0; i < 5; ++i) api.Handle(Tweets("Bearer a"), kNow + i);  // 3 x 200, 2 x 429
  api.Handle(Tweets("Bearer a", "x"), kNow + 10000);                       // window 2: a 400, no 200
  api.Handle(Tweets("Bearer a"), kNow + 20000);                            // window 3
  api.Handle(Tweets("Bearer a"), kNow + 20001);
  api.Handle(Tweets("Bearer b"), kNow);
  api.Handle(Tweets("Bearer b"), kNow + 30000);
  api.Handle({"POST", "/mock/revoke", {{"token", "c"}}, ""}, kNow);
  api.Handle(Tweets("Bearer c"), kNow);
  api.Handle(Tweets(""), kNow);
  const std::string stats = Stat(api);
  EXPECT_NE(stats.find(R"("tokens":{"2e7d2c03a950":{"403":1},"3e23e8160039":{"200":2},)"
                       R"("ca978112ca1b":{"200":5,"400":1,"429":2}},)"
                       R"("windows":{"3e23e8160039":[1,1],"ca978112ca1b":[3,0,2]},)"),
            std::string::npos)
      << stats;
}

TEST(MockApi, LookupUsesV1BodiesAndTheSameTokensAndLimits) {
  MockConfig config;
  config.tokens = {"a"};
  config.rate_limit = 2;
  config.window_seconds = 5;
  MockApi api(config);
  const HttpCall get{"GET", "/1.1/statuses/lookup.json", {{"id", "20,60"}, {"map", "true"}}, "Bearer a"};
  HttpReply reply = api.Handle(get, kNow);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.content_type, kJson);
  EXPECT_NE(reply.body.find(R"("60":null)"), std::string::npos) << reply.body;
  EXPECT_EQ(Header(reply, "x-rate-limit-remaining"), "1");
  EXPECT_EQ(Header(reply, "x-rate-limit-reset"), "1704067205");
  // POST carries the same fields in its form body (the edge merges them into params).
  reply = api.Handle({"POST", "/1.1/statuses/lookup.json", {{"id", "20"}}, "Bearer a"}, kNow);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body.front(), '[');
  EXPECT_EQ(Header(reply, "x-rate-limit-remaining"), "0");
  reply = api.Handle(get, kNow + 1);
  EXPECT_EQ(reply.status, 429);
  EXPECT_EQ(reply.body, R"({"errors":[{"code":88,"message":"Rate limit exceeded"}]})");
  EXPECT_EQ(Header(reply, "x-rate-limit-remaining"), "0");
  EXPECT_EQ(api.Handle(Tweets("Bearer a"), kNow + 1).status, 200);  // v2 has its own window
  for (const std::string auth : {"", "Bearer b"}) {
    reply = api.Handle({"GET", "/1.1/statuses/lookup.json", {{"id", "20"}}, auth}, kNow);
    EXPECT_EQ(reply.status, 401);
    EXPECT_EQ(reply.body, R"({"errors":[{"code":89,"message":"Invalid or expired token."}]})");
    EXPECT_EQ(reply.content_type, kJson);  // v1.1 is not in the v2 spec: its errors stay JSON
    EXPECT_NE(Header(reply, "x-rate-limit-reset"), "<absent>");
  }
  reply = api.Handle({"GET", "/1.1/statuses/lookup.json", {}, "Bearer a"}, kNow + 5000);
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(reply.body, R"({"errors":[{"code":38,"message":"id parameter is missing."}]})");
  EXPECT_EQ(Header(reply, "x-rate-limit-remaining"), "1");
}

TEST(MockApi, MonthlyCapSpansBothEndpoints) {
  MockConfig config;
  config.monthly_cap = 2;
  MockApi api(config);
  EXPECT_EQ(api.Handle({"GET", "/1.1/statuses/lookup.json", {{"id", "20"}}, "Bearer a"}, kNow).status, 200);
  EXPECT_EQ(api.Handle(Tweets("Bearer a"), kNow).status, 200);
  const HttpReply reply = api.Handle({"GET", "/1.1/statuses/lookup.json", {{"id", "20"}}, "Bearer a"}, kNow);
  EXPECT_EQ(reply.status, 429);
  EXPECT_EQ(WithoutAccount(reply.body), kUsageCapped);
  EXPECT_EQ(api.Handle(Tweets("Bearer a"), kNow).status, 429);
}

TEST(MockApi, MonthlyCapIsExactUnderConcurrency) {
  MockConfig config;
  config.monthly_cap = 500;
  MockApi api(config);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      // One new post per request, so each 200 bills exactly one read.
      for (int i = 0; i < 200; ++i) {
        ok += api.Handle(Tweets("Bearer a", std::to_string(1'000'000 + t * 1000 + i)), kNow).status == 200;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Some ids are deleted or protected in the mock's world: their 200s bill nothing.
  EXPECT_NE(Stat(api).find(R"("billed_reads":500,)"), std::string::npos) << Stat(api);
  EXPECT_LT(ok.load(), 800);
}

TEST(MockApi, ServesHealthAndNotFound) {
  MockApi api{MockConfig()};
  const HttpReply health = api.Handle({"GET", "/healthz", {}, ""}, kNow);
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok");
  EXPECT_EQ(api.Handle({"GET", "/2/users", {}, "Bearer t"}, kNow).status, 404);
  EXPECT_EQ(api.Handle({"POST", "/2/tweets", {}, "Bearer t"}, kNow).status, 404);
}

TEST(MockApi, TruthSaysAPostsCountsAtAnyAge) {
  MockConfig config;
  config.engagement = EngagementFile::Parse("mastodon,m.example/7,60,1,0,4,0,0,0\n");
  MockApi api(config);
  // The model's answer for an X post, exactly what /2/tweets would say at that age.
  const HttpReply x = api.Handle({"GET", "/mock/truth", {{"network", "x"}, {"key", "1228393702244134912"}, {"ages", "0,3600"}}, ""}, kNow);
  ASSERT_EQ(x.status, 200) << x.body;
  const PublicMetrics at_hour = MetricsAt(1228393702244134912ULL, 3600);
  EXPECT_NE(x.body.find("{\"age\":0,\"reposts\":0,\"replies\":0,\"likes\":0"), std::string::npos) << x.body;
  EXPECT_NE(x.body.find("{\"age\":3600,\"reposts\":" + std::to_string(at_hour.retweet_count) + ",\"replies\":" +
                        std::to_string(at_hour.reply_count) + ",\"likes\":" + std::to_string(at_hour.like_count)),
            std::string::npos)
      << x.body;
  // A file's curve for the post it names.
  const HttpReply m = api.Handle({"GET", "/mock/truth", {{"network", "mastodon"}, {"key", "m.example/7"}, {"ages", "59,60"}}, ""}, kNow);
  EXPECT_NE(m.body.find("{\"age\":60,\"reposts\":1,\"replies\":0,\"likes\":4"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("{\"age\":59,\"reposts\":0,\"replies\":0,\"likes\":0"), std::string::npos) << m.body;
  // Bad input: 400, saying what.
  for (const QueryParams& bad : {QueryParams{{"network", "threads"}, {"key", "1"}, {"ages", "1"}},
                                 QueryParams{{"network", "bluesky"}, {"key", "1"}, {"ages", "1"}},
                                 QueryParams{{"network", "x"}, {"key", "1"}, {"ages", "1,,2"}},
                                 QueryParams{{"network", "x"}, {"key", "1"}, {"ages", "-5"}},
                                 QueryParams{{"network", "x"}, {"key", "1"}}}) {
    const HttpReply r = api.Handle({"GET", "/mock/truth", bad, ""}, kNow);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find("\"error\""), std::string::npos) << r.body;
  }
  std::string many = "1";
  for (int i = 0; i < 1000; ++i) many += ",1";
  EXPECT_EQ(api.Handle({"GET", "/mock/truth", {{"network", "x"}, {"key", "1"}, {"ages", many}}, ""}, kNow).status, 400);
}

}  // namespace
}  // namespace tweetkeeper::mock
