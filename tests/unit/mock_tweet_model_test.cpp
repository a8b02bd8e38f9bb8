#include <gtest/gtest.h>

#include "mock_api/tweet_model.hpp"
#include "mock_test_config.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kNow = 1704067200000;  // 2024-01-01T00:00:00Z

// An id created at unix_ms whose low bits make it land where the test wants it.
uint64_t IdAt(int64_t unix_ms, uint64_t low = 0) {
  return (static_cast<uint64_t>(unix_ms - kTwitterEpochMs) << 22) + low;
}

TEST(MockTweetModel, CreatedAtComesFromTheSnowflake) {
  EXPECT_EQ(SnowflakeMillis(1228393702244134912ULL), 1581706855723);
  EXPECT_EQ(FormatCreatedAt(SnowflakeMillis(1228393702244134912ULL)), "2020-02-14T19:00:55.000Z");
  EXPECT_EQ(FormatCreatedAt(SnowflakeMillis(20)), "2010-11-04T01:42:54.000Z");
  EXPECT_EQ(FormatV1CreatedAt(SnowflakeMillis(1228393702244134912ULL)), "Fri Feb 14 19:00:55 +0000 2020");
  EXPECT_EQ(FormatV1CreatedAt(1142974214000), "Tue Mar 21 20:50:14 +0000 2006");  // FACTS.md's example
  EXPECT_EQ(FormatV1CreatedAt(kNow + 86400000LL * 9 + 5000), "Wed Jan 10 00:00:05 +0000 2024");
  // Measured from created_at, which is truncated: 90.5 s after ...09.5 is 91 s after ...09.
  EXPECT_EQ(AgeSeconds(IdAt(kNow - 90500), kNow), 91);
}

TEST(MockTweetModel, ClassifiesByResidue) {
  MockConfig config;
  const uint64_t base = IdAt(kNow - 86400000);
  uint64_t deleted = base, protect = base, visible = base;
  while (deleted % 53 != 7) ++deleted;
  while (protect % 61 != 11 || protect % 53 == 7) ++protect;
  while (visible % 53 == 7 || visible % 61 == 11) ++visible;
  EXPECT_EQ(ClassifyTweet(deleted, config, kNow), TweetState::kNotFound);
  EXPECT_EQ(ClassifyTweet(protect, config, kNow), TweetState::kProtected);
  EXPECT_EQ(ClassifyTweet(visible, config, kNow), TweetState::kVisible);
  EXPECT_EQ(ClassifyTweet(1597, config, kNow), TweetState::kNotFound);  // both rules match: deleted wins

  config.deleted_every = 0;
  config.protected_every = 0;
  EXPECT_EQ(ClassifyTweet(deleted, config, kNow), TweetState::kVisible);
  EXPECT_EQ(ClassifyTweet(protect, config, kNow), TweetState::kVisible);
}

TEST(MockTweetModel, FutureTweetsAreNotFound) {
  const MockConfig config = NoFates();
  EXPECT_EQ(ClassifyTweet(IdAt(kNow + 1000), config, kNow), TweetState::kNotFound);
  EXPECT_EQ(ClassifyTweet(IdAt(kNow + 1000), config, kNow + 1000), TweetState::kVisible);
}

TEST(MockTweetModel, MetricsAreDeterministicAndMonotonic) {
  // A post with engagement (most have none: tests/unit/mock_engagement_test.cpp).
  uint64_t id = 1228393702244134912ULL;
  while (MetricsAt(id, 30 * 86400).like_count < 20) ++id;
  EXPECT_EQ(MetricsAt(id, 0).like_count, 0);
  EXPECT_EQ(MetricsAt(id, 0).impression_count, 0);
  PublicMetrics previous = MetricsAt(id, 0);
  for (int64_t age = 60; age <= 30 * 86400; age += 600) {
    const PublicMetrics m = MetricsAt(id, age);
    EXPECT_GE(m.like_count, previous.like_count) << "age " << age;
    EXPECT_GE(m.retweet_count, previous.retweet_count) << "age " << age;
    EXPECT_GE(m.reply_count, previous.reply_count) << "age " << age;
    EXPECT_GE(m.quote_count, previous.quote_count) << "age " << age;
    EXPECT_GE(m.bookmark_count, previous.bookmark_count) << "age " << age;
    EXPECT_GE(m.impression_count, previous.impression_count) << "age " << age;
    previous = m;
  }
  EXPECT_GT(MetricsAt(id, 30 * 86400).like_count, MetricsAt(id, 60).like_count);
  EXPECT_LT(MetricsAt(id, 40 * 86400).impression_count, int64_t{1} << 31);
  EXPECT_EQ(MetricsAt(id, 7200).like_count, MetricsAt(id, 7200).like_count);
}

TEST(MockTweetModel, MetricsDifferPerId) {
  // Views: every X post has some, so neighbouring ids with unrelated lives differ.
  int differing = 0;
  for (uint64_t id = 1000; id < 1100; ++id) {
    differing += MetricsAt(id, 5 * 86400).impression_count != MetricsAt(id + 1, 5 * 86400).impression_count;
  }
  EXPECT_GE(differing, 95);
}

}  // namespace
}  // namespace tweetkeeper::mock
