#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mock_api/mock_config.hpp"

namespace tweetkeeper::mock {

// The deterministic world the mock serves: every id has a fixed fate and metrics that are a
// pure function of (id, age). See README.md for the rules.

// kOmitted: answers leave it out altogether (neither in `data` nor in `errors`; absent from a
// v1.1 map), as Bluesky's and Mastodon's lookups do with posts they will not show.
enum class TweetState { kVisible, kNotFound, kProtected, kOmitted };

struct PublicMetrics {
  int64_t retweet_count = 0;
  int64_t reply_count = 0;
  int64_t like_count = 0;
  int64_t quote_count = 0;
  int64_t bookmark_count = 0;
  int64_t impression_count = 0;
};

constexpr int64_t kTwitterEpochMs = 1288834974657;

// Creation time in Unix ms encoded in a Snowflake id.
int64_t SnowflakeMillis(uint64_t id);

// Ids from before Snowflake (November 2010) encode no time: (id >> 22) is under a day past the
// Twitter epoch (the extension's rule too).
bool PredatesSnowflake(uint64_t id);

// created_at as the API sends it ("2020-02-14T19:00:55.000Z"), or nothing when the mock does
// not know it: a pre-Snowflake id other than 20 (2006-03-21T20:50:14.000Z, FACTS.md).
std::optional<std::string> CreatedAt(uint64_t id);

// The mock's users: a tweet's author (a few thousand of them), and what the API says of one.
uint64_t AuthorOf(uint64_t tweet_id);

// What X says of a mock user, the same in v2's includes.users and v1.1's tweet.user.
struct XUser {
  uint64_t id = 0;
  std::string name;      // a person's name (post_text.cpp)
  std::string username;  // mock_<id>
  std::string description;
  int64_t created_ms = 0;
  int64_t followers = 0;
  int64_t following = 0;
  int64_t tweets = 0;
  int64_t listed = 0;
};
XUser XUserOf(uint64_t user_id);

// The id X gives the user a mention names (a username of post_text.cpp's, not a mock author).
uint64_t MentionedUserId(const std::string& username);

// "2020-02-14T19:00:55.000Z": the API truncates created_at to whole seconds.
std::string FormatCreatedAt(int64_t unix_ms);

// API v1.1's "Tue Mar 21 20:50:14 +0000 2006" (English names whatever the locale).
std::string FormatV1CreatedAt(int64_t unix_ms);

// The Date header's IMF-fixdate (RFC 9110): "Mon, 23 Nov 2026 16:10:19 GMT".
std::string FormatHttpDate(int64_t unix_ms);

TweetState ClassifyTweet(uint64_t id, const MockConfig& config, int64_t now_ms);

// What POST /mock/gone made of post `id` by at_ms: its own state, else its author's (nothing:
// neither was ever changed, or both are active).
std::optional<GoneState> XGone(uint64_t id, const MockConfig& config, int64_t at_ms);

// The state the API answers post `id` with at now_ms: ClassifyTweet's, unless POST /mock/gone
// made it or its author gone (deleted, deactivated: not found; protected, suspended: not
// authorized, as X answers a protected or suspended author's posts, FACTS.md). An omitted id stays
// omitted.
TweetState TweetStateAt(uint64_t id, const MockConfig& config, int64_t now_ms);

// An X post's counts at an age under the engagement model (engagement.hpp), without a file.
PublicMetrics MetricsAt(uint64_t id, int64_t age_seconds);

// Age in whole seconds as the API would see it (created_at is truncated to seconds).
int64_t AgeSeconds(uint64_t id, int64_t now_ms);

}  // namespace tweetkeeper::mock
