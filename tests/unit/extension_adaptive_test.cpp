// The adaptive refresh policy's decision (extension/adaptive.cpp): what the completion and make
// bench-adaptive's replay both call.
#include <gtest/gtest.h>

#include "adaptive.hpp"

namespace tweetkeeper {
namespace {

constexpr int64_t kSec = 1000000, kMin = 60 * kSec, kHour = 60 * kMin, kDay = 24 * kHour;
constexpr int64_t kMidnight = INT64_C(1767225600) * kSec;  // 2026-01-01T00:00:00Z

Observation Obs(int64_t age, Counts before, Counts now, int64_t floor, int64_t since = 0) {
  Observation o;
  o.now_usec = kMidnight + 10 * kHour + age;  // posted at 10:00 UTC
  o.age_usec = age;
  o.since_usec = since ? since : age;
  o.before = before;
  o.now = now;
  o.floor_usec = floor;
  return o;
}

const Counts kZero{0, 0, 0, 0, 0, 0};

TEST(AdaptivePolicy, AMovingPostKeepsTheAgeTablesPace) {
  const AdaptiveSettings s;
  // 40 likes in its first 2 minutes: growing 5% takes seconds, the age table's 2 minutes win.
  const Decision d = DecideNext(Obs(2 * kMin, kZero, {4, 1, 40, 0, 0, 3000}, 2 * kMin), AdaptiveState{}, s);
  ASSERT_TRUE(d.delay_usec);
  EXPECT_EQ(*d.delay_usec, 2 * kMin);
  EXPECT_EQ(d.state.reason, DueReason::kAgeTable);
}

TEST(AdaptivePolicy, NeverReadsMoreOftenThanTheAgeTable) {
  AdaptiveSettings s;
  s.share = 0;  // any growth at all would ask for a read at once
  const Decision d = DecideNext(Obs(3 * kHour, {0, 0, 10, 0, 0, 0}, {0, 0, 900, 0, 0, 0}, 30 * kMin, 30 * kMin),
                                AdaptiveState{30 * kMin, 0, DueReason::kAgeTable}, s);
  ASSERT_TRUE(d.delay_usec);
  EXPECT_EQ(*d.delay_usec, 30 * kMin);
}

TEST(AdaptivePolicy, ASlowPostIsReadWhenItHasGrownByItsShare) {
  const AdaptiveSettings s;  // share 0.05
  // 1000 likes, 10 more in the last 30 minutes: 5% (50 likes) in 150 minutes, within the caps
  // (a quarter of its 20 h age, twice the last gap of 2 h), then aligned on the clock.
  // (It moved at the read before too, at 19 h 30 min.)
  const Decision d = DecideNext(Obs(20 * kHour, {0, 0, 990, 0, 0, 0}, {0, 0, 1000, 0, 0, 0}, 30 * kMin, 30 * kMin),
                                AdaptiveState{2 * kHour, 19 * kHour + 30 * kMin, DueReason::kStretched}, s);
  ASSERT_TRUE(d.delay_usec);
  EXPECT_GE(*d.delay_usec, 150 * kMin);
  EXPECT_LE(*d.delay_usec, 150 * kMin + 150 * kMin / 4);
  EXPECT_EQ(d.state.reason, DueReason::kStretched);
  EXPECT_EQ(d.state.gap_usec, *d.delay_usec);
}

TEST(AdaptivePolicy, QuietReadsStretchTheGapUpToTheAgeShareAndMaxGap) {
  const AdaptiveSettings s;  // stretch 2, age_share 0.25, max_gap 3 days
  const Counts c{1, 0, 12, 0, 0, 400};
  AdaptiveState state{10 * kMin, 0, DueReason::kAgeTable};
  // Doubling, within a quarter of the age.
  Decision d = DecideNext(Obs(2 * kHour, c, c, 30 * kMin, 10 * kMin), state, s);
  EXPECT_EQ(d.state.reason, DueReason::kQuiet);
  EXPECT_GE(*d.delay_usec, 30 * kMin);  // 20 min doubled, but never under the floor of 30 min
  EXPECT_LE(*d.delay_usec, 30 * kMin + 30 * kMin / 4);  // (aligned on the clock: below)
  d = DecideNext(Obs(10 * kHour, c, c, 30 * kMin, kHour), AdaptiveState{kHour, 0, DueReason::kQuiet}, s);
  EXPECT_GE(*d.delay_usec, 2 * kHour);  // doubled (2 h: under a quarter of 10 h), aligned
  EXPECT_LE(*d.delay_usec, 2 * kHour + 30 * kMin);
  // A quarter of its age caps it (aligned, up to a quarter more).
  d = DecideNext(Obs(4 * kHour, c, c, 5 * kMin, kHour), AdaptiveState{8 * kHour, 0, DueReason::kQuiet}, s);
  EXPECT_LE(*d.delay_usec, kHour + kHour / 4);
  // And max_gap, whatever the age: a late burst is seen within it.
  d = DecideNext(Obs(20 * kDay, c, c, kDay, 3 * kDay), AdaptiveState{3 * kDay, 0, DueReason::kQuiet}, s);
  EXPECT_LE(*d.delay_usec, 3 * kDay);
  EXPECT_GE(*d.delay_usec, kDay);
}

TEST(AdaptivePolicy, ARevivalIsBackOnTheAgeTable) {
  const AdaptiveSettings s;
  const Decision d = DecideNext(Obs(9 * kDay, {0, 0, 50, 0, 0, 0}, {0, 0, 51, 0, 0, 0}, kDay, 3 * kDay),
                                AdaptiveState{3 * kDay, 2 * kDay, DueReason::kQuiet}, s);
  ASSERT_TRUE(d.delay_usec);
  EXPECT_EQ(*d.delay_usec, kDay);
  EXPECT_EQ(d.state.reason, DueReason::kRevived);
  EXPECT_EQ(d.state.quiet_since_usec, 9 * kDay);
}

TEST(AdaptivePolicy, StopsOnlyQuietPostsNoOneEngagedWith) {
  const AdaptiveSettings s;  // stop_quiet 2 days, keep_engaged 1
  const Counts nobody{0, 0, 0, 0, 0, 80};  // views only
  const AdaptiveState quiet_since_day1{kDay, kDay, DueReason::kQuiet};
  Decision d = DecideNext(Obs(3 * kDay + kHour, nobody, nobody, 6 * kHour, kDay), quiet_since_day1, s);
  EXPECT_FALSE(d.delay_usec);
  EXPECT_EQ(d.state.reason, DueReason::kStopped);
  // Not yet quiet for 2 days: read again.
  d = DecideNext(Obs(2 * kDay, nobody, nobody, 6 * kHour, kDay), quiet_since_day1, s);
  EXPECT_TRUE(d.delay_usec);
  // One like: it may revive, so it is read every max_gap until the age table ends.
  const Counts liked{0, 0, 1, 0, 0, 80};
  d = DecideNext(Obs(25 * kDay, liked, liked, kDay, 3 * kDay), quiet_since_day1, s);
  EXPECT_TRUE(d.delay_usec);
  EXPECT_EQ(d.state.reason, DueReason::kQuiet);
}

TEST(AdaptivePolicy, PastTheAgeTableItIsDone) {
  const AdaptiveSettings s;
  const Counts c{5, 5, 500, 5, 5, 9000};
  Observation o = Obs(31 * kDay, c, {5, 5, 600, 5, 5, 9900}, kDay, kDay);
  o.floor_usec.reset();
  const Decision d = DecideNext(o, AdaptiveState{kDay, 0, DueReason::kAgeTable}, s);
  EXPECT_FALSE(d.delay_usec);
  EXPECT_EQ(d.state.reason, DueReason::kPastTable);
}

TEST(AdaptivePolicy, OnXANextReadDueTomorrowIsMadeOnTheDayPaidFor) {
  const AdaptiveSettings s;
  const Counts c{0, 0, 30, 0, 0, 2000};
  // Read at 16:00 UTC, quiet, the gap doubles to 12 h: due 04:00 tomorrow, billed again. Moved
  // before today's end (23:45), still over the 6 h floor and half the gap.
  Observation o = Obs(30 * kHour, c, c, 6 * kHour, 6 * kHour);
  o.now_usec = kMidnight + 16 * kHour;
  o.x_billing = true;
  Decision d = DecideNext(o, AdaptiveState{6 * kHour, 0, DueReason::kQuiet}, s);
  ASSERT_TRUE(d.delay_usec);
  EXPECT_EQ(o.now_usec + *d.delay_usec, kMidnight + kDay - 15 * kMin);
  EXPECT_EQ(d.state.reason, DueReason::kSameDay);
  // Bluesky and Mastodon bill nothing: no move.
  o.x_billing = false;
  d = DecideNext(o, AdaptiveState{6 * kHour, 0, DueReason::kQuiet}, s);
  EXPECT_GT(o.now_usec + *d.delay_usec, kMidnight + kDay);
  // Nor when today's rest is under the age table's floor.
  o.x_billing = true;
  o.now_usec = kMidnight + 20 * kHour;
  d = DecideNext(o, AdaptiveState{6 * kHour, 0, DueReason::kQuiet}, s);
  EXPECT_GT(o.now_usec + *d.delay_usec, kMidnight + kDay);
  AdaptiveSettings off = s;
  off.same_day = false;
  o.now_usec = kMidnight + 16 * kHour;
  d = DecideNext(o, AdaptiveState{6 * kHour, 0, DueReason::kQuiet}, off);
  EXPECT_GT(o.now_usec + *d.delay_usec, kMidnight + kDay);
}

TEST(AdaptivePolicy, StretchedReadsMeetOnTheClockToFillBatches) {
  const AdaptiveSettings s;
  const Counts c{0, 0, 3, 0, 0, 0};
  // Two quiet posts read a few minutes apart, both due in about 4 h: due at the same moment.
  // (Due about 16:10 and 16:17, two days on: the next multiple of 64 minutes, 17:04.)
  Observation a = Obs(2 * kDay, c, c, 6 * kHour, 2 * kHour);
  a.now_usec += 10 * kMin;
  Observation b = a;
  b.now_usec += 7 * kMin;
  const AdaptiveState st{2 * kHour, kDay, DueReason::kQuiet};
  const Decision da = DecideNext(a, st, s), db = DecideNext(b, st, s);
  EXPECT_EQ(a.now_usec + *da.delay_usec, b.now_usec + *db.delay_usec);
  EXPECT_EQ((a.now_usec + *da.delay_usec) % (64 * kMin), 0);
  EXPECT_EQ(da.state.reason, DueReason::kQuiet);
}

TEST(AdaptivePolicy, CountsNotReportedAreNotMovement) {
  const AdaptiveSettings s;
  // Mastodon reports no views or bookmarks (-1); likes unchanged: quiet.
  const Decision d = DecideNext(Obs(5 * kHour, {2, 0, 7, 0, -1, -1}, {2, 0, 7, 0, -1, -1}, 30 * kMin, 30 * kMin),
                                AdaptiveState{30 * kMin, 0, DueReason::kAgeTable}, s);
  EXPECT_EQ(d.state.reason, DueReason::kQuiet);
}

TEST(AdaptivePolicy, StateSurvivesItsRow) {
  const AdaptiveState s{3 * kDay, 12 * kDay + 17 * kMin, DueReason::kRevived};
  const int64_t packed = PackState(s);
  EXPECT_GT(packed, 0);
  const AdaptiveState back = UnpackState(packed);
  EXPECT_EQ(back.gap_usec, s.gap_usec);
  EXPECT_EQ(back.quiet_since_usec, s.quiet_since_usec);
  EXPECT_EQ(back.reason, s.reason);
  EXPECT_EQ(UnpackState(0).gap_usec, 0);  // none yet
  EXPECT_EQ(UnpackState(-5).reason, DueReason::kAgeTable);  // garbage: a fresh start, not a crash
  EXPECT_EQ(DueReasonName(DueReason::kSameDay), "same UTC day");
}

TEST(AdaptivePolicy, RefreshPolicySettingNamesItsNetworks) {
  std::string error;
  EXPECT_EQ(ParseRefreshPolicy("age", &error), 0);
  EXPECT_EQ(ParseRefreshPolicy(" adaptive ", &error), kAdaptiveX | kAdaptiveBluesky | kAdaptiveMastodon);
  EXPECT_EQ(ParseRefreshPolicy("x:adaptive, mastodon:adaptive", &error), kAdaptiveX | kAdaptiveMastodon);
  EXPECT_EQ(ParseRefreshPolicy("bluesky:adaptive,x:age", &error), kAdaptiveBluesky);
  for (const char* bad : {"", "sometimes", "x", "x:fast", "threads:adaptive", "x:adaptive,x:age", "x:adaptive,,"}) {
    error.clear();
    EXPECT_FALSE(ParseRefreshPolicy(bad, &error).has_value()) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(AdaptivePolicy, AMoveBeforeMidnightIsNoQuietSpell) {
  const AdaptiveSettings s;
  // On X, moving slowly, its last read moved before midnight (reason same UTC day) and it moved
  // then: growing again now is no revival, so not back to the floor.
  const Decision d = DecideNext(Obs(30 * kHour, {0, 0, 990, 0, 0, 0}, {0, 0, 1000, 0, 0, 0}, 6 * kHour, 6 * kHour),
                                AdaptiveState{6 * kHour, 24 * kHour, DueReason::kSameDay}, s);
  EXPECT_NE(d.state.reason, DueReason::kRevived);
  EXPECT_GT(*d.delay_usec, 6 * kHour);
}

TEST(AdaptivePolicy, AFallingCountIsNoMovement) {
  const AdaptiveSettings s;
  // Quiet for a week, then one unlike: still quiet, not a revival.
  const Decision d = DecideNext(Obs(10 * kDay, {0, 0, 50, 0, 0, 0}, {0, 0, 49, 0, 0, 0}, kDay, 3 * kDay),
                                AdaptiveState{3 * kDay, 3 * kDay, DueReason::kQuiet}, s);
  EXPECT_EQ(d.state.reason, DueReason::kQuiet);
  EXPECT_EQ(d.state.quiet_since_usec, 3 * kDay);
}

TEST(AdaptivePolicy, ACountLeftOutKeepsItsLastValueForTheStopRule) {
  const AdaptiveSettings s;
  // 5,000 likes known; this answer left likes out (-1): the post is engaged, not stopped.
  const Decision d = DecideNext(Obs(6 * kDay, {0, 0, 5000, 0, 0, 0}, {0, 0, -1, 0, 0, 0}, kDay, 3 * kDay),
                                AdaptiveState{3 * kDay, kDay, DueReason::kQuiet}, s);
  EXPECT_TRUE(d.delay_usec);
  EXPECT_NE(d.state.reason, DueReason::kStopped);
}

}  // namespace
}  // namespace tweetkeeper
