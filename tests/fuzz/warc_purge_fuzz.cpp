// Fuzz target: what the WARC purge (worker/warc/warc_purge.hpp) reads from the files it rewrites,
// which hold whatever the APIs answered: FilterBody on any body (JSON of any shape, or not JSON)
// and ParseRecord on any record. Checks:
//  - never more posts removed than the body holds, none from a body it could not read;
//  - a body with some posts removed, filtered again, parses, holds the others and removes none
//    (what a second purge of the rewritten record does);
//  - a record's block, as ParseRecord gives it, lies within the record and ends at CRLF CRLF.
// The gone post is numbered by the input's last byte, on each network.

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "warc/warc_purge.hpp"

namespace warc = tweetkeeper::worker::warc;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string id = std::to_string(in.ConsumeIntegralInRange<int>(0, 20));
  const std::string host = in.ConsumeBool() ? "a.example" : "b.example";
  const std::string text = in.ConsumeRemainingBytesAsString();
  warc::PurgeSet set;
  set.AddX(id, {1, "deleted", ""});
  set.AddBluesky("did:plc:a", id, {-2, "missing", ""});
  set.AddMastodon("a.example", id, {-3, "missing", ""});

  const warc::Filtered f = warc::FilterBody(text, host, set);
  TK_FUZZ_CHECK(f.removed.size() <= f.posts);
  TK_FUZZ_CHECK(f.error.empty() || (f.posts == 0 && f.removed.empty()));
  if (!f.removed.empty() && f.removed.size() < f.posts) {
    const warc::Filtered again = warc::FilterBody(f.body, host, set);
    TK_FUZZ_CHECK(again.error.empty());
    TK_FUZZ_CHECK(again.removed.empty());
    TK_FUZZ_CHECK(again.posts == f.posts - f.removed.size());
  } else {
    TK_FUZZ_CHECK(f.body.empty());
  }

  std::string why;
  if (const auto head = warc::ParseRecord(text, &why)) {
    TK_FUZZ_CHECK(head->block_offset == head->header_length && head->header_length <= text.size());
    TK_FUZZ_CHECK(text.size() - head->block_offset >= head->block_length + 4);
    TK_FUZZ_CHECK(text.compare(head->block_offset + head->block_length, 4, "\r\n\r\n") == 0);
  } else {
    TK_FUZZ_CHECK(!why.empty());
  }
  return 0;
}
