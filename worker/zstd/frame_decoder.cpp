#include "zstd/frame_decoder.hpp"

#include <zstd.h>

#include <algorithm>
#include <fstream>
#include <new>

namespace tweetkeeper::worker::zstd {
namespace {

// A formatted dictionary's first four bytes (little-endian 0xEC30A437: zstd's format, RFC 8878 §5).
constexpr unsigned char kDictionaryMagic[4] = {0x37, 0xA4, 0x30, 0xEC};

std::string ZstdError(std::size_t code) { return ZSTD_getErrorName(code); }

// The smallest window log whose window holds `bytes` (a frame's window is never wider than its
// content needs, so a wider one than the output bound is refused rather than allocated).
// (From libzstd's own bounds; at most its default of 27, 128 MiB.)
int WindowLogFor(std::size_t bytes) {
  const ZSTD_bounds bounds = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);
  int log = bounds.lowerBound;
  while (log < std::min(bounds.upperBound, 27) && (std::size_t{1} << log) < bytes) ++log;
  return log;
}

// *out resized to n, its first `kept` bytes kept, with room for n bytes and no more when it grows
// (a std::string's own growth doubles, which could pass the bound).
void Resize(std::string* out, std::size_t kept, std::size_t n) {
  if (n > out->capacity()) {
    std::string bigger;
    bigger.reserve(n);
    bigger.assign(out->data(), kept);
    out->swap(bigger);
  }
  out->resize(n);
}

}  // namespace

std::shared_ptr<const Dictionary> Dictionary::Load(const std::string& bytes, std::string* error) {
  if (bytes.size() < 8 || !std::equal(kDictionaryMagic, kDictionaryMagic + 4,
                                      reinterpret_cast<const unsigned char*>(bytes.data()))) {
    *error = "not a zstd dictionary (it does not begin with the magic number 37 A4 30 EC)";
    return nullptr;
  }
  const unsigned id = ZSTD_getDictID_fromDict(bytes.data(), bytes.size());
  if (id == 0) {
    *error = "a zstd dictionary without an ID";
    return nullptr;
  }
  // (Copied: the DDict owns its bytes. NULL when its entropy tables are corrupt.)
  ZSTD_DDict* ddict = ZSTD_createDDict(bytes.data(), bytes.size());
  if (ddict == nullptr) {
    *error = "a corrupt zstd dictionary (libzstd cannot load its tables)";
    return nullptr;
  }
  return std::shared_ptr<const Dictionary>(new Dictionary(ddict, id));
}

std::shared_ptr<const Dictionary> Dictionary::LoadFile(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read " + path;
    return nullptr;
  }
  std::string bytes(kMaxDictionaryBytes + 1, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (in.bad()) {
    *error = "cannot read " + path;
    return nullptr;
  }
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  if (bytes.size() > kMaxDictionaryBytes) {
    *error = path + " is more than " + std::to_string(kMaxDictionaryBytes) + " bytes: not a Jetstream dictionary";
    return nullptr;
  }
  std::shared_ptr<const Dictionary> d = Load(bytes, error);
  if (!d) *error = path + ": " + *error;
  return d;
}

Dictionary::~Dictionary() { ZSTD_freeDDict(ddict_); }

FrameDecoder::FrameDecoder(std::shared_ptr<const Dictionary> dictionary, std::size_t max_output)
    : dictionary_(std::move(dictionary)), max_output_(max_output), dctx_(ZSTD_createDCtx()) {
  if (dctx_ == nullptr) throw std::bad_alloc();
  ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, WindowLogFor(max_output_));
  ZSTD_DCtx_refDDict(dctx_, dictionary_->ddict());
}

FrameDecoder::~FrameDecoder() { ZSTD_freeDCtx(dctx_); }

bool FrameDecoder::Decode(std::string_view frame, std::string* out, std::string* error) {
  out->clear();
  const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) {
    *error = "not a zstd frame (" + std::to_string(frame.size()) + " bytes)";
    return false;
  }
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared > max_output_) {
    *error = "a zstd frame that says it decodes to " + std::to_string(declared) + " bytes, more than " +
             std::to_string(max_output_);
    return false;
  }
  const unsigned frame_dict = ZSTD_getDictID_fromFrame(frame.data(), frame.size());
  if (frame_dict != 0 && frame_dict != dictionary_->id()) {
    *error = "a zstd frame compressed with dictionary " + std::to_string(frame_dict) + ", not with ours (" +
             std::to_string(dictionary_->id()) + ")";
    return false;
  }
  ZSTD_DCtx_reset(dctx_, ZSTD_reset_session_only);  // keeps the dictionary and the window bound
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  // Room as declared (a hint: libzstd refuses a frame whose content differs from it) or 64 KiB,
  // doubled as needed, never past the bound plus the one byte that shows the bound passed.
  const std::size_t limit = max_output_ + 1;
  Resize(out, 0, std::min<std::size_t>(declared != ZSTD_CONTENTSIZE_UNKNOWN ? declared + 1 : 64u << 10, limit));
  std::size_t produced = 0;
  for (;;) {
    if (produced == out->size()) {
      if (out->size() >= limit) break;
      Resize(out, produced, std::min(limit, std::max<std::size_t>(out->size() * 2, 64u << 10)));
    }
    ZSTD_outBuffer o{out->data() + produced, out->size() - produced, 0};
    const std::size_t in_before = in.pos;
    const std::size_t left = ZSTD_decompressStream(dctx_, &o, &in);
    produced += o.pos;
    if (ZSTD_isError(left)) {
      out->clear();
      *error = "a zstd frame that does not decode: " + ZstdError(left);
      return false;
    }
    if (left == 0) break;  // the frame is whole
    if (in.pos == in.size && o.pos < o.size && in.pos == in_before) {
      out->clear();
      *error = "a zstd frame cut short (" + std::to_string(frame.size()) + " bytes)";
      return false;
    }
  }
  if (produced > max_output_) {
    out->clear();
    *error = "a zstd frame that decodes to more than " + std::to_string(max_output_) + " bytes";
    return false;
  }
  if (in.pos != in.size) {
    out->clear();
    *error = "bytes after the zstd frame (" + std::to_string(in.size - in.pos) + ")";
    return false;
  }
  out->resize(produced);
  return true;
}

}  // namespace tweetkeeper::worker::zstd
