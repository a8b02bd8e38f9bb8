#pragma once
// A moment as RFC 3339 in UTC to the second, "2023-11-14T22:13:20Z": as WARC-Date wants it and
// as X's start_time reads it. Header-only.

#include <ctime>
#include <string>

namespace tweetkeeper::worker {

inline std::string Rfc3339Utc(std::time_t secs) {
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace tweetkeeper::worker
