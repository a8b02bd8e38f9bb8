#pragma once
// A moment as RFC 3339 in UTC to the second, "2023-11-14T22:13:20Z": as WARC-Date wants it and
// as X's start_time reads it; and an HTTP Date header (RFC 9110's IMF-fixdate) read back.
// Header-only.

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace tweetkeeper::worker {

inline std::string Rfc3339Utc(std::time_t secs) {
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// "Sun, 06 Nov 1994 08:49:37 GMT" as Unix seconds; nothing for any other form (the obsolete
// forms RFC 9110 lets a recipient accept are not sent by the services we read).
inline std::optional<std::int64_t> ParseHttpDate(std::string_view s) {
  static constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  if (s.size() != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' || s[19] != ':' ||
      s[22] != ':' || s.substr(25) != " GMT")
    return std::nullopt;
  const auto number = [&s](std::size_t at, std::size_t n) -> int {
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return -1;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  const std::size_t month = kMonths.find(s.substr(8, 3));
  const int day = number(5, 2), year = number(12, 4), hour = number(17, 2), minute = number(20, 2),
            second = number(23, 2);
  if (month == std::string_view::npos || month % 3 != 0 || day < 1 || day > 31 || year < 1970 || hour > 23 ||
      minute > 59 || second > 60 || hour < 0 || minute < 0 || second < 0)
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = static_cast<int>(month / 3);
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<std::int64_t>(timegm(&tm));
}

}  // namespace tweetkeeper::worker
