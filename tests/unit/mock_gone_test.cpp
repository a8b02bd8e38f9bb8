// Posts and accounts made gone (POST /mock/gone, gone.hpp): the body's checks, states kept with
// their time, the Jetstream events they make, and what each network then answers.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "mock_api/bluesky_endpoint.hpp"
#include "mock_api/gone.hpp"
#include "mock_api/mastodon_endpoint.hpp"
#include "mock_api/mock_api.hpp"
#include "mock_api/tweet_model.hpp"
#include "mock_test_config.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kNow = 1767225600000;  // 2026-01-01T00:00:00Z
const std::string kDid = "did:plc:z72i7hdynmk6r22z27h6tvur";
const std::string kPost = "at://" + kDid + "/app.bsky.feed.post/3l6oveex3ii2l";

// A world whose clock stands at *now_ms (ms), so that the changes are stamped when the test says.
MockConfig At(const int64_t* now_ms) {
  MockConfig c = NoFates();
  c.gone = std::make_shared<GoneWorld>([now_ms] { return *now_ms * 1000; });
  return c;
}

size_t Apply(GoneWorld& g, const std::string& body, int64_t* time_us = nullptr) {
  size_t applied = 0;
  int64_t t = 0;
  std::string error;
  EXPECT_TRUE(g.Apply(body, &applied, &t, &error)) << error;
  if (time_us) *time_us = t;
  return applied;
}

std::string Refused(GoneWorld& g, const std::string& body) {
  size_t applied = 0;
  int64_t t = 0;
  std::string error;
  EXPECT_FALSE(g.Apply(body, &applied, &t, &error)) << body;
  return error;
}

TEST(MockGone, RefusesWhatItCannotApplyAndAppliesAllOrNone) {
  GoneWorld g([] { return int64_t{1000}; });
  EXPECT_NE(Refused(g, "[]").find("JSON object"), std::string::npos);
  EXPECT_NE(Refused(g, R"({"twitter":[]})").find("unknown member twitter"), std::string::npos);
  EXPECT_NE(Refused(g, R"({"x":[{"post":"12","reason":"gone"}]})").find("x[0]: reason must be one of deleted"),
            std::string::npos);
  EXPECT_NE(Refused(g, R"({"x":[{"post":"12","user":"3","reason":"deleted"}]})").find("one of post or user"),
            std::string::npos);
  EXPECT_NE(Refused(g, R"({"x":[{"post":"1a","reason":"deleted"}]})").find("1 to 19 digits"), std::string::npos);
  EXPECT_NE(Refused(g, R"({"bluesky":[{"uri":"at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l","reason":"deleted"}]})")
                .find("at://<DID>"),
            std::string::npos);
  EXPECT_NE(Refused(g, R"({"bluesky":[{"did":"did:plc:z72i7hdynmk6r22z27h6tvur","status":"private"}]})")
                .find("status must be one of deleted, takendown, suspended, deactivated, active"),
            std::string::npos);
  EXPECT_NE(Refused(g, R"({"mastodon":[{"host":"a.social","id":"5","reason":"suspended"}]})")
                .find("deleted, private, active"),
            std::string::npos);
  // A good entry before a bad one is not applied either.
  Refused(g, R"({"x":[{"post":"12","reason":"deleted"},{"post":"13","reason":"nope"}]})");
  EXPECT_FALSE(g.XPost(12, 1'000'000'000));
  // A post is deleted once, and never comes back.
  EXPECT_EQ(Apply(g, R"({"bluesky":[{"uri":")" + kPost + R"(","reason":"deleted"}]})"), 1u);
  EXPECT_NE(Refused(g, R"({"bluesky":[{"uri":")" + kPost + R"(","reason":"deleted"}]})").find("deleted already"),
            std::string::npos);
  EXPECT_NE(Refused(g, R"({"bluesky":[{"uri":")" + kPost + R"(","reason":"active"}]})").find("does not come back"),
            std::string::npos);
}

TEST(MockGone, KeepsEachStateWithTheTimeItWasMade) {
  int64_t clock_us = 5'000'000;
  GoneWorld g([&clock_us] { return clock_us; });
  int64_t t1 = 0, t2 = 0, t3 = 0;
  Apply(g, R"({"x":[{"user":"100007","reason":"suspended"}]})", &t1);
  Apply(g, R"({"x":[{"user":"100007","reason":"active"}]})", &t2);  // the clock has not moved
  clock_us = 9'000'000;
  Apply(g, R"({"x":[{"user":"100007","reason":"deactivated"}]})", &t3);
  EXPECT_EQ(t1, 5'000'001);  // after the clock
  EXPECT_EQ(t2, 5'000'002);  // and strictly after any earlier change
  EXPECT_EQ(t3, 9'000'001);
  EXPECT_FALSE(g.XUser(100007, t1 - 1));
  EXPECT_EQ(g.XUser(100007, t1)->reason, GoneReason::kSuspended);
  EXPECT_EQ(g.XUser(100007, t2)->reason, GoneReason::kActive);
  EXPECT_EQ(g.XUser(100007, t3 + 5)->reason, GoneReason::kDeactivated);
  EXPECT_EQ(g.XUser(100007, t3 + 5)->since_us, t3);
  EXPECT_FALSE(g.XUser(100008, t3));
}

TEST(MockGone, MakesJetstreamEventsInTimeOrder) {
  int64_t clock_us = 1'767'225'600'000'000;
  GoneWorld g([&clock_us] { return clock_us; });
  Apply(g, R"({"bluesky":[{"uri":")" + kPost + R"(","reason":"deleted"},{"did":")" + kDid +
               R"(","status":"takendown"}]})");
  clock_us += 2'000'000;
  Apply(g, R"({"bluesky":[{"did":")" + kDid + R"(","status":"active"}],"x":[{"post":"20","reason":"deleted"}]})");
  size_t total = 0;
  const std::vector<GoneEvent> all = g.EventsFrom(0, &total);
  ASSERT_EQ(total, 3u);  // X's change makes none
  EXPECT_EQ(all[0].rkey, "3l6oveex3ii2l");
  EXPECT_EQ(all[1].status, GoneReason::kTakendown);
  EXPECT_EQ(all[2].status, GoneReason::kActive);
  EXPECT_EQ(all[1].seq + 1, all[2].seq);
  EXPECT_TRUE(g.EventsFrom(3, &total).empty());
  EXPECT_EQ(g.EventsIn(3, all[2].time_us, all[2].time_us + 1).size(), 1u);
  EXPECT_EQ(g.EventsIn(2, all[2].time_us, all[2].time_us + 1).size(), 0u);  // not looked at yet
  EXPECT_EQ(g.EventsIn(3, 0, all[2].time_us).size(), 2u);
  EXPECT_EQ(JetstreamAccountJson(all[1]),
            R"({"did":")" + kDid + R"(","time_us":1767225600000001,"kind":"account","account":{"active":false,"did":")" +
                kDid + R"(","seq":1,"time":"2026-01-01T00:00:00.000Z","status":"takendown"}})");
  EXPECT_EQ(JetstreamAccountJson(all[2]),
            R"({"did":")" + kDid + R"(","time_us":1767225602000001,"kind":"account","account":{"active":true,"did":")" +
                kDid + R"(","seq":2,"time":"2026-01-01T00:00:02.000Z"}})");
  rapidjson::Document doc;
  const std::string del = JetstreamPostDeleteJson(all[0].did, all[0].rkey, all[0].time_us);
  doc.Parse(del.c_str());
  EXPECT_STREQ(doc["kind"].GetString(), "commit");
  EXPECT_STREQ(doc["commit"]["operation"].GetString(), "delete");
  EXPECT_STREQ(doc["commit"]["collection"].GetString(), "app.bsky.feed.post");
  EXPECT_FALSE(doc["commit"].HasMember("record"));
}

TEST(MockGone, XAnswersAsForADeletedOrAnUnauthorizedPostFromThatMoment) {
  int64_t now = kNow;
  MockConfig config = At(&now);
  // Three visible posts from 2020, and a fourth by another author.
  const uint64_t deleted = 1228393702244134912, by_suspended = deleted + 1, by_deactivated = deleted + 2;
  ASSERT_NE(AuthorOf(by_suspended), AuthorOf(by_deactivated));
  MockApi api(config);
  const std::string ids = std::to_string(deleted) + "," + std::to_string(by_suspended) + "," +
                          std::to_string(by_deactivated);
  const auto tweets = [&] { return api.Handle({"GET", "/2/tweets", {{"ids", ids}}, "Bearer t"}, now).body; };
  const std::string before = tweets();
  EXPECT_EQ(before.find("errors"), std::string::npos) << before;
  HttpCall gone{"POST", "/mock/gone", {}, ""};
  gone.body = R"({"x":[{"post":")" + std::to_string(deleted) + R"(","reason":"deleted"},{"user":")" +
              std::to_string(AuthorOf(by_suspended)) + R"(","reason":"suspended"},{"user":")" +
              std::to_string(AuthorOf(by_deactivated)) + R"(","reason":"deactivated"}]})";
  EXPECT_EQ(api.Handle(gone, now).body, R"({"applied":3,"time_us":1767225600000001})");
  const std::string after = tweets();
  EXPECT_NE(after.find(R"("Could not find tweet with ids: [)" + std::to_string(deleted) + "]"), std::string::npos);
  EXPECT_NE(after.find(R"("Could not find tweet with ids: [)" + std::to_string(by_deactivated) + "]"),
            std::string::npos);
  EXPECT_NE(after.find("Sorry, you are not authorized to see the Tweet with ids: [" + std::to_string(by_suspended)),
            std::string::npos);
  EXPECT_EQ(after.rfind(R"({"errors":)", 0), 0u) << after;  // no post in data
  // v1.1: null in the map.
  const std::string v1 =
      api.Handle({"GET", "/1.1/statuses/lookup.json", {{"id", std::to_string(deleted)}, {"map", "true"}}, "Bearer t"}, now)
          .body;
  EXPECT_EQ(v1, R"({"id":{")" + std::to_string(deleted) + R"(":null}})");
  // An answer for a moment before the change is the one given then.
  EXPECT_EQ(api.Handle({"GET", "/2/tweets", {{"ids", ids}}, "Bearer t"}, now - 1).body, before);
  // Unsuspended: visible again.
  now += 1000;
  gone.body = R"({"x":[{"user":")" + std::to_string(AuthorOf(by_suspended)) + R"(","reason":"active"}]})";
  api.Handle(gone, now);
  EXPECT_EQ(api.Handle({"GET", "/2/tweets", {{"ids", std::to_string(by_suspended)}}, "Bearer t"}, now).body.find("errors"),
            std::string::npos);
  EXPECT_EQ(api.Handle({"POST", "/mock/gone", {}, ""}, now).status, 400);  // no body
}

TEST(MockGone, GetPostsLeavesOutADeletedPostAndAGoneAccountsPostsUntilItIsBack) {
  int64_t now = kNow;
  MockConfig config = At(&now);
  const std::string other = "at://" + kDid + "/app.bsky.feed.post/3l6oveex3ii2m";
  QueryParams both{{"uris", kPost}, {"uris", other}};
  const auto shown = [&] {
    rapidjson::Document doc;
    doc.Parse(GetBlueskyPosts(both, config, now).body.c_str());
    return doc["posts"].GetArray().Size();
  };
  ASSERT_EQ(shown(), 2u);
  Apply(*config.gone, R"({"bluesky":[{"uri":")" + kPost + R"(","reason":"deleted"}]})");
  EXPECT_EQ(shown(), 1u);
  for (const char* status : {"deactivated", "takendown", "suspended", "deleted"}) {
    Apply(*config.gone, R"({"bluesky":[{"did":")" + kDid + R"(","status":")" + status + R"("}]})");
    EXPECT_EQ(shown(), 0u) << status;
  }
  Apply(*config.gone, R"({"bluesky":[{"did":")" + kDid + R"(","status":"active"}]})");
  EXPECT_EQ(shown(), 1u);  // the account's other post again; the deleted one stays deleted
}

TEST(MockGone, MastodonLeavesOutADeletedOrPrivateStatusOrAGoneAccountsOnItsServerOnly) {
  int64_t now = kNow;
  MockConfig config = At(&now);
  const uint64_t id = 113284726341234560;
  const QueryParams ids{{"id[]", std::to_string(id)}};
  const auto listed = [&](const char* host) {
    return MastodonApi(host, "/api/v1/statuses", ids, false, config, now).body != "[]";
  };
  const auto single = [&](const char* host) {
    return MastodonApi(host, "/api/v1/statuses/" + std::to_string(id), {}, false, config, now).status;
  };
  ASSERT_TRUE(listed("a.social"));
  for (const char* reason : {"private", "deleted"}) {
    Apply(*config.gone, R"({"mastodon":[{"host":"a.social","id":")" + std::to_string(id) + R"(","reason":")" + reason +
                            R"("}]})");
    EXPECT_FALSE(listed("a.social")) << reason;
    EXPECT_EQ(single("a.social"), 404) << reason;
    EXPECT_TRUE(listed("b.social")) << reason;
    EXPECT_EQ(single("b.social"), 200) << reason;
  }
  Apply(*config.gone, R"({"mastodon":[{"host":"a.social","id":")" + std::to_string(id) + R"(","reason":"active"}]})");
  EXPECT_TRUE(listed("a.social"));
  // Its author's account deleted or suspended: all its statuses go, on that server.
  rapidjson::Document status;
  status.Parse(MastodonApi("a.social", "/api/v1/statuses/" + std::to_string(id), {}, false, config, now).body.c_str());
  const std::string account = status["account"]["id"].GetString();
  for (const char* reason : {"suspended", "deleted"}) {
    Apply(*config.gone, R"({"mastodon":[{"host":"a.social","account":")" + account + R"(","reason":")" + reason + R"("}]})");
    EXPECT_FALSE(listed("a.social")) << reason;
    EXPECT_EQ(single("a.social"), 404) << reason;
  }
  Apply(*config.gone, R"({"mastodon":[{"host":"a.social","account":")" + account + R"(","reason":"active"}]})");
  EXPECT_TRUE(listed("a.social"));
  EXPECT_NE(Refused(*config.gone, R"({"mastodon":[{"host":"a.social","account":"1","reason":"private"}]})")
                .find("reason must be one of deleted, suspended, active"),
            std::string::npos);
  EXPECT_NE(Refused(*config.gone, R"({"mastodon":[{"host":"a.social","account":"1","id":"2","reason":"deleted"}]})")
                .find("one of id (a status id) or account"),
            std::string::npos);
}

}  // namespace
}  // namespace tweetkeeper::mock
