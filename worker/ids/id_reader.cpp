#include "ids/id_reader.hpp"
#include "json/bounded.hpp"

#include <rapidjson/document.h>

#include <charconv>
#include <ctime>
#include <limits>

#include "post_url.hpp"

namespace tweetkeeper::importer {
namespace {

constexpr std::int64_t kTwitterEpochMs = 1288834974657;
constexpr std::int64_t kSnowflakeMinTimestamp = 86400000;  // as derived_created_at(): ids >> 22 below this encode no time
constexpr std::int64_t kFirstTweetMs = 1142974214000;      // 2006-03-21 20:50:14 UTC
constexpr std::int64_t kGraceMs = 60'000;                  // clocks that disagree with Twitter's

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::optional<std::int64_t> ParseId(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}


// An id, or a post's URL read by the extension's own parser (what parse_post_url() accepts): an
// X post's id, or a Bluesky or Mastodon post's canonical URL (id 0). Empty with `why` set when
// the text is a URL but not a post's; empty with `why` empty when it is neither an id nor a URL.
std::optional<Tweet> IdOrPostUrl(std::string_view s, std::string* why) {
  s = Trim(s);
  why->clear();
  if (std::optional<std::int64_t> id = ParseId(s)) return Tweet{*id, std::nullopt, ""};
  if (s.find("://") == std::string_view::npos) return std::nullopt;
  try {
    const PostRef ref = ParsePostUrl(s);
    if (ref.network != Network::kX) return Tweet{0, std::nullopt, ref.canonical};
    if (std::optional<std::int64_t> id = ParseId(ref.key)) return Tweet{*id, std::nullopt, ""};
  } catch (const PostUrlError& e) {
    *why = e.what();
  }
  return std::nullopt;
}

LineResult One(Tweet t, std::int64_t now_ms) {
  LineResult r;
  r.error = TweetError(t, now_ms);
  if (r.error.empty()) r.tweets.push_back(t);
  return r;
}

LineResult Bad(std::string why) {
  LineResult r;
  r.error = std::move(why);
  return r;
}

// A tweet object of the API (v2: "id" as a string; v1.1: "id_str" or a number "id").
std::optional<Tweet> TweetOf(const rapidjson::Value& v, std::string& error) {
  if (!v.IsObject()) {
    error = "not a JSON object";
    return std::nullopt;
  }
  Tweet t;
  const char* id_key = v.HasMember("id")       ? "id"
                       : v.HasMember("id_str") ? "id_str"
                       : v.HasMember("url")    ? "url"
                       : v.HasMember("uri")    ? "uri"
                                               : nullptr;
  if (!id_key) {
    error = "no \"id\", \"url\" or \"uri\" field";
    return std::nullopt;
  }
  const rapidjson::Value& id = v[id_key];
  std::optional<Tweet> parsed;
  std::string why;
  if (id.IsString())
    parsed = IdOrPostUrl(std::string_view(id.GetString(), id.GetStringLength()), &why);
  else if (id.IsInt64())
    parsed = Tweet{id.GetInt64(), std::nullopt, ""};
  if (!parsed) {
    error = why.empty() ? "\"" + std::string(id_key) + "\" is not a tweet id or post URL" : why;
    return std::nullopt;
  }
  t = *parsed;
  if (v.HasMember("created_at") && v["created_at"].IsString()) {
    const rapidjson::Value& c = v["created_at"];
    t.created_at_ms = ParseTimestampMs(std::string_view(c.GetString(), c.GetStringLength()));
    if (!t.created_at_ms) {
      error = "\"created_at\" is not a time like 2020-02-14T19:00:55.000Z";
      return std::nullopt;
    }
  }
  return t;
}

}  // namespace

LineRead ReadLine(std::istream& in, std::vector<char>& buffer, std::string_view* line) {
  // (istream::getline into a buffer: libstdc++ scans it for the newline in bulk, unlike a loop
  // over characters, and it stops at the buffer's size.)
  in.getline(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  const auto n = static_cast<std::size_t>(in.gcount());
  if (in.fail() && !in.eof() && n + 1 == buffer.size()) {  // the buffer filled before the newline
    in.clear();
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    *line = {};
    return LineRead::kTooLong;
  }
  if (n == 0 && in.fail()) return LineRead::kEnd;  // nothing left (an empty line counts 1: its '\n')
  std::size_t size = in.eof() ? n : n - 1;  // (gcount counts the '\n' it took, not stored)
  if (size > 0 && buffer[size - 1] == '\r') --size;
  *line = std::string_view(buffer.data(), size);
  return LineRead::kLine;
}

std::string Shown(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  std::size_t chars = 0;
  for (std::size_t i = 0; i < s.size();) {
    if (++chars > 40) return out + "...";
    const auto c = static_cast<unsigned char>(s[i]);
    // The length of a well-formed UTF-8 sequence starting here (1 for ASCII), or 0.
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 && c >= 0xc2 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e && c <= 0xf4 ? 4 : 0;
    for (std::size_t k = 1; k < len; ++k)
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) len = 0;
    if (len == 0 || c < 0x20 || c == 0x7f || c == '\\') {
      out += c == '\\' ? "\\\\" : std::string("\\x") + kHex[c >> 4] + kHex[c & 0xf];
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::optional<std::int64_t> SnowflakeMs(std::int64_t id) {
  if (id <= 0 || (id >> 22) < kSnowflakeMinTimestamp) return std::nullopt;
  return (id >> 22) + kTwitterEpochMs;
}

std::string TweetError(const Tweet& t, std::int64_t now_ms) {
  if (!t.url.empty()) {  // a Bluesky or Mastodon post: its key gives its time (an estimate)
    if (t.created_at_ms && *t.created_at_ms > now_ms + kGraceMs) return "post " + t.url + " was created in the future";
    return "";
  }
  if (t.id <= 0) return "tweet id must be positive, got " + std::to_string(t.id);
  // A Snowflake id's own time wins, as schedule_tweets derives it; created_at is needed only
  // for ids that encode none.
  const std::optional<std::int64_t> created = SnowflakeMs(t.id) ? SnowflakeMs(t.id) : t.created_at_ms;
  if (!created) return "tweet id " + std::to_string(t.id) + " predates Snowflake ids and has no created_at";
  if (*created > now_ms + kGraceMs) return "tweet " + std::to_string(t.id) + " was created in the future";
  if (*created < kFirstTweetMs)
    return "tweet " + std::to_string(t.id) + " was created before the first tweet (2006-03-21)";
  return "";
}

IdReader::IdReader(Format format, std::string csv_column) : format_(format), csv_column_(std::move(csv_column)) {}

LineResult IdReader::Parse(std::string_view line, std::int64_t now_ms) {
  if (format_ == Format::kCsv) return ParseCsv(line, now_ms);
  if (Trim(line).empty()) return {};
  if (format_ == Format::kJsonl) return ParseJson(line, now_ms);
  std::string why;
  const std::optional<Tweet> t = IdOrPostUrl(line, &why);
  if (!t) return Bad(why.empty() ? "not a tweet id or post URL: '" + Shown(Trim(line)) + "'" : why);
  return One(*t, now_ms);
}

LineResult IdReader::ParseCsv(std::string_view line, std::int64_t now_ms) {
  const auto fields = SplitCsv(line);
  if (!header_seen_) {
    header_seen_ = true;
    if (!fields) return Bad("the CSV header has an unclosed quote");
    for (std::size_t i = 0; i < fields->size(); ++i) {
      if (std::string_view(Trim((*fields)[i])) == csv_column_) column_index_ = static_cast<int>(i);
      if (std::string_view(Trim((*fields)[i])) == "created_at") created_index_ = i;
    }
    if (column_index_ < 0) return Bad("the CSV header has no column '" + csv_column_ + "' (--column)");
    return {};
  }
  if (column_index_ < 0) return Bad("no id column (see the header's error)");
  if (Trim(line).empty()) return {};
  if (!fields) return Bad("unclosed quote");
  if (static_cast<std::size_t>(column_index_) >= fields->size())
    return Bad("no field " + std::to_string(column_index_ + 1) + " ('" + csv_column_ + "')");
  std::string why;
  const std::optional<Tweet> parsed = IdOrPostUrl((*fields)[column_index_], &why);
  if (!parsed)
    return Bad(why.empty()
                   ? "'" + csv_column_ + "' is not a tweet id or post URL: '" + Shown((*fields)[column_index_]) + "'"
                   : why);
  Tweet t = *parsed;
  if (created_index_ < fields->size() && !Trim((*fields)[created_index_]).empty()) {
    t.created_at_ms = ParseTimestampMs(Trim((*fields)[created_index_]));
    if (!t.created_at_ms) return Bad("created_at is not a time like 2020-02-14T19:00:55.000Z");
  }
  return One(t, now_ms);
}

LineResult IdReader::ParseJson(std::string_view line, std::int64_t now_ms) {
  rapidjson::Document doc;
  const std::string parse_error = json::Parse(doc, line);
  if (!parse_error.empty()) return Bad("not JSON (" + parse_error + ")");
  LineResult r;
  std::string error;
  if (doc.IsObject() && doc.HasMember("data") && doc["data"].IsArray()) {  // a response page
    for (const auto& v : doc["data"].GetArray()) {
      std::optional<Tweet> t = TweetOf(v, error);
      if (!t) return Bad("a tweet in \"data\": " + error);
      if (std::string e = TweetError(*t, now_ms); !e.empty()) return Bad(e);
      r.tweets.push_back(*t);
    }
    return r;
  }
  std::optional<Tweet> t = TweetOf(doc, error);
  if (!t) return Bad(error);
  return One(*t, now_ms);
}

std::optional<std::vector<std::string>> SplitCsv(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  if (quoted) return std::nullopt;
  return fields;
}

std::optional<std::int64_t> ParseTimestampMs(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.fff][Z|+00:00]
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') || s[13] != ':' || s[16] != ':')
    return std::nullopt;
  auto num = [&](std::size_t pos, std::size_t len) -> std::optional<int> {
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, v);
    if (ec != std::errc() || end != s.data() + pos + len) return std::nullopt;
    return v;
  };
  const auto year = num(0, 4), month = num(5, 2), day = num(8, 2), hour = num(11, 2), minute = num(14, 2),
             second = num(17, 2);
  if (!year || !month || !day || !hour || !minute || !second || *month < 1 || *month > 12 || *day < 1 || *day > 31 ||
      *hour > 23 || *minute > 59 || *second > 60)
    return std::nullopt;
  std::size_t pos = 19;
  std::int64_t ms = 0;
  if (pos < s.size() && s[pos] == '.') {
    std::size_t digits = 0;
    for (++pos; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, ++digits) {
      if (digits < 3) ms = ms * 10 + (s[pos] - '0');
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 3; ++digits) ms *= 10;
  }
  const std::string_view zone = s.substr(pos);
  if (!(zone == "Z" || zone == "+00:00" || zone == "+0000" || zone.empty())) return std::nullopt;
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  return static_cast<std::int64_t>(timegm(&tm)) * 1000 + ms;
}

}  // namespace tweetkeeper::importer
