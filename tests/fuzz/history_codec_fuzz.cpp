// Fuzz target: UnpackHistory and MergeHistory (extension/history_codec.cpp), which read the
// packed bytes of metric_history_compact for every query of metric_history. The input is the
// packed value, as is (and, split at its middle, two values for a merge).
//  - Unpacking returns rows or throws HistoryCodecError, nothing else, and never allocates by a
//    count the bytes cannot hold.
//  - Rows read back are in (observed_at, lease_id) order, each once, and pack to bytes that
//    unpack to the same rows.
//  - A merge of two readable values is both's rows, in order, each once.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "fuzz_check.hpp"
#include "history_codec.hpp"

namespace tk = tweetkeeper;

namespace {

bool Ordered(const std::vector<tk::HistoryRow>& rows) {
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (std::tie(rows[i - 1].observed_at, rows[i - 1].lease_id) >= std::tie(rows[i].observed_at, rows[i].lease_id)) {
      return false;
    }
  }
  return true;
}

bool Readable(std::string_view bytes, std::vector<tk::HistoryRow>& rows) {
  try {
    rows = tk::UnpackHistory(bytes);
    return true;
  } catch (const tk::HistoryCodecError&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<tk::HistoryRow> rows;
  if (Readable(in, rows)) {
    TK_FUZZ_CHECK(Ordered(rows));
    TK_FUZZ_CHECK(rows.size() <= size / 3);
    TK_FUZZ_CHECK(tk::UnpackHistory(tk::PackHistory(rows)) == rows);
  }
  std::vector<tk::HistoryRow> a, b;
  if (Readable(in.substr(0, size / 2), a) && Readable(in.substr(size / 2), b)) {
    const std::vector<tk::HistoryRow> merged = tk::UnpackHistory(tk::MergeHistory(in.substr(0, size / 2), in.substr(size / 2)));
    TK_FUZZ_CHECK(Ordered(merged));
    TK_FUZZ_CHECK(merged.size() <= a.size() + b.size() && merged.size() >= std::max(a.size(), b.size()));
    auto same_key = [](const tk::HistoryRow& x, const tk::HistoryRow& y) {
      return x.observed_at == y.observed_at && x.lease_id == y.lease_id;
    };
    for (const std::vector<tk::HistoryRow>* side : {&a, &b}) {
      for (const tk::HistoryRow& r : *side) {
        TK_FUZZ_CHECK(std::any_of(merged.begin(), merged.end(), [&](const tk::HistoryRow& m) { return same_key(m, r); }));
      }
    }
    for (const tk::HistoryRow& m : merged) {
      TK_FUZZ_CHECK(std::find(a.begin(), a.end(), m) != a.end() || std::find(b.begin(), b.end(), m) != b.end());
    }
  }
  return 0;
}
