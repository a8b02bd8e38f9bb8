// X API v1.1 provider (statuses/lookup): request URLs and answer parsing, including garbage.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "provider/factory.hpp"
#include "provider/x_v1_1.hpp"
#include "worker_test_answers.hpp"

namespace tweetkeeper::worker {
namespace {

const XV11Provider kApi("https://api.x.com");

TEST(XV11Parse, TweetsAndNulls) {
  const std::string body = R"({"id":{
      "20":{"created_at":"Tue Mar 21 20:50:14 +0000 2006","id":20,"id_str":"20","text":"just setting up my twttr",
            "retweet_count":1,"favorite_count":3,"reply_count":9},
      "1460323737035677698":{"id":1460323737035677698,"id_str":"1460323737035677698","retweet_count":0,
            "favorite_count":12},
      "21":null}})";
  BatchResult r = kApi.ParseAnswer(
      Answer(200, body,
             {{"x-rate-limit-limit", "300"}, {"x-rate-limit-remaining", "299"}, {"x-rate-limit-reset", "9"}}),
      {20, 21, 1460323737035677698});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 2u);
  EXPECT_EQ(r.observations[0].id, 20);
  EXPECT_EQ(r.observations[0].metrics.retweet_count, 1);
  EXPECT_EQ(r.observations[0].metrics.like_count, 3);
  EXPECT_FALSE(r.observations[0].metrics.reply_count.has_value());  // v1.1 standard does not have it
  EXPECT_FALSE(r.observations[0].metrics.quote_count.has_value());
  EXPECT_FALSE(r.observations[0].metrics.bookmark_count.has_value());
  EXPECT_FALSE(r.observations[0].metrics.impression_count.has_value());
  EXPECT_EQ(r.observations[1].id, 1460323737035677698);
  EXPECT_EQ(r.observations[1].metrics.retweet_count, 0);
  EXPECT_EQ(r.observations[1].metrics.like_count, 12);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].id, 21);
  EXPECT_EQ(r.problems[0].type, "v1.1-missing");
  EXPECT_NE(r.problems[0].detail.find("deleted, protected or suspended"), std::string::npos);
  EXPECT_EQ(r.ignored, 0u);
  // The rate-limit headers travel with successful answers too.
  EXPECT_EQ(r.rate_limit.limit, 300);
  EXPECT_EQ(r.rate_limit.remaining, 299);
  EXPECT_EQ(r.rate_limit.reset_epoch_s, 9);
}

TEST(XV11Parse, AllNull) {
  BatchResult r = kApi.ParseAnswer(Answer(200, R"({"id":{"5":null,"6":null}})"), {5, 6});
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_TRUE(r.observations.empty());
  EXPECT_EQ(r.problems.size(), 2u);
}

TEST(XV11Parse, IgnoresStrangers) {
  BatchResult r = kApi.ParseAnswer(Answer(200, R"({"id":{"1":{"id_str":"1","favorite_count":-1,"retweet_count":"2"},
      "666":null, "x":null, "2":{"id_str":"3","favorite_count":1}, "4":[1], "5":{"favorite_count":7}}})"),
                                   {1, 2, 4, 5});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 2u);
  EXPECT_EQ(r.observations[0].id, 1);
  EXPECT_FALSE(r.observations[0].metrics.like_count.has_value());
  EXPECT_FALSE(r.observations[0].metrics.retweet_count.has_value());
  EXPECT_EQ(r.observations[0].invalid, R"(retweet_count "2", favorite_count -1)");
  EXPECT_EQ(r.observations[1].id, 5);  // no id of its own: the key says which it is
  EXPECT_EQ(r.observations[1].metrics.like_count, 7);
  EXPECT_EQ(r.ignored, 4u);  // 666 not asked, "x" not an id, 2 holds tweet 3, 4 not an object
  EXPECT_EQ(r.omitted, (std::vector<std::int64_t>{2, 4}));  // their keys held no answer for them
}

TEST(XV11Parse, AMapWithoutOurIdsLeftThemOut) {
  BatchResult r = kApi.ParseAnswer(Answer(200, R"({"id":{}})"), {1, 2});
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.omitted, (std::vector<std::int64_t>{1, 2}));
}

TEST(XV11Parse, Unparsable) {
  const std::vector<std::string> bodies = {
      "",
      "<html>Over capacity</html>",
      "[]",
      "{}",
      R"({"id":[]})",
      R"({"id":{"9":null}})",
      "{\"id\":{\"1\":",
      R"([{"id":1,"retweet_count":1}])",  // map=false shape
  };
  for (const std::string& body : bodies) {
    BatchResult r = kApi.ParseAnswer(Answer(200, body, {{"x-rate-limit-remaining", "4"}}), {1});
    EXPECT_EQ(r.failure, FailureKind::kUnparsable) << body;
    EXPECT_FALSE(r.reason.empty());
    EXPECT_EQ(r.rate_limit.remaining, 4) << body;
  }
  EXPECT_NE(kApi.ParseAnswer(Answer(200, "<html>Over capacity</html>"), {1}).reason.find(": <html>Over capacity"),
            std::string::npos);
}

TEST(XV11Parse, Errors) {
  ExpectFailures(
      kApi,
      {
          {429, R"({"errors":[{"code":88,"message":"Rate limit exceeded"}]})", FailureKind::kRateLimited,
           "HTTP 429 Rate limit exceeded (code 88)"},
          {401, R"({"errors":[{"code":89,"message":"Invalid or expired token."}]})", FailureKind::kRejected,
           "HTTP 401 Invalid or expired token. (code 89)"},
          {400, R"({"errors":[{"code":215,"message":"Bad Authentication data."}]})", FailureKind::kRejected,
           "HTTP 400 Bad Authentication data. (code 215)"},
          {403, R"({"errors":[{"message":"You currently have access to a subset of X API V2 endpoints","code":453}]})",
           FailureKind::kRejected, "HTTP 403 You currently have access to a subset of X API V2 endpoints (code 453)"},
          {400, R"({"errors":[{"code":44,"message":"id parameter is invalid."}]})", FailureKind::kOurRequestInvalid,
           "HTTP 400 id parameter is invalid. (code 44)"},
          {503, R"({"errors":[{"code":130,"message":"Over capacity"}]})", FailureKind::kServer,
           "HTTP 503 Over capacity (code 130)"},
          {404, "Not Found", FailureKind::kOtherClientError, "HTTP 404 Not Found"},
      });
  HttpResponse transport;
  transport.error = "Operation timed out";
  EXPECT_EQ(kApi.ParseAnswer(transport, {1}).failure, FailureKind::kTransport);
}

TEST(XV11Parse, GarbageNeverCrashes) {
  ExpectGarbageHandled(kApi, {"", "null", "[]", "{\"id\":", std::string(200000, '['), std::string(200000, '{'),
                              std::string("\xff\xfe\x00", 3), R"({"id":{"1":{"retweet_count":1e400}}})",
                              R"({"id":{"99999999999999999999":null,"0":null,"-1":null}})",
                              R"({"id":{"1":{"id":"1","id_str":1}}})", R"({"id":[]})"});
}

TEST(XV11CreatedAt, Parses) {
  EXPECT_EQ(ParseV11CreatedAt("Tue Mar 21 20:50:14 +0000 2006"), 1142974214);
  EXPECT_EQ(ParseV11CreatedAt("Thu Jan 01 00:00:00 +0000 1970"), 0);
  EXPECT_EQ(ParseV11CreatedAt("Thu Jan 01 01:00:00 +0100 1970"), 0);
  EXPECT_EQ(ParseV11CreatedAt("Tue Feb 29 12:00:00 +0000 2000"), 951825600);
  for (const char* bad :
       {"", "2006-03-21T20:50:14.000Z", "Tue Mar 21 20:50:14 +0000 06", "Tue Foo 21 20:50:14 +0000 2006",
        "Xyz Mar 21 20:50:14 +0000 2006", "Tue Mar 32 20:50:14 +0000 2006", "Tue Feb 29 20:50:14 +0000 2001",
        "Tue Mar 21 24:50:14 +0000 2006", "Tue Mar 21 20:50:14 *0000 2006", "Tue Mar 2a 20:50:14 +0000 2006"}) {
    EXPECT_FALSE(ParseV11CreatedAt(bad).has_value()) << bad;
  }
}

TEST(ProviderFactory, Names) {
  EXPECT_EQ(MakeProvider("x-v2", "https://api.x.com")->Name(), "x-v2");
  EXPECT_EQ(MakeProvider("x-v1.1", "https://api.x.com/")->Name(), "x-v1.1");
  EXPECT_EQ(MakeProvider("x-v1.1", "https://api.x.com/")->RequestUrl({1}),
            "https://api.x.com/1.1/statuses/lookup.json?id=1&map=true");
  EXPECT_EQ(MakeProvider("bluesky", "https://public.api.bsky.app")->Name(), "bluesky");
  EXPECT_EQ(MakeProvider("mastodon", "https://api.x.com")->Name(), "mastodon");
  EXPECT_THROW(MakeProvider("threads", "https://threads.net"), std::invalid_argument);
}

}  // namespace
}  // namespace tweetkeeper::worker
