#pragma once
// The mock's Jetstream compression (compress=true, or the header Socket-Encoding: zstd): each event
// one zstd frame compressed with a dictionary, as Jetstream's /subscribe does with the one it
// publishes (its pkg/models/zstd_dictionary). The mock does not ship Jetstream's: it trains its
// own at start-up (ZDICT_trainFromBuffer) on events of its own Jetstream, or loads one
// (--jetstream-dictionary), and serves it at GET /mock/jetstream/dictionary for a test to give
// the worker. libzstd (Debian libzstd-dev).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "mock_api/mock_config.hpp"

struct ZSTD_CCtx_s;
struct ZSTD_CDict_s;

namespace tweetkeeper::mock {

// A formatted zstd dictionary trained on `samples` events of the mock's Jetstream (the posting
// accounts of a world like `config`'s); throws std::runtime_error when libzstd cannot train one.
std::string TrainJetstreamDictionary(const MockConfig& config, std::size_t samples = 4000);

// The dictionary the Jetstream compresses with and /mock/jetstream/dictionary serves (set once at
// start-up, before anything serves); throws std::runtime_error when it is not a formatted zstd
// dictionary. nullptr: none set (no --jetstream-port).
void SetJetstreamDictionary(std::string dictionary);
std::shared_ptr<const std::string> JetstreamDictionary();

// Compresses events with the dictionary set, one zstd frame each (one per connection: not shared).
class JetstreamCompressor {
 public:
  JetstreamCompressor();
  ~JetstreamCompressor();
  JetstreamCompressor(const JetstreamCompressor&) = delete;
  JetstreamCompressor& operator=(const JetstreamCompressor&) = delete;
  std::string Compress(std::string_view event);

 private:
  ZSTD_CCtx_s* cctx_;
};

}  // namespace tweetkeeper::mock
