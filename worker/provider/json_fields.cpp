#include "provider/json_fields.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <charconv>

namespace tweetkeeper::worker {

namespace {

// The length of the UTF-8 character at p as PostgreSQL takes it (no NUL, overlong form,
// surrogate or code point above U+10FFFF); 0 when there is none.
std::size_t PgCharLength(const unsigned char* p, const unsigned char* end) {
  const unsigned char c = *p;
  if (c == 0) return 0;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c < 0x80) {
    return 1;
  } else if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  }
  bool valid = n != 0 && static_cast<std::size_t>(end - p) >= n && p[1] >= lo && p[1] <= hi;
  for (std::size_t i = 2; valid && i < n; ++i) valid = (p[i] & 0xC0) == 0x80;
  return valid ? n : 0;
}

}  // namespace

// Text from the API as PostgreSQL stores it: valid UTF-8 without NUL, at most `max_bytes`, cut
// at a character boundary. RapidJSON 1.1 validates the raw bytes but turns a lone surrogate
// escape ("\udc00") into ED B0 80, which PostgreSQL refuses: such bytes become U+FFFD.
std::string CleanText(std::string_view text, std::size_t max_bytes) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(std::min(text.size(), max_bytes));
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* const end = p + text.size();
  while (p < end) {
    if (*p == 0) {
      ++p;
      continue;
    }
    const std::size_t n = PgCharLength(p, end);
    const std::string_view ch = n ? std::string_view(reinterpret_cast<const char*>(p), n) : kReplacement;
    if (out.size() + ch.size() > max_bytes) break;
    out.append(ch);
    p += n ? n : 1;
  }
  return out;
}

bool PgText(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* const end = p + text.size();
  while (p < end) {
    const std::size_t n = PgCharLength(p, end);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

bool PgStorable(const rapidjson::Value& value) {
  if (value.IsString()) return PgText({value.GetString(), value.GetStringLength()});
  if (value.IsArray()) {
    for (const auto& item : value.GetArray()) {
      if (!PgStorable(item)) return false;
    }
  } else if (value.IsObject()) {
    for (const auto& member : value.GetObject()) {
      if (!PgStorable(member.name) || !PgStorable(member.value)) return false;
    }
  }
  return true;
}

// Printable ASCII prefix of a body that is not JSON (an HTML error page from a proxy, ...).
std::string Snippet(std::string_view body) {
  std::string out;
  for (char c : body) {
    if (out.size() >= 120) {
      out += "...";
      break;
    }
    out.push_back(c >= 0x20 && c < 0x7f ? c : ' ');
  }
  return out;
}

std::string_view StringMember(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return {};
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsString()) return {};
  return {it->value.GetString(), it->value.GetStringLength()};
}

std::optional<std::int64_t> CountMember(const rapidjson::Value& object, const char* name, std::string* invalid) {
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || it->value.IsNull()) return std::nullopt;
  const rapidjson::Value& v = it->value;
  if (v.IsInt64() && v.GetInt64() >= 0 && v.GetInt64() <= kMaxCount) return v.GetInt64();
  rapidjson::StringBuffer sent;
  rapidjson::Writer<rapidjson::StringBuffer> writer(sent);
  v.Accept(writer);
  if (!invalid->empty()) *invalid += ", ";
  *invalid += name;
  *invalid += ' ';
  *invalid += CleanText({sent.GetString(), sent.GetSize()}, 40);
  return std::nullopt;
}

std::string ProblemType(std::string_view type_url) {
  constexpr std::string_view kMarker = "/2/problems/";
  auto pos = type_url.find(kMarker);
  std::string_view type = pos == std::string_view::npos ? type_url : type_url.substr(pos + kMarker.size());
  std::string out = CleanText(type, 100);
  return out.empty() ? "unknown" : out;
}

std::optional<std::int64_t> ParseTweetId(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

std::string JsonText(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace tweetkeeper::worker
