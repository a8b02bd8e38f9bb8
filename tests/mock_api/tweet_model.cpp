#include "mock_api/tweet_model.hpp"

#include "mock_api/engagement.hpp"
#include "mock_api/post_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "mock_api/mix.hpp"

namespace tweetkeeper::mock {

int64_t SnowflakeMillis(uint64_t id) { return static_cast<int64_t>(id >> 22) + kTwitterEpochMs; }

bool PredatesSnowflake(uint64_t id) { return (id >> 22) < 86'400'000; }

std::optional<std::string> CreatedAt(uint64_t id) {
  if (id == 20) return "2006-03-21T20:50:14.000Z";  // "just setting up my twttr"
  if (PredatesSnowflake(id)) return std::nullopt;
  return FormatCreatedAt(SnowflakeMillis(id));
}

uint64_t AuthorOf(uint64_t tweet_id) { return 100000 + Mix(tweet_id ^ 0x5eed) % 5000; }

XUser XUserOf(uint64_t user) {
  XUser u;
  u.id = user;
  u.name = MockDisplayName(user);
  u.username = "mock_" + std::to_string(user);
  u.description = MockBio(user);
  u.created_ms = kTwitterEpochMs + static_cast<int64_t>(user % 1000) * 86'400'000;
  u.followers = static_cast<int64_t>(user % 977) * 13;
  u.following = static_cast<int64_t>(user % 331);
  u.tweets = static_cast<int64_t>(user % 4999) + 1;
  u.listed = static_cast<int64_t>(user % 17);
  return u;
}

uint64_t MentionedUserId(const std::string& username) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : username) h = (h ^ c) * 1099511628211ULL;
  return 200000 + Mix(h) % 800000;
}

std::string FormatCreatedAt(int64_t unix_ms) {
  const std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
  return buf;
}

namespace {
const char* const kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
}  // namespace

std::string FormatHttpDate(int64_t unix_ms) {
  const std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday], tm.tm_mday,
                kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string FormatV1CreatedAt(int64_t unix_ms) {
  const std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s %s %02d %02d:%02d:%02d +0000 %04d", kDays[tm.tm_wday], kMonths[tm.tm_mon],
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, tm.tm_year + 1900);
  return buf;
}

TweetState ClassifyTweet(uint64_t id, const MockConfig& config, int64_t now_ms) {
  if (config.omitted_every != 0 && id % config.omitted_every == 13) return TweetState::kOmitted;
  if (SnowflakeMillis(id) > now_ms) return TweetState::kNotFound;  // not posted yet
  if (config.deleted_every != 0 && id % config.deleted_every == 7) return TweetState::kNotFound;
  if (config.protected_every != 0 && id % config.protected_every == 11) return TweetState::kProtected;
  return TweetState::kVisible;
}

std::optional<GoneState> XGone(uint64_t id, const MockConfig& config, int64_t at_ms) {
  const int64_t at_us = at_ms * 1000 + 999;  // the whole millisecond
  for (const std::optional<GoneState>& s : {config.gone->XPost(id, at_us), config.gone->XUser(AuthorOf(id), at_us)}) {
    if (s && s->reason != GoneReason::kActive) return s;
  }
  return std::nullopt;
}

TweetState TweetStateAt(uint64_t id, const MockConfig& config, int64_t now_ms) {
  const TweetState state = ClassifyTweet(id, config, now_ms);
  if (state == TweetState::kOmitted) return state;
  if (const std::optional<GoneState> gone = XGone(id, config, now_ms)) {
    return gone->reason == GoneReason::kProtected || gone->reason == GoneReason::kSuspended ? TweetState::kProtected
                                                                                           : TweetState::kNotFound;
  }
  return state;
}

int64_t AgeSeconds(uint64_t id, int64_t now_ms) {
  return std::max<int64_t>(0, now_ms / 1000 - SnowflakeMillis(id) / 1000);
}

PublicMetrics MetricsAt(uint64_t id, int64_t age_seconds) {
  return LifeAt(Network::kX, DrawLife(Network::kX, id), static_cast<double>(std::max<int64_t>(age_seconds, 0)));
}

}  // namespace tweetkeeper::mock
