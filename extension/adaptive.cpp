#include "adaptive.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpp_only.hpp"

namespace tweetkeeper {

namespace {
constexpr int64_t kUsecPerSecond = 1000000;
constexpr int64_t kUsecPerMinute = 60 * kUsecPerSecond;
constexpr int64_t kUsecPerDayHere = 86400 * kUsecPerSecond;
// The packed state: gap in seconds (28 bits, 8.5 years), quiet_since in minutes (28 bits, 510
// years), the reason (7 bits): a non-negative bigint.
constexpr int64_t kMask28 = (INT64_C(1) << 28) - 1;
// A read moved into today is made this long before the UTC day ends, so that a claim a little
// late still reads on the day already paid for.
constexpr int64_t kSameDayMargin = 15 * kUsecPerMinute;
// Indices of Counts.
constexpr int kReposts = 0, kReplies = 1, kLikes = 2, kQuotes = 3;

// A stretched delay ends on a multiple (on the clock) of a power-of-two number of minutes no
// longer than a quarter of it: posts due about then are due at the same moment and fill a batch
// (a request reads up to 100 posts on X, 25 on Bluesky, 20 on Mastodon) instead of each costing a
// request of its own. The next multiple, unless that is past `longest` (the gap may not grow past
// max_gap: a late burst must be seen within it); then the one before, if not under `shortest`. A
// delay under 4 minutes is left as it is.
int64_t Aligned(int64_t now_usec, int64_t delay, int64_t shortest, int64_t longest) {
  if (delay / 4 < kUsecPerMinute) return delay;  // (under 4 minutes: a minute would be more than a quarter)
  int64_t quantum = kUsecPerMinute;
  while (quantum * 2 <= delay / 4 && quantum < kUsecPerDayHere) quantum *= 2;
  const int64_t due = now_usec + delay;
  const int64_t up = (due + quantum - 1) / quantum * quantum - now_usec;
  if (up <= longest) return up;
  const int64_t down = due / quantum * quantum - now_usec;
  return down >= shortest ? down : delay;
}
}  // namespace

std::string_view DueReasonName(DueReason reason) {
  switch (reason) {
    case DueReason::kAgeTable: return "age table";
    case DueReason::kStretched: return "moving slowly";
    case DueReason::kQuiet: return "quiet";
    case DueReason::kRevived: return "revived";
    case DueReason::kSameDay: return "same UTC day";
    case DueReason::kStopped: return "stopped: quiet";
    case DueReason::kPastTable: return "past the age table";
  }
  return "unknown";
}

int64_t PackState(const AdaptiveState& s) {
  const int64_t gap = std::clamp<int64_t>(s.gap_usec / kUsecPerSecond, 0, kMask28);
  const int64_t quiet = std::clamp<int64_t>(s.quiet_since_usec / kUsecPerMinute, 0, kMask28);
  return (static_cast<int64_t>(s.reason) << 56) | (quiet << 28) | gap;
}

AdaptiveState UnpackState(int64_t packed) {
  AdaptiveState s;
  if (packed <= 0) return s;
  s.gap_usec = (packed & kMask28) * kUsecPerSecond;
  s.quiet_since_usec = ((packed >> 28) & kMask28) * kUsecPerMinute;
  const int64_t reason = (packed >> 56) & 0x7f;
  s.reason = reason >= 1 && reason <= static_cast<int64_t>(DueReason::kPastTable) ? static_cast<DueReason>(reason)
                                                                                 : DueReason::kAgeTable;
  return s;
}

Decision DecideNext(const Observation& obs, const AdaptiveState& state, const AdaptiveSettings& settings) {
  Decision d;
  const bool first = state.gap_usec == 0;
  d.state.quiet_since_usec = first ? obs.age_usec : state.quiet_since_usec;
  if (!obs.floor_usec) {
    d.state.reason = DueReason::kPastTable;
    return d;
  }
  const int64_t floor = std::max<int64_t>(*obs.floor_usec, 1);
  // How long until the fastest count has grown by `share` (at least at_least), at its pace since
  // the observation before.
  bool moved = false;
  double target = std::numeric_limits<double>::infinity();
  const double since = static_cast<double>(std::max<int64_t>(obs.since_usec, kUsecPerSecond));
  for (int k = 0; k < kCountKinds; ++k) {
    if (obs.now[k] < 0 || obs.before[k] < 0) continue;  // not reported
    // Growth is movement; a count that fell (an unlike, a deleted repost) is not: it says nothing
    // of engagement to come.
    const int64_t grew = obs.now[k] - obs.before[k];
    if (grew <= 0) continue;
    moved = true;
    const double need = std::max(settings.share * static_cast<double>(obs.now[k]), static_cast<double>(settings.at_least[k]));
    target = std::min(target, need * since / static_cast<double>(grew));
  }
  // Quiet at the read before: its counts last moved before it (kept to the minute, so a minute's
  // margin). A revival is movement after that.
  const bool was_quiet = !first && state.quiet_since_usec + kUsecPerMinute <= obs.age_usec - obs.since_usec;
  if (moved) d.state.quiet_since_usec = obs.age_usec;
  // Engagement as last known: a count this answer left out (-1) keeps the one before.
  int64_t engaged = 0;
  for (int k : {kReposts, kReplies, kLikes, kQuotes})
    engaged += std::min<int64_t>(std::max<int64_t>(obs.now[k] >= 0 ? obs.now[k] : obs.before[k], 0), INT64_C(1) << 40);
  if (!moved && obs.age_usec - d.state.quiet_since_usec >= settings.stop_quiet_usec && engaged < settings.keep_engaged) {
    d.state.reason = DueReason::kStopped;
    return d;
  }
  const int64_t previous = first ? floor : state.gap_usec;
  const double stretched = std::min({static_cast<double>(settings.max_gap_usec), static_cast<double>(previous) * settings.stretch,
                                     static_cast<double>(obs.age_usec) * settings.age_share});
  const int64_t cap = std::max(floor, static_cast<int64_t>(stretched));
  int64_t delay = cap;
  d.state.reason = DueReason::kQuiet;
  if (moved && was_quiet) {
    delay = floor;  // a revival: back on the age table
    d.state.reason = DueReason::kRevived;
  } else if (moved) {
    delay = std::clamp(static_cast<int64_t>(std::min(target, 9e18)), floor, cap);
    d.state.reason = delay > floor ? DueReason::kStretched : DueReason::kAgeTable;
  }
  if (d.state.reason == DueReason::kStretched || d.state.reason == DueReason::kQuiet)
    delay = Aligned(obs.now_usec, delay, floor, std::max(floor, settings.max_gap_usec));
  if (obs.x_billing && settings.same_day) {
    // The post was read now, so today is paid for: a next read due tomorrow is moved before
    // today's end when that leaves at least the floor and half the gap chosen.
    const int64_t day_end = (obs.now_usec / kUsecPerDayHere + 1) * kUsecPerDayHere - kSameDayMargin;
    const int64_t until_end = day_end - obs.now_usec;
    if (obs.now_usec + delay > day_end + kSameDayMargin && until_end >= floor && until_end >= delay / 2) {
      delay = until_end;
      d.state.reason = DueReason::kSameDay;
    }
  }
  // Whole seconds, up: the row keeps the gap in seconds (PackState), and the completion's due
  // time is the read's time plus that gap, so the replay and the completion agree exactly.
  delay = (delay + kUsecPerSecond - 1) / kUsecPerSecond * kUsecPerSecond;
  d.delay_usec = delay;
  d.state.gap_usec = delay;
  return d;
}

std::optional<int> ParseRefreshPolicy(std::string_view text, std::string* error) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    return v;
  };
  text = trim(text);
  if (text == "age") return 0;
  if (text == "adaptive") return kAdaptiveX | kAdaptiveBluesky | kAdaptiveMastodon;
  int mask = 0, seen = 0;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t colon = item.find(':');
    const std::string_view network = colon == std::string_view::npos ? item : trim(item.substr(0, colon));
    const std::string_view policy = colon == std::string_view::npos ? std::string_view() : trim(item.substr(colon + 1));
    const int bit = network == "x" ? kAdaptiveX : network == "bluesky" ? kAdaptiveBluesky
                  : network == "mastodon" ? kAdaptiveMastodon : 0;
    if (bit == 0 || (policy != "age" && policy != "adaptive")) {
      *error = "expected age, adaptive, or a list of network:policy (networks x, bluesky, mastodon; policies age, adaptive), "
               "got \"" + std::string(item) + "\"";
      return std::nullopt;
    }
    if (seen & bit) {
      *error = "network " + std::string(network) + " is named twice";
      return std::nullopt;
    }
    seen |= bit;
    if (policy == "adaptive") mask |= bit;
  }
  if (seen == 0) {
    *error = "expected age, adaptive, or a list of network:policy";
    return std::nullopt;
  }
  return mask;
}

}  // namespace tweetkeeper
