// Fuzz target: BlueskyProvider::ParseAnswer (Bluesky AppView getPosts answers, matched to the
// claim's at:// URIs) and the JSON the worker then hands to complete_batch(). Input format and
// checks: provider_fuzz.hpp.
#include "provider/bluesky.hpp"
#include "provider_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tk::BlueskyProvider provider("https://public.api.bsky.app");
  return FuzzProviderAnswer(provider, data, size);
}
