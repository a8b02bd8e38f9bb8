#include "provider/factory.hpp"

#include <stdexcept>

#include "provider/bluesky.hpp"
#include "provider/mastodon.hpp"
#include "provider/x_v1_1.hpp"
#include "provider/x_v2.hpp"

namespace tweetkeeper::worker {

std::unique_ptr<Provider> MakeProvider(std::string_view name, std::string base_url,
                                       std::map<std::string, std::string> instances, bool allow_private_hosts) {
  if (name == "x-v2") return std::make_unique<XV2Provider>(std::move(base_url));
  if (name == "x-v1.1") return std::make_unique<XV11Provider>(std::move(base_url));
  if (name == "bluesky") return std::make_unique<BlueskyProvider>(std::move(base_url));
  if (name == "mastodon") return std::make_unique<MastodonProvider>(std::move(instances), allow_private_hosts);
  throw std::invalid_argument("unknown provider '" + std::string(name) + "': use x-v2, x-v1.1, bluesky or mastodon");
}

}  // namespace tweetkeeper::worker
