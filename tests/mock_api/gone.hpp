#pragma once
// Posts and accounts made gone at a time (issue 53): POST /mock/gone says which, and from that
// moment on every network answers as its real API answers for them. X: a post deleted, protected,
// suspended or deactivated (an author's state applies to all its posts), /2/tweets and v1.1 then
// answering with the per-id errors X gives, the batch compliance results naming the reason.
// Bluesky: a post deleted (getPosts leaves it out; Jetstream sends its delete) or an account
// deleted, taken down, suspended or deactivated (getPosts leaves out all its posts; Jetstream
// sends an `account` event), and reactivated. Mastodon: a status deleted or made private, or an
// account deleted or suspended, on a server (statuses?id[] leaves out the status, or all the
// account's, and the single status is a 404). Each change is stamped when
// it is made (Unix µs, strictly after any earlier one), and kept: a state is asked for at a time,
// so answers are the same whenever they are computed. One registry per MockConfig, shared by its
// copies (the HTTP side and the Jetstream).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tweetkeeper::mock {

// Why something is gone. kActive: back (or never gone).
enum class GoneReason { kActive, kDeleted, kProtected, kSuspended, kDeactivated, kTakendown, kPrivate };

// "deleted", "protected", ... as the networks spell them ("takendown" as Jetstream does).
const char* GoneReasonName(GoneReason reason);

// A state in force at a time: its reason, and since when (Unix µs).
struct GoneState {
  GoneReason reason = GoneReason::kActive;
  int64_t since_us = 0;
};

// One Jetstream event a change makes: a Bluesky post's delete commit, or an account's status.
struct GoneEvent {
  int64_t time_us = 0;
  std::string did;
  std::string rkey;           // a delete: the post's record key; empty: an account event
  GoneReason status = GoneReason::kActive;  // an account event: its status (kActive: active again)
  int64_t seq = 0;            // an account event's sequence number (a relay's, counting up)
};

class GoneWorld {
 public:
  using Clock = std::function<int64_t()>;  // Unix µs now
  GoneWorld();
  explicit GoneWorld(Clock clock);

  // Applies a POST /mock/gone body (README.md, "Posts and accounts made gone"): all its entries or
  // none (then false, *error saying which entry and why). *applied: how many; *time_us: when.
  bool Apply(const std::string& body, size_t* applied, int64_t* time_us, std::string* error);

  // The states in force at `at_us` (nothing: never changed by then).
  std::optional<GoneState> XPost(uint64_t id, int64_t at_us) const;
  std::optional<GoneState> XUser(uint64_t id, int64_t at_us) const;
  std::optional<GoneState> BlueskyPost(const std::string& uri, int64_t at_us) const;
  std::optional<GoneState> BlueskyAccount(const std::string& did, int64_t at_us) const;
  std::optional<GoneState> MastodonStatus(const std::string& host, uint64_t id, int64_t at_us) const;
  std::optional<GoneState> MastodonAccount(const std::string& host, uint64_t account_id, int64_t at_us) const;

  // Whether the AppView hides the post at at_us: it or its author's account is gone.
  bool BlueskyHidden(const std::string& uri, const std::string& did, int64_t at_us) const;

  // The Jetstream events from the `from`-th on (the first `from` already seen), in time order, and
  // how many there are in all (the next call's `from`).
  std::vector<GoneEvent> EventsFrom(size_t from, size_t* total) const;
  // Of the first `upto` events, those with from_us <= time_us < to_us, in time order.
  std::vector<GoneEvent> EventsIn(size_t upto, int64_t from_us, int64_t to_us) const;

 private:
  using History = std::vector<GoneState>;  // in time order
  static std::optional<GoneState> At(const std::map<std::string, History>& m, const std::string& key, int64_t at_us);

  Clock clock_;
  mutable std::mutex mutex_;
  int64_t last_us_ = 0;
  int64_t seq_ = 0;
  std::map<std::string, History> x_posts_, x_users_, bsky_posts_, bsky_accounts_, mastodon_, mastodon_accounts_;
  std::vector<GoneEvent> events_;
};

// A Jetstream v1 `account` event: {"did","time_us","kind":"account","account":{"active","did",
// "seq","time","status"}} (no status when active).
std::string JetstreamAccountJson(const GoneEvent& e);

}  // namespace tweetkeeper::mock
