// The JSON sent to complete_batch() and the bigint[] text read from claim_batch().

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "queue/payload.hpp"

namespace tweetkeeper::worker {
namespace {

TEST(ObservationsJson, AllMetricsAndNulls) {
  Observation full;
  full.id = 1460323737035677698;
  full.metrics = {1, 2, 3, 4, 5, 6};
  Observation sparse;
  sparse.id = 7;
  sparse.metrics.like_count = 0;
  sparse.invalid = R"(reply_count "7")";
  EXPECT_EQ(ObservationsJson({full, sparse}),
            R"([{"id":1460323737035677698,"retweet_count":1,"reply_count":2,"like_count":3,"quote_count":4,)"
            R"("bookmark_count":5,"impression_count":6},)"
            R"({"id":7,"retweet_count":null,"reply_count":null,"like_count":0,"quote_count":null,)"
            R"("bookmark_count":null,"impression_count":null,"invalid":"reply_count \"7\""}])");
}

TEST(ObservationsJson, Empty) { EXPECT_EQ(ObservationsJson({}), "[]"); }

TEST(ArrayLiterals, BigintAndTextArrays) {
  EXPECT_EQ(ArrayLiteral({}), "{}");
  EXPECT_EQ(ArrayLiteral({1, -2, 3}), "{1,-2,3}");
  EXPECT_EQ(TextArrayLiteral({}), "{}");
  EXPECT_EQ(TextArrayLiteral({"a", "b \"c\"", "d\\e"}), R"({"a","b \"c\"","d\\e"})");
}

TEST(ObservationsJson, PayloadAuthorAndNewestId) {
  Observation o;
  o.id = 5;
  o.payload = R"({"id":"5","text":"a \"b\""})";
  o.author = R"({"id":"9"})";
  o.newest_id = 6;
  const std::string json = ObservationsJson({o});
  EXPECT_NE(json.find(R"("payload":{"id":"5","text":"a \"b\""},"author":{"id":"9"},"newest_id":6})"), std::string::npos)
      << json;
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  ASSERT_FALSE(doc.HasParseError());
  EXPECT_STREQ(doc[0]["payload"]["text"].GetString(), "a \"b\"");
}

TEST(ProblemsJson, EscapesText) {
  EXPECT_EQ(ProblemsJson({{124, "resource-not-found", "Could not find tweet with ids: [124]."},
                          {125, "x", "quote \" backslash \\ newline \n tab \t é"}}),
            R"([{"id":124,"type":"resource-not-found","detail":"Could not find tweet with ids: [124]."},)"
            R"({"id":125,"type":"x","detail":"quote \" backslash \\ newline \n tab \t é"}])");
  EXPECT_EQ(ProblemsJson({}), "[]");
}

TEST(ProblemsJson, RoundTripsThroughAParser) {
  const std::string json = ProblemsJson({{9, "t\x01", std::string("ctl \x1f end")}});
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  ASSERT_FALSE(doc.HasParseError()) << json;
  EXPECT_EQ(doc[0]["id"].GetInt64(), 9);
  EXPECT_STREQ(doc[0]["detail"].GetString(), "ctl \x1f end");
}

TEST(ParseBigintArray, Valid) {
  EXPECT_EQ(ParseBigintArray("{1,2,3}"), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(ParseBigintArray("{}"), std::vector<std::int64_t>{});
  EXPECT_EQ(ParseBigintArray("{9223372036854775807}"), std::vector<std::int64_t>{INT64_MAX});
  EXPECT_EQ(ParseBigintArray("{-4}"), std::vector<std::int64_t>{-4});
}

TEST(ParseKeptHashes, PairsUntilTheFirstMalformedOne) {
  using Map = std::unordered_map<std::int64_t, std::string>;
  EXPECT_EQ(ParseKeptHashes("1 aa 22 bb"), (Map{{1, "aa"}, {22, "bb"}}));
  EXPECT_EQ(ParseKeptHashes(""), Map{});
  EXPECT_EQ(ParseKeptHashes("-5 cc"), (Map{{-5, "cc"}}));
  EXPECT_EQ(ParseKeptHashes("1 aa x bb 3 cc"), (Map{{1, "aa"}}));
  EXPECT_EQ(ParseKeptHashes("1 aa 2"), (Map{{1, "aa"}}));
  EXPECT_EQ(ParseKeptHashes("1  aa"), Map{});
}

TEST(ParseBigintArray, Invalid) {
  for (const char* text : {"", "{", "}", "1,2", "{1,,2}", "{1,}", "{,1}", "{NULL}", "{1,NULL}", "{{1,2}}", "{ 1}",
                           "{1.5}", "{9223372036854775808}", "{a}", "[1,2]"}) {
    EXPECT_FALSE(ParseBigintArray(text).has_value()) << text;
  }
}

}  // namespace
}  // namespace tweetkeeper::worker
