// The service kit's rate budget (service/rate_budget.hpp): the gate's spacing and pauses, a
// window shared with clients one cannot see, and what a budget learns from an answer's headers.

#include <gtest/gtest.h>

#include <algorithm>

#include "service/backoff.hpp"
#include "service/rate_budget.hpp"

namespace tweetkeeper::worker {
namespace {

TEST(RateBudget, GateSpacesAndPauses) {
  Gate gate(2.0);  // a request every 500 ms
  gate.Sent(10'000);
  EXPECT_EQ(gate.NextAt(), 10'500);
  gate.PauseUntil(20'000);
  EXPECT_EQ(gate.NextAt(), 20'000);
  gate.PauseUntil(15'000);  // an earlier pause does not shorten the one held
  EXPECT_EQ(gate.NextAt(), 20'000);
  EXPECT_EQ(gate.PausedUntil(), 20'000);
}

TEST(RateBudget, WindowShare) {
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

TEST(RateBudget, WindowShareByParts) {
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

TEST(RateBudget, GateLendsTurnsToAReadsPages) {
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

TEST(RateBudget, GateMakesUpForALateSend) {
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

constexpr std::int64_t kNow = 1'000'000'000'000;  // Unix ms
constexpr std::int64_t kNowS = kNow / 1000;

RateLimit Window(std::optional<std::int64_t> limit, std::optional<std::int64_t> remaining,
                 std::optional<std::int64_t> reset_s) {
  return RateLimit{limit, remaining, reset_s};
}

TEST(RateBudget, StartsAtTheConfiguredShare) {
  RateBudget budget(300, 300, 0.5);  // 300 per 5 minutes, half of it
  EXPECT_DOUBLE_EQ(budget.configured_rps(), 0.5);
  EXPECT_DOUBLE_EQ(budget.gate().budget(), 0.5);
  EXPECT_TRUE(budget.repace) << "a new budget's accounts are planned";
}

TEST(RateBudget, LearnsTheWindowsLimit) {
  RateBudget budget(300, 300, 0.5);
  budget.repace = false;
  EXPECT_FALSE(budget.Learn(Window(600, std::nullopt, std::nullopt), false, kNow));
  EXPECT_DOUBLE_EQ(budget.limit(), 600);
  EXPECT_DOUBLE_EQ(budget.gate().budget(), 1.0);
  EXPECT_TRUE(budget.repace);
  // The same limit again, or none, or a nonsense one: nothing changes.
  budget.repace = false;
  budget.Learn(Window(600, std::nullopt, std::nullopt), false, kNow);
  budget.Learn(Window(0, std::nullopt, std::nullopt), false, kNow);
  budget.Learn(Window(std::nullopt, std::nullopt, std::nullopt), false, kNow);
  EXPECT_DOUBLE_EQ(budget.limit(), 600);
  EXPECT_FALSE(budget.repace);
}

TEST(RateBudget, SpendsWhatIsLeftOfTheWindow) {
  RateBudget budget(300, 300, 1.0);
  // 150 s and 100 requests left of the window, this client's first answer in it (one request of
  // its own): WindowShare's rate, below the configured 1/s (the others were seen spending).
  budget.Learn(Window(300, 100, kNowS + 150), false, kNow);
  EXPECT_NEAR(budget.gate().budget(), WindowShare(1.0, 300, 100, 150, 300, 1, 2, 1.0), 1e-12);
  EXPECT_LT(budget.gate().budget(), 1.0);
  // A reset already past says nothing of the window left: the rate stays.
  const double before = budget.gate().budget();
  budget.Learn(Window(300, 5, kNowS - 1), false, kNow);
  EXPECT_DOUBLE_EQ(budget.gate().budget(), before);
}

TEST(RateBudget, CountsItsOwnRequestsPerWindow) {
  RateBudget a(300, 300, 1.0), b(300, 300, 1.0);
  // a made 50 of the 150 used; b's answers say the same window but b made only one of them.
  for (int i = 0; i < 50; ++i) a.Learn(Window(300, 150, kNowS + 150), false, kNow);
  b.Learn(Window(300, 150, kNowS + 150), false, kNow);
  EXPECT_NEAR(a.gate().budget(), WindowShare(1.0, 300, 150, 150, 300, 50, 2, 1.0), 1e-12);
  EXPECT_NEAR(b.gate().budget(), WindowShare(1.0, 300, 150, 150, 300, 1, 2, 1.0), 1e-12);
  EXPECT_GT(a.gate().budget(), b.gate().budget()) << "others seen spending more leave b less";
  // A new reset is a new window: a's count starts again.
  a.Learn(Window(300, 299, kNowS + 299), false, kNow);
  EXPECT_NEAR(a.gate().budget(), WindowShare(1.0, 300, 299, 299, 300, 1, 2, 1.0), 1e-12);
}

TEST(RateBudget, AWeightIsThisClientsPartOfTheWindow) {
  // A follower holding 90 of the 100 accounts all followers read through a window (follow_shares()):
  // 90% of its configured share, the gate slowed to it at once, and its part weighed in what it
  // learns of the window.
  RateBudget budget(300, 300, 1.0);
  budget.SetWeight(0.9);
  EXPECT_DOUBLE_EQ(budget.configured_rps(), 0.9);
  EXPECT_DOUBLE_EQ(budget.gate().budget(), 0.9);
  budget.Learn(Window(300, 150, kNowS + 150), false, kNow);
  EXPECT_NEAR(budget.gate().budget(), WindowShare(0.9, 300, 150, 150, 300, 1, 2, 0.9), 1e-12);
  EXPECT_NE(budget.gate().budget(), WindowShare(0.9, 300, 150, 150, 300, 1)) << "not the halves of two equal clients";
}

TEST(RateBudget, AsksForANewPlanWhenTheRateMovesMoreThanFivePercent) {
  RateBudget budget(300, 300, 1.0);
  budget.repace = false;
  budget.planned_rps = WindowShare(1.0, 300, 200, 200, 300, 1, 2, 1.0);
  budget.Learn(Window(300, 200, kNowS + 200), false, kNow);  // the rate planned for
  EXPECT_FALSE(budget.repace);
  budget.Learn(Window(300, 20, kNowS + 200), false, kNow);  // much less left
  EXPECT_TRUE(budget.repace);
}

TEST(RateBudget, PausesUntilTheResetWhenTheWindowIsSpent) {
  RateBudget budget(300, 300, 1.0);
  // remaining 1 (or 0): until the reset and a second.
  const auto paused = budget.Learn(Window(300, 1, kNowS + 40), false, kNow);
  ASSERT_TRUE(paused);
  EXPECT_EQ(*paused, (kNowS + 40) * 1000 + 1000);
  EXPECT_EQ(budget.gate().PausedUntil(), *paused);
  EXPECT_GE(budget.gate().NextAt(), *paused);
  // Two left: no pause.
  RateBudget fresh(300, 300, 1.0);
  EXPECT_FALSE(fresh.Learn(Window(300, 2, kNowS + 40), false, kNow));
  EXPECT_EQ(fresh.gate().PausedUntil(), 0);
}

TEST(RateBudget, A429WithoutResetPausesAMinuteAndAFarResetAtMost15Minutes) {
  RateBudget budget(300, 300, 1.0);
  EXPECT_EQ(budget.Learn(Window(std::nullopt, std::nullopt, std::nullopt), true, kNow), kNow + 60'000);
  RateBudget far(300, 300, 1.0);
  EXPECT_EQ(far.Learn(Window(300, 0, kNowS + 3600), true, kNow), kNow + 15 * 60'000);
}

TEST(ReconnectBackoff, HalfASecondDoublingToThirtySeconds) {
  EXPECT_EQ(kReconnectBase, Millis{500});
  EXPECT_EQ(kReconnectCap, Millis{30'000});
  Backoff backoff = ReconnectBackoff();
  for (int attempt = 1; attempt <= 12; ++attempt) {
    const Millis ceiling = std::min(Millis{500 << std::min(attempt - 1, 10)}, Millis{30'000});
    const Millis d = backoff.Next(attempt);
    EXPECT_GE(d, ceiling / 2) << "attempt " << attempt;
    EXPECT_LE(d, ceiling) << "attempt " << attempt;
  }
}

}  // namespace
}  // namespace tweetkeeper::worker
