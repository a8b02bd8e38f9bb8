#include "provider/batch_token.hpp"

namespace tweetkeeper::worker {

std::optional<BatchToken> TokenForBatch(const Provider& provider, const std::string& endpoint,
                                        const std::string& credential,
                                        const std::map<std::string, std::string>& tokens) {
  const std::optional<std::string> endpoint_token = provider.EndpointToken(endpoint);
  const auto it = endpoint_token       ? tokens.find(*endpoint_token)
                  : credential.empty() ? tokens.begin()
                                       : tokens.find(credential);
  if (it == tokens.end()) {
    if (endpoint_token) return BatchToken{};
    return std::nullopt;
  }
  return BatchToken{it->first, it->second};
}

}  // namespace tweetkeeper::worker
