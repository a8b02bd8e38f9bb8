// Fuzz target: MastodonProvider::ParseAnswer (GET /api/v1/statuses answers, matched to the
// claim's status ids; one status for a batch of one) and the JSON the worker then hands to
// complete_batch(). Input format and checks: provider_fuzz.hpp (keys on the first line).
#include "provider/mastodon.hpp"
#include "provider_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tk::MastodonProvider provider;
  return FuzzProviderAnswer(provider, data, size);
}
