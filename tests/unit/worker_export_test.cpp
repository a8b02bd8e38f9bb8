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

TEST(Twarc2, PageHasTwarc2sShapeAndOurProvenanceBesideIt) {
  const std::vector<StoredPost> posts = {
      {20, R"({"id": "20", "text": "caf\u00e9 ☕", "author_id": "9"})", R"({"id": "9", "username": "nine"})"},
      {21, R"({"id": "21", "text": "b", "author_id": "9"})", R"({"id": "9", "username": "nine"})"},
      {22, R"({"id": "22", "text": "c", "author_id": "8"})", ""}};
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

TEST(Twarc2, UnreadablePayloadsAreLeftOutAndNamed) {
  const PageResult page = Twarc2Page({{1, "not json", ""}, {2, R"({"id":"2"})", "[]"}, {3, "[1]", ""}},
                                     {1, "t", "s"}, "u", "v");
  EXPECT_EQ(page.unreadable, (std::vector<std::int64_t>{1, 3}));
  rapidjson::Document doc;
  doc.Parse(page.line.c_str());
  ASSERT_FALSE(doc.HasParseError());
  EXPECT_EQ(doc["data"].Size(), 1u);
  EXPECT_FALSE(doc.HasMember("includes")) << "no empty includes, as the API";
  EXPECT_EQ(Twarc2Page({{1, "x", ""}}, {1, "t", "s"}, "u", "v").line, "") << "no page without posts";
}

}  // namespace
}  // namespace tweetkeeper::exporter
