// AnswerAroundRefusals: a batch refused whole (400) for one bad key is answered in parts, the
// refused keys marked invalid-key, in as few requests as the answers allow; any other failure of
// a part hands the batch back whole. Bluesky's RefusedKey reads the position from the message.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "provider/refusals.hpp"
#include "provider/bluesky.hpp"

namespace tweetkeeper::worker {
namespace {

// A fake API that refuses any request holding a key of `bad` (400), naming the first such
// position when `names` says so, and otherwise answers every id; `fail_on` makes the request of
// that number (1-based, the first being the whole batch) fail with a 503.
struct FakeApi {
  std::set<std::string> bad;
  bool names = true;
  int fail_on = 0;
  int requests = 0;

  PartAnswer Answer(const std::vector<std::int64_t>& ids, const PostKeys& keys) {
    ++requests;
    PartAnswer a;
    a.result.rate_limit.remaining = 1000 - requests;
    if (requests == fail_on) {
      a.result.failure = FailureKind::kServer;
      a.result.reason = "HTTP 503";
      return a;
    }
    for (std::size_t i = 0; i < keys.keys.size(); ++i) {
      if (bad.count(keys.keys[i]) != 0) {
        a.result.failure = FailureKind::kOurRequestInvalid;
        a.result.reason = "HTTP 400: uris/" + std::to_string(i) + " must be a valid at-uri";
        if (names) a.refused = i;
        return a;
      }
    }
    for (std::int64_t id : ids) a.result.observations.push_back(Observation{id, {}, "", std::nullopt, "", "", "", std::nullopt, std::nullopt});
    return a;
  }
};

struct Batch {
  std::vector<std::int64_t> ids;
  PostKeys keys;
};

Batch Make(int n) {
  Batch b;
  b.keys.endpoint = "bluesky";
  for (int i = 0; i < n; ++i) {
    b.ids.push_back(-(i + 1));
    b.keys.keys.push_back("k" + std::to_string(i + 1));
  }
  return b;
}

BatchResult SendAll(FakeApi& api, const Batch& b, bool stop = false) {
  const SendPart send = [&](const std::vector<std::int64_t>& ids, const PostKeys& keys) { return api.Answer(ids, keys); };
  PartAnswer first = send(b.ids, b.keys);
  return AnswerAroundRefusals(b.ids, b.keys, std::move(first), send, [stop] { return stop; });
}

std::vector<std::int64_t> Observed(const BatchResult& r) {
  std::vector<std::int64_t> ids;
  for (const Observation& o : r.observations) ids.push_back(o.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(Refusals, ANamedKeyCostsOneMoreRequest) {
  FakeApi api{{"k4"}, true};
  const BatchResult r = SendAll(api, Make(25));
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(api.requests, 2);
  EXPECT_EQ(r.observations.size(), 24u);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].id, -4);
  EXPECT_EQ(r.problems[0].type, "invalid-key");
  EXPECT_EQ(r.problems[0].detail, "the API refused k4: HTTP 400: uris/3 must be a valid at-uri");
  EXPECT_EQ(r.rate_limit.remaining, 998) << "the last answer's window";
}

TEST(Refusals, TwoNamedKeysTwoMore) {
  FakeApi api{{"k2", "k20"}, true};
  const BatchResult r = SendAll(api, Make(25));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(api.requests, 3);
  EXPECT_EQ(r.observations.size(), 23u);
  EXPECT_EQ(r.problems.size(), 2u);
}

TEST(Refusals, UnnamedKeysAreFoundByHalving) {
  FakeApi api{{"k7"}, false};
  const BatchResult r = SendAll(api, Make(25));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].id, -7);
  EXPECT_EQ(r.observations.size(), 24u);
  std::vector<std::int64_t> want;
  for (int i = 25; i >= 1; --i) {
    if (i != 7) want.push_back(-i);
  }
  EXPECT_EQ(Observed(r), want) << "every other id answered exactly once";
  EXPECT_LE(api.requests, 1 + 2 * 5) << "at most two requests per halving of 25";
}

TEST(Refusals, EveryKeyRefused) {
  FakeApi api{{"k1", "k2", "k3"}, false};
  const BatchResult r = SendAll(api, Make(3));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.observations.empty());
  EXPECT_EQ(r.problems.size(), 3u);
}

TEST(Refusals, AOneKeyBatchIsItsKey) {
  FakeApi api{{"k1"}, false};
  const BatchResult r = SendAll(api, Make(1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(api.requests, 1) << "nothing more to send";
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].id, -1);
}

TEST(Refusals, APositionOutsideTheRequestIsNotTaken) {
  FakeApi api{{"k2"}, true};
  Batch b = Make(4);
  const SendPart send = [&](const std::vector<std::int64_t>& ids, const PostKeys& keys) {
    PartAnswer a = api.Answer(ids, keys);
    if (a.refused) a.refused = 40;  // a wrong position: halving finds the key instead
    return a;
  };
  const BatchResult r = AnswerAroundRefusals(b.ids, b.keys, send(b.ids, b.keys), send, [] { return false; });
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].id, -2);
  EXPECT_EQ(r.observations.size(), 3u);
}

TEST(Refusals, AnotherFailureHandsTheBatchBack) {
  FakeApi api{{"k4"}, true, 2};
  const BatchResult r = SendAll(api, Make(25));
  EXPECT_EQ(r.failure, FailureKind::kServer);
  EXPECT_EQ(r.reason, "HTTP 503");
  EXPECT_TRUE(r.observations.empty()) << "nothing of the batch is stored: it is released whole";
}

TEST(Refusals, StoppingSendsNothingMore) {
  FakeApi api{{"k4"}, true};
  const BatchResult r = SendAll(api, Make(25), true);
  EXPECT_EQ(api.requests, 1);
  EXPECT_EQ(r.failure, FailureKind::kTransport);
}

TEST(Refusals, AnAnswerWithoutRefusalIsKept) {
  FakeApi api{{}, true};
  Batch b = Make(3);
  // (Called only after a 400, but a first answer that is fine is simply the result.)
  const BatchResult r = SendAll(api, b);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.observations.size(), 3u);
  EXPECT_EQ(api.requests, 1);
}

HttpResponse Answer(int status, const std::string& body) {
  HttpResponse r;
  r.status = status;
  r.body = body;
  return r;
}

TEST(BlueskyRefusedKey, ReadsThePositionFromTheMessage) {
  const BlueskyProvider api("https://public.api.bsky.app");
  EXPECT_TRUE(api.SplitsRefusals());
  EXPECT_EQ(api.RefusedKey(Answer(400, R"({"error":"InvalidRequest","message":"Error: uris/0 must be a valid at-uri"})")),
            std::optional<std::size_t>(0));
  EXPECT_EQ(api.RefusedKey(Answer(400, R"({"error":"InvalidRequest","message":"Error: uris/24 must be a valid at-uri"})")),
            std::optional<std::size_t>(24));
  EXPECT_EQ(api.RefusedKey(Answer(400, R"({"error":"InvalidRequest","message":"Error: uris must not have more than 25 elements"})")),
            std::nullopt);
  EXPECT_EQ(api.RefusedKey(Answer(400, R"({"error":"InvalidRequest","message":"Error: uris/x must be"})")), std::nullopt);
  EXPECT_EQ(api.RefusedKey(Answer(400, R"({"error":"InvalidRequest","message":"Error: uris/3x must be"})")), std::nullopt);
  EXPECT_EQ(api.RefusedKey(Answer(400, R"({"error":"InvalidRequest","message":"Error: uris/123456789 must be"})")),
            std::nullopt);
  EXPECT_EQ(api.RefusedKey(Answer(400, R"({"error":"Other","message":"Error: uris/2 must be a valid at-uri"})")),
            std::nullopt);
  EXPECT_EQ(api.RefusedKey(Answer(500, R"({"error":"InvalidRequest","message":"Error: uris/2 must be a valid at-uri"})")),
            std::nullopt);
  EXPECT_EQ(api.RefusedKey(Answer(400, "<html>Bad Request</html>")), std::nullopt);
}

}  // namespace
}  // namespace tweetkeeper::worker
