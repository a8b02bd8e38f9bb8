#pragma once
// Helpers every provider's parser shares: text from an API made safe for logs and PostgreSQL,
// tweet ids as the API sends them, and the problem type of an X problem URL.

#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tweetkeeper::worker {

constexpr std::size_t kMaxTextBytes = 500;  // details are for humans; keep rows and logs small

// Text from the API as PostgreSQL stores it: valid UTF-8 without NUL, at most `max_bytes`, cut
// at a character boundary; invalid sequences become U+FFFD.
std::string CleanText(std::string_view text, std::size_t max_bytes = kMaxTextBytes);

// Whether PostgreSQL takes this text as it is (valid UTF-8 without NUL), and every string of a
// JSON value, keys included (jsonb refuses the rest; RapidJSON lets "\u0000" and lone surrogate
// escapes through).
bool PgText(std::string_view text);
bool PgStorable(const rapidjson::Value& value);

// Printable ASCII prefix (120 bytes) of a body that is not JSON (an HTML error page, ...).
std::string Snippet(std::string_view body);

// A string member of a JSON object; empty if absent, not a string or `object` is no object.
std::string_view StringMember(const rapidjson::Value& object, const char* name);

// The largest count taken as one: a thousand times the views of the most viewed post.
constexpr std::int64_t kMaxCount = 1'000'000'000'000;

// A count member: an integer in [0, kMaxCount]. Absent or null: "not sent" (nullopt). Anything
// else (negative, fractional, too large, a string, ...) is no count either: nullopt, and
// "name <the value as sent>" is appended to *invalid (", "-separated), to be reported.
std::optional<std::int64_t> CountMember(const rapidjson::Value& object, const char* name, std::string* invalid);

// "https://api.twitter.com/2/problems/resource-not-found" -> "resource-not-found" (any host);
// a type without "/2/problems/" (e.g. "about:blank") is kept whole; empty -> "unknown".
std::string ProblemType(std::string_view type_url);

// A decimal tweet id as the API sends it: 1..19 digits that fit in int64, > 0.
std::optional<std::int64_t> ParseTweetId(std::string_view text);

// A JSON value written out again, compact (a post's object as the API gave it, for payloads).
std::string JsonText(const rapidjson::Value& value);

}  // namespace tweetkeeper::worker
