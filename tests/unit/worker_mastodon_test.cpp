// Mastodon provider: GET /api/v1/statuses of each post's own server (or where --instance says),
// answers matched by id, counts mapped (no bookmarks, no views), created_at, X-RateLimit-* with an
// ISO 8601 reset, 401 as a refusal.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "provider/mastodon.hpp"
#include "worker_test_answers.hpp"

namespace tweetkeeper::worker {
namespace {

const std::vector<std::int64_t> kIds{-1, -2};
const PostKeys kKeys{{"113284726341234567", "113284726341234568"}, "mastodon:a.social"};

TEST(MastodonUrl, EachServerItsOwnOrWhereTheOptionSays) {
  const MastodonProvider plain;
  EXPECT_EQ(plain.RequestUrl(kIds, kKeys),
            "https://a.social/api/v1/statuses?id%5B%5D=113284726341234567&id%5B%5D=113284726341234568");
  const MastodonProvider mapped(std::map<std::string, std::string>{{"a.social", "http://127.0.0.1:9/mastodon/a.social/"}});
  EXPECT_EQ(mapped.RequestUrl({-1}, PostKeys{{"7"}, "mastodon:a.social"}),
            "http://127.0.0.1:9/mastodon/a.social/api/v1/statuses/7");  // one status: the route every version has
  EXPECT_EQ(MastodonProvider::HostOf("mastodon:b.example"), "b.example");
  EXPECT_EQ(plain.MaxBatch(), 20);
}

TEST(MastodonAnswer, MatchesByIdAndMapsCounts) {
  const MastodonProvider api;
  const auto result = api.ParseAnswer(Ok(R"([{"id":"113284726341234568","created_at":"2024-10-12T10:00:00.000Z",
      "replies_count":1,"reblogs_count":2,"favourites_count":7,"quotes_count":0}])"),
                                      kIds, kKeys);
  ASSERT_TRUE(result.ok()) << result.reason;
  ASSERT_EQ(result.observations.size(), 1u);
  const Observation& o = result.observations[0];
  EXPECT_EQ(o.id, -2);
  EXPECT_EQ(CountsOf(o.metrics), (Counts{2, 1, 7, 0, std::nullopt, std::nullopt}));  // no bookmarks, no views
  EXPECT_EQ(o.created_ms, 1728727200000);
  EXPECT_EQ(result.omitted, std::vector<std::int64_t>{-1});
}

TEST(MastodonAnswer, WindowRefusalsAndGarbage) {
  const MastodonProvider api;
  HttpResponse r;
  r.status = 401;
  r.body = R"({"error":"This API requires an authenticated user"})";
  r.headers = {{"x-ratelimit-limit", "300"}, {"x-ratelimit-remaining", "299"},
               {"x-ratelimit-reset", "2026-11-24T20:05:00.123456Z"}};
  auto result = api.ParseAnswer(r, kIds, kKeys);
  EXPECT_EQ(result.failure, FailureKind::kRejected);
  EXPECT_EQ(result.rate_limit.limit, 300);
  EXPECT_EQ(result.rate_limit.remaining, 299);
  EXPECT_EQ(result.rate_limit.reset_epoch_s, 1795550701);  // rounded up
  r.status = 429;
  r.body = R"({"error":"Too many requests"})";
  EXPECT_EQ(api.ParseAnswer(r, kIds, kKeys).failure, FailureKind::kRateLimited);
  r.status = 422;
  r.body = R"({"error":"Mastodon::ValidationError"})";
  EXPECT_EQ(api.ParseAnswer(r, kIds, kKeys).failure, FailureKind::kOtherClientError);
  EXPECT_EQ(api.ParseAnswer(Ok(R"({"id":"1"})"), kIds, kKeys).failure, FailureKind::kUnparsable);
  EXPECT_EQ(api.ParseAnswer(Ok(R"([{"id":"999"}])"), kIds, kKeys).failure, FailureKind::kUnparsable);
  EXPECT_EQ(api.ParseAnswer(Ok("[]"), kIds, kKeys).omitted.size(), 2u);
}

TEST(MastodonAnswer, OneStatusAtATimeOnOldServers) {
  const MastodonProvider api;
  const PostKeys one{{"113284726341234568"}, "mastodon:old.social"};
  auto result = api.ParseAnswer(Ok(R"({"id":"113284726341234568","favourites_count":3})"), {-2}, one);
  ASSERT_TRUE(result.ok()) << result.reason;
  EXPECT_EQ(result.observations.at(0).metrics.like_count, 3);
  HttpResponse missing;
  missing.status = 404;
  missing.body = R"({"error":"Record not found"})";
  result = api.ParseAnswer(missing, {-2}, one);
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.omitted, std::vector<std::int64_t>{-2});
  EXPECT_EQ(MastodonProvider::OldServer(Ok(R"({"version":"4.2.10"})")),
            "the server runs Mastodon 4.2.10, older than 4.3 (no GET /api/v1/statuses): one status per request");
  EXPECT_FALSE(MastodonProvider::OldServer(Ok(R"({"version":"4.3.0"})")));
  EXPECT_FALSE(MastodonProvider::OldServer(Ok(R"({"version":"10.0.0"})")));
  EXPECT_FALSE(MastodonProvider::OldServer(Ok(R"({"title":"x"})")));
}

TEST(MastodonAnswer, TheRunnerAsksTheInstanceAfterA404ToABatch) {
  const MastodonProvider api;
  HttpResponse gone;
  gone.status = 404;
  const BatchResult failed = api.ParseAnswer(gone, kIds, kKeys);
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(api.DiagnosisUrl(kKeys, 2, gone), "https://a.social/api/v2/instance");
  EXPECT_EQ(api.DiagnosisUrl(kKeys, 1, gone), "") << "one status: a 404 says it is not there";
  HttpResponse busy;
  busy.status = 503;
  EXPECT_EQ(api.DiagnosisUrl(kKeys, 2, busy), "");
  const std::optional<Diagnosis> d = api.Diagnose(Ok(R"({"version":"4.2.10"})"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->refusal, "single-status");
  EXPECT_FALSE(api.Diagnose(Ok(R"({"version":"4.4.1"})")));
  EXPECT_EQ(api.EndpointToken("mastodon:a.social"), std::optional<std::string>("a.social"));
  EXPECT_FALSE(api.ResolvesNames("mastodon:a.social"));
}

}  // namespace
}  // namespace tweetkeeper::worker
