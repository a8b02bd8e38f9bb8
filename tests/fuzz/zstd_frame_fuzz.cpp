// Fuzz target: FrameDecoder::Decode (worker/zstd/frame_decoder.cpp), which reads each binary frame
// of Jetstream's compressed stream (--jetstream-dictionary) before anything parses it. The
// dictionary is one trained here, once, on Jetstream-shaped events (as Jetstream's is on its own).
// The first input byte picks how the rest is read:
//  - even: the rest is a frame, as is: it decodes to at most the bound (4 KiB here) or is refused
//    with a one-line reason and no output, never more;
//  - odd: the rest is an event's text, compressed with the dictionary: it decodes back to itself
//    when it fits the bound, and is refused, saying so, when it does not.

#include <zdict.h>
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "zstd/frame_decoder.hpp"

namespace zs = tweetkeeper::worker::zstd;

namespace {

constexpr std::size_t kBound = 4096;

std::string TrainedDictionary() {
  std::string content;
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 2000; ++i) {
    const std::string e = R"({"did":"did:plc:u)" + std::to_string(i % 89) + R"(","time_us":)" +
                          std::to_string(1700000000000000LL + i * 7919) +
                          R"(,"kind":"commit","commit":{"operation":"create","collection":"app.bsky.feed.post","rkey":"3k)" +
                          std::to_string(i) + R"(","record":{"text":"post )" + std::to_string(i * i) + R"("}}})";
    content += e;
    sizes.push_back(e.size());
  }
  std::string dict(16 * 1024, '\0');
  const std::size_t n =
      ZDICT_trainFromBuffer(dict.data(), dict.size(), content.data(), sizes.data(), static_cast<unsigned>(sizes.size()));
  TK_FUZZ_CHECK(!ZDICT_isError(n));
  dict.resize(n);
  return dict;
}

struct Fixture {
  std::string bytes = TrainedDictionary();
  std::shared_ptr<const zs::Dictionary> dictionary;
  std::unique_ptr<zs::FrameDecoder> decoder;
  Fixture() {
    std::string error;
    dictionary = zs::Dictionary::Load(bytes, &error);
    TK_FUZZ_CHECK(dictionary != nullptr);
    decoder = std::make_unique<zs::FrameDecoder>(dictionary, kBound);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture f;
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string frame(rest);
  if (data[0] & 1) {
    frame.resize(ZSTD_compressBound(rest.size()));
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    const std::size_t n = ZSTD_compress_usingDict(cctx, frame.data(), frame.size(), rest.data(), rest.size(),
                                                  f.bytes.data(), f.bytes.size(), 1 + data[0] % 5);
    ZSTD_freeCCtx(cctx);
    TK_FUZZ_CHECK(!ZSTD_isError(n));
    frame.resize(n);
  }
  std::string out, error;
  const bool decoded = f.decoder->Decode(frame, &out, &error);
  if (decoded) {
    TK_FUZZ_CHECK(out.size() <= kBound);
  } else {
    TK_FUZZ_CHECK(out.empty());
    TK_FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos);
  }
  TK_FUZZ_CHECK(out.capacity() <= kBound + 1);  // the output never grew past the bound
  if (data[0] & 1) {
    TK_FUZZ_CHECK(decoded == (rest.size() <= kBound));
    if (decoded) TK_FUZZ_CHECK(out == rest);
    else TK_FUZZ_CHECK(error.find("decodes to") != std::string::npos);
  }
  return 0;
}
