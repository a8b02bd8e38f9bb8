// Jetstream's compressed events decoded (worker/zstd/frame_decoder.hpp): frames compressed with a
// dictionary trained here decode to their text; a frame of another dictionary, a frame that
// would decode past the bound, a window past it, a cut or padded frame and garbage are refused
// with a message, and the output never grows past the bound.

#include <zstd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "worker_test_zstd.hpp"
#include "zstd/frame_decoder.hpp"

namespace tweetkeeper::worker::zstd {
namespace {

// `text` streamed into one frame that does not say its size, with this window (log2).
std::string CompressUnsized(const std::string& text, int window_log) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, window_log);
  std::string out(ZSTD_compressBound(text.size()), '\0');
  ZSTD_inBuffer in{text.data(), text.size(), 0};
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  const size_t left = ZSTD_compressStream2(cctx, &o, &in, ZSTD_e_end);  // no pledged size: unknown
  ZSTD_freeCCtx(cctx);
  EXPECT_EQ(left, 0u);
  out.resize(o.pos);
  EXPECT_EQ(ZSTD_getFrameContentSize(out.data(), out.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  return out;
}

class ZstdFrames : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = Train("alpha");
    std::string error;
    dict_ = Dictionary::Load(bytes_, &error);
    ASSERT_TRUE(dict_) << error;
  }
  std::string bytes_;
  std::shared_ptr<const Dictionary> dict_;
};

TEST_F(ZstdFrames, DecodeToTheText) {
  FrameDecoder decoder(dict_, 1 << 20);
  EXPECT_EQ(dict_->id(), ZSTD_getDictID_fromDict(bytes_.data(), bytes_.size()));
  for (int i = 5000; i < 5050; ++i) {  // events the dictionary was not trained on
    const std::string text = Event(i, "alpha");
    const std::string frame = Compress(text, bytes_);
    EXPECT_LT(frame.size(), text.size() / 2) << "the dictionary helps";
    std::string out, error;
    ASSERT_TRUE(decoder.Decode(frame, &out, &error)) << error;
    EXPECT_EQ(out, text);
  }
  // A frame that does not say its size decodes too.
  std::string out, error;
  ASSERT_TRUE(decoder.Decode(CompressUnsized(Event(1, "alpha"), 17), &out, &error)) << error;
  EXPECT_EQ(out, Event(1, "alpha"));
}

TEST_F(ZstdFrames, AnotherDictionaryIsRefused) {
  const std::string other = Train("omega");
  ASSERT_NE(ZSTD_getDictID_fromDict(other.data(), other.size()), dict_->id());
  FrameDecoder decoder(dict_, 1 << 20);
  std::string out, error;
  EXPECT_FALSE(decoder.Decode(Compress(Event(3, "omega"), other), &out, &error));
  EXPECT_NE(error.find("dictionary " + std::to_string(ZSTD_getDictID_fromDict(other.data(), other.size()))),
            std::string::npos) << error;
  EXPECT_TRUE(out.empty());
  // The decoder is still good for the next frame.
  ASSERT_TRUE(decoder.Decode(Compress(Event(3, "alpha"), bytes_), &out, &error)) << error;
  EXPECT_EQ(out, Event(3, "alpha"));
}

// 64 MiB of zeros is a frame of a few kilobytes: said in its header, it is refused before any
// decoding; not said, decoding stops at the bound, the output never past it.
TEST_F(ZstdFrames, BombsStopAtTheBound) {
  constexpr size_t kBound = 1 << 20;
  const std::string zeros(64u << 20, '\0');
  FrameDecoder decoder(dict_, kBound);
  std::string out, error;

  std::string sized(ZSTD_compressBound(zeros.size()), '\0');
  sized.resize(ZSTD_compress(sized.data(), sized.size(), zeros.data(), zeros.size(), 3));
  ASSERT_LT(sized.size(), 64u << 10);
  EXPECT_FALSE(decoder.Decode(sized, &out, &error));
  EXPECT_NE(error.find("says it decodes to 67108864 bytes"), std::string::npos) << error;
  EXPECT_LE(out.capacity(), kBound + 1);

  std::string out2;
  const std::string unsized = CompressUnsized(zeros, 17);
  ASSERT_LT(unsized.size(), 64u << 10);
  EXPECT_FALSE(decoder.Decode(unsized, &out2, &error));
  EXPECT_NE(error.find("decodes to more than 1048576 bytes"), std::string::npos) << error;
  EXPECT_TRUE(out2.empty());
  EXPECT_LE(out2.capacity(), kBound + 1) << "the output grew past the bound";

  // A window wider than the bound needs is not allocated either (a 128 MiB one here).
  const std::string wide = CompressUnsized(zeros, 27);
  EXPECT_FALSE(decoder.Decode(wide, &out2, &error));
  EXPECT_NE(error.find("does not decode"), std::string::npos) << error;

  // Exactly the bound decodes.
  const std::string at_bound(kBound, 'x');
  ASSERT_TRUE(decoder.Decode(CompressUnsized(at_bound, 17), &out2, &error)) << error;
  EXPECT_EQ(out2, at_bound);
}

TEST_F(ZstdFrames, GarbageAndCutFramesAreRefused) {
  FrameDecoder decoder(dict_, 1 << 20);
  const std::string frame = Compress(Event(7, "alpha"), bytes_);
  std::string out, error;
  for (const std::string& bad : {std::string(), std::string("{\"did\":\"x\"}"), std::string(300, '\xff'),
                                 frame.substr(0, frame.size() - 3), frame.substr(0, 6)}) {
    error.clear();
    EXPECT_FALSE(decoder.Decode(bad, &out, &error)) << bad.size();
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  EXPECT_FALSE(decoder.Decode(frame + "xyz", &out, &error));
  EXPECT_NE(error.find("bytes after the zstd frame"), std::string::npos) << error;
  ASSERT_TRUE(decoder.Decode(frame, &out, &error)) << error;
  EXPECT_EQ(out, Event(7, "alpha"));
}

TEST(ZstdDictionary, OnlyFormattedDictionariesLoad) {
  std::string error;
  EXPECT_FALSE(Dictionary::Load("", &error));
  EXPECT_FALSE(Dictionary::Load("<!DOCTYPE html><html>a page, not the file</html>", &error));
  EXPECT_NE(error.find("not a zstd dictionary"), std::string::npos) << error;
  std::string corrupt = Train("alpha");
  ASSERT_GT(corrupt.size(), 64u);
  for (size_t i = 8; i < 64; ++i) corrupt[i] = '\xff';  // its entropy tables
  EXPECT_FALSE(Dictionary::Load(corrupt, &error));
  EXPECT_NE(error.find("corrupt"), std::string::npos) << error;
  EXPECT_FALSE(Dictionary::LoadFile("/nonexistent/zstd_dictionary", &error));
  EXPECT_NE(error.find("cannot read"), std::string::npos) << error;
}

}  // namespace
}  // namespace tweetkeeper::worker::zstd
