#pragma once
// Jetstream's compression (its /subscribe with compress=true): each event is one binary websocket
// frame holding one zstd frame, compressed with a dictionary Jetstream publishes. A dictionary is
// loaded once (libzstd's DDict, shared read-only by every decoder); a FrameDecoder (one per
// thread: its DCtx is not shared) turns one frame back into the event's text, bounded: the frame
// is hostile until decoded, so neither its declared size nor its window is trusted past the
// bound, and a frame that would decode to more is an error, never an allocation that size.
// Debian's libzstd (libzstd-dev).

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct ZSTD_DDict_s;
struct ZSTD_DCtx_s;

namespace tweetkeeper::worker::zstd {

// A dictionary file is at most this big (Jetstream's is 112,640 bytes).
constexpr std::size_t kMaxDictionaryBytes = 1u << 20;

class Dictionary {
 public:
  // The dictionary in `bytes`: a formatted zstd dictionary (magic 37 A4 30 EC, an ID), as
  // Jetstream's and ZDICT_trainFromBuffer's are; nullptr and *error (one line) when it is not one.
  static std::shared_ptr<const Dictionary> Load(const std::string& bytes, std::string* error);
  // The same, read from a file of at most kMaxDictionaryBytes.
  static std::shared_ptr<const Dictionary> LoadFile(const std::string& path, std::string* error);
  ~Dictionary();
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;

  unsigned id() const { return id_; }
  const ZSTD_DDict_s* ddict() const { return ddict_; }

 private:
  Dictionary(ZSTD_DDict_s* ddict, unsigned id) : ddict_(ddict), id_(id) {}
  ZSTD_DDict_s* ddict_;
  unsigned id_;
};

class FrameDecoder {
 public:
  // Frames decoded with `dictionary` to at most max_output bytes each.
  FrameDecoder(std::shared_ptr<const Dictionary> dictionary, std::size_t max_output);
  ~FrameDecoder();
  FrameDecoder(const FrameDecoder&) = delete;
  FrameDecoder& operator=(const FrameDecoder&) = delete;

  // One whole zstd frame into its content, *out; false and *error (one line) when `frame` is not
  // exactly one zstd frame, names another dictionary, is corrupt or cut short, needs a window
  // past the bound, or decodes to more than max_output bytes (*out then holds no more than
  // max_output + 1 bytes' room).
  bool Decode(std::string_view frame, std::string* out, std::string* error);

 private:
  std::shared_ptr<const Dictionary> dictionary_;
  std::size_t max_output_;
  ZSTD_DCtx_s* dctx_;
};

}  // namespace tweetkeeper::worker::zstd
