#include "mock_api/lookup_endpoint.hpp"
#include "mock_api/post_text.hpp"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kNow = 1704067200000;  // 2024-01-01T00:00:00Z
constexpr uint64_t kVisible = 1228393702244134912ULL;
constexpr uint64_t kDeleted = 60;    // 60 % 53 == 7
constexpr uint64_t kProtected = 72;  // 72 % 61 == 11, 72 % 53 != 7

EndpointReply Lookup(const QueryParams& params) { return LookupStatuses(params, MockConfig(), kNow); }

TEST(MockLookupEndpoint, RejectsMissingTooManyAndMalformedIds) {
  for (const QueryParams& params : {QueryParams{}, QueryParams{{"id", ""}}, QueryParams{{"map", "true"}}}) {
    const EndpointReply reply = Lookup(params);
    EXPECT_EQ(reply.status, 400);
    EXPECT_EQ(reply.body, R"({"errors":[{"code":38,"message":"id parameter is missing."}]})");
  }
  std::string ids = "1";
  for (int i = 2; i <= 100; ++i) ids += "," + std::to_string(i);
  EXPECT_EQ(Lookup({{"id", ids}}).status, 200);
  const EndpointReply reply = Lookup({{"id", ids + ",101"}});
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(reply.body, R"({"errors":[{"code":18,"message":"Too many terms specified in query."}]})");
  EXPECT_EQ(Lookup({{"id", "20,abc"}}).body, R"({"errors":[{"code":44,"message":"id parameter is invalid."}]})");
}

rapidjson::Document Parsed(const EndpointReply& reply) {
  rapidjson::Document doc;
  doc.Parse(reply.body.c_str());
  return doc;
}

TEST(MockLookupEndpoint, MapListsEveryIdWithNullForDeletedAndProtected) {
  const EndpointReply reply =
      Lookup({{"id", std::to_string(kVisible) + "," + std::to_string(kDeleted) + "," + std::to_string(kProtected)},
              {"map", "true"}});
  ASSERT_EQ(reply.status, 200);
  const rapidjson::Document doc = Parsed(reply);
  ASSERT_TRUE(doc.IsObject() && doc["id"].IsObject()) << reply.body;
  const auto& ids = doc["id"];
  EXPECT_EQ(ids.MemberCount(), 3u);
  EXPECT_TRUE(ids["60"].IsNull());
  EXPECT_TRUE(ids["72"].IsNull());
  const auto& t = ids["1228393702244134912"];
  const PublicMetrics m = MetricsAt(kVisible, AgeSeconds(kVisible, kNow));
  EXPECT_STREQ(t["created_at"].GetString(), "Fri Feb 14 19:00:55 +0000 2020");
  EXPECT_EQ(t["id"].GetUint64(), kVisible);
  EXPECT_EQ(t["text"].GetString(), MockPostText(kVisible).text);
  EXPECT_EQ(t["retweet_count"].GetInt64(), m.retweet_count);
  EXPECT_EQ(t["favorite_count"].GetInt64(), m.like_count);
  EXPECT_EQ(Lookup({{"id", "60"}, {"map", "1"}}).body, R"({"id":{"60":null}})");
}

// The members X's Tweet object always has (its data dictionary; twitter-api-v2's TweetV1 requires
// them), the author as v2's includes.users gives it, and the text as tweet_mode asks.
TEST(MockLookupEndpoint, TweetsAsTheDataDictionaryShowsThem) {
  const rapidjson::Document doc = Parsed(Lookup({{"id", std::to_string(kVisible)}}));
  ASSERT_TRUE(doc.IsArray() && doc.Size() == 1u);
  const auto& t = doc[0];
  for (const char* key : {"created_at", "id", "id_str", "text", "truncated", "entities", "source", "in_reply_to_status_id",
                          "in_reply_to_status_id_str", "in_reply_to_user_id", "in_reply_to_user_id_str",
                          "in_reply_to_screen_name", "user", "geo", "coordinates", "place", "contributors",
                          "is_quote_status", "retweet_count", "favorite_count", "favorited", "retweeted", "lang"}) {
    EXPECT_TRUE(t.HasMember(key)) << key;
  }
  const XUser author = XUserOf(AuthorOf(kVisible));
  EXPECT_EQ(t["user"]["id"].GetUint64(), author.id);
  EXPECT_EQ(t["user"]["screen_name"].GetString(), author.username);
  EXPECT_EQ(t["user"]["name"].GetString(), author.name);
  EXPECT_EQ(t["user"]["followers_count"].GetInt64(), author.followers);
  EXPECT_EQ(t["lang"].GetString(), MockPostText(kVisible).lang);
  EXPECT_FALSE(t.HasMember("full_text"));

  const rapidjson::Document ext = Parsed(Lookup({{"id", std::to_string(kVisible)}, {"tweet_mode", "extended"}}));
  EXPECT_EQ(ext[0]["full_text"].GetString(), MockPostText(kVisible).text);
  EXPECT_FALSE(ext[0].HasMember("text"));
  EXPECT_EQ(ext[0]["display_text_range"][1].GetInt(), static_cast<int>(CodePoints(MockPostText(kVisible).text)));
  const rapidjson::Document trimmed =
      Parsed(Lookup({{"id", std::to_string(kVisible)}, {"trim_user", "true"}, {"include_entities", "false"}}));
  EXPECT_EQ(trimmed[0]["user"].MemberCount(), 2u);  // id and id_str
  EXPECT_FALSE(trimmed[0].HasMember("entities"));
}

// compat mode cuts a text of more than 140 characters, as X did: 115 of them, an ellipsis and a
// link; truncated says so. Extended gives it whole.
TEST(MockLookupEndpoint, CompatCutsLongTexts) {
  int cut = 0, whole = 0;
  for (uint64_t k = 0; k < 400; ++k) {
    const uint64_t id = kVisible + (k << 22) * 1000;
    const std::string text = MockPostText(id).text;
    const rapidjson::Document doc = Parsed(Lookup({{"id", std::to_string(id)}}));
    if (!doc.IsArray() || doc.Size() != 1u) continue;  // deleted or protected
    const std::string sent = doc[0]["text"].GetString();
    EXPECT_LE(CodePoints(sent), 140u) << sent;
    EXPECT_EQ(doc[0]["truncated"].GetBool(), CodePoints(text) > 140) << text;
    if (CodePoints(text) > 140) {
      ++cut;
      EXPECT_EQ(sent.rfind(text.substr(0, 20), 0), 0u) << sent;
      EXPECT_NE(sent.find("\u2026 https://t.co/"), std::string::npos) << sent;
    } else {
      ++whole;
      EXPECT_EQ(sent, text);
    }
  }
  EXPECT_GT(whole, 100);
  EXPECT_GT(cut + whole, 300);
}

TEST(MockLookupEndpoint, WithoutMapAnArrayOfFoundTweetsOnlyInReverse) {
  const EndpointReply reply = Lookup({{"id", "20," + std::to_string(kDeleted) + "," + std::to_string(kVisible) + ",20"}});
  ASSERT_EQ(reply.status, 200);
  rapidjson::Document doc;
  doc.Parse(reply.body.c_str());
  ASSERT_TRUE(doc.IsArray()) << reply.body;
  ASSERT_EQ(doc.Size(), 2u);  // deleted left out, the duplicate answered once
  EXPECT_EQ(doc[0]["id"].GetUint64(), kVisible);
  EXPECT_STREQ(doc[0]["id_str"].GetString(), "1228393702244134912");
  EXPECT_EQ(doc[1]["id"].GetUint64(), 20u);
  EXPECT_FALSE(doc[0].HasMember("reply_count"));
  EXPECT_FALSE(doc[0].HasMember("quote_count"));
  EXPECT_EQ(Lookup({{"id", std::to_string(kDeleted)}, {"map", "false"}}).body, "[]");
  // Repeated id parameters are joined.
  EXPECT_EQ(Lookup({{"id", "20"}, {"id", std::to_string(kVisible)}}).body,
            Lookup({{"id", "20," + std::to_string(kVisible)}}).body);
}

TEST(MockLookupEndpoint, CountsMatchTheV2ModelAtTheSameTime) {
  for (uint64_t id : {uint64_t{20}, kVisible, kVisible + 4096}) {
    for (int64_t now : {kNow, kNow + 3'600'000}) {
      const PublicMetrics m = MetricsAt(id, AgeSeconds(id, now));
      rapidjson::Document doc;
      doc.Parse(LookupStatuses({{"id", std::to_string(id)}}, MockConfig(), now).body.c_str());
      ASSERT_TRUE(doc.IsArray() && doc.Size() == 1u) << id;
      EXPECT_EQ(doc[0]["retweet_count"].GetInt64(), m.retweet_count);
      EXPECT_EQ(doc[0]["favorite_count"].GetInt64(), m.like_count);
      if (id == 20) {  // before Snowflake: the id encodes no time; this one's is known
        EXPECT_STREQ(doc[0]["created_at"].GetString(), "Tue Mar 21 20:50:14 +0000 2006");
      } else {
        EXPECT_STREQ(doc[0]["created_at"].GetString(), FormatV1CreatedAt(SnowflakeMillis(id)).c_str());
      }
    }
  }
  // Another id from before Snowflake: no time is invented for it.
  rapidjson::Document doc;
  doc.Parse(LookupStatuses({{"id", "28000000000"}}, MockConfig(), kNow).body.c_str());
  ASSERT_TRUE(doc.IsArray() && doc.Size() == 1u);
  EXPECT_FALSE(doc[0].HasMember("created_at"));
}

}  // namespace
}  // namespace tweetkeeper::mock
