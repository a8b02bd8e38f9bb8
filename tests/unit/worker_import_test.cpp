// tweetkeeper-import's reading of its input: ids per line, CSV columns and quotes, JSON lines of
// tweets and response pages, times, and the checks that name a bad line.

#include <gtest/gtest.h>

#include <sstream>

#include "ids/id_reader.hpp"

namespace tweetkeeper::importer {
namespace {

constexpr std::int64_t kNow = 1763900000000;       // 2025-11-23
constexpr std::int64_t kId = 1595000000000000000;  // 2022-11-22

TEST(ImportLines, IdsBlanksAndBadLines) {
  IdReader r(Format::kLines);
  LineResult x = r.Parse(" 1595000000000000000\r", kNow);
  ASSERT_TRUE(x.error.empty()) << x.error;
  ASSERT_EQ(x.tweets.size(), 1u);
  EXPECT_EQ(x.tweets[0].id, kId);
  EXPECT_TRUE(r.Parse("", kNow).tweets.empty());
  EXPECT_TRUE(r.Parse("   ", kNow).error.empty());
  EXPECT_EQ(r.Parse("12abc", kNow).error, "not a tweet id or post URL: '12abc'");
  EXPECT_EQ(r.Parse("99999999999999999999", kNow).error, "not a tweet id or post URL: '99999999999999999999'");
  EXPECT_EQ(r.Parse("0", kNow).error, "tweet id must be positive, got 0");
  EXPECT_EQ(r.Parse("20", kNow).error, "tweet id 20 predates Snowflake ids and has no created_at");
  // An id whose time is next year.
  const std::int64_t future = ((kNow + 365LL * 86400000 - 1288834974657) << 22);
  EXPECT_NE(r.Parse(std::to_string(future), kNow).error.find("created in the future"), std::string::npos);
}

TEST(ImportLines, ReadLineStopsAtItsBuffer) {
  std::istringstream in("1\r\n" + std::string(9, 'a') + "\n" + std::string(10, 'b') + "\n" + std::string(25, 'c') +
                        "\n\nlast");
  std::vector<char> buffer(10);  // lines of at most 9 bytes
  std::string_view line;
  std::vector<std::string> got;
  for (LineRead r; (r = ReadLine(in, buffer, &line)) != LineRead::kEnd;)
    got.push_back(r == LineRead::kTooLong ? "<too long>" : std::string(line));
  EXPECT_EQ(got, (std::vector<std::string>{"1", std::string(9, 'a'), "<too long>", "<too long>", "", "last"}));
  std::istringstream empty("");
  EXPECT_EQ(ReadLine(empty, buffer, &line), LineRead::kEnd);
}

TEST(ImportLines, BadLinesAreShownEscaped) {
  IdReader r(Format::kLines);
  EXPECT_EQ(r.Parse("\x1b[2J\x1b[31mred", kNow).error, "not a tweet id or post URL: '\\x1b[2J\\x1b[31mred'");
  EXPECT_EQ(Shown("caf\xc3\xa9 \xff\\ \xe2\x82"), "caf\xc3\xa9 \\xff\\\\ \\xe2\\x82");
  EXPECT_EQ(Shown(std::string(50, 'x')), std::string(40, 'x') + "...");
}

TEST(ImportCsv, NamedColumnQuotesAndCreatedAt) {
  IdReader r(Format::kCsv, "tweet_id");
  EXPECT_TRUE(r.Parse("user,\"tweet_id\",created_at", kNow).error.empty());
  LineResult x = r.Parse("\"Doe, \"\"J\"\"\",1595000000000000000,", kNow);
  ASSERT_TRUE(x.error.empty()) << x.error;
  EXPECT_EQ(x.tweets.at(0).id, kId);
  x = r.Parse("old,20,2006-04-01T10:00:00.000Z", kNow);
  ASSERT_TRUE(x.error.empty()) << x.error;
  EXPECT_EQ(x.tweets.at(0).created_at_ms, 1143885600000);
  EXPECT_EQ(r.Parse("old,19,2005-04-01T10:00:00Z", kNow).error,
            "tweet 19 was created before the first tweet (2006-03-21)");
  EXPECT_EQ(r.Parse("a,\"unclosed", kNow).error, "unclosed quote");
  EXPECT_EQ(r.Parse("a", kNow).error, "no field 2 ('tweet_id')");
  EXPECT_EQ(r.Parse("a,abc,", kNow).error, "'tweet_id' is not a tweet id or post URL: 'abc'");
  IdReader missing(Format::kCsv, "id");
  EXPECT_EQ(missing.Parse("user,tweet", kNow).error, "the CSV header has no column 'id' (--column)");
  EXPECT_FALSE(missing.usable());
}

TEST(ImportJson, TweetsPagesAndErrors) {
  IdReader r(Format::kJsonl);
  LineResult x = r.Parse(R"({"id":"1595000000000000000","text":"hi","created_at":"2022-11-22T12:00:00.000Z"})", kNow);
  ASSERT_TRUE(x.error.empty()) << x.error;
  EXPECT_EQ(x.tweets.at(0).id, kId);
  x = r.Parse(R"({"data":[{"id":"1595000000000000000"},{"id":"1595000000000000001"}],"meta":{"result_count":2}})",
              kNow);
  ASSERT_TRUE(x.error.empty()) << x.error;
  EXPECT_EQ(x.tweets.size(), 2u);
  x = r.Parse(R"({"id_str":"1595000000000000002","id":1595000000000000002})", kNow);
  ASSERT_TRUE(x.error.empty()) << x.error;
  EXPECT_EQ(x.tweets.at(0).id, kId + 2);
  EXPECT_EQ(r.Parse(R"({"text":"x"})", kNow).error, "no \"id\", \"url\" or \"uri\" field");
  EXPECT_EQ(r.Parse(R"({"id":"x1"})", kNow).error, "\"id\" is not a tweet id or post URL");
  EXPECT_EQ(r.Parse("{oops", kNow).error, "not JSON (Missing a name for object member. at offset 1)");
  EXPECT_EQ(r.Parse(R"({"data":[{"id":"1"}]})", kNow).error, "tweet id 1 predates Snowflake ids and has no created_at");
  EXPECT_EQ(r.Parse(R"({"id":"20","created_at":"yesterday"})", kNow).error,
            "\"created_at\" is not a time like 2020-02-14T19:00:55.000Z");
}

// Post URLs, read as parse_post_url() reads them: an X post's URL gives its id; a Bluesky or
// Mastodon post's URL gives its canonical URL (for schedule_posts); a broken URL says what is wrong.
TEST(ImportUrls, LinesCsvAndJson) {
  const std::string url = "https://x.com/someone/status/1595000000000000000?s=20";
  IdReader lines(Format::kLines);
  LineResult x = lines.Parse(" " + url + "\r", kNow);
  ASSERT_TRUE(x.error.empty()) << x.error;
  EXPECT_EQ(x.tweets.at(0).id, kId);
  EXPECT_EQ(lines.Parse("https://twitter.com/i/web/status/1595000000000000001", kNow).tweets.at(0).id, kId + 1);
  LineResult b = lines.Parse("https://bsky.app/profile/Alice.bsky.social/post/3l6oveex3ii2l", kNow);
  ASSERT_TRUE(b.error.empty()) << b.error;
  EXPECT_EQ(b.tweets.at(0).id, 0);
  EXPECT_EQ(b.tweets.at(0).url, "at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l");
  LineResult m = lines.Parse("https://MASTODON.social/users/Gargron/statuses/113310863287398209", kNow);
  ASSERT_TRUE(m.error.empty()) << m.error;
  EXPECT_EQ(m.tweets.at(0).url, "https://mastodon.social/@Gargron/113310863287398209");
  EXPECT_EQ(lines.Parse("https://bsky.app/profile/alice.bsky.social/post/bad!", kNow).error.rfind("not a post URL", 0), 0u);
  EXPECT_EQ(lines.Parse("https://x.com/someone/status/12ab", kNow).error,
            "not a post URL \"https://x.com/someone/status/12ab\": an X post id is a positive number of at most 19 "
            "digits, got \"12ab\"");
  EXPECT_EQ(lines.Parse("https://x.com/i/web/status/20", kNow).error,
            "tweet id 20 predates Snowflake ids and has no created_at");

  IdReader csv(Format::kCsv, "link");
  EXPECT_TRUE(csv.Parse("name,link", kNow).error.empty());
  x = csv.Parse("a,\"" + url + "\"", kNow);
  ASSERT_TRUE(x.error.empty()) << x.error;
  EXPECT_EQ(x.tweets.at(0).id, kId);

  IdReader json(Format::kJsonl);
  x = json.Parse(R"({"url":"https://x.com/someone/status/1595000000000000000"})", kNow);
  ASSERT_TRUE(x.error.empty()) << x.error;
  EXPECT_EQ(x.tweets.at(0).id, kId);
  x = json.Parse(R"({"uri":"https://x.com/someone/status/1595000000000000002","note":"x"})", kNow);
  ASSERT_TRUE(x.error.empty()) << x.error;
  EXPECT_EQ(x.tweets.at(0).id, kId + 2);
  x = json.Parse(R"({"uri":"at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l"})", kNow);
  ASSERT_TRUE(x.error.empty()) << x.error;
  EXPECT_EQ(x.tweets.at(0).url, "at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l");
  EXPECT_EQ(json.Parse(R"({"url":"nope"})", kNow).error, "\"url\" is not a tweet id or post URL");
}

TEST(ImportTime, Timestamps) {
  EXPECT_EQ(ParseTimestampMs("2020-02-14T19:00:55.000Z"), 1581706855000);
  EXPECT_EQ(ParseTimestampMs("2020-02-14T19:00:55Z"), 1581706855000);
  EXPECT_EQ(ParseTimestampMs("2020-02-14 19:00:55.5+00:00"), 1581706855500);
  EXPECT_FALSE(ParseTimestampMs("2020-02-14T19:00:55+02:00"));
  EXPECT_FALSE(ParseTimestampMs("2020-13-14T19:00:55Z"));
  EXPECT_FALSE(ParseTimestampMs("Tue Mar 21 20:50:14 +0000 2006"));
  EXPECT_EQ(SnowflakeMs(kId), (kId >> 22) + 1288834974657);
  EXPECT_FALSE(SnowflakeMs(20));
}

}  // namespace
}  // namespace tweetkeeper::importer
