// Backoff and rate-limit pauses stay within their bounds.

#include <gtest/gtest.h>

#include "service/backoff.hpp"

namespace tweetkeeper::worker {
namespace {

TEST(BackoffDelay, DoublesFromBaseToCap) {
  const Millis base{1000}, cap{60'000};
  EXPECT_EQ(BackoffDelay(1, base, cap, 1.0), Millis{1000});
  EXPECT_EQ(BackoffDelay(2, base, cap, 1.0), Millis{2000});
  EXPECT_EQ(BackoffDelay(3, base, cap, 1.0), Millis{4000});
  EXPECT_EQ(BackoffDelay(6, base, cap, 1.0), Millis{32'000});
  EXPECT_EQ(BackoffDelay(7, base, cap, 1.0), Millis{60'000});
  EXPECT_EQ(BackoffDelay(1000, base, cap, 1.0), Millis{60'000});
}

TEST(BackoffDelay, JitterStaysInUpperHalf) {
  const Millis base{1000}, cap{60'000};
  EXPECT_EQ(BackoffDelay(1, base, cap, 0.0), Millis{500});
  EXPECT_EQ(BackoffDelay(3, base, cap, 0.5), Millis{3000});
  EXPECT_EQ(BackoffDelay(50, base, cap, 0.0), Millis{30'000});
  EXPECT_EQ(BackoffDelay(2, base, cap, -3.0), Millis{1000});  // out-of-range draws are clamped
  EXPECT_EQ(BackoffDelay(2, base, cap, 7.0), Millis{2000});
}

TEST(BackoffDelay, OddInputs) {
  EXPECT_EQ(BackoffDelay(0, Millis{1000}, Millis{60'000}, 1.0), Millis{1000});
  EXPECT_EQ(BackoffDelay(-5, Millis{1000}, Millis{60'000}, 1.0), Millis{1000});
  EXPECT_EQ(BackoffDelay(3, Millis{1000}, Millis{10}, 1.0), Millis{1000});  // cap below base: base
  EXPECT_EQ(BackoffDelay(3, Millis{0}, Millis{100}, 1.0), Millis{4});
}

TEST(Backoff, RandomDrawsWithinBounds) {
  Backoff backoff(Millis{1000}, Millis{60'000});
  for (int attempt = 1; attempt < 20; ++attempt) {
    for (int i = 0; i < 50; ++i) {
      const Millis ceiling = BackoffDelay(attempt, Millis{1000}, Millis{60'000}, 1.0);
      const Millis d = backoff.Next(attempt);
      EXPECT_GE(d, ceiling / 2);
      EXPECT_LE(d, ceiling);
    }
  }
}

TEST(RateLimitPause, UntilResetPlusSlack) {
  const Millis cap{900'000}, fallback{5000};
  EXPECT_EQ(RateLimitPause(1000 + 120, 1000, cap, fallback), Millis{121'000});
  EXPECT_EQ(RateLimitPause(1000, 1000, cap, fallback), Millis{1000});
  EXPECT_EQ(RateLimitPause(900, 1000, cap, fallback), Millis{1000});  // reset in the past (skew)
  EXPECT_EQ(RateLimitPause(1000 + 86'400, 1000, cap, fallback), cap);
  EXPECT_EQ(RateLimitPause(INT64_MAX, 0, cap, fallback), cap);
  EXPECT_EQ(RateLimitPause(std::nullopt, 1000, cap, fallback), fallback);
  EXPECT_EQ(RateLimitPause(std::nullopt, 1000, Millis{1000}, fallback), Millis{1000});
}

}  // namespace
}  // namespace tweetkeeper::worker
