#pragma once
// The accounts of the mock's world that post as time goes by, for the followers (issue 38): on
// each network (and on each Mastodon server) accounts 0 .. follow_accounts-1 post follow_rate
// posts per second between them, shared out as Zipf's law shares them (account k's share is
// proportional to 1 / (k + 1): a few busy accounts, many quiet ones). Each account posts at a fixed
// period from a phase of its own, so that every post is a pure function of the clock: a restarted
// mock has the same past, and a test can ask which posts were made when (/mock/follow/posts).
// What the posts are (their ids, authors, fates) is each network's model: x_users_endpoint.cpp,
// mastodon_endpoint.cpp, bluesky_endpoint.cpp.

#include <cstdint>
#include <string>
#include <vector>

#include "mock_api/mock_config.hpp"

namespace tweetkeeper::mock {

// When an account posts: at n * period_ms + phase_ms (Unix ms) for every whole n. period_ms 0:
// never (a quiet account: not among the posting ones).
struct Cadence {
  int64_t period_ms = 0;
  int64_t phase_ms = 0;
  double per_second() const { return period_ms > 0 ? 1000.0 / static_cast<double>(period_ms) : 0.0; }
};

// Account k's cadence; salt tells networks and servers apart (their accounts post at other moments).
Cadence CadenceOf(const std::string& salt, uint64_t k, const MockConfig& config);

// The moments (Unix ms) the account posted in [from_ms, to_ms]: at most `limit`, the newest ones
// (newest first) or the oldest ones (oldest first).
std::vector<int64_t> PostTimes(const Cadence& cadence, int64_t from_ms, int64_t to_ms, size_t limit,
                               bool newest);

// A post a followed account made, as /mock/follow/posts lists it: its URL (what schedule_post()
// reads) and its creation time.
struct MadePost {
  std::string url;
  int64_t created_ms = 0;
  int64_t deleted_ms = 0;  // when it was deleted (Bluesky, --follow-delete-every); 0: never
};

// POST /mock/jetstream/drop: every open Jetstream connection is dropped (jetstream_server.cpp
// watches this count).
void DropJetstreamConnections();
uint64_t JetstreamDrops();

// How long after it was made a deleted post goes (--follow-delete-every).
constexpr int64_t kFollowDeleteAfterMs = 5000;

}  // namespace tweetkeeper::mock
