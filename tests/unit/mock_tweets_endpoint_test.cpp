#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "mock_api/tweet_model.hpp"
#include "mock_api/tweets_endpoint.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kNow = 1704067200000;  // 2024-01-01T00:00:00Z

rapidjson::Document Parse(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str());
  EXPECT_FALSE(doc.HasParseError()) << body;
  return doc;
}

EndpointReply Get(const std::string& ids, const std::string& fields = "", const MockConfig& config = MockConfig()) {
  QueryParams params{{"ids", ids}};
  if (!fields.empty()) params.emplace("tweet.fields", fields);
  return GetTweets(params, config, kNow);
}

// The single invalid-request error of a 400 answer, checked for the FACTS.md envelope.
void ExpectInvalid(const EndpointReply& reply, const std::string& parameter, const std::string& value,
                   const std::string& message) {
  ASSERT_EQ(reply.status, 400);
  EXPECT_EQ(reply.content_type, "application/problem+json");
  const rapidjson::Document doc = Parse(reply.body);
  EXPECT_STREQ(doc["title"].GetString(), "Invalid Request");
  EXPECT_STREQ(doc["detail"].GetString(), "One or more parameters to your request was invalid.");
  EXPECT_STREQ(doc["type"].GetString(), "https://api.twitter.com/2/problems/invalid-request");
  ASSERT_EQ(doc["errors"].Size(), 1u) << reply.body;
  const auto& error = doc["errors"][0];
  EXPECT_EQ(error["message"].GetString(), message);
  const auto& values = error["parameters"][parameter.c_str()];
  if (value.empty()) {
    EXPECT_EQ(values.Size(), 0u);
  } else {
    ASSERT_EQ(values.Size(), 1u);
    EXPECT_EQ(values[0].GetString(), value);
  }
}

// Ids from 2020 that are visible, deleted and protected under the default model.
uint64_t Find(bool (*want)(uint64_t)) {
  uint64_t id = 1228393702244134912ULL;
  while (!want(id)) ++id;
  return id;
}
const uint64_t kVisible = Find([](uint64_t id) { return id % 53 != 7 && id % 61 != 11; });
const uint64_t kVisible2 = Find([](uint64_t id) { return id > kVisible && id % 53 != 7 && id % 61 != 11; });
const uint64_t kDeleted = Find([](uint64_t id) { return id % 53 == 7; });
const uint64_t kProtected = Find([](uint64_t id) { return id % 53 != 7 && id % 61 == 11; });
std::string S(uint64_t id) { return std::to_string(id); }

TEST(MockTweetsEndpoint, RejectsMissingAndEmptyIds) {
  ExpectInvalid(GetTweets({}, MockConfig(), kNow), "ids", "", "The `ids` query parameter can not be empty");
  ExpectInvalid(Get(""), "ids", "", "The `ids` query parameter can not be empty");
}

TEST(MockTweetsEndpoint, RejectsMoreThanHundredIds) {
  std::string ids = "1";
  for (int i = 2; i <= 101; ++i) ids += "," + std::to_string(i);
  ExpectInvalid(Get(ids), "ids", ids,
                "The number of values in the `ids` query parameter list [101] is not between 1 and 100");
  EXPECT_EQ(Get(ids.substr(0, ids.rfind(','))).status, 200);  // exactly 100 is fine
}

TEST(MockTweetsEndpoint, RejectsIdsOutsideThePattern) {
  ExpectInvalid(Get("12,abc"), "ids", "abc", "The `ids` query parameter value [abc] does not match ^[0-9]{1,19}$");
  ExpectInvalid(Get("12345678901234567890"), "ids", "12345678901234567890",
                "The `ids` query parameter value [12345678901234567890] does not match ^[0-9]{1,19}$");
  ExpectInvalid(Get("-5"), "ids", "-5", "The `ids` query parameter value [-5] does not match ^[0-9]{1,19}$");
  EXPECT_EQ(Get("1234567890123456789").status, 200);  // 19 digits is the maximum
}

TEST(MockTweetsEndpoint, RejectsUnknownFieldsAndParameters) {
  const EndpointReply reply = Get("20", "public_metrics,likes");
  ExpectInvalid(reply, "tweet.fields", "likes", Parse(reply.body)["errors"][0]["message"].GetString());
  EXPECT_EQ(std::string(Parse(reply.body)["errors"][0]["message"].GetString())
                .rfind("The `tweet.fields` query parameter value [likes] is not one of [article,", 0),
            0u);
  const EndpointReply unknown = GetTweets({{"ids", "20"}, {"idz", "1"}}, MockConfig(), kNow);
  ASSERT_EQ(unknown.status, 400);
  EXPECT_EQ(std::string(Parse(unknown.body)["errors"][0]["parameters"]["idz"][0].GetString()), "1");
}

TEST(MockTweetsEndpoint, AnswersFoundTweetsInReverseAndMissingOnesAsErrors) {
  const EndpointReply reply =
      Get(S(kVisible) + "," + S(kDeleted) + "," + S(kVisible2) + "," + S(kProtected) + "," + S(kVisible),
          "public_metrics,created_at");
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.content_type, "application/json; charset=utf-8");
  const rapidjson::Document doc = Parse(reply.body);
  ASSERT_EQ(doc["data"].Size(), 2u);  // the duplicate is answered once
  EXPECT_EQ(doc["data"][0]["id"].GetString(), S(kVisible2));
  EXPECT_EQ(doc["data"][1]["id"].GetString(), S(kVisible));

  const auto& tweet = doc["data"][1];
  EXPECT_EQ(tweet["text"].GetString(), "Mock tweet " + S(kVisible));
  EXPECT_EQ(tweet["edit_history_tweet_ids"][0].GetString(), S(kVisible));
  EXPECT_EQ(tweet["created_at"].GetString(), FormatCreatedAt(SnowflakeMillis(kVisible)));
  const PublicMetrics m = MetricsAt(kVisible, AgeSeconds(kVisible, kNow));
  const auto& pm = tweet["public_metrics"];
  EXPECT_EQ(pm.MemberCount(), 6u);
  EXPECT_EQ(pm["retweet_count"].GetInt64(), m.retweet_count);
  EXPECT_EQ(pm["reply_count"].GetInt64(), m.reply_count);
  EXPECT_EQ(pm["like_count"].GetInt64(), m.like_count);
  EXPECT_EQ(pm["quote_count"].GetInt64(), m.quote_count);
  EXPECT_EQ(pm["bookmark_count"].GetInt64(), m.bookmark_count);
  EXPECT_EQ(pm["impression_count"].GetInt64(), m.impression_count);
  EXPECT_GT(m.like_count, 0);

  ASSERT_EQ(doc["errors"].Size(), 2u);
  const auto& gone = doc["errors"][0];
  EXPECT_EQ(gone.MemberCount(), 7u);
  EXPECT_EQ(gone["value"].GetString(), S(kDeleted));
  EXPECT_EQ(gone["resource_id"].GetString(), S(kDeleted));
  EXPECT_EQ(gone["detail"].GetString(), "Could not find tweet with ids: [" + S(kDeleted) + "].");
  EXPECT_STREQ(gone["title"].GetString(), "Not Found Error");
  EXPECT_STREQ(gone["resource_type"].GetString(), "tweet");
  EXPECT_STREQ(gone["parameter"].GetString(), "ids");
  EXPECT_STREQ(gone["type"].GetString(), "https://api.twitter.com/2/problems/resource-not-found");
  const auto& hidden = doc["errors"][1];
  EXPECT_EQ(hidden.MemberCount(), 8u);
  EXPECT_EQ(hidden["value"].GetString(), S(kProtected));
  EXPECT_STREQ(hidden["section"].GetString(), "data");
  EXPECT_STREQ(hidden["title"].GetString(), "Authorization Error");
  EXPECT_EQ(hidden["detail"].GetString(),
            "Sorry, you are not authorized to see the Tweet with ids: [" + S(kProtected) + "].");
  EXPECT_STREQ(hidden["type"].GetString(), "https://api.twitter.com/2/problems/not-authorized-for-resource");
}

TEST(MockTweetsEndpoint, OmitsDataWhenNothingResolvesAndErrorsWhenAllDo) {
  const rapidjson::Document none = Parse(Get(S(kDeleted) + "," + S(kProtected)).body);
  EXPECT_FALSE(none.HasMember("data"));
  EXPECT_EQ(none["errors"].Size(), 2u);

  const rapidjson::Document all = Parse(Get(S(kVisible)).body);
  EXPECT_FALSE(all.HasMember("errors"));
  const auto& tweet = all["data"][0];
  EXPECT_EQ(tweet.MemberCount(), 3u);  // id, text, edit_history_tweet_ids only without tweet.fields
  EXPECT_FALSE(tweet.HasMember("public_metrics"));
  EXPECT_FALSE(tweet.HasMember("created_at"));
}

TEST(MockTweetsEndpoint, OmittedIdsAreInNeitherDataNorErrors) {
  MockConfig config;
  config.omitted_every = 1000;
  uint64_t omitted = kVisible;
  while (omitted % 1000 != 13 || omitted % 53 == 7 || omitted % 61 == 11) ++omitted;
  const EndpointReply reply = Get(S(kVisible) + "," + S(omitted) + "," + S(kDeleted), "", config);
  const rapidjson::Document doc = Parse(reply.body);
  ASSERT_EQ(doc["data"].Size(), 1u);
  EXPECT_EQ(std::string(doc["data"][0]["id"].GetString()), S(kVisible));
  ASSERT_EQ(doc["errors"].Size(), 1u);
  EXPECT_EQ(std::string(doc["errors"][0]["resource_id"].GetString()), S(kDeleted));
  EXPECT_EQ(reply.returned, (std::vector<uint64_t>{kVisible}));
  config.omitted_every = 0;
  EXPECT_EQ(ClassifyTweet(omitted, config, kNow), TweetState::kVisible);  // off by default
}

TEST(MockTweetsEndpoint, SameRequestSameAnswer) {
  EXPECT_EQ(Get(S(kVisible) + "," + S(kVisible2), "public_metrics").body,
            Get(S(kVisible) + "," + S(kVisible2), "public_metrics").body);
}

TEST(MockTweetsEndpoint, RepostAliasRenamesRetweetCount) {
  MockConfig config;
  config.repost_count_alias = true;
  const rapidjson::Document doc = Parse(Get(S(kVisible), "public_metrics", config).body);
  const auto& pm = doc["data"][0]["public_metrics"];
  EXPECT_FALSE(pm.HasMember("retweet_count"));
  EXPECT_EQ(pm["repost_count"].GetInt64(), MetricsAt(kVisible, AgeSeconds(kVisible, kNow)).retweet_count);
}

}  // namespace
}  // namespace tweetkeeper::mock
