// Which notifications of tweetkeeper_due wake a worker: X's carry a number, Bluesky's and
// Mastodon's their network's name (maintenance()); each worker wakes for its own only.
#include <gtest/gtest.h>

#include "queue/due_listener.hpp"

namespace tweetkeeper::worker {
namespace {

TEST(NotifyIsFor, EachNetworkItsOwn) {
  EXPECT_TRUE(NotifyIsFor("x-v2", "100"));
  EXPECT_TRUE(NotifyIsFor("x-v1.1", "7"));
  EXPECT_TRUE(NotifyIsFor("x-v2", ""));  // (a NOTIFY by hand, without a payload)
  EXPECT_FALSE(NotifyIsFor("x-v2", "bluesky"));
  EXPECT_FALSE(NotifyIsFor("x-v1.1", "mastodon"));
  EXPECT_TRUE(NotifyIsFor("bluesky", "bluesky"));
  EXPECT_FALSE(NotifyIsFor("bluesky", "100"));
  EXPECT_FALSE(NotifyIsFor("bluesky", "mastodon"));
  EXPECT_TRUE(NotifyIsFor("mastodon", "mastodon"));
  EXPECT_FALSE(NotifyIsFor("mastodon", "bluesky"));
  EXPECT_FALSE(NotifyIsFor("mastodon", "25"));
}

}  // namespace
}  // namespace tweetkeeper::worker
