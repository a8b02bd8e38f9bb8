// Fuzz target: XV2Provider::ParseAnswer (X API v2 GET /2/tweets answers) and the JSON the
// worker then hands to complete_batch(). Input format and checks: provider_fuzz.hpp.
#include "provider/x_v2.hpp"
#include "provider_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tk::XV2Provider provider("https://api.x.com");
  return FuzzProviderAnswer(provider, data, size);
}
