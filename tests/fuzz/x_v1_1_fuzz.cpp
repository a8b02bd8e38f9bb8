// Fuzz target: XV11Provider::ParseAnswer (API v1.1 statuses/lookup answers,
// {"id":{"<id>":{tweet}|null}} and {"errors":[{"code",...}]}) and the JSON the worker then hands
// to complete_batch(). Input format and checks: provider_fuzz.hpp.
#include "provider/x_v1_1.hpp"
#include "provider_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tk::XV11Provider provider("https://api.x.com");
  return FuzzProviderAnswer(provider, data, size);
}
