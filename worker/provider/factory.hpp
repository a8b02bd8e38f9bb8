#pragma once
// Picks the Provider for --provider.

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "provider/provider.hpp"

namespace tweetkeeper::worker {

// "x-v2" (GET /2/tweets), "x-v1.1" (GET /1.1/statuses/lookup.json), "bluesky" (getPosts at
// base_url) or "mastodon" (each server at https://<host>, or where `instances` says; an unmapped
// host at public addresses only unless `allow_private_hosts`). Throws std::invalid_argument
// naming the valid names for anything else.
std::unique_ptr<Provider> MakeProvider(std::string_view name, std::string base_url,
                                       std::map<std::string, std::string> instances = {},
                                       bool allow_private_hosts = false);

}  // namespace tweetkeeper::worker
