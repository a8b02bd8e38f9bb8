#pragma once
// Which of the worker's tokens a batch's requests carry: the provider's say (an endpoint that
// picks its own, Provider::EndpointToken: a Mastodon server by its host) before the claim's.

#include <map>
#include <optional>
#include <string>

#include "provider/provider.hpp"

namespace tweetkeeper::worker {

struct BatchToken {
  std::string name;   // the credential's name in the credentials file; empty: none
  std::string token;  // empty: the requests carry no token
};

// Where the endpoint picks the token, that one, or none when `tokens` has none for it; otherwise
// the claim's credential's, and without registered credentials (an empty `credential`) the only
// one. nullopt: the claim named a credential (or needs a token) this worker has no token for.
std::optional<BatchToken> TokenForBatch(const Provider& provider, const std::string& endpoint,
                                        const std::string& credential,
                                        const std::map<std::string, std::string>& tokens);

}  // namespace tweetkeeper::worker
