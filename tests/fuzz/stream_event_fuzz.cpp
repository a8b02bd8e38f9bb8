// Fuzz target: the stream counts' reading of Jetstream (worker/stream): ParseCountEvent on each
// line of the input as a frame, and the events it accepts fed in time order to a Counter that
// counts one post, with a read taken in between. Checks: a frame is an event, nothing, or refused
// with a reason; what an event names is a post key "did:.../rkey" of printable ASCII; counts
// never go below zero; the position never goes back; a flush's arrays align.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "stream/count_event.hpp"
#include "stream/counter.hpp"

namespace ts = tweetkeeper::worker::stream;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<ts::CountEvent> events;
  for (std::size_t from = 0; from <= input.size();) {
    const std::size_t nl = std::min(input.find('\n', from), input.size());
    const std::string_view frame = input.substr(from, nl - from);
    from = nl + 1;
    ts::CountEvent e;
    std::string reason;
    const ts::Parsed p = ts::ParseCountEvent(frame, &e, &reason);
    if (p == ts::Parsed::kRefused) {
      TK_FUZZ_CHECK(!reason.empty());
      continue;
    }
    TK_FUZZ_CHECK(e.time_us > 0);
    for (const ts::PostKey& k : e.subject) {
      if (k.empty()) continue;
      TK_FUZZ_CHECK(k.rfind("did:", 0) == 0 && k.find('/') != std::string::npos);
      for (const char c : k) TK_FUZZ_CHECK(c > ' ' && c <= '~');
    }
    if (p == ts::Parsed::kEvent) events.push_back(e);
  }
  std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.time_us < b.time_us; });
  ts::Counter c(60'000'000);
  c.Reset(0);
  // The post the first event names, counted from the start.
  ts::PostKey key = "did:plc:a/3k";
  for (const auto& e : events)
    for (const auto& k : e.subject)
      if (!k.empty()) key = k;
  c.AddPost(-1, key, {1, 1, 1, 1});
  std::int64_t position = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    c.Apply(events[i]);
    if (i == events.size() / 2) {
      ts::Counts d;
      c.Read(-2, key, events[i].time_us, {2, 2, 2, 2}, false, &d);
    }
    if (i % 3 == 0) {
      const ts::Flush f = c.Take();
      TK_FUZZ_CHECK(f.position_us >= position);
      position = f.position_us;
      TK_FUZZ_CHECK(f.counts.size() == 4 * f.ids.size() && f.at_us.size() == f.ids.size());
      TK_FUZZ_CHECK(f.keys.size() == f.key_ids.size() && f.keys.size() == f.kinds.size());
      TK_FUZZ_CHECK(f.differences.size() == 4 * f.read_ids.size());
      for (const std::int64_t n : f.counts) TK_FUZZ_CHECK(n >= 0);
    }
  }
  return 0;
}
