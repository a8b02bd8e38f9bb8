#include "mock_api/jetstream_zstd.hpp"

#include <zdict.h>
#include <zstd.h>

#include <chrono>
#include <set>
#include <stdexcept>
#include <vector>

#include "mock_api/bluesky_endpoint.hpp"

namespace tweetkeeper::mock {
namespace {

// Jetstream's encoder: level 3 (klauspost's default), a 128 KiB window (its consumer.go).
constexpr int kLevel = 3;
constexpr int kWindowLog = 17;

struct Shared {
  std::shared_ptr<const std::string> bytes;
  ZSTD_CDict* cdict = nullptr;
};
Shared shared;  // set once, before the servers start

}  // namespace

std::string TrainJetstreamDictionary(const MockConfig& config, std::size_t samples) {
  // A busy world of many posting accounts, so that the samples are many accounts' events.
  MockConfig world = config;
  world.follow_accounts = 200;
  world.follow_rate = 20;
  world.follow_delete_every = 10;
  using namespace std::chrono;
  const int64_t now_us = duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
  std::string content;
  std::vector<size_t> sizes;
  for (int64_t until = now_us; sizes.size() < samples && until > now_us - 86'400'000'000LL; until -= 60'000'000) {
    for (const auto& [time_us, json] : JetstreamEvents({}, until - 60'000'000, until, world)) {
      content += json;
      sizes.push_back(json.size());
      if (sizes.size() >= samples) break;
    }
  }
  std::string dictionary(112'640, '\0');  // Jetstream's is this big
  const size_t n = ZDICT_trainFromBuffer(dictionary.data(), dictionary.size(), content.data(), sizes.data(),
                                         static_cast<unsigned>(sizes.size()));
  if (ZDICT_isError(n))
    throw std::runtime_error(std::string("cannot train a zstd dictionary for the Jetstream: ") + ZDICT_getErrorName(n));
  dictionary.resize(n);
  return dictionary;
}

void SetJetstreamDictionary(std::string dictionary) {
  if (ZSTD_getDictID_fromDict(dictionary.data(), dictionary.size()) == 0)
    throw std::runtime_error("not a formatted zstd dictionary (no magic number and ID)");
  ZSTD_CDict* cdict = ZSTD_createCDict(dictionary.data(), dictionary.size(), kLevel);
  if (cdict == nullptr) throw std::runtime_error("a corrupt zstd dictionary");
  ZSTD_freeCDict(shared.cdict);
  shared.cdict = cdict;
  shared.bytes = std::make_shared<const std::string>(std::move(dictionary));
}

std::shared_ptr<const std::string> JetstreamDictionary() { return shared.bytes; }

JetstreamCompressor::JetstreamCompressor() : cctx_(ZSTD_createCCtx()) {
  if (cctx_ == nullptr || shared.cdict == nullptr) throw std::runtime_error("no zstd dictionary for the Jetstream");
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_windowLog, kWindowLog);
  ZSTD_CCtx_refCDict(cctx_, shared.cdict);
}

JetstreamCompressor::~JetstreamCompressor() { ZSTD_freeCCtx(cctx_); }

std::string JetstreamCompressor::Compress(std::string_view event) {
  std::string out(ZSTD_compressBound(event.size()), '\0');
  const size_t n = ZSTD_compress2(cctx_, out.data(), out.size(), event.data(), event.size());
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

}  // namespace tweetkeeper::mock
