// The age policy's pure logic: bucket choice, the stop, validation, interval arithmetic.
#include <gtest/gtest.h>

#include "policy.hpp"

namespace tweetkeeper {
namespace {

constexpr int64_t kMinute = INT64_C(60000000);
constexpr int64_t kDay = kUsecPerDay;

AgePolicy SpecPolicy() {
  // Deliberately unsorted: the constructor sorts.
  return AgePolicy({{7 * kDay, 360 * kMinute, 3},
                    {18 * kMinute, 2 * kMinute, 0},
                    {30 * kDay, kDay, 4},
                    {60 * kMinute, 5 * kMinute, 1},
                    {kDay, 30 * kMinute, 2}});
}

TEST(AgePolicy, PicksTheSmallestBucketLargerThanTheAge) {
  AgePolicy p = SpecPolicy();
  EXPECT_EQ(p.ForAge(0)->payload, 0u);
  EXPECT_EQ(p.ForAge(18 * kMinute - 1)->payload, 0u);
  EXPECT_EQ(p.ForAge(18 * kMinute)->payload, 1u);
  EXPECT_EQ(p.ForAge(59 * kMinute)->payload, 1u);
  EXPECT_EQ(p.ForAge(2 * kDay)->delay_usec, 360 * kMinute);
  EXPECT_EQ(p.ForAge(30 * kDay - 1)->delay_usec, kDay);
}

TEST(AgePolicy, StopsAfterTheLargestBucket) {
  AgePolicy p = SpecPolicy();
  EXPECT_FALSE(p.ForAge(30 * kDay).has_value());
  EXPECT_FALSE(p.ForAge(INT64_MAX).has_value());
}

TEST(AgePolicy, NegativeAgeCountsAsNew) { EXPECT_EQ(SpecPolicy().ForAge(-kDay)->payload, 0u); }

TEST(AgePolicy, EmptyPolicyRefreshesNothing) {
  AgePolicy p;
  EXPECT_TRUE(p.empty());
  EXPECT_FALSE(p.ForAge(0).has_value());
}

TEST(AgePolicy, RefusesNonsense) {
  EXPECT_THROW(AgePolicy({{0, kMinute, 0}}), PolicyError);
  EXPECT_THROW(AgePolicy({{kDay, 0, 0}}), PolicyError);
  EXPECT_THROW(AgePolicy({{kDay, -kMinute, 0}}), PolicyError);
  // At most kMaxPolicyRows rows (the coordinator passes the whole policy with every completion).
  std::vector<PolicyRow> rows;
  for (size_t i = 1; i <= kMaxPolicyRows; ++i) rows.push_back({static_cast<int64_t>(i) * kMinute, kMinute, i});
  EXPECT_NO_THROW(AgePolicy{rows});
  rows.push_back({static_cast<int64_t>(kMaxPolicyRows + 1) * kMinute, kMinute, 0});
  EXPECT_THROW(AgePolicy{rows}, PolicyError);
  EXPECT_THROW(AgePolicy({{kDay, kMinute, 0}, {kDay, 2 * kMinute, 1}}), PolicyError);
  EXPECT_NO_THROW(AgePolicy({{kDay, kMinute, 0}, {2 * kDay, kMinute, 1}}));
}

TEST(IntervalToUsec, UsesPostgresComparisonSemantics) {
  EXPECT_EQ(IntervalToUsec(0, 0, 5 * kMinute), 5 * kMinute);
  EXPECT_EQ(IntervalToUsec(0, 1, 0), kDay);
  EXPECT_EQ(IntervalToUsec(1, 0, 0), 30 * kDay);
  EXPECT_EQ(IntervalToUsec(1, 2, 3), 32 * kDay + 3);
  EXPECT_EQ(IntervalToUsec(0, 0, -kMinute), -kMinute);
}

TEST(IntervalToUsec, RefusesOverflow) {
  EXPECT_THROW(IntervalToUsec(INT32_MAX, 0, 0), PolicyError);
  EXPECT_THROW(IntervalToUsec(0, INT32_MAX, INT64_MAX / 2), PolicyError);
}

}  // namespace
}  // namespace tweetkeeper
