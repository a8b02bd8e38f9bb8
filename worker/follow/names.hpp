#pragma once
// The names a follower takes from answers before they become post URLs for schedule_post() or
// keys of followed_accounts: read by the extension's own URL parsers (extension/post_url.hpp),
// so that the follower accepts exactly what the database will.

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "post_url.hpp"

namespace tweetkeeper::worker::follow {

// A positive id in plain decimal, at most 19 digits (X's user ids, Mastodon's account ids).
inline bool IsDecimalId(std::string_view s) {
  return !s.empty() && s.size() <= 19 && s[0] != '0' &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The post a URL names, as schedule_post() reads it; nullopt when it refuses the URL.
inline std::optional<PostRef> PostOf(std::string_view url) {
  try {
    return ParsePostUrl(url);
  } catch (const PostUrlError&) {
    return std::nullopt;
  }
}

// The account a profile URL names, as follow() reads it; nullopt when it refuses the URL.
inline std::optional<ProfileRef> ProfileOf(std::string_view url) {
  try {
    return ParseProfileUrl(url);
  } catch (const PostUrlError&) {
    return std::nullopt;
  }
}

}  // namespace tweetkeeper::worker::follow
