#include "mock_api/mock_api.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

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
    EXPECT_TRUE(reply.headers.empty());
  }
  EXPECT_EQ(api.Handle(Tweets("Bearer good"), kNow).status, 200);
  EXPECT_EQ(MockApi(MockConfig()).Handle(Tweets("Bearer anything"), kNow).status, 200);
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
            R"("drops_on_reused_connections":0})");

  EXPECT_EQ(api.Handle({"POST", "/mock/reset", {}, ""}, kNow).status, 200);
  EXPECT_EQ(api.Handle({"GET", "/mock/stats", {}, ""}, kNow).body,
            R"({"requests":0,"ids_requested":0,"status_counts":{},"batch_sizes":{},)"
            R"("faults":{"hang":0,"slow":0,"drop":0,"5xx":0,"truncated":0,"content-type":0,"huge":0},)"
            R"("drops_on_reused_connections":0})");
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

TEST(MockApi, ServesHealthAndNotFound) {
  MockApi api{MockConfig()};
  const HttpReply health = api.Handle({"GET", "/healthz", {}, ""}, kNow);
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok");
  EXPECT_EQ(api.Handle({"GET", "/2/users", {}, "Bearer t"}, kNow).status, 404);
  EXPECT_EQ(api.Handle({"POST", "/2/tweets", {}, "Bearer t"}, kNow).status, 404);
}

}  // namespace
}  // namespace tweetkeeper::mock
