// The worker's Prometheus metrics: the outcome label of a request, and what the exposition says
// after a few events (the text /metrics serves).

#include <gtest/gtest.h>

#include <string>

#include "telemetry/telemetry.hpp"

namespace tweetkeeper::worker {
namespace {

HttpResponse Answer(long status, bool timed_out = false) {
  HttpResponse r;
  r.status = status;
  r.timed_out = timed_out;
  if (status == 0) r.error = timed_out ? "Timeout was reached" : "Couldn't connect to server";
  return r;
}

TEST(RequestOutcome, ByStatusClassAndFailure) {
  EXPECT_EQ(RequestOutcome(Answer(200), FailureKind::kNone), "2xx");
  EXPECT_EQ(RequestOutcome(Answer(200), FailureKind::kUnparsable), "parse_error");
  EXPECT_EQ(RequestOutcome(Answer(301), FailureKind::kOtherClientError), "3xx");
  EXPECT_EQ(RequestOutcome(Answer(401), FailureKind::kRejected), "4xx");
  EXPECT_EQ(RequestOutcome(Answer(429), FailureKind::kRateLimited), "429");
  EXPECT_EQ(RequestOutcome(Answer(429), FailureKind::kUsageCapped), "429");
  EXPECT_EQ(RequestOutcome(Answer(503), FailureKind::kServer), "5xx");
  EXPECT_EQ(RequestOutcome(Answer(0, true), FailureKind::kTransport), "timeout");
  EXPECT_EQ(RequestOutcome(Answer(0), FailureKind::kTransport), "transport");
  EXPECT_EQ(RequestOutcome(Answer(999), FailureKind::kServer), "other");
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(Telemetry, CountsWhatHappened) {
  Telemetry t("w1", "x-v2");
  t.Slots(4);
  t.SlotsBusy(1);
  t.Batch("claimed");
  t.Batch("claimed");
  t.Request("alpha", "2xx", 0.2);
  t.Request("alpha", "5xx", 1.5);
  t.Batch("released");
  t.Stored(100);
  t.Stored(37);
  BatchResult answer;
  answer.problems = {{1, "resource-not-found", ""}, {2, "resource-not-found", ""}, {3, "", ""}};
  answer.omitted = {4, 5, 6};
  answer.observations = {{7, {}, "", {}, "", "", "", {}, {}}, {8, {}, "like_count -1", {}, "", "", "", {}, {}}};
  t.Problems(answer);
  t.Batch("completed");
  t.Claim(0.004);
  t.Complete(0.02);
  t.Success();
  const std::string text = t.Text();
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_api_requests_total{provider="x-v2",worker="w1",credential="alpha",outcome="2xx"} 1)"))
      << text;
  EXPECT_TRUE(Has(text, R"(worker="w1",credential="alpha",outcome="5xx"} 1)")) << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_tweets_stored_total{provider="x-v2",worker="w1"} 137)")) << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_tweet_problems_total{provider="x-v2",worker="w1",type="resource-not-found"} 2)")) << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_tweet_problems_total{provider="x-v2",worker="w1",type="unknown"} 1)")) << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_tweet_problems_total{provider="x-v2",worker="w1",type="omitted"} 3)")) << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_tweet_problems_total{provider="x-v2",worker="w1",type="invalid-count"} 1)")) << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_batches_total{provider="x-v2",worker="w1",event="claimed"} 2)")) << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_batches_total{provider="x-v2",worker="w1",event="released"} 1)")) << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_slots{provider="x-v2",worker="w1"} 4)")) << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_slots_busy{provider="x-v2",worker="w1"} 1)")) << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_api_request_seconds_count{provider="x-v2",worker="w1"} 2)")) << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_api_request_seconds_bucket{provider="x-v2",worker="w1",le="0.25"} 1)"))
      << text;
  EXPECT_TRUE(Has(text, R"(tweetkeeper_worker_claim_seconds_count{provider="x-v2",worker="w1"} 1)")) << text;
  EXPECT_FALSE(Has(text, R"(tweetkeeper_worker_last_success_timestamp_seconds{provider="x-v2",worker="w1"} 0)")) << text;
}

TEST(Telemetry, RefusesAnAddressItCannotListenOn) {
  Telemetry a("w1", "x-v2");
  const int port = a.Serve("127.0.0.1:0");
  ASSERT_GT(port, 0);
  Telemetry b("w2", "x-v2");
  try {
    b.Serve("127.0.0.1:" + std::to_string(port));
    FAIL() << "a taken port was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot serve metrics on '127.0.0.1:"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tweetkeeper::worker
