// How a follower shares a budget of requests over its accounts (follow/pacing.hpp): the square-root
// rule, the clamps, a budget that cannot pay for every account's max, when a plan is made again,
// and the turns reads are booked in. (The budget's gate and window share:
// worker_rate_budget_test.cpp.)

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "follow/pacing.hpp"
#include "service/rate_budget.hpp"

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

TEST(FollowPacing, AWindowsRatesAreTakenBesideItsMean) {
  // Read for 200 s (an hour, as PostRate takes it): 200, 20 and 0 posts (mean 73.3), one not read.
  const std::vector<double> r = WindowRates({200, 20, 0, -1}, {200, 200, 200, 200});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_NEAR(r[0], (200 + 73.3) / 3600, 1e-4);
  EXPECT_NEAR(r[2], 73.3 / 3600, 1e-4);  // none found yet: not a post a day
  EXPECT_NEAR(r[3], 2 * 73.3 / 3600, 1e-4);  // not read: as a read account of the mean
  EXPECT_GT(r[0], r[1]);
  EXPECT_GT(r[1], r[2]);
  // Planned from these, the quiet account is read less often than the busy one, but the spread
  // is narrower than from the counts alone (a 0 there is "a post a day").
  const auto iv = PollIntervals(r, 0.9, Millis(2000), Millis(900'000));
  const auto alone = PollIntervals({PostRate(200, 200), PostRate(20, 200), PostRate(0, 200), PostRate(0, 200)}, 0.9,
                                   Millis(2000), Millis(900'000));
  EXPECT_LT(iv[0], iv[2]);
  EXPECT_LT(static_cast<double>(iv[2].count()) / static_cast<double>(iv[0].count()),
            static_cast<double>(alone[2].count()) / static_cast<double>(alone[0].count()) / 3);
  // Nothing read yet: all alike.
  const std::vector<double> none = WindowRates({-1, -1}, {10, 10});
  EXPECT_EQ(none[0], none[1]);
}

TEST(FollowPacing, APlanMadeBeforeAnyPostIsMadeAgainOncePostsAreFound) {
  // A Mastodon server's 100 accounts, planned while they resolved (no post found yet).
  EXPECT_FALSE(ReplanDue(0, 0, 100, 0));
  EXPECT_FALSE(ReplanDue(0, 99, 100, 0));
  EXPECT_TRUE(ReplanDue(0, 100, 100, 0));  // their first reads found as many posts as accounts
  EXPECT_FALSE(ReplanDue(0, 100, 100, 1));  // ... but not while one is still to be read a first time
  // Later, once a tenth more than the last plan was made from (and at least as many as accounts).
  EXPECT_FALSE(ReplanDue(10'000, 10'999, 100, 0));
  EXPECT_TRUE(ReplanDue(10'000, 11'000, 100, 0));
  EXPECT_FALSE(ReplanDue(500, 599, 100, 0));
  EXPECT_TRUE(ReplanDue(500, 600, 100, 0));
  EXPECT_FALSE(ReplanDue(0, 0, 0, 0));
}

TEST(FollowPacing, TurnsAreBookedASpacingApart) {
  ReadTurns turns;
  EXPECT_EQ(turns.Book(10'000, 1000), 10'000);
  EXPECT_EQ(turns.Book(10'000, 1000), 11'000);  // the same moment: the next free turn
  EXPECT_EQ(turns.Book(9'500, 1000), 12'000);   // too close to 10,000 before it, and the rest taken
  EXPECT_EQ(turns.Book(8'000, 1000), 8'000);    // a gap wide enough before them
  EXPECT_EQ(turns.Book(8'500, 1000), 9'000);  // between them, a spacing from each
  turns.Release(11'000);
  EXPECT_EQ(turns.Book(10'400, 1000), 11'000);  // freed: taken again, no closer than a spacing
  turns.Release(99);                            // none booked there: nothing
  EXPECT_EQ(turns.size(), 5u);
  turns.Clear();
  EXPECT_EQ(turns.Book(8'500, 1000), 8'500);
}

// A server's 100 accounts (Zipf rates, 5 posts a second in all), planned by the square-root rule at
// 90% of a gate of a request a second and read for an hour of simulated time, one request a read,
// each read sent in the gate's turn. next(i, sent): when account i's next read is planned for.
// Returns how late the latest read went against its plan (ms).
std::int64_t WorstLateness(const std::function<std::int64_t(std::size_t, std::int64_t)>& next, std::vector<std::int64_t> due) {
  Gate gate(1.0);
  std::int64_t worst = 0;
  for (;;) {
    const std::size_t i = static_cast<std::size_t>(std::min_element(due.begin(), due.end()) - due.begin());
    if (due[i] > 3'600'000) return worst;
    const std::int64_t sent = std::max(due[i], gate.NextAt());
    gate.Sent(sent);
    worst = std::max(worst, sent - due[i]);
    due[i] = next(i, sent);
  }
}

TEST(FollowPacing, ReadsInBookedTurnsDoNotQueueAtTheGate) {
  std::vector<double> rates;
  for (int i = 1; i <= 100; ++i) rates.push_back(5.0 / 5.187 / i);
  const std::vector<Millis> iv = PollIntervals(rates, 0.9, Millis(2000), Millis(900'000));
  std::vector<std::int64_t> first;
  for (std::size_t i = 0; i < iv.size(); ++i) first.push_back(static_cast<std::int64_t>(i) * 1000);
  // Planned by their intervals alone, reads of different intervals come due together and queue at
  // a gate they use 90% of: seconds late (what make bench-follow measured).
  const std::int64_t by_interval = WorstLateness([&](std::size_t i, std::int64_t sent) { return sent + iv[i].count(); }, first);
  EXPECT_GT(by_interval, 2000);
  // In booked turns: each read goes in its turn.
  ReadTurns turns;
  std::vector<std::int64_t> turn(first);
  for (std::int64_t t : first) turns.Book(t, 1000);
  const std::int64_t booked = WorstLateness(
      [&](std::size_t i, std::int64_t sent) {
        turns.Release(turn[i]);
        return turn[i] = turns.Book(sent + iv[i].count(), 1000);
      },
      first);
  EXPECT_EQ(booked, 0);
  EXPECT_EQ(turns.size(), iv.size());
}

}  // namespace
}  // namespace tweetkeeper::worker::follow
