#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>
#include <initializer_list>
#include <utility>

namespace tweetkeeper::mock {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// "key":value for each pair, in the order given: every network names the same counts its own
// way (X's "like_count", Bluesky's "likeCount", Mastodon's "favourites_count").
inline void WriteCounts(JsonWriter& w, std::initializer_list<std::pair<const char*, int64_t>> counts) {
  for (const auto& [key, value] : counts) {
    w.Key(key);
    w.Int64(value);
  }
}

}  // namespace tweetkeeper::mock
