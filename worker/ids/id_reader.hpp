#pragma once
// Ids read from files, as tweetkeeper-import takes them (and tweetkeeper-export --ids), line by
// line, without I/O (unit-tested): one id per line, CSV with a named column, or JSON lines of
// tweets as the X API and twarc2 write them (a tweet per line, or a whole response page
// {"data": [tweets...]} per line). Each line gives tweets, or the reason it is bad.

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tweetkeeper::importer {

enum class Format { kLines, kCsv, kJsonl };

struct Tweet {
  std::int64_t id = 0;
  std::optional<std::int64_t> created_at_ms;  // from the input, when it says (JSON lines)
  // A Bluesky or Mastodon post (id 0): its URL in one canonical spelling, for schedule_posts().
  std::string url;
};

struct LineResult {
  std::vector<Tweet> tweets;  // zero or more (a JSON page holds many; a blank line none)
  std::string error;          // why the line is bad; empty when it is good
};

// The longest line read (bytes, without its newline): an API answer page per line, as twarc2
// writes them, is at most the 16 MiB the worker takes from an API.
constexpr std::size_t kMaxLineBytes = 16u << 20;

enum class LineRead { kLine, kTooLong, kEnd };

// Reads the next line of `in` into `line` (a view into `buffer`, valid until the next call), its
// '\n' and any '\r' before it left out. A line longer than buffer.size() - 1 bytes is skipped to
// its end and kTooLong returned: nothing reads more than that into memory. kEnd: no more lines.
LineRead ReadLine(std::istream& in, std::vector<char>& buffer, std::string_view* line);

// A piece of a line for a message: at most 40 characters, control characters and bytes that are
// not UTF-8 as \xNN, so that a bad line cannot write to the terminal what it wants.
std::string Shown(std::string_view s);

// Snowflake ids encode their creation time from 2010-11-04; smaller ones do not.
std::optional<std::int64_t> SnowflakeMs(std::int64_t id);

// Checks what schedule_tweets/schedule_tweet would refuse, so that one bad line is reported
// with its number instead of failing the whole chunk: a non-positive id, an id from before
// Snowflake without created_at, a creation time in the future or before the first tweet.
std::string TweetError(const Tweet& t, std::int64_t now_ms);

class IdReader {
 public:
  // csv_column: the CSV header's column with the ids (Format::kCsv only).
  IdReader(Format format, std::string csv_column = "id");

  // One line (without its newline). The first line of a CSV is its header: it gives no tweet,
  // and an error if the column is not in it.
  LineResult Parse(std::string_view line, std::int64_t now_ms);

  bool header_seen() const { return header_seen_; }
  // False once a CSV header without the id column was read: nothing after it can be imported.
  bool usable() const { return format_ != Format::kCsv || !header_seen_ || column_index_ >= 0; }

 private:
  LineResult ParseCsv(std::string_view line, std::int64_t now_ms);
  LineResult ParseJson(std::string_view line, std::int64_t now_ms);

  Format format_;
  std::string csv_column_;
  bool header_seen_ = false;
  int column_index_ = -1;
  std::size_t created_index_ = std::string::npos;  // a created_at column, if the header has one
};

// Splits one CSV record (RFC 4180: quoted fields, "" inside quotes); nullopt if a quote is open.
std::optional<std::vector<std::string>> SplitCsv(std::string_view line);

// "2020-02-14T19:00:55.000Z" (the API's form; fraction and zone suffix optional, zone Z or
// +00:00) to Unix milliseconds; nullopt if not that.
std::optional<std::int64_t> ParseTimestampMs(std::string_view text);

}  // namespace tweetkeeper::importer
