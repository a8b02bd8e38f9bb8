// X API v2 provider: request URLs and answer parsing, including garbage.

#include <gtest/gtest.h>

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "provider/content_hash.hpp"
#include "provider/json_fields.hpp"
#include "provider/x_v1_1.hpp"
#include "provider/x_v2.hpp"
#include "worker_test_answers.hpp"

namespace tweetkeeper::worker {
namespace {

const XV2Provider kApi("https://api.x.com");

// X's two APIs (v1.1's requests are tested here too): the ids joined, v2 asking for the metrics and
// v1.1 for a map; a base URL's path kept, its trailing slashes dropped.
TEST(XUrl, JoinsIdsOnTheBaseUrl) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kApi.RequestUrl(kUrlIds),
       "https://api.x.com/2/tweets?ids=20,1460323737035677698,3&tweet.fields=public_metrics,created_at"},
      {XV2Provider("http://127.0.0.1:8080/mock/").RequestUrl({7}),
       "http://127.0.0.1:8080/mock/2/tweets?ids=7&tweet.fields=public_metrics,created_at"},
      {XV11Provider("https://api.x.com").RequestUrl(kUrlIds),
       "https://api.x.com/1.1/statuses/lookup.json?id=20,1460323737035677698,3&map=true"},
      {XV11Provider("http://127.0.0.1:8080/mock//").RequestUrl({7}),
       "http://127.0.0.1:8080/mock/1.1/statuses/lookup.json?id=7&map=true"},
  };
  for (const auto& [url, expected] : cases) EXPECT_EQ(url, expected);
}

TEST(XV2Url, PayloadsAskForTwarc2sFieldsAndTheAuthor) {
  PostKeys keys;
  keys.payloads = true;
  const std::string url = kApi.RequestUrl({7}, keys);
  EXPECT_NE(url.find("&tweet.fields=attachments,author_id,"), std::string::npos) << url;
  EXPECT_NE(url.find(",edit_history_tweet_ids,"), std::string::npos) << url;
  EXPECT_NE(url.find("&expansions=author_id&user.fields=created_at,"), std::string::npos) << url;
  EXPECT_EQ(url.find("note_tweet"), std::string::npos) << url;  // twarc-csv refuses it
  EXPECT_EQ(kApi.RequestUrl({7}, PostKeys{}), kApi.RequestUrl({7}));  // off: counts only
}

TEST(XV2Parse, PayloadsCarryEachTweetAndItsAuthor) {
  const std::string body = R"({"data":[
      {"id":"20","text":"caf\u00e9","author_id":"9","edit_history_tweet_ids":["20"],"public_metrics":{"like_count":3}},
      {"id":"21","text":"v1","author_id":"8","edit_history_tweet_ids":["21","25"],"public_metrics":{"like_count":1}}],
    "includes":{"users":[{"id":"9","name":"Nine","username":"nine"}]}})";
  PostKeys keys;
  keys.payloads = true;
  BatchResult r = kApi.ParseAnswer(Answer(200, body), {20, 21}, keys);
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 2u);
  EXPECT_EQ(r.observations[0].payload,
            R"({"id":"20","text":"café","author_id":"9","edit_history_tweet_ids":["20"],"public_metrics":{"like_count":3}})");
  EXPECT_EQ(r.observations[0].author, R"({"id":"9","name":"Nine","username":"nine"})");
  EXPECT_FALSE(r.observations[0].newest_id);
  EXPECT_EQ(r.observations[1].author, "");  // not in includes: none
  EXPECT_EQ(r.observations[1].newest_id, 25);  // edited: 25 is its newest version
  // Off: no payload, but the edit is still seen (edit_history_tweet_ids is a default field).
  BatchResult off = kApi.ParseAnswer(Answer(200, body), {20, 21});
  EXPECT_EQ(off.observations[0].payload, "");
  EXPECT_EQ(off.observations[1].newest_id, 25);
}

// The claim's hashes of the last kept payloads: an unchanged post hands on nothing (its counts
// only), a changed one its payload and new hash; under `first` a kept post never hands on.
TEST(XV2Parse, OnlyPayloadsThatWouldBeStoredAreHandedOn) {
  const std::string body = R"({"data":[
      {"id":"20","text":"same","author_id":"9","edit_history_tweet_ids":["20"],"public_metrics":{"like_count":3}},
      {"id":"21","text":"new","author_id":"9","edit_history_tweet_ids":["21"],"public_metrics":{"like_count":1}},
      {"id":"22","text":"first","author_id":"9","edit_history_tweet_ids":["22"],"public_metrics":{"like_count":1}}],
    "includes":{"users":[{"id":"9","name":"Nine","username":"nine","public_metrics":{"followers_count":5}}]}})";
  const std::string author = R"({"id":"9","name":"Nine","username":"nine","public_metrics":{"followers_count":1}})";
  // Kept: 20 as it is now (other counts), 21 with another text; 22 has none.
  const std::unordered_map<std::int64_t, std::string> kept = {
      {20, *ContentHash(R"({"id":"20","text":"same","author_id":"9","edit_history_tweet_ids":["20"],"public_metrics":{"like_count":0}})", author)},
      {21, *ContentHash(R"({"id":"21","text":"old","author_id":"9","edit_history_tweet_ids":["21"]})", author)}};
  PostKeys keys;
  keys.payloads = true;
  keys.kept = &kept;
  BatchResult r = kApi.ParseAnswer(Answer(200, body), {20, 21, 22}, keys);
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 3u);
  EXPECT_EQ(r.observations[0].payload, "");
  EXPECT_EQ(r.observations[0].author, "");
  EXPECT_EQ(r.observations[0].content_hash, "");
  EXPECT_EQ(r.observations[0].metrics.like_count, 3);  // the counts still go
  EXPECT_NE(r.observations[1].payload, "");
  EXPECT_NE(r.observations[1].author, "");
  EXPECT_EQ(r.observations[1].content_hash, ContentHash(r.observations[1].payload, r.observations[1].author));
  EXPECT_NE(r.observations[1].content_hash, kept.at(21));
  EXPECT_NE(r.observations[2].payload, "");
  // first: only 22, which has nothing kept.
  keys.first_only = true;
  BatchResult first = kApi.ParseAnswer(Answer(200, body), {20, 21, 22}, keys);
  EXPECT_EQ(first.observations[0].payload, "");
  EXPECT_EQ(first.observations[1].payload, "");
  EXPECT_NE(first.observations[2].payload, "");
  EXPECT_EQ(first.observations[2].content_hash, ContentHash(first.observations[2].payload, first.observations[2].author));
}

// jsonb refuses "\u0000" and lone surrogates (RapidJSON lets both through): a post with one keeps
// its counts and no payload, instead of failing its batch's completion every time.
TEST(XV2Parse, APayloadPostgreSQLCannotStoreIsLeftOut) {
  const std::string body = R"({"data":[
      {"id":"20","text":"nul \u0000","author_id":"9","public_metrics":{"like_count":3}},
      {"id":"21","text":"lone \udc00","author_id":"9","public_metrics":{"like_count":4}},
      {"id":"22","text":"fine","author_id":"8","public_metrics":{"like_count":5}},
      {"id":"23","text":"fine","author_id":"9","public_metrics":{"like_count":6}}],
    "includes":{"users":[{"id":"9","name":"Nine"},{"id":"8","name":"bad \udc01"}]}})";
  PostKeys keys;
  keys.payloads = true;
  BatchResult r = kApi.ParseAnswer(Answer(200, body), {20, 21, 22, 23}, keys);
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 4u);
  EXPECT_EQ(r.observations[0].payload, "");
  EXPECT_EQ(r.observations[0].metrics.like_count, 3);
  EXPECT_EQ(r.observations[1].payload, "");
  EXPECT_EQ(r.observations[1].metrics.like_count, 4);
  EXPECT_EQ(r.observations[2].payload, "");  // its author has the bad string
  EXPECT_NE(r.observations[3].payload, "");
  EXPECT_EQ(r.observations[3].author, R"({"id":"9","name":"Nine"})");
}

TEST(XV2Parse, AnOlderIdAtTheEndOfTheEditHistoryIsNoEdit) {
  BatchResult r = kApi.ParseAnswer(
      Answer(200, R"({"data":[{"id":"30","edit_history_tweet_ids":["31","30"],"public_metrics":{}},)"
                  R"({"id":"32","edit_history_tweet_ids":"33"},{"id":"34","edit_history_tweet_ids":["x"]}]})"),
      {30, 32, 34});
  ASSERT_EQ(r.observations.size(), 3u);
  for (const Observation& o : r.observations) EXPECT_FALSE(o.newest_id) << o.id;
}

TEST(XV2Url, EncodesQueryValues) {
  EXPECT_EQ(EncodeQueryValue("1,2,3"), "1,2,3");
  EXPECT_EQ(EncodeQueryValue("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
  EXPECT_EQ(EncodeQueryValue("-._~"), "-._~");
}

TEST(XV2Parse, DataAndErrors) {
  const std::string body = R"({
    "data": [
      {"id":"20","text":"just setting up my twttr","created_at":"2006-03-21T20:50:14.000Z",
       "public_metrics":{"retweet_count":1,"reply_count":2,"like_count":3,"quote_count":4,
                         "bookmark_count":5,"impression_count":6}}
    ],
    "errors": [
      {"value":"21","detail":"Could not find tweet with ids: [21].","title":"Not Found Error",
       "resource_type":"tweet","parameter":"ids","resource_id":"21",
       "type":"https://api.twitter.com/2/problems/resource-not-found"},
      {"value":"22","parameter":"ids","resource_type":"tweet","section":"data","title":"Authorization Error",
       "resource_id":"22","detail":"Sorry, you are not authorized to see the Tweet with ids: [22].",
       "type":"https://api.x.com/2/problems/not-authorized-for-resource"}
    ]})";
  BatchResult r = kApi.ParseAnswer(Answer(200, body), {20, 21, 22});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].id, 20);
  EXPECT_EQ(r.observations[0].metrics.retweet_count, 1);
  EXPECT_EQ(r.observations[0].metrics.reply_count, 2);
  EXPECT_EQ(r.observations[0].metrics.like_count, 3);
  EXPECT_EQ(r.observations[0].metrics.quote_count, 4);
  EXPECT_EQ(r.observations[0].metrics.bookmark_count, 5);
  EXPECT_EQ(r.observations[0].metrics.impression_count, 6);
  ASSERT_EQ(r.problems.size(), 2u);
  EXPECT_EQ(r.problems[0].id, 21);
  EXPECT_EQ(r.problems[0].type, "resource-not-found");
  EXPECT_EQ(r.problems[0].detail, "Could not find tweet with ids: [21].");
  EXPECT_EQ(r.problems[1].id, 22);
  EXPECT_EQ(r.problems[1].type, "not-authorized-for-resource");
  EXPECT_EQ(r.ignored, 0u);
  EXPECT_TRUE(r.omitted.empty());
  EXPECT_TRUE(r.observations[0].invalid.empty());
}

TEST(XV2Parse, IdsTheAnswerLeavesOutAreOmitted) {
  // 3 and 4 are in neither `data` nor `errors`; 6 is answered twice (data wins), 7 not asked.
  BatchResult r = kApi.ParseAnswer(Answer(200, R"({"data":[{"id":"1"},{"id":"6"},{"id":"7"}],
      "errors":[{"resource_id":"2","type":"https://api.x.com/2/problems/resource-not-found"},
                {"resource_id":"6","type":"https://api.x.com/2/problems/resource-not-found"}]})"),
                                   {1, 2, 3, 4, 6});
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.observations.size(), 2u);
  EXPECT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.omitted, (std::vector<std::int64_t>{3, 4}));  // in request order
}

TEST(XV2Parse, NoDataKeyWhenNothingResolves) {
  const std::string body = R"({"errors":[{"value":"5","detail":"Could not find tweet with ids: [5].",
    "title":"Not Found Error","resource_id":"5","type":"https://api.twitter.com/2/problems/resource-not-found"}]})";
  BatchResult r = kApi.ParseAnswer(Answer(200, body), {5});
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_TRUE(r.observations.empty());
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].id, 5);
}

TEST(XV2Parse, RepostCountAliasAndRetweetCountWins) {
  BatchResult r =
      kApi.ParseAnswer(Answer(200, R"({"data":[{"id":"1","public_metrics":{"repost_count":9,"like_count":2}},
                              {"id":"2","public_metrics":{"retweet_count":4,"repost_count":9}}]})"),
                       {1, 2});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 2u);
  EXPECT_EQ(r.observations[0].metrics.retweet_count, 9);
  EXPECT_EQ(r.observations[0].metrics.like_count, 2);
  EXPECT_EQ(r.observations[1].metrics.retweet_count, 4);
}

TEST(XV2Parse, MissingNullAndInvalidMetricsStayEmpty) {
  BatchResult r = kApi.ParseAnswer(
      Answer(200, R"({"data":[{"id":"1","public_metrics":{"retweet_count":null,"like_count":0,"reply_count":"7",
                                                         "quote_count":-1,"bookmark_count":1.5}},
                              {"id":"2","text":"no metrics asked"}]})"),
      {1, 2});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 2u);
  const Metrics& m = r.observations[0].metrics;
  EXPECT_FALSE(m.retweet_count.has_value());  // null: not sent
  EXPECT_EQ(m.like_count, 0);                 // zero is a value, not "missing"
  EXPECT_FALSE(m.reply_count.has_value());
  EXPECT_FALSE(m.quote_count.has_value());
  EXPECT_FALSE(m.bookmark_count.has_value());
  EXPECT_FALSE(m.impression_count.has_value());  // absent: not sent
  // What was sent but is no count is said, to be reported; null and absent are not.
  EXPECT_EQ(r.observations[0].invalid, R"(reply_count "7", quote_count -1, bookmark_count 1.5)");
  EXPECT_EQ(r.observations[1].id, 2);
  EXPECT_FALSE(r.observations[1].metrics.like_count.has_value());
  EXPECT_TRUE(r.observations[1].invalid.empty());
}

TEST(XV2Parse, CountsUpToATrillion) {
  BatchResult r = kApi.ParseAnswer(
      Answer(200,
             R"({"data":[{"id":"1","public_metrics":{"like_count":1000000000000,"impression_count":1000000000001}}]})"),
      {1});
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.observations[0].metrics.like_count, kMaxCount);
  EXPECT_FALSE(r.observations[0].metrics.impression_count.has_value());
  EXPECT_EQ(r.observations[0].invalid, "impression_count 1000000000001");
}

TEST(XV2Parse, HugeNumbers) {
  BatchResult r = kApi.ParseAnswer(Answer(200, R"({"data":[{"id":"1","public_metrics":{"like_count":9223372036854775807,
        "retweet_count":9223372036854775808,"impression_count":1e300,"reply_count":123456789012345678901234567890}},
        {"id":"99999999999999999999"}]})"),
                                   {1});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_FALSE(r.observations[0].metrics.like_count.has_value());  // fits in int64, but absurd
  EXPECT_FALSE(r.observations[0].metrics.retweet_count.has_value());
  EXPECT_FALSE(r.observations[0].metrics.impression_count.has_value());
  EXPECT_FALSE(r.observations[0].metrics.reply_count.has_value());
  EXPECT_EQ(r.observations[0].invalid,
            "retweet_count 9223372036854775808, reply_count 1.2345678901234566e29, like_count 9223372036854775807, "
            "impression_count 1e300");
  EXPECT_EQ(r.ignored, 1u);
}

TEST(XV2Parse, IgnoresIdsNotRequestedAndDuplicates) {
  BatchResult r = kApi.ParseAnswer(Answer(200, R"({"data":[{"id":"1"},{"id":"666"},{"id":"1"},{"id":2}],
                      "errors":[{"resource_id":"1","type":"https://api.x.com/2/problems/resource-not-found"},
                                {"resource_id":"777","type":"https://api.x.com/2/problems/resource-not-found"}]})"),
                                   {1, 2});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 2u);  // "1" once, and 2 given as a number (lenient)
  EXPECT_EQ(r.observations[0].id, 1);
  EXPECT_EQ(r.observations[1].id, 2);
  EXPECT_TRUE(r.problems.empty());  // id 1 was found (data wins), 777 was not asked for
  EXPECT_EQ(r.ignored, 3u);
}

TEST(XV2Parse, UnknownProblemTypeKeptWithDetailAndValueAsId) {
  BatchResult r = kApi.ParseAnswer(
      Answer(200, R"({"errors":[{"value":"8","title":"Something New","type":"https://api.x.com/2/problems/brand-new"},
                                {"resource_id":"9","detail":"odd","type":"about:blank"},
                                {"resource_id":"10"}]})"),
      {8, 9, 10});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.problems.size(), 3u);
  EXPECT_EQ(r.problems[0].type, "brand-new");
  EXPECT_EQ(r.problems[0].detail, "Something New");  // no detail: the title
  EXPECT_EQ(r.problems[1].type, "about:blank");
  EXPECT_EQ(r.problems[1].detail, "odd");
  EXPECT_EQ(r.problems[2].type, "unknown");
  EXPECT_EQ(r.problems[2].detail, "");
}

TEST(XV2Parse, ProblemTypeHostVariants) {
  EXPECT_EQ(ProblemType("https://api.twitter.com/2/problems/resource-not-found"), "resource-not-found");
  EXPECT_EQ(ProblemType("https://api.x.com/2/problems/resource-not-found"), "resource-not-found");
  EXPECT_EQ(ProblemType("http://localhost:8080/2/problems/usage-capped"), "usage-capped");
  EXPECT_EQ(ProblemType("about:blank"), "about:blank");
  EXPECT_EQ(ProblemType(""), "unknown");
  EXPECT_EQ(ProblemType("https://api.x.com/2/problems/"), "unknown");
}

TEST(XV2Parse, NulInDetailIsDroppedAndLongDetailCut) {
  const std::string long_detail(2000, 'x');
  BatchResult r = kApi.ParseAnswer(
      Answer(200, R"({"errors":[{"resource_id":"1","detail":"a\u0000b","type":"t"},{"resource_id":"2","detail":")" +
                      long_detail + R"(","type":"t"}]})"),
      {1, 2});
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.problems[0].detail, "ab");
  EXPECT_EQ(r.problems[1].detail.size(), 500u);
}

// PostgreSQL refuses torn or surrogate UTF-8 in text and jsonb: complete_batch would fail and
// the batch (all its tweets) would be released and fetched again, forever.
TEST(XV2Parse, ProblemTextIsValidUtf8ForPostgres) {
  const std::string long_type = "https://api.x.com/2/problems/" + std::string(99, 'a') + "\xC3\xA9";
  BatchResult r =
      kApi.ParseAnswer(Answer(200, R"({"errors":[{"resource_id":"1","title":"Not Found \udc00 Error","type":"t"},)"
                                   R"({"resource_id":"2","detail":"d","type":")" +
                                       long_type + R"("}]})"),
                       {1, 2});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.problems.size(), 2u);
  // A lone surrogate (ED B0 80 once decoded): U+FFFD for each byte, as Unicode recommends.
  EXPECT_EQ(r.problems[0].detail, "Not Found \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD Error");
  EXPECT_EQ(r.problems[1].type, std::string(99, 'a'));  // cut before the 2-byte character
}

TEST(XV2Parse, AnswerThatLeavesEveryIdOutIsNoFailure) {
  // {} is a valid answer: every id was left out, and each is put off (no request loop).
  for (const char* body : {R"({})", R"({"data":[]})"}) {
    BatchResult r = kApi.ParseAnswer(Answer(200, body), {1, 2});
    ASSERT_TRUE(r.ok()) << body << ": " << r.reason;
    EXPECT_EQ(r.omitted, (std::vector<std::int64_t>{1, 2})) << body;
  }
}

TEST(XV2Parse, AnswerAboutOtherIdsOnlyIsAFailure) {
  for (const char* body :
       {R"({"data":[{"id":"3"}]})", R"({"errors":[{"message":"field x is unknown"}]})", R"({"data":{"id":"1"}})"}) {
    BatchResult r = kApi.ParseAnswer(Answer(200, body), {1, 2});
    EXPECT_EQ(r.failure, FailureKind::kUnparsable) << body;
    EXPECT_NE(r.reason.find("none of the 2 requested ids"), std::string::npos) << r.reason;
  }
  BatchResult r = kApi.ParseAnswer(Answer(200, R"({"errors":[{"message":"field x is unknown"}]})"), {1});
  EXPECT_NE(r.reason.find("field x is unknown"), std::string::npos) << r.reason;
}

TEST(XV2Parse, GarbageNeverCrashes) {
  const std::vector<std::string> bodies = {
      "",
      "null",
      "[]",
      "42",
      "\"data\"",
      "{\"data\":",
      R"({"data":[{"id":"1","public_metrics":{"like_count":)",
      R"({"data":{"id":"1"}})",
      R"({"data":[1,"2",null,[],{"id":null},{"id":{}},{"id":"-1"},{"id":"1x"},{"id":""}]})",
      R"({"data":[{"id":"1","public_metrics":[1,2]}]})",
      R"({"errors":"nope"})",
      R"({"errors":[null,1,"x",{"resource_id":5},{"resource_id":"1","detail":7,"type":[]}]})",
      std::string(100000, '['),
      std::string(100000, '{'),
      "{\"data\":[{\"id\":\"1\",\"text\":\"\xff\xfe\"}]}",
      "{\"data\":[]} trailing",
      std::string("{\"data\":[]}\0garbage", 19),
  };
  ExpectGarbageHandled(kApi, bodies);
  // The one valid-enough entry in the mixed error list is used, with defaults for bad fields.
  BatchResult r = kApi.ParseAnswer(
      Answer(200, R"({"errors":[null,1,"x",{"resource_id":5},{"resource_id":"1","detail":7,"type":[]}]})"), {1});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].type, "unknown");
}

TEST(XV2Parse, UnparsableReasonNamesTheError) {
  BatchResult r = kApi.ParseAnswer(Answer(200, "{\"data\":"), {1});
  EXPECT_EQ(r.failure, FailureKind::kUnparsable);
  EXPECT_NE(r.reason.find("unparsable 200 body"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("offset"), std::string::npos) << r.reason;
}

TEST(XV2Parse, ErrorStatuses) {
  ExpectFailures(
      kApi,
      {
          {400,
           R"({"errors":[{"parameters":{"ids":[]},"message":"The `ids` query parameter can not be empty"}],
           "title":"Invalid Request","detail":"One or more parameters to your request was invalid.",
           "type":"https://api.twitter.com/2/problems/invalid-request"})",
           FailureKind::kOurRequestInvalid,
           "HTTP 400 Invalid Request: One or more parameters to your request was invalid. (The `ids` query parameter "
           "can not be empty)"},
          {401, R"({"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"})",
           FailureKind::kRejected, "HTTP 401 Unauthorized"},
          {403, R"({"title":"Forbidden","type":"about:blank","status":403,"detail":"Forbidden"})",
           FailureKind::kRejected, "HTTP 403 Forbidden"},
          {429, R"({"title":"Too Many Requests","type":"about:blank","status":429,"detail":"Too Many Requests"})",
           FailureKind::kRateLimited, "HTTP 429 Too Many Requests"},
          {429,
           R"({"account_id":1,"product_name":"standard-basic","title":"UsageCapExceeded","period":"Monthly",
           "scope":"Product","detail":"Usage cap exceeded: Monthly product cap",
           "type":"https://api.twitter.com/2/problems/usage-capped"})",
           FailureKind::kUsageCapped, "HTTP 429 UsageCapExceeded: Usage cap exceeded: Monthly product cap"},
          {503, "<html><body>Service\nUnavailable</body></html>", FailureKind::kServer,
           "HTTP 503 <html><body>Service Unavailable</body></html>"},
          {500, "", FailureKind::kServer, "HTTP 500"},
          {404, "{\"title\":", FailureKind::kOtherClientError, "HTTP 404 {\"title\":"},
          {302, "", FailureKind::kOtherClientError, "HTTP 302"},
      });
}

TEST(XV2Parse, LongNonJsonErrorBodyIsShortened) {
  BatchResult r = kApi.ParseAnswer(Answer(502, std::string(5000, 'e')), {1});
  EXPECT_EQ(r.failure, FailureKind::kServer);
  EXPECT_LT(r.reason.size(), 140u);
}

TEST(XV2Parse, TransportFailure) {
  HttpResponse resp;
  resp.error = "Timeout was reached: Operation timed out after 30000 milliseconds";
  BatchResult r = kApi.ParseAnswer(resp, {1});
  EXPECT_EQ(r.failure, FailureKind::kTransport);
  EXPECT_EQ(r.reason, resp.error);
}

TEST(XV2Parse, RateLimitHeaders) {
  BatchResult r = kApi.ParseAnswer(
      Answer(429, R"({"title":"Too Many Requests"})",
             {{"x-rate-limit-limit", "450"}, {"x-rate-limit-remaining", " 0 "}, {"x-rate-limit-reset", "1700000900"}}),
      {1});
  EXPECT_EQ(r.rate_limit.limit, 450);
  EXPECT_EQ(r.rate_limit.remaining, 0);
  EXPECT_EQ(r.rate_limit.reset_epoch_s, 1700000900);

  RateLimit bad = ParseRateLimit({{"x-rate-limit-limit", "lots"},
                                  {"x-rate-limit-remaining", "-3"},
                                  {"x-rate-limit-reset", "99999999999999999999999"}});
  EXPECT_FALSE(bad.limit.has_value());
  EXPECT_FALSE(bad.remaining.has_value());
  EXPECT_FALSE(bad.reset_epoch_s.has_value());
}

TEST(XV2Parse, TweetIds) {
  EXPECT_EQ(ParseTweetId("1460323737035677698"), 1460323737035677698);
  EXPECT_EQ(ParseTweetId("9223372036854775807"), INT64_MAX);
  EXPECT_FALSE(ParseTweetId("9223372036854775808").has_value());
  EXPECT_FALSE(ParseTweetId("0").has_value());
  EXPECT_FALSE(ParseTweetId("").has_value());
  EXPECT_FALSE(ParseTweetId("+5").has_value());
  EXPECT_FALSE(ParseTweetId(" 5").has_value());
  EXPECT_FALSE(ParseTweetId("12345678901234567890").has_value());
}

}  // namespace
}  // namespace tweetkeeper::worker

namespace tweetkeeper::worker {
namespace {

// A failed parse must say what arrived: an HTML error page and cut-off JSON need different fixes.
TEST(XV2Parse, UnparsableReasonSaysWhatCame) {
  BatchResult html = kApi.ParseAnswer(
      Answer(200, "<!DOCTYPE html><html>Over capacity</html>", {{"content-type", "text/html; charset=utf-8"}}), {1});
  EXPECT_EQ(html.failure, FailureKind::kUnparsable);
  EXPECT_NE(html.reason.find("(text/html; charset=utf-8, 41 bytes)"), std::string::npos) << html.reason;
  EXPECT_NE(html.reason.find(": <!DOCTYPE html>"), std::string::npos) << html.reason;
  BatchResult cut =
      kApi.ParseAnswer(Answer(200, "{\"data\":[{\"id\":\"1", {{"content-type", "application/json"}}), {1});
  EXPECT_NE(cut.reason.find("(application/json, 17 bytes)"), std::string::npos) << cut.reason;
  EXPECT_EQ(cut.reason.find(": {"), std::string::npos) << "no snippet of JSON-looking bodies";
}

}  // namespace
}  // namespace tweetkeeper::worker
