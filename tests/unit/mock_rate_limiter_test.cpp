#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "mock_api/rate_limiter.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kStart = 1704067200250;  // mid-second, to check the reset rounding

TEST(MockRateLimiter, CountsDownThenRefusesUntilTheWindowRollsOver) {
  RateLimiter limiter(3, 10);
  for (int64_t expected_remaining = 2; expected_remaining >= 0; --expected_remaining) {
    const RateVerdict v = limiter.Take("a", kStart + 100);
    EXPECT_TRUE(v.allowed);
    EXPECT_EQ(v.limit, 3);
    EXPECT_EQ(v.remaining, expected_remaining);
    EXPECT_EQ(v.reset_epoch_s, 1704067211);  // start + 10 s, rounded up
  }
  RateVerdict v = limiter.Take("a", kStart + 9999);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.remaining, 0);
  EXPECT_EQ(v.reset_epoch_s, 1704067211);

  // The window began at the first request (kStart + 100) and lasts exactly 10 s.
  v = limiter.Take("a", kStart + 10100);
  EXPECT_TRUE(v.allowed);
  EXPECT_EQ(v.remaining, 2);
  EXPECT_EQ(v.reset_epoch_s, 1704067221);
}

TEST(MockRateLimiter, RefusedRequestsDoNotCountAndKeysAreIndependent) {
  RateLimiter limiter(1, 60);
  EXPECT_TRUE(limiter.Take("a", kStart).allowed);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(limiter.Take("a", kStart + i).allowed);
  EXPECT_TRUE(limiter.Take("b", kStart).allowed);
  EXPECT_TRUE(limiter.Take("a", kStart + 60000).allowed);
}

TEST(MockRateLimiter, ResetForgetsWindows) {
  RateLimiter limiter(1, 60);
  EXPECT_TRUE(limiter.Take("a", kStart).allowed);
  EXPECT_FALSE(limiter.Take("a", kStart).allowed);
  limiter.Reset();
  EXPECT_TRUE(limiter.Take("a", kStart).allowed);
}

TEST(MockRateLimiter, PeekShowsTheWindowWithoutCountingIt) {
  RateLimiter limiter(3, 10);
  RateVerdict v = limiter.Peek("a", kStart);  // no window yet: one would open now
  EXPECT_EQ(v.remaining, 3);
  EXPECT_EQ(v.reset_epoch_s, 1704067211);
  const RateVerdict taken = limiter.Take("a", kStart + 500);
  EXPECT_EQ(taken.window_start_ms, kStart + 500);
  for (int i = 0; i < 5; ++i) {
    v = limiter.Peek("a", kStart + 1000);
    EXPECT_EQ(v.remaining, 2);
    EXPECT_EQ(v.window_start_ms, kStart + 500);
    EXPECT_EQ(v.reset_epoch_s, 1704067211);
  }
  EXPECT_EQ(limiter.Take("a", kStart + 1000).remaining, 1);  // the peeks took nothing
  EXPECT_EQ(limiter.Peek("a", kStart + 10500).remaining, 3);  // that window is over
  EXPECT_EQ(limiter.Take("a", kStart + 10600).window_start_ms, kStart + 10600);
}

TEST(MockRateLimiter, GrantsExactlyTheLimitUnderConcurrency) {
  RateLimiter limiter(1000, 60);
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) allowed += limiter.Take("shared", kStart).allowed;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(allowed.load(), 1000);
}

}  // namespace
}  // namespace tweetkeeper::mock
