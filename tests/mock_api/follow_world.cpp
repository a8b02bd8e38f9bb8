#include "mock_api/follow_world.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "mock_api/mix.hpp"

namespace tweetkeeper::mock {

namespace {
std::atomic<uint64_t> jetstream_drops{0};
}  // namespace

void DropJetstreamConnections() { ++jetstream_drops; }
uint64_t JetstreamDrops() { return jetstream_drops.load(); }

Cadence CadenceOf(const std::string& salt, uint64_t k, const MockConfig& config) {
  Cadence c;
  if (k >= config.follow_accounts || config.follow_rate <= 0) return c;
  double harmonic = 0;
  for (uint64_t i = 1; i <= config.follow_accounts; ++i) harmonic += 1.0 / static_cast<double>(i);
  const double rate = config.follow_rate / (static_cast<double>(k + 1) * harmonic);
  // At least a millisecond apart (ids and record keys are per millisecond), at most a day.
  c.period_ms = std::clamp<int64_t>(std::llround(1000.0 / rate), 1, 86'400'000);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : salt) h = (h ^ ch) * 0x100000001b3ULL;
  c.phase_ms = static_cast<int64_t>(Mix(h ^ Mix(k)) % static_cast<uint64_t>(c.period_ms));
  return c;
}

std::vector<int64_t> PostTimes(const Cadence& c, int64_t from_ms, int64_t to_ms, size_t limit, bool newest) {
  std::vector<int64_t> out;
  if (c.period_ms <= 0 || from_ms > to_ms || limit == 0) return out;
  // The first n with n * period + phase >= from_ms, the last with <= to_ms (floor division).
  auto floor_div = [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
  const int64_t first = floor_div(from_ms - c.phase_ms + c.period_ms - 1, c.period_ms);
  const int64_t last = floor_div(to_ms - c.phase_ms, c.period_ms);
  if (first > last) return out;
  const int64_t count = std::min<int64_t>(last - first + 1, static_cast<int64_t>(limit));
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t n = newest ? last - i : first + i;
    out.push_back(n * c.period_ms + c.phase_ms);
  }
  return out;
}

}  // namespace tweetkeeper::mock
