// How a follower shares a budget of requests over its accounts (follow/pacing.hpp): the square-root
// rule, the clamps, a budget that cannot pay for every account's max, and the gate's spacing and
// pauses.

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "follow/pacing.hpp"

namespace tweetkeeper::worker::follow {
namespace {

double Spent(const std::vector<Millis>& intervals) {
  double rps = 0;
  for (Millis m : intervals) rps += 1000.0 / static_cast<double>(m.count());
  return rps;
}

TEST(FollowPacing, BusierAccountsAreReadMoreOftenBySquareRoot) {
  // Rates 4:1 read 2:1, and the budget spent whole.
  const auto iv = PollIntervals({0.04, 0.01}, 1.0, Millis(100), Millis(3'600'000));
  ASSERT_EQ(iv.size(), 2u);
  EXPECT_NEAR(static_cast<double>(iv[1].count()) / static_cast<double>(iv[0].count()), 2.0, 0.01);
  EXPECT_NEAR(Spent(iv), 1.0, 0.01);
  // Against reading both alike, the mean delay per post is smaller.
  const double sqrt_rule = 0.04 * iv[0].count() / 2.0 + 0.01 * iv[1].count() / 2.0;
  const double alike = (0.04 + 0.01) * 2000 / 2.0;
  EXPECT_LT(sqrt_rule, alike);
}

TEST(FollowPacing, ClampsAndWaterFilling) {
  // One account far busier than the others: it gets the minimum, the rest share what is left.
  const auto iv = PollIntervals({100.0, 0.001, 0.001}, 1.0, Millis(2000), Millis(3'600'000));
  EXPECT_EQ(iv[0], Millis(2000));
  EXPECT_EQ(iv[1], iv[2]);
  EXPECT_NEAR(Spent(iv), 1.0, 0.01);
  // A large budget: everyone at the minimum, not faster.
  for (Millis m : PollIntervals({1, 2, 3}, 1000.0, Millis(2000), Millis(60'000))) EXPECT_EQ(m, Millis(2000));
  // A small budget: the max would cost more than it has, so all stretch alike beyond it.
  const auto many = PollIntervals(std::vector<double>(1000, 0.001), 0.1, Millis(2000), Millis(60'000));
  EXPECT_NEAR(Spent(many), 0.1, 0.001);
  EXPECT_GT(many[0], Millis(60'000));
  EXPECT_TRUE(PollIntervals({}, 1.0, Millis(1), Millis(2)).empty());
}

TEST(FollowPacing, PostRateFloorsAndFirstHour) {
  EXPECT_NEAR(PostRate(0, 10), 1.0 / 86400, 1e-12);
  EXPECT_NEAR(PostRate(36, 60), 0.01, 1e-9);       // read as an hour
  EXPECT_NEAR(PostRate(7200, 7200), 1.0, 1e-9);
}

TEST(FollowPacing, GateSpacesAndPauses) {
  Gate gate(2.0);  // a request every 500 ms
  gate.Sent(10'000);
  EXPECT_EQ(gate.NextAt(), 10'500);
  gate.PauseUntil(20'000);
  EXPECT_EQ(gate.NextAt(), 20'000);
  gate.PauseUntil(15'000);  // an earlier pause does not shorten the one held
  EXPECT_EQ(gate.NextAt(), 20'000);
  EXPECT_EQ(gate.PausedUntil(), 20'000);
}

TEST(FollowPacing, WindowShare) {
  // Alone: the window's spare rate (300 per 300 s, 2 kept in hand), at most what is configured.
  EXPECT_NEAR(WindowShare(1.0, 300, 298, 298, 300, 2), 296.0 / 298.0, 1e-9);
  EXPECT_NEAR(WindowShare(0.5, 300, 298, 298, 300, 2), 0.5, 1e-9);
  // Halfway through, 150 used, 75 of them by this client: the other spent 75 in 150 s (0.5/s);
  // 148 spare over 150 s (0.987/s): halfway between what the other leaves and half of it.
  EXPECT_NEAR(WindowShare(1.0, 300, 150, 150, 300, 75), (148.0 / 150.0 - 0.5 + 148.0 / 300.0) / 2, 1e-9);
  // Two clients each taking what this gives them share the window in halves, evenly to its end,
  // even when one starts a minute before the other: simulated second by second over two windows.
  double mine_a = 0, mine_b = 0, credit_a = 0, credit_b = 0, remaining = 300;
  int first_minute = 0, last_minute = 0, late_a = 0, late_b = 0;
  for (int t = 0; t < 600; ++t) {
    if (t == 300) remaining = 300, mine_a = 0, mine_b = 0;  // the second window
    const double left = 300 - t % 300;
    credit_a += WindowShare(1.0, 300, remaining, left, 300, mine_a);
    if (t >= 60) credit_b += WindowShare(1.0, 300, remaining, left, 300, mine_b);
    for (double* c : {&credit_a, &credit_b}) {
      while (*c >= 1 && remaining > 0) {
        *c -= 1;
        remaining -= 1;
        (c == &credit_a ? mine_a : mine_b) += 1;
        if (t >= 180 && t < 300) ++(c == &credit_a ? late_a : late_b);
        if (t >= 300 && t < 360) ++first_minute;
        if (t >= 540) ++last_minute;
      }
    }
  }
  EXPECT_GE(remaining, 0);
  EXPECT_GT(mine_a + mine_b, 270) << "the window is used, not left over";
  EXPECT_NEAR(mine_a, mine_b, 10) << "in halves";
  EXPECT_NEAR(first_minute, last_minute, 10) << "evenly: the window's end is not starved";
  EXPECT_GT(last_minute, 45) << "about one a second in the last minute";
  EXPECT_GT(late_b, 0.5 * late_a) << "the one that came late is not kept out of the first window (" << late_a << ", "
                                   << late_b << ")";
  // Never stopped by an estimate: 5% of configured at least.
  EXPECT_NEAR(WindowShare(1.0, 300, 0, 100, 300, 0), 0.05, 1e-9);
}

TEST(FollowPacing, WindowShareByParts) {
  // Two followers of one server, one holding 90 of its accounts, the other 10 (issue 49: an even
  // split let the one with a single account read it every 2 s with half the window, the other's
  // 99 minutes late). Each weighs its part, and its configured rate by it, as Follower does: they
  // converge on 90% and 10% of the window, and use it whole. Simulated second by second.
  const double wa = 0.9, wb = 0.1;
  double mine_a = 0, mine_b = 0, credit_a = 0, credit_b = 0, remaining = 300;
  double used_a = 0, used_b = 0;  // in the second window
  for (int t = 0; t < 600; ++t) {
    if (t == 300) remaining = 300, mine_a = 0, mine_b = 0;
    const double left = 300 - t % 300;
    credit_a += WindowShare(wa, 300, remaining, left, 300, mine_a, 2, wa);
    credit_b += WindowShare(wb, 300, remaining, left, 300, mine_b, 2, wb);
    for (double* c : {&credit_a, &credit_b}) {
      while (*c >= 1 && remaining > 0) {
        *c -= 1;
        remaining -= 1;
        (c == &credit_a ? mine_a : mine_b) += 1;
        if (t >= 300) (c == &credit_a ? used_a : used_b) += 1;
      }
    }
  }
  EXPECT_GT(used_a + used_b, 270) << "the window is used, not left over";
  EXPECT_NEAR(used_a / (used_a + used_b), 0.9, 0.05) << used_a << " and " << used_b;
  // Halves by default, as before.
  EXPECT_NEAR(WindowShare(1.0, 300, 150, 150, 300, 75), WindowShare(1.0, 300, 150, 150, 300, 75, 2, 0.5), 1e-12);
}

TEST(FollowPacing, GateLendsTurnsToAReadsPages) {
  Gate gate(2.0);  // a request every 500 ms
  gate.Sent(10'000);
  // A read's next two pages go at once, before their turns: the turns after them move back.
  gate.Sent(10'010);
  gate.Sent(10'020);
  EXPECT_EQ(gate.NextAt(), 11'500) << "three requests' spacing from the first: 2 a second on average";
  // Idle for a while: no credit piles up for a burst later.
  gate.Sent(60'000);
  EXPECT_EQ(gate.NextAt(), 60'500);
}

TEST(FollowPacing, GateMakesUpForALateSend) {
  Gate gate(2.0);  // a request every 500 ms
  gate.Sent(10'000);
  // Sent 300 ms after its turn (10'500: the thread was busy): the next turn stays at 11'000, so
  // the follower keeps 2 a second; counted from the late send, each delay would be lost.
  gate.Sent(10'800);
  EXPECT_EQ(gate.NextAt(), 11'000);
  gate.Sent(11'050);
  EXPECT_EQ(gate.NextAt(), 11'500);
  // Later than a second behind its turn: from now, no burst to make up for it.
  gate.Sent(13'000);
  EXPECT_EQ(gate.NextAt(), 13'500);
}

}  // namespace
}  // namespace tweetkeeper::worker::follow
