#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <set>
#include <string>

#include "mock_api/tweet_model.hpp"
#include "mock_api/post_text.hpp"
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

TEST(MockTweetsEndpoint, EditedTweetsListTheirNewerVersionLast) {
  MockConfig config;
  config.edited_every = 7;
  const uint64_t edited = Find([](uint64_t id) { return id % 53 != 7 && id % 61 != 11 && id % 7 == 5; });
  const uint64_t plain = Find([](uint64_t id) { return id % 53 != 7 && id % 61 != 11 && id % 7 != 5; });
  const rapidjson::Document doc = Parse(Get(S(edited) + "," + S(plain), "", config).body);
  ASSERT_EQ(doc["data"].Size(), 2u);
  for (const auto& tweet : doc["data"].GetArray()) {
    const auto& history = tweet["edit_history_tweet_ids"];
    ASSERT_STREQ(history[0].GetString(), tweet["id"].GetString());
    if (tweet["id"].GetString() == S(edited)) {
      ASSERT_EQ(history.Size(), 2u);
      EXPECT_EQ(history[1].GetString(), S(edited + (uint64_t{1000} << 22)));
    } else {
      EXPECT_EQ(history.Size(), 1u);
    }
  }
  // Off by default: one version each.
  const rapidjson::Document off = Parse(Get(S(edited)).body);
  EXPECT_EQ(off["data"][0]["edit_history_tweet_ids"].Size(), 1u);
}

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

TEST(MockTweetsEndpoint, RejectsValuesOutsideTheOtherEnums) {
  const EndpointReply bad = GetTweets({{"ids", "20"}, {"expansions", "author_id,author"}}, MockConfig(), kNow);
  ExpectInvalid(bad, "expansions", "author", Parse(bad.body)["errors"][0]["message"].GetString());
  const EndpointReply user = GetTweets({{"ids", "20"}, {"user.fields", "karma"}}, MockConfig(), kNow);
  ExpectInvalid(user, "user.fields", "karma", Parse(user.body)["errors"][0]["message"].GetString());
  EXPECT_EQ(GetTweets({{"ids", "20"}, {"media.fields", "url"}, {"place.fields", "geo"}}, MockConfig(), kNow).status,
            200);
}

TEST(MockTweetsEndpoint, FieldsAndTheAuthorExpansion) {
  const QueryParams params{{"ids", S(kVisible) + "," + S(kVisible2) + "," + S(kDeleted)},
                           {"tweet.fields", "author_id,lang,conversation_id,edit_controls,geo,non_public_metrics"},
                           {"expansions", "author_id,attachments.media_keys"},
                           {"user.fields", "public_metrics,created_at"}};
  const rapidjson::Document doc = Parse(GetTweets(params, MockConfig(), kNow).body);
  const auto& tweet = doc["data"][1];  // reverse order: kVisible
  EXPECT_EQ(std::string(tweet["author_id"].GetString()), std::to_string(AuthorOf(kVisible)));
  EXPECT_STREQ(tweet["lang"].GetString(), "en");
  EXPECT_EQ(std::string(tweet["conversation_id"].GetString()), S(kVisible));
  EXPECT_TRUE(tweet["edit_controls"]["is_edit_eligible"].IsBool());
  EXPECT_FALSE(tweet.HasMember("geo"));                 // a plain-text tweet has none
  EXPECT_FALSE(tweet.HasMember("non_public_metrics"));  // not for app-only callers
  ASSERT_TRUE(doc.HasMember("includes"));
  const auto& users = doc["includes"]["users"];
  EXPECT_EQ(users.Size(), AuthorOf(kVisible) == AuthorOf(kVisible2) ? 1u : 2u);  // each author once
  EXPECT_TRUE(users[0]["username"].IsString());
  EXPECT_TRUE(users[0]["public_metrics"]["followers_count"].IsInt64());
  EXPECT_FALSE(doc["includes"].HasMember("media"));  // no media to expand
  // Without the expansion, or with nothing found, there is no includes at all.
  EXPECT_FALSE(Parse(Get(S(kVisible), "author_id").body).HasMember("includes"));
  EXPECT_FALSE(
      Parse(GetTweets({{"ids", S(kDeleted)}, {"expansions", "author_id"}}, MockConfig(), kNow).body).HasMember("includes"));
}

TEST(MockTweetsEndpoint, NoInventedTimeBeforeSnowflake) {
  const rapidjson::Document doc = Parse(Get("20,28000000000", "created_at").body);
  ASSERT_EQ(doc["data"].Size(), 2u);
  EXPECT_STREQ(doc["data"][1]["created_at"].GetString(), "2006-03-21T20:50:14.000Z");  // tweet 20, from FACTS.md
  EXPECT_FALSE(doc["data"][0].HasMember("created_at"));  // an id that encodes no time
}

TEST(MockTweetsEndpoint, SingleLookup) {
  const auto one = [](const std::string& id, const std::string& fields = "") {
    QueryParams params{{kPathIdParam, id}};
    if (!fields.empty()) params.emplace("tweet.fields", fields);
    return GetTweetById(params, MockConfig(), kNow);
  };
  const EndpointReply found = one(S(kVisible), "public_metrics");
  ASSERT_EQ(found.status, 200);
  const rapidjson::Document doc = Parse(found.body);
  ASSERT_TRUE(doc["data"].IsObject());  // an object, not an array (Get2TweetsIdResponse)
  EXPECT_TRUE(doc["data"]["public_metrics"]["like_count"].IsInt64());
  EXPECT_EQ(found.returned, (std::vector<uint64_t>{kVisible}));
  const rapidjson::Document gone = Parse(one(S(kDeleted)).body);
  EXPECT_FALSE(gone.HasMember("data"));
  EXPECT_STREQ(gone["errors"][0]["type"].GetString(), "https://api.twitter.com/2/problems/resource-not-found");
  EXPECT_EQ(one("x1").status, 400);
  EXPECT_EQ(GetTweetById({{kPathIdParam, "20"}, {"ids", "20"}}, MockConfig(), kNow).status, 400);  // no ids here
  // A query parameter named like the path's id does not make the list endpoint a single lookup.
  EXPECT_EQ(GetTweets({{"ids", S(kVisible)}, {kPathIdParam, "20"}}, MockConfig(), kNow).status, 400);
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
  EXPECT_EQ(tweet["text"].GetString(), MockPostText(kVisible).text);
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

// Entities as X gives them: offsets in code points, the end exclusive, so that slicing the text's
// code points at them gives "#tag" and "@username"; text in other languages and scripts too.
TEST(MockTweetsEndpoint, EntitiesSliceTheirTextInCodePoints) {
  std::string ids;
  for (uint64_t k = 0; k < 100; ++k) ids += (k ? "," : "") + S(kVisible + (k << 22) * 1000);
  const rapidjson::Document doc = Parse(Get(ids, "entities,lang,display_text_range").body);
  ASSERT_TRUE(doc.HasMember("data"));
  int hashtags = 0, mentions = 0;
  std::set<std::string> langs;
  const auto slice = [](const std::string& utf8, int start, int end) {
    std::u32string cps;
    for (size_t i = 0; i < utf8.size();) {  // decode (the mock writes valid UTF-8)
      const auto c = static_cast<unsigned char>(utf8[i]);
      const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      char32_t cp = len == 1 ? c : c & (0xFF >> (len + 1));
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(utf8[i + k]) & 0x3F);
      cps.push_back(cp);
      i += len;
    }
    std::string out;
    for (int i = start; i < end && i < static_cast<int>(cps.size()); ++i) {
      if (cps[static_cast<size_t>(i)] >= 0x80) return std::string("(not ASCII)");
      out.push_back(static_cast<char>(cps[static_cast<size_t>(i)]));
    }
    return out;
  };
  for (const auto& t : doc["data"].GetArray()) {
    const std::string text = t["text"].GetString();
    langs.insert(t["lang"].GetString());
    EXPECT_EQ(t["display_text_range"][1].GetInt(), static_cast<int>(CodePoints(text))) << text;
    if (!t.HasMember("entities")) continue;
    if (t["entities"].HasMember("hashtags")) {
      const auto& h = t["entities"]["hashtags"][0];
      ++hashtags;
      EXPECT_EQ(slice(text, h["start"].GetInt(), h["end"].GetInt()), "#" + std::string(h["tag"].GetString())) << text;
    }
    if (t["entities"].HasMember("mentions")) {
      const auto& m = t["entities"]["mentions"][0];
      ++mentions;
      EXPECT_EQ(slice(text, m["start"].GetInt(), m["end"].GetInt()), "@" + std::string(m["username"].GetString()))
          << text;
    }
  }
  EXPECT_GT(hashtags, 10);
  EXPECT_GT(mentions, 10);
  EXPECT_GT(langs.size(), 3u);
}

}  // namespace
}  // namespace tweetkeeper::mock
