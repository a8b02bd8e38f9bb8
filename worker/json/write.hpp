#pragma once
// JSON written with RapidJSON's Writer (any output encoding): a string of known length, NULs and
// all, and a member (key and value) in one call. Header-only, like bounded.hpp.

#include <rapidjson/rapidjson.h>

#include <cstdint>
#include <string_view>

namespace tweetkeeper::json {

template <class Writer>
void String(Writer& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

template <class Writer>
void Member(Writer& w, const char* key, std::string_view value) {
  w.Key(key);
  String(w, value);
}

template <class Writer>
void Member(Writer& w, const char* key, std::int64_t value) {
  w.Key(key);
  w.Int64(value);
}

}  // namespace tweetkeeper::json
