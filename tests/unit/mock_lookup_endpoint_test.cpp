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

TEST(MockLookupEndpoint, MapListsEveryIdWithNullForDeletedAndProtected) {
  const EndpointReply reply =
      Lookup({{"id", std::to_string(kVisible) + "," + std::to_string(kDeleted) + "," + std::to_string(kProtected)},
              {"map", "true"}});
  ASSERT_EQ(reply.status, 200);
  const PublicMetrics m = MetricsAt(kVisible, AgeSeconds(kVisible, kNow));
  EXPECT_EQ(reply.body, R"({"id":{"1228393702244134912":{"created_at":"Fri Feb 14 19:00:55 +0000 2020",)"
                        R"("id":1228393702244134912,"id_str":"1228393702244134912",)"
                        R"("text":")" + MockPostText(kVisible).text + R"(","retweet_count":)" +
                            std::to_string(m.retweet_count) + R"(,"favorite_count":)" + std::to_string(m.like_count) +
                            R"(},"60":null,"72":null}})");
  EXPECT_EQ(Lookup({{"id", "60"}, {"map", "1"}}).body, R"({"id":{"60":null}})");
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
  // Repeated id parameters are joined; other v1.1 parameters are ignored.
  EXPECT_EQ(Lookup({{"id", "20"}, {"id", std::to_string(kVisible)}, {"include_entities", "false"}}).body,
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
