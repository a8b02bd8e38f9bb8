// tweetkeeper-export --format dataset's files without the database: SHA256SUMS as sha256sum writes
// and reads it, the SHA-256 of a file, and the datasheet's Markdown from its JSON.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "export/dataset.hpp"

namespace tweetkeeper::exporter {
namespace {

TEST(DatasetSums, Sha256OfAFile) {
  char path[] = "/tmp/tk-dataset-test.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "abc", 3), 3);
  close(fd);
  // FIPS 180-2, appendix B.1: SHA-256("abc").
  EXPECT_EQ(Sha256File(path), std::optional<std::string>(
                                  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
  std::remove(path);
  EXPECT_EQ(Sha256File(path), std::nullopt);
}

TEST(DatasetSums, WrittenAsSha256sumAndReadBack) {
  const std::string hex(64, 'a'), other(64, '0');
  const std::string text = SumsText({{"x_ids.txt", hex}, {"history.csv", other}});
  EXPECT_EQ(text, hex + "  x_ids.txt\n" + other + "  history.csv\n");
  std::string error;
  const auto sums = ParseSums(text, &error);
  ASSERT_TRUE(sums) << error;
  EXPECT_EQ(sums->size(), 2u);
  EXPECT_EQ(sums->at("x_ids.txt"), hex);
  // sha256sum's binary mode marks the name with '*'; CRLF endings and blank lines are read.
  const auto binary = ParseSums(hex + " *curves.csv\r\n\n", &error);
  ASSERT_TRUE(binary) << error;
  EXPECT_EQ(binary->at("curves.csv"), hex);
}

TEST(DatasetSums, BadLinesNamed) {
  const std::string hex(64, 'b');
  std::string error;
  EXPECT_FALSE(ParseSums(hex + "  a\n" + std::string(63, 'b') + "  b\n", &error));
  EXPECT_EQ(error, "SHA256SUMS:2: not \"<64 hex digits>  <file>\"");
  EXPECT_FALSE(ParseSums(std::string(64, 'B') + "  a\n", &error));  // sha256sum writes lower case
  EXPECT_FALSE(ParseSums(hex + "  ../secret\n", &error));
  EXPECT_EQ(error, "SHA256SUMS:1: a file outside the dataset's directory: ../secret");
  EXPECT_FALSE(ParseSums(hex + "  ..\n", &error));
  EXPECT_FALSE(ParseSums(hex + "  a\n" + hex + "  a\n", &error));
  EXPECT_EQ(error, "SHA256SUMS:2: a is listed twice");
}

TEST(Datasheet, MarkdownHasTheSectionsAndTheNumbers) {
  const std::string json = R"({"format": "tweetkeeper-dataset 1", "name": "study", "exported_at": "2026-11-29T21:00:00.000Z",
    "exported_by": "tweetkeeper-export 0.3.0", "curves_ages": "1h,1d",
    "selection": {"collection": "study", "network": null, "since": null, "until": null, "ids_file": false},
    "composition": {"posts": 3, "by_network": {"x": 1, "bluesky": 1, "mastodon": 1}, "observations": 9},
    "collection_process": {"first_observation": "2026-11-29T20:00:00.000Z", "last_observation": "2026-11-29T20:59:00.000Z",
      "posts_created_from": "a", "posts_created_to": "b", "refresh_policy": "age",
      "age_policy": [{"max_age": "00:05:00", "delay": "00:00:06"}], "adaptive": null, "own_policy": null},
    "collections": [{"name": "a|b", "kind": "tag", "created_at": "t", "posts": 3}],
    "survival": {"selected": 5, "available": 3, "gone": 2,
                 "gone_by_reason": [{"network": "x", "reason": "deleted", "detail": "resource-not-found", "posts": 2}]},
    "mortality_by_age": [], "terms": {"x": "X says", "bluesky": "Bluesky says", "mastodon": "Mastodon says"}})";
  std::string error;
  const auto md = DatasheetMarkdown(json, &error);
  ASSERT_TRUE(md) << error;
  for (const char* part : {"# Datasheet: study\n", "## Motivation", "## Composition", "## Collection process",
                           "## Preprocessing, cleaning, removals", "## Uses", "## Distribution", "## Maintenance",
                           "3 posts (1 X post ids", "Of the 5 posts selected, 3 are in it and 2 were left out",
                           "| x | deleted | resource-not-found | 2 |", "| 00:05:00 | 00:00:06 |",
                           "| a\\|b | tag | t | 3 |", "- X says\n- Bluesky says\n- Mastodon says\n",
                           "collection study):\n\n(none)"}) {
    EXPECT_NE(md->find(part), std::string::npos) << part << "\n" << *md;
  }
  EXPECT_FALSE(DatasheetMarkdown("[1]", &error));
  EXPECT_EQ(error, "datasheet.json is no JSON object");
  EXPECT_FALSE(DatasheetMarkdown("{", &error));
}

}  // namespace
}  // namespace tweetkeeper::exporter
