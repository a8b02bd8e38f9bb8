#pragma once
// Picks the Provider for --provider.

#include <memory>
#include <string>
#include <string_view>

#include "provider/provider.hpp"

namespace tweetkeeper::worker {

// "x-v2" (GET /2/tweets) or "x-v1.1" (GET /1.1/statuses/lookup.json). Throws
// std::invalid_argument naming the valid names for anything else.
std::unique_ptr<Provider> MakeProvider(std::string_view name, std::string base_url);

}  // namespace tweetkeeper::worker
