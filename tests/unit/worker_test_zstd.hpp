#pragma once
// Zstd frames for the unit tests of Jetstream's compressed events: events of Jetstream's shape,
// a dictionary trained on them (as Jetstream's and the mock's are), frames compressed with it.

#include <zdict.h>
#include <zstd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tweetkeeper::worker::zstd {

// Jetstream-like events (the shape of a post create), varied enough to train on.
inline std::string Event(int i, const std::string& flavour) {
  return R"({"did":"did:plc:)" + flavour + std::to_string(i % 97) + R"(","time_us":)" +
         std::to_string(1700000000000000LL + i * 7919) +
         R"(,"kind":"commit","commit":{"rev":"3l)" + std::to_string(i * 31) +
         R"(","operation":"create","collection":"app.bsky.feed.post","rkey":"3k)" + std::to_string(i) +
         R"(","record":{"$type":"app.bsky.feed.post","createdAt":"2024-01-01T00:00:)" + std::to_string(10 + i % 50) +
         R"(Z","langs":["en"],"text":")" + flavour + " number " + std::to_string(i * i) +
         R"("},"cid":"bafyrei)" + std::to_string(i * 104729) + R"("}})";
}

inline std::string Train(const std::string& flavour) {
  std::string content;
  std::vector<size_t> sizes;
  for (int i = 0; i < 2000; ++i) {
    const std::string e = Event(i, flavour);
    content += e;
    sizes.push_back(e.size());
  }
  std::string dict(16 * 1024, '\0');
  const size_t n = ZDICT_trainFromBuffer(dict.data(), dict.size(), content.data(), sizes.data(),
                                         static_cast<unsigned>(sizes.size()));
  EXPECT_FALSE(ZDICT_isError(n)) << ZDICT_getErrorName(n);
  dict.resize(ZDICT_isError(n) ? 0 : n);
  return dict;
}

inline std::string Compress(const std::string& text, const std::string& dict) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  const size_t n = ZSTD_compress_usingDict(cctx, out.data(), out.size(), text.data(), text.size(), dict.data(),
                                           dict.size(), 3);
  ZSTD_freeCCtx(cctx);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

}  // namespace tweetkeeper::worker::zstd
