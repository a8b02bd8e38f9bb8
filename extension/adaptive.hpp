// The adaptive refresh policy (tweetkeeper.refresh_policy = 'adaptive') as plain C++: after each
// observation of a post, when to read it next. No PostgreSQL headers here: the completion calls it
// through adaptive_sql.cpp, the unit tests and the replay of make bench-adaptive call it directly,
// so the three make the same decisions.
//
// The rule. The age table is the floor: a post is never read more often than its age's delay
// says. A post read again is due when its counts have probably grown by `share` of themselves,
// at the pace they grew since the observation before (the fastest of its counts decides); a
// count that did not move stretches the gap by `stretch` per quiet read, up to `age_share` of the
// post's age and `max_gap`; a post
// that moves again after a quiet spell (a revival) is back on the age table at once. A post quiet
// for `stop_quiet` with fewer than `keep_engaged` likes + reposts + replies + quotes is done
// (late bursts come to posts that were seen: Cheng et al., WWW 2016); past the age table's last
// bucket every post is done, as under the age table. On X a read on a UTC day already paid for
// costs nothing: a next read that would fall on the next day, but not long after today's end,
// is made before today ends instead.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tweetkeeper {

constexpr int kCountKinds = 6;  // reposts, replies, likes, quotes, bookmarks, views
using Counts = std::array<int64_t, kCountKinds>;  // -1: not reported

struct AdaptiveSettings {
  double share = 0.05;                      // read again when a count has grown by this share ...
  std::array<int64_t, kCountKinds> at_least{1, 1, 1, 1, 1, 20};  // ... or by this much, if more
  double stretch = 2.0;                     // a quiet read multiplies the gap by this
  double age_share = 0.25;                  // and no gap is longer than this share of the post's age
  int64_t max_gap_usec = INT64_C(3) * 86400 * 1000000;      // tweetkeeper.adaptive_max_gap
  int64_t stop_quiet_usec = INT64_C(2) * 86400 * 1000000;   // tweetkeeper.adaptive_stop_quiet
  int64_t keep_engaged = 1;                 // tweetkeeper.adaptive_keep_engaged
  bool same_day = true;                     // X: prefer the UTC day already paid for
};

// Why a post is due when it is (what tweetkeeper.why_due shows).
enum class DueReason : uint8_t {
  kAgeTable = 1,  // moving (or first seen): the age table's pace
  kStretched,     // moving slowly: read when it has grown by `share`
  kQuiet,         // nothing moved: the gap stretched
  kRevived,       // moved again after a quiet spell: back on the age table
  kSameDay,       // X: moved into the UTC day already paid for
  kStopped,       // quiet and small: done before the age table would stop it
  kPastTable,     // past the age table's last bucket: done
};
std::string_view DueReasonName(DueReason reason);

// What a post's row keeps between decisions (packed into one bigint, Pack/Unpack).
struct AdaptiveState {
  int64_t gap_usec = 0;         // the gap chosen last (0: none yet)
  int64_t quiet_since_usec = 0; // age at which its counts last moved (or its first observation)
  DueReason reason = DueReason::kAgeTable;
};
int64_t PackState(const AdaptiveState& state);
AdaptiveState UnpackState(int64_t packed);

struct Observation {
  int64_t now_usec = 0;          // Unix time of this observation
  int64_t age_usec = 0;          // the post's age at it
  int64_t since_usec = 0;        // time since the observation before (its age if none)
  Counts before{};               // the counts before (all 0 for a first observation)
  Counts now{};                  // the counts now (-1: not reported, treated as unchanged)
  std::optional<int64_t> floor_usec;  // the age table's delay at this age; none: past its last bucket
  bool x_billing = false;        // X: billed once per post and UTC day
};

struct Decision {
  std::optional<int64_t> delay_usec;  // none: done
  AdaptiveState state;
};

Decision DecideNext(const Observation& obs, const AdaptiveState& state, const AdaptiveSettings& settings);

// tweetkeeper.refresh_policy: "age" (every network on the age table, the default), "adaptive"
// (every network adaptive), or per network "x:adaptive,mastodon:adaptive" (networks not named:
// age). The networks it makes adaptive as a bit mask (kAdaptiveX, ...), or nothing when it is
// malformed (then `error` says why).
constexpr int kAdaptiveX = 1, kAdaptiveBluesky = 2, kAdaptiveMastodon = 4;
std::optional<int> ParseRefreshPolicy(std::string_view text, std::string* error);

}  // namespace tweetkeeper
