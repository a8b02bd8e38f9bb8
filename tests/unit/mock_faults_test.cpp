#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <map>
#include <string>
#include <vector>

#include "mock_api/faults.hpp"
#include "mock_api/mock_api.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kNow = 1704067200000;

bool IsJson(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  return !doc.HasParseError();
}

FaultConfig Always(std::vector<FaultKind> kinds) {
  FaultConfig config;
  config.rate = 1;
  config.kinds = std::move(kinds);
  return config;
}

HttpCall Tweets(const std::string& ids = "20,21", const std::string& authorization = "Bearer t", bool reused = false) {
  return {"GET", "/2/tweets", {{"ids", ids}, {"tweet.fields", "public_metrics,created_at"}}, authorization, reused};
}

MockApi ApiWith(FaultConfig faults, LogSink sink = {}) {
  MockConfig config;
  config.faults = std::move(faults);
  return MockApi(config, std::move(sink));
}

std::string Header(const HttpReply& reply, const std::string& name) {
  for (const auto& [key, value] : reply.headers) {
    if (key == name) return value;
  }
  return "<absent>";
}

TEST(MockFaults, NamesAndParsesKinds) {
  std::vector<std::string> names;
  for (FaultKind kind : AllFaultKinds()) names.push_back(FaultKindName(kind));
  EXPECT_EQ(names, (std::vector<std::string>{"hang", "slow", "drop", "5xx", "truncated", "content-type", "huge"}));
  EXPECT_STREQ(FaultKindName(FaultKind::kNone), "none");

  std::string error;
  EXPECT_EQ(ParseFaultKinds("all", &error), AllFaultKinds());
  EXPECT_EQ(ParseFaultKinds("5xx,hang,5xx", &error), (std::vector<FaultKind>{FaultKind::k5xx, FaultKind::kHang}));
  EXPECT_EQ(ParseFaultKinds("content-type", &error), (std::vector<FaultKind>{FaultKind::kContentType}));
  for (const std::string bad : {"", "hang,", "HANG", "none", "hang,timeout", "all,hang"}) {
    error.clear();
    EXPECT_FALSE(ParseFaultKinds(bad, &error)) << bad;
    EXPECT_NE(error.find("--faults"), std::string::npos) << error;
  }
  ParseFaultKinds("hang,timeout", &error);
  EXPECT_NE(error.find("'timeout'"), std::string::npos) << error;
}

TEST(MockFaults, NoFaultsUnlessAskedFor) {
  FaultConfig config;  // rate 0
  config.latency_ms = 7;
  for (uint64_t seq = 0; seq < 1000; ++seq) {
    const FaultPlan plan = PlanFaults(config, seq);
    EXPECT_EQ(plan.kind, FaultKind::kNone);
    EXPECT_EQ(plan.delay_ms, 7);
    EXPECT_EQ(plan.hold_ms, 0);
  }
  config.rate = 1;
  config.kinds.clear();
  EXPECT_EQ(PlanFaults(config, 0).kind, FaultKind::kNone);
}

TEST(MockFaults, DrawsTheRateFromTheKindsDeterministically) {
  FaultConfig config;
  config.rate = 0.3;
  config.seed = 42;
  std::map<FaultKind, int> counts;
  std::vector<FaultKind> first;
  constexpr int kDraws = 70'000;
  for (uint64_t seq = 0; seq < kDraws; ++seq) {
    const FaultKind kind = PlanFaults(config, seq).kind;
    ++counts[kind];
    if (seq < 200) first.push_back(kind);
  }
  EXPECT_NEAR(counts[FaultKind::kNone], 0.7 * kDraws, 0.01 * kDraws);
  for (FaultKind kind : AllFaultKinds())
    EXPECT_NEAR(counts[kind], 0.3 * kDraws / 7, 0.005 * kDraws) << FaultKindName(kind);

  // Same seed, same plan for the same request number: a run can be replayed.
  for (uint64_t seq = 0; seq < 200; ++seq) EXPECT_EQ(PlanFaults(config, seq).kind, first[seq]);
  config.seed = 43;
  int same = 0;
  for (uint64_t seq = 0; seq < 200; ++seq) same += PlanFaults(config, seq).kind == first[seq];
  EXPECT_LT(same, 180);  // another seed, another sequence (about 58% agree by chance: mostly "none")

  config.kinds = {FaultKind::kDrop, FaultKind::kHuge};
  for (uint64_t seq = 0; seq < 1000; ++seq) {
    const FaultKind kind = PlanFaults(config, seq).kind;
    EXPECT_TRUE(kind == FaultKind::kNone || kind == FaultKind::kDrop || kind == FaultKind::kHuge);
  }
}

TEST(MockFaults, PlansDelaysAndHolds) {
  FaultConfig config = Always({FaultKind::kSlow});
  config.latency_ms = 10;
  config.slow_ms = 1500;
  config.hang_ms = 9000;
  EXPECT_EQ(PlanFaults(config, 0).delay_ms, 1510);
  config.kinds = {FaultKind::kHang};
  EXPECT_EQ(PlanFaults(config, 0).delay_ms, 0);
  EXPECT_EQ(PlanFaults(config, 0).hold_ms, 9000);
  config.kinds = {FaultKind::kDrop};
  EXPECT_EQ(PlanFaults(config, 0).delay_ms, 0);
  EXPECT_EQ(PlanFaults(config, 0).hold_ms, 0);
  config.kinds = {FaultKind::k5xx};
  EXPECT_EQ(PlanFaults(config, 0).delay_ms, 10);
}

TEST(MockFaults, ServerErrorsComeInThreeShapes) {
  const FaultAnswer html = ServerErrorAnswer(0);
  EXPECT_EQ(html.status, 503);
  EXPECT_STREQ(html.content_type, kHtml);
  EXPECT_NE(html.body.find("<h1>503 Service Temporarily Unavailable</h1>"), std::string::npos);
  const FaultAnswer json = ServerErrorAnswer(1);
  EXPECT_EQ(json.status, 503);
  EXPECT_EQ(json.body,
            R"({"title":"Service Unavailable","type":"about:blank","status":503,"detail":"Service Unavailable"})");
  const FaultAnswer internal = ServerErrorAnswer(2);
  EXPECT_EQ(internal.status, 500);
  EXPECT_TRUE(IsJson(internal.body));
  EXPECT_EQ(ServerErrorAnswer(5).status, 500);
}

TEST(MockFaults, TruncatesInTheMiddle) {
  const std::string body =
      GetTweets({{"ids", "20,21,22,23"}, {"tweet.fields", "public_metrics"}}, MockConfig(), kNow).body;
  ASSERT_TRUE(IsJson(body));
  for (uint64_t variant : {uint64_t{0}, uint64_t{1}, uint64_t{12345}, ~uint64_t{0}}) {
    const std::string cut = TruncatedBody(body, variant);
    EXPECT_GE(cut.size(), body.size() / 4);
    EXPECT_LT(cut.size(), body.size() * 3 / 4 + 1);
    EXPECT_EQ(body.compare(0, cut.size(), cut), 0) << "a prefix";
    EXPECT_FALSE(IsJson(cut)) << cut;
  }
  EXPECT_EQ(TruncatedBody("{}", 99), "{");
  EXPECT_EQ(TruncatedBody("", 0), "{");
}

TEST(MockFaults, HugeBodiesAreValidJsonPastTheSize) {
  const std::string body = GetTweets({{"ids", "20,21"}}, MockConfig(), kNow).body;
  const std::string huge = HugeBody(body, 1 << 20);
  EXPECT_GE(huge.size(), size_t{1} << 20);
  EXPECT_LT(huge.size(), (size_t{1} << 20) + 16);
  EXPECT_TRUE(IsJson(huge));
  EXPECT_EQ(huge.compare(0, 12, R"({"padding":")"), 0);
  EXPECT_EQ(huge.substr(huge.size() - (body.size() - 1)), body.substr(1)) << "the real answer follows the padding";
  EXPECT_TRUE(IsJson(HugeBody("{}", 100)));
  EXPECT_EQ(HugeBody("{}", 100).size(), 100u);
  EXPECT_TRUE(IsJson(HugeBody("{}", 0)));
}

TEST(MockFaults, HangsAndDropsLeaveRequestsUnansweredAndHangsAreCapped) {
  FaultConfig faults = Always({FaultKind::kHang});
  faults.max_hangs = 2;
  faults.hang_ms = 5000;
  MockApi api = ApiWith(faults);
  HttpReply reply = api.Handle(Tweets(), kNow);
  EXPECT_EQ(reply.status, 0);
  EXPECT_EQ(reply.faults.kind, FaultKind::kHang);
  EXPECT_EQ(reply.faults.hold_ms, 5000);
  EXPECT_TRUE(reply.headers.empty());
  EXPECT_EQ(api.Handle(Tweets(), kNow).faults.kind, FaultKind::kHang);
  reply = api.Handle(Tweets(), kNow);  // a third would hold a third thread: dropped instead
  EXPECT_EQ(reply.status, 0);
  EXPECT_EQ(reply.faults.kind, FaultKind::kDrop);
  EXPECT_EQ(reply.faults.hold_ms, 0);
  api.HangEnded();
  EXPECT_EQ(api.Handle(Tweets(), kNow).faults.kind, FaultKind::kHang);
  EXPECT_EQ(api.Handle({"GET", "/healthz", {}, ""}, kNow).status, 200) << "only provider requests get faults";
  EXPECT_NE(api.Handle({"GET", "/mock/stats", {}, ""}, kNow).body.find(R"("status_counts":{"0":4})"),
            std::string::npos);
}

TEST(MockFaults, ServerErrorsAnswerBeforeAuthAndRateLimit) {
  MockConfig config;
  config.tokens = {"good"};
  config.rate_limit = 1;
  config.faults = Always({FaultKind::k5xx});
  MockApi api(config);
  for (const std::string auth : {"", "Bearer bad", "Bearer good", "Bearer good"}) {
    const HttpReply reply = api.Handle(Tweets("20", auth), kNow);
    EXPECT_GE(reply.status, 500) << auth;
    EXPECT_EQ(Header(reply, "x-rate-limit-limit"), "<absent>") << "the API never saw it: no rate-limit headers";
    EXPECT_NE(Header(reply, "Date"), "<absent>") << "but a Date, as every answer";
  }
  config.faults.rate = 0;
  MockApi clean(config);
  EXPECT_EQ(clean.Handle(Tweets("20", "Bearer good"), kNow).status, 200) << "5xx did not use up the window";
}

TEST(MockFaults, CorruptsOnlyTwoHundreds) {
  MockApi truncating = ApiWith(Always({FaultKind::kTruncated}));
  HttpReply reply = truncating.Handle(Tweets(), kNow);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.faults.kind, FaultKind::kTruncated);
  EXPECT_FALSE(IsJson(reply.body));
  EXPECT_EQ(Header(reply, "x-rate-limit-remaining"), "3499") << "it reached the API, which counted it";
  reply = truncating.Handle(Tweets("abc"), kNow);  // a 400 is answered as it is
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(reply.faults.kind, FaultKind::kNone);
  EXPECT_TRUE(IsJson(reply.body));
  reply = truncating.Handle(Tweets("20", ""), kNow);  // and so is a 401
  EXPECT_EQ(reply.status, 401);
  EXPECT_EQ(reply.faults.kind, FaultKind::kNone);

  reply = ApiWith(Always({FaultKind::kContentType})).Handle(Tweets(), kNow);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.content_type, kHtml);
  EXPECT_EQ(reply.body, HtmlPage());

  FaultConfig huge = Always({FaultKind::kHuge});
  huge.huge_bytes = 1 << 16;
  reply = ApiWith(huge).Handle(Tweets(), kNow);
  EXPECT_EQ(reply.status, 200);
  EXPECT_GE(reply.body.size(), size_t{1} << 16);
  EXPECT_TRUE(IsJson(reply.body));

  FaultConfig slow = Always({FaultKind::kSlow});
  slow.slow_ms = 1500;
  reply = ApiWith(slow).Handle(Tweets(), kNow);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.faults.delay_ms, 1500);
  EXPECT_TRUE(IsJson(reply.body));
}

TEST(MockFaults, CountsFaultsInStatsAndTheRequestLog) {
  std::vector<std::string> lines;
  FaultConfig faults;
  faults.rate = 0.5;
  faults.seed = 7;
  MockApi api = ApiWith(faults, [&lines](const std::string& line) { lines.push_back(line); });
  std::map<FaultKind, int> expected;
  int usable = 0, unanswered = 0, reused_drops = 0;
  for (uint64_t seq = 0; seq < 400; ++seq) {
    const bool reused = seq % 2 == 1;
    const HttpReply reply = api.Handle(Tweets("20,21,22", "Bearer t", reused), kNow);
    const FaultKind planned = PlanFaults(faults, seq).kind;
    EXPECT_EQ(reply.faults.kind, planned) << seq;  // no cap reached: hangs are not held here
    if (planned == FaultKind::kHang) api.HangEnded();
    ++expected[planned];
    usable += reply.status == 200 && !CorruptsBody(planned);
    unanswered += reply.status == 0;
    reused_drops += planned == FaultKind::kDrop && reused;
    const std::string& line = lines.back();
    if (planned == FaultKind::kNone) {
      EXPECT_EQ(line, "1704067200000 200 3 e3b98a4da31a") << "unchanged without a fault";
    } else {
      EXPECT_EQ(line, "1704067200000 " + std::to_string(reply.status) + " 3 e3b98a4da31a " + FaultKindName(planned));
    }
  }
  rapidjson::Document stats;
  stats.Parse(api.Handle({"GET", "/mock/stats", {}, ""}, kNow).body.c_str());
  ASSERT_FALSE(stats.HasParseError());
  EXPECT_EQ(stats["requests"].GetUint64(), 400u);
  EXPECT_EQ(stats["ids_requested"].GetUint64(), 3u * usable) << "corrupted 200s are not usable answers";
  EXPECT_EQ(stats["batch_sizes"]["3"].GetUint64(), static_cast<uint64_t>(usable));
  EXPECT_EQ(stats["status_counts"]["0"].GetUint64(), static_cast<uint64_t>(unanswered));
  for (FaultKind kind : AllFaultKinds()) {
    EXPECT_EQ(stats["faults"][FaultKindName(kind)].GetUint64(), static_cast<uint64_t>(expected[kind]))
        << FaultKindName(kind);
    EXPECT_GT(expected[kind], 0) << FaultKindName(kind);
  }
  EXPECT_EQ(stats["drops_on_reused_connections"].GetUint64(), static_cast<uint64_t>(reused_drops));
  api.Handle({"POST", "/mock/reset", {}, ""}, kNow);
  stats.Parse(api.Handle({"GET", "/mock/stats", {}, ""}, kNow).body.c_str());
  EXPECT_EQ(stats["faults"]["drop"].GetUint64(), 0u);
  EXPECT_EQ(stats["drops_on_reused_connections"].GetUint64(), 0u);
}

}  // namespace
}  // namespace tweetkeeper::mock
