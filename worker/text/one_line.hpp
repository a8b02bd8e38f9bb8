#pragma once
// Text from a user or from outside, quoted in a one-line message (an error, a usage line): its
// control characters (a pasted newline, a terminal's escape sequence) as \xNN, so they neither
// split the line nor reach a terminal raw. Everything else as it is.

#include <string>
#include <string_view>

namespace tweetkeeper::worker {

inline std::string OneLine(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace tweetkeeper::worker
