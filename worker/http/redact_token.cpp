#include "http/redact_token.hpp"

namespace tweetkeeper::worker {

void RedactToken(std::string& text, const std::string& token) {
  for (auto pos = token.empty() ? std::string::npos : text.find(token); pos != std::string::npos;
       pos = text.find(token, pos + 3)) {
    text.replace(pos, token.size(), "***");
  }
}

}  // namespace tweetkeeper::worker
