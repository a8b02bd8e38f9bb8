#pragma once
// The names a follower takes from answers before they become URLs for schedule_post() or keys of
// followed_accounts: checked character by character, as the extension's URL parser reads them.

#include <algorithm>
#include <string>
#include <string_view>

namespace tweetkeeper::worker::follow {

// A positive id in plain decimal, at most 19 digits (X's and Mastodon's ids).
inline bool IsDecimalId(std::string_view s) {
  return !s.empty() && s.size() <= 19 && s[0] != '0' &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

inline std::string LowerAscii(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  return out;
}

}  // namespace tweetkeeper::worker::follow
