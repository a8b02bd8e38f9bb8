#include "queue/payload.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>

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

void String(JsonWriter& w, const std::string& s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }

}  // namespace

std::string ObservationsJson(const std::vector<Observation>& observations) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartArray();
  for (const Observation& o : observations) {
    w.StartObject();
    w.Key("id");
    w.Int64(o.id);
    for (const CountField& field : kCountFields) Count(w, field.name, o.metrics.*field.member);
    if (!o.invalid.empty()) {
      w.Key("invalid");
      String(w, o.invalid);
    }
    w.EndObject();
  }
  w.EndArray();
  return {buffer.GetString(), buffer.GetSize()};
}

std::string ProblemsJson(const std::vector<Problem>& problems) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartArray();
  for (const Problem& p : problems) {
    w.StartObject();
    w.Key("id");
    w.Int64(p.id);
    w.Key("type");
    String(w, p.type);
    w.Key("detail");
    String(w, p.detail);
    w.EndObject();
  }
  w.EndArray();
  return {buffer.GetString(), buffer.GetSize()};
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

}  // namespace tweetkeeper::worker
