// The mock's Mastodon servers: GET /api/v1/statuses (20 at most, 422 beyond), omissions, order,
// the single-status route, old (4.2) and locked (authorized fetch) servers, /api/v2/instance, and
// the X-RateLimit-* headers through MockApi.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "mock_api/mastodon_endpoint.hpp"
#include "mock_api/mock_api.hpp"
#include "mock_test_config.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kNow = 1767225600000;  // 2026-01-01
const uint64_t kId = 113284726341234560;  // 2024-10-10

QueryParams Ids(int n, uint64_t first = kId) {
  QueryParams p;
  for (int i = 0; i < n; ++i) p.emplace("id[]", std::to_string(first + static_cast<uint64_t>(i)));
  return p;
}

TEST(MockMastodon, StatusesByIdsUpToTwenty) {
  auto r = MastodonApi("a.social", "/api/v1/statuses", Ids(3), false, NoFates(), kNow);
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document doc;
  doc.Parse(r.body.c_str());
  ASSERT_TRUE(doc.IsArray());
  ASSERT_EQ(doc.Size(), 3u);
  EXPECT_EQ(std::string(doc[0]["id"].GetString()), std::to_string(kId + 2));  // not the request's order
  for (const char* count : {"replies_count", "reblogs_count", "favourites_count", "quotes_count"}) {
    EXPECT_TRUE(doc[0][count].IsInt64()) << count;
  }
  EXPECT_EQ(std::string(doc[0]["created_at"].GetString()).substr(0, 10), "2024-10-10");
  EXPECT_EQ(MastodonApi("a.social", "/api/v1/statuses", Ids(21), false, NoFates(), kNow).status, 422);
  EXPECT_EQ(MastodonApi("a.social", "/api/v1/statuses", Ids(21), false, NoFates(), kNow).body,
            R"({"error":"Mastodon::ValidationError"})");
}

TEST(MockMastodon, LeavesOutWhatItWillNotShowAndKnowsOldAndLockedServers) {
  MockConfig config = NoFates();
  config.deleted_every = 10;  // id % 10 == 7
  auto r = MastodonApi("a.social", "/api/v1/statuses", Ids(10), false, config, kNow);
  rapidjson::Document doc;
  doc.Parse(r.body.c_str());
  EXPECT_EQ(doc.Size(), 9u);
  EXPECT_EQ(MastodonApi("a.social", "/api/v1/statuses/" + std::to_string(kId + 7), QueryParams{}, false, config, kNow)
                .status,
            404);
  EXPECT_EQ(MastodonApi("old.social", "/api/v1/statuses", Ids(2), false, config, kNow).status, 404);
  EXPECT_EQ(MastodonApi("old.social", "/api/v1/statuses/" + std::to_string(kId), QueryParams{}, false, config, kNow)
                .status,
            200);
  EXPECT_NE(MastodonApi("old.social", "/api/v2/instance", QueryParams{}, false, config, kNow).body.find("4.2.10"),
            std::string::npos);
  r = MastodonApi("locked.social", "/api/v1/statuses", Ids(2), false, config, kNow);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.body, R"({"error":"This API requires an authenticated user"})");
  EXPECT_EQ(MastodonApi("locked.social", "/api/v1/statuses", Ids(2), true, config, kNow).status, 200);
}

TEST(MockMastodon, RoutedUnderItsHostWithRateLimitHeaders) {
  MockConfig config = NoFates();
  config.mastodon_rate_limit = 1;
  MockApi api(config);
  HttpCall call{"GET", "/mastodon/a.social/api/v1/statuses", Ids(2), ""};
  HttpReply reply = api.Handle(call, kNow);
  EXPECT_EQ(reply.status, 200);
  auto header = [&](const char* name) {
    for (const auto& [k, v] : reply.headers)
      if (k == name) return v;
    return std::string("<absent>");
  };
  EXPECT_EQ(header("X-RateLimit-Limit"), "1");
  EXPECT_EQ(header("X-RateLimit-Reset"), "2026-01-01T00:05:00.000000Z");
  reply = api.Handle(call, kNow + 1000);
  EXPECT_EQ(reply.status, 429);
  EXPECT_EQ(reply.body, R"({"error":"Too many requests"})");
  call.path = "/mastodon/b.social/api/v1/statuses";  // another server, another window
  EXPECT_EQ(api.Handle(call, kNow + 1000).status, 200);
}

}  // namespace
}  // namespace tweetkeeper::mock
