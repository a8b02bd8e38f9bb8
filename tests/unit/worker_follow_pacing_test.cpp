// How a follower shares a budget of requests over its accounts (follow/pacing.hpp): the square-root
// rule, the clamps, a budget that cannot pay for every account's max. (The budget's gate and
// window share: worker_rate_budget_test.cpp.)

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

}  // namespace
}  // namespace tweetkeeper::worker::follow
