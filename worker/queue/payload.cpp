#include "queue/payload.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>
#include <cstdio>
#include <ctime>

#include "json/bounded.hpp"
#include "json/write.hpp"

namespace tweetkeeper::worker {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void Count(JsonWriter& w, const char* name, const std::optional<std::int64_t>& value) {
  w.Key(name);
  if (value) {
    w.Int64(*value);
  } else {
    w.Null();
  }
}

// "2024-10-01T12:00:00.123Z", which timestamptz reads.
std::string IsoMillis(std::int64_t unix_ms) {
  const std::int64_t secs = unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000;
  const std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(unix_ms - secs * 1000));
  return buf;
}

// A JSON array of one object per item, whose members write_members(w, item) writes.
template <class Item, class WriteMembers>
std::string ArrayOfObjects(const std::vector<Item>& items, WriteMembers write_members) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartArray();
  for (const Item& item : items) {
    w.StartObject();
    write_members(w, item);
    w.EndObject();
  }
  w.EndArray();
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace

std::string ObservationsJson(const std::vector<Observation>& observations) {
  return ArrayOfObjects(observations, [](JsonWriter& w, const Observation& o) {
    json::Member(w, "id", o.id);
    for (const CountField& field : kCountFields) Count(w, field.name, o.metrics.*field.member);
    if (!o.invalid.empty()) json::Member(w, "invalid", o.invalid);
    if (o.created_ms) json::Member(w, "created_at", IsoMillis(*o.created_ms));
    if (o.as_of_ms) json::Member(w, "as_of", IsoMillis(*o.as_of_ms));
    // The provider's own JSON text, parsed from the answer and written by rapidjson: valid.
    if (!o.payload.empty()) {
      w.Key("payload");
      w.RawValue(o.payload.data(), o.payload.size(), rapidjson::kObjectType);
    }
    if (!o.author.empty()) {
      w.Key("author");
      w.RawValue(o.author.data(), o.author.size(), rapidjson::kObjectType);
    }
    if (!o.payload.empty() && !o.content_hash.empty()) json::Member(w, "content_hash", o.content_hash);
    if (o.newest_id) json::Member(w, "newest_id", *o.newest_id);
  });
}

std::string ArrayLiteral(const std::vector<std::int64_t>& ids) {
  std::string s;
  s.reserve(ids.size() * 20 + 2);
  s += '{';
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  s += '}';
  return s;
}

std::string TextArrayLiteral(const std::vector<std::string>& items) {
  std::string out = "{";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

std::string ProblemsJson(const std::vector<Problem>& problems) {
  return ArrayOfObjects(problems, [](JsonWriter& w, const Problem& p) {
    json::Member(w, "id", p.id);
    json::Member(w, "type", p.type);
    json::Member(w, "detail", p.detail);
  });
}

std::string HandlesJson(const std::vector<HandleResolution>& resolutions) {
  return ArrayOfObjects(resolutions, [](JsonWriter& w, const HandleResolution& r) {
    json::Member(w, "handle", r.handle);
    json::Member(w, r.did.empty() ? "problem" : "did", r.did.empty() ? r.problem : r.did);
  });
}

std::optional<std::vector<std::string>> ParseStringArrayJson(std::string_view text) {
  rapidjson::Document doc;
  if (!json::Parse(doc, text).empty() || !doc.IsArray()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& v : doc.GetArray()) {
    if (!v.IsString()) return std::nullopt;
    out.emplace_back(v.GetString(), v.GetStringLength());
  }
  return out;
}

std::optional<std::vector<std::int64_t>> ParseBigintArray(std::string_view text) {
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return std::nullopt;
  text = text.substr(1, text.size() - 2);
  std::vector<std::int64_t> out;
  if (text.empty()) return out;
  while (true) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size()) return std::nullopt;
    out.push_back(value);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::unordered_map<std::int64_t, std::string> ParseKeptHashes(std::string_view text) {
  std::unordered_map<std::int64_t, std::string> out;
  while (!text.empty()) {
    const auto space = text.find(' ');
    if (space == std::string_view::npos) break;
    std::int64_t id = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + space, id);
    if (space == 0 || ec != std::errc() || end != text.data() + space) break;
    text.remove_prefix(space + 1);
    const auto next = text.find(' ');
    const std::string_view hash = text.substr(0, next);
    if (hash.empty()) break;
    out.emplace(id, hash);
    if (next == std::string_view::npos) break;
    text.remove_prefix(next + 1);
  }
  return out;
}

}  // namespace tweetkeeper::worker
