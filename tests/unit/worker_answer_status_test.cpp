// Failure classification and rate-limit headers, shared by every provider.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "provider/answer_status.hpp"
#include "worker_test_answers.hpp"

namespace tweetkeeper::worker {
namespace {

TEST(Classify, StatusesAndBodies) {
  struct Case {
    long status;
    std::string body;
    FailureKind kind;
  };
  const std::vector<Case> cases = {
      {0, "", FailureKind::kTransport},
      {429, "", FailureKind::kRateLimited},
      {429, R"({"title":"Too Many Requests","type":"about:blank","status":429})", FailureKind::kRateLimited},
      {429, R"({"type":"https://api.x.com/2/problems/usage-capped"})", FailureKind::kUsageCapped},
      {429, R"({"title":"UsageCapExceeded"})", FailureKind::kUsageCapped},
      {429, R"({"title":"UsageCapExceeded"  garbage)", FailureKind::kRateLimited},  // not JSON: cannot tell
      {429, R"({"errors":[{"code":88,"message":"Rate limit exceeded"}]})", FailureKind::kRateLimited},
      {420, R"({"errors":[{"code":88,"message":"Rate limit exceeded"}]})", FailureKind::kRateLimited},
      {401, R"({"errors":[{"code":89,"message":"Invalid or expired token."}]})", FailureKind::kRejected},
      {400, R"({"errors":[{"code":215,"message":"Bad Authentication data."}]})", FailureKind::kRejected},
      {403, R"({"errors":[{"code":453,"message":"You currently have access to a subset"}]})", FailureKind::kRejected},
      {401, "", FailureKind::kRejected},
      {403, "<html>", FailureKind::kRejected},
      {400, R"({"title":"Invalid Request"})", FailureKind::kOurRequestInvalid},
      {400, R"({"errors":[{"code":44,"message":"id parameter is invalid."}]})", FailureKind::kOurRequestInvalid},
      {404, R"({"errors":[{"code":34,"message":"Sorry, that page does not exist."}]})", FailureKind::kOtherClientError},
      {301, "", FailureKind::kOtherClientError},
      {500, R"({"errors":[{"code":131,"message":"Internal error"}]})", FailureKind::kServer},
      {503, R"({"errors":[{"code":130,"message":"Over capacity"}]})", FailureKind::kServer},
      {599, "[", FailureKind::kServer},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ClassifyFailure(c.status, c.body), c.kind) << c.status << " " << c.body;
    EXPECT_EQ(FailedAnswer(Answer(c.status, c.body)).failure, c.kind) << c.status << " " << c.body;
  }
}

TEST(Classify, ReasonsQuoteTheApi) {
  EXPECT_EQ(FailedAnswer(Answer(429, R"({"errors":[{"code":88,"message":"Rate limit exceeded"}]})")).reason,
            "HTTP 429 Rate limit exceeded (code 88)");
  EXPECT_EQ(FailedAnswer(Answer(401, R"({"errors":[{"code":89}]})")).reason, "HTTP 401 code 89");
  EXPECT_EQ(FailedAnswer(Answer(403, R"({"title":"Forbidden","detail":"Your app lacks access"})")).reason,
            "HTTP 403 Forbidden: Your app lacks access");
  EXPECT_EQ(FailedAnswer(Answer(400, R"({"error":"InvalidRequest","message":"Error: uris/3 must be a valid at-uri"})")).reason,
            "HTTP 400 InvalidRequest: Error: uris/3 must be a valid at-uri");
  EXPECT_EQ(FailedAnswer(Answer(401, R"({"error":"This API requires an authenticated user"})")).reason,
            "HTTP 401 This API requires an authenticated user");
  HttpResponse transport;
  transport.error = "Could not resolve host: api.x.com";
  EXPECT_EQ(FailedAnswer(transport).reason, transport.error);
  EXPECT_EQ(FailedAnswer(HttpResponse{}).reason, "no HTTP answer");
  transport.error = std::string(3, '\0');
  EXPECT_EQ(FailedAnswer(transport).reason, "no HTTP answer");
}

TEST(Classify, GarbageNeverCrashes) {
  const std::vector<std::string> bodies = {"",
                                           "null",
                                           "[]",
                                           "{\"errors\":5}",
                                           "{\"errors\":[5]}",
                                           "{\"errors\":[{\"code\":\"88\"}]}",
                                           "{\"errors\":[{\"code\":1e99}]}",
                                           std::string(100000, '['),
                                           "\xff\xfe",
                                           "{\"title\":\"\\ud800\"}"};
  for (long status : {0L, 200L, 400L, 401L, 429L, 500L}) {
    for (const std::string& body : bodies) {
      BatchResult r = FailedAnswer(Answer(status, body));
      EXPECT_NE(std::string(FailureKindName(r.failure)), "?");
      EXPECT_LT(r.reason.size(), 1200u);
    }
  }
}

TEST(Classify, KindNames) {
  EXPECT_STREQ(FailureKindName(FailureKind::kRejected), "rejected");
  EXPECT_STREQ(FailureKindName(FailureKind::kOurRequestInvalid), "invalid-request");
  EXPECT_STREQ(FailureKindName(FailureKind::kUsageCapped), "usage-capped");
}

TEST(RateLimitHeaders, OnFailuresToo) {
  BatchResult r = FailedAnswer(Answer(
      401, "", {{"x-rate-limit-limit", "300"}, {"x-rate-limit-remaining", "299"}, {"x-rate-limit-reset", "17"}}));
  EXPECT_EQ(r.rate_limit.limit, 300);
  EXPECT_EQ(r.rate_limit.remaining, 299);
  EXPECT_EQ(r.rate_limit.reset_epoch_s, 17);
  RateLimit none = ParseRateLimit({{"x-rate-limit-limit", ""}, {"x-rate-limit-remaining", "1 2"}});
  EXPECT_FALSE(none.limit.has_value());
  EXPECT_FALSE(none.remaining.has_value());
  EXPECT_FALSE(none.reset_epoch_s.has_value());
}

}  // namespace
}  // namespace tweetkeeper::worker
