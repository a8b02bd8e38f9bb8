#pragma once
// The engagement of a Bluesky post as Jetstream would stream it (issue 52): its likes, reposts,
// replies and quotes, one create per unit of count, each by an account of its own, and the undos
// (unlike, unrepost, a reply or quote deleted), as a pure function of time; and the network's
// other traffic, on posts nobody tracks (--jetstream-rate). Times and hashes only: what the
// records say is bluesky_endpoint.cpp's (JetstreamCommitJson).
//
// The key rule: the counts getPosts answers in a response whose Date is second D are, per kind,
// the number of creates minus deletes of the post's events with time_us < D * 1,000,000. So the
// count at each whole second is the engagement model's (Engagement(), --engagement FILE curves
// too) at the post's age then (AgeAtSecond), and between two whole seconds come exactly the events
// that make the difference:
//  - a "slot" i of a kind is the i-th unit of its count: it enters the count at the first whole
//    second E_i where the model's count exceeds i, its create (its first account's record) being
//    in the second before E_i;
//  - a share of slots (Undo) is undone: the record deleted a fixed delay later (one of four per
//    kind, drawn per slot), and in the same second another account's create takes the slot, so
//    that the count at every whole second stays the model's (replacements are never undone).
// The next event after a moment is found without enumerating a post's events: the model's count
// is inverted analytically (LifeEntryAge) or by galloping bisection on whole seconds.

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "mock_api/engagement.hpp"
#include "mock_api/mock_config.hpp"

namespace tweetkeeper::mock {

// What an event does to its subject. kPost: a post that neither replies nor quotes (background).
enum class Act { kLike, kRepost, kReply, kQuote, kPost };
constexpr int kCountedActs = 4;  // kLike .. kQuote: what getPosts counts

// The undos per kind: the share of slots whose first record is deleted, and the delays (seconds)
// one of which each undone slot draws. README.md ("Engagement") says what they rest on.
struct Undo {
  double share;
  std::array<int64_t, 4> delay_s;
};
const Undo& UndoOf(Act act);

// One Jetstream commit, before it is written.
struct StreamEvent {
  int64_t time_us = 0;
  Act act = Act::kLike;
  bool create = true;
  uint64_t actor = 0;      // names the account (PlcDid) and what its record holds
  int64_t record_us = 0;   // when the record was made: its rkey's time (a delete: its create's)
  uint64_t subject = 0;    // background: a hash naming the subject; 0: the tracked post
  bool operator<(const StreamEvent& o) const { return time_us < o.time_us; }
};

// The age (seconds) getPosts counts a post at in a response dated Unix second D: from its
// record's createdAt, whole seconds, never negative.
int64_t AgeAtSecond(int64_t created_ms, int64_t second);

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// A Bluesky post's counts at each whole second: the one function getPosts and the events share.
class EngagementCurve {
 public:
  EngagementCurve(const MockConfig& config, uint64_t seed, int64_t created_ms);
  // The count (kind kLike .. kQuote) getPosts answers in a response dated Unix second D.
  int64_t CountAt(Act act, int64_t second) const;
  // The count it reaches (at a horizon of centuries: the model's tail never quite ends).
  int64_t Final(Act act) const { return final_[static_cast<int>(act)]; }
  // E_i: the first whole second at which CountAt(act) > i; kNever if none.
  int64_t EntrySecond(Act act, int64_t i) const;
  uint64_t seed() const { return seed_; }
  int64_t created_ms() const { return created_ms_; }

 private:
  int64_t CountAtAge(Act act, int64_t age) const;
  const MockConfig& config_;
  uint64_t seed_;
  int64_t created_ms_;
  int64_t first_second_;  // counts start here (a file's counts at age 0 are streamed just before)
  Life life_;
  bool from_file_ = false;
  std::array<int64_t, kCountedActs> final_{};
};

// The post's events in Unix second s (time_us in [s * 1e6, (s + 1) * 1e6)), appended unsorted.
void PostEventsIn(const EngagementCurve& curve, int64_t second, std::vector<StreamEvent>* out);
// A second at or after `second` at or before the post's next event there (kNever: none): exact,
// or a lower bound when a post's undos are far apart (then PostEventsIn finds none there).
int64_t NextPostEventSecond(const EngagementCurve& curve, int64_t second);
// The post's net counts (creates minus deletes, per kLike .. kQuote) of its events with
// time_us < at_us: CountAt at a whole second, and in between its events so far.
std::array<int64_t, kCountedActs> NetCountsAt(const EngagementCurve& curve, int64_t at_us);

// The network's other traffic in Unix second s: `per_second` events evenly spread, on subjects
// nobody tracks, the same for the same second on every run.
void BackgroundEventsIn(int64_t per_second, int64_t second, std::vector<StreamEvent>* out);

}  // namespace tweetkeeper::mock
