#pragma once
// tweetkeeper-worker --follow: a follower of accounts. It holds followed accounts of one network
// under leases (claim_follows, renewed every third of the lease), reads each one's new posts
// through the network's API as often as its budget allows (pacing.hpp: busier accounts more
// often), and stores them with store_follow_posts() in the transaction that schedules them, with
// their own creation times. An account is resolved first (its id and handle from the service; a
// missing or private one is marked, and asked about again later). One thread, one connection,
// one request at a time: a follower's cost is its requests, which the budget bounds.

#include <chrono>
#include <cstdint>
#include <atomic>
#include <map>
#include <set>
#include <memory>
#include <string>

#include "credentials/credentials.hpp"
#include "follow/follow_db.hpp"
#include "follow/jetstream_client.hpp"
#include "follow/pacing.hpp"
#include "follow/reader.hpp"
#include "http/http_client.hpp"
#include "service/rate_budget.hpp"
#include "stop/stop_signal.hpp"
#include "telemetry/telemetry.hpp"

namespace tweetkeeper::worker::follow {

struct FollowerOptions {
  std::string name;
  std::string dsn;
  std::string provider;  // x-v2, bluesky, mastodon
  std::string api_url;   // X's and Bluesky's API
  std::map<std::string, std::string> instances;  // Mastodon: host -> URL (tests, the mock)
  bool allow_private_hosts = false;
  Credentials tokens;  // X: the first credential's token reads; Mastodon: host=token
  HttpOptions http;
  int max_accounts = 1000;                  // --follow-max-accounts
  int lease_seconds = 15;                   // a killed follower's accounts move on after this
  Millis min_poll{2000};                    // --follow-min-poll
  Millis max_poll{15 * 60 * 1000};          // --follow-max-poll
  double share = 0.5;                       // --follow-share: of each window, for following
  std::chrono::seconds exit_when_idle{0};   // tests: stop when nothing was found for this long
  // Bluesky: Jetstream's ws(s):// base; empty: read each account's feed (getAuthorFeed) instead.
  std::string jetstream_url;
  // Jetstream's zstd dictionary (--jetstream-dictionary): its stream compressed; nullptr: not.
  std::shared_ptr<const zstd::Dictionary> jetstream_dictionary;
};

class Follower {
 public:
  Follower(FollowerOptions options, Telemetry& telemetry, StopSignal& stop);
  ~Follower();
  // Waits for the database (as the worker's slots do), then checks it can follow.
  bool Connect(std::chrono::seconds startup_timeout);
  int Run();

 private:
  struct Held;
  void ClaimAccounts();
  // The held account due next (counting its budget's wait), and when; nullptr: none.
  Held* NextDue(std::int64_t* due_at);
  void Poll(Held& held);
  // One request of a read of `held`, in its budget's turn (first_sent: when the read's first went).
  HttpResponse Send(Held& held, const std::string& url, Reach reach, std::int64_t* first_sent);
  // `held` and the others of its budget due to be resolved, as many as one request looks up.
  void ResolveDue(Held& held, const Fetch& fetch);
  bool Resolved(Held& held, const Account& a);
  // What a read found, stored, and the account's next read planned.
  void StoreRead(Held& held, ReadOutcome& out, std::int64_t planned, std::int64_t first_sent);
  RateBudget& BudgetOf(Held& held);
  // The leases went (a lost session): nothing held, the stream to start again from the positions kept.
  void ForgetLeases();
  void Repace(const std::string& group);
  void Learn(RateBudget& budget, const HttpResponse& response);
  // Bluesky with Jetstream: the accounts' DIDs subscribed, the gaps the stream cannot replay
  // filled from their feeds, the events handled, the read position kept.
  bool streaming() const { return stream_ != nullptr; }
  void Subscribe();
  // catch_up: frames of the catch-up connection (the accounts that joined, from their positions).
  void HandleFrames(const std::vector<std::string>& frames, bool catch_up);
  void MarkStreamRead(bool now);
  void CatchUp();
  // The stream's side of one turn of Run(): its connections noticed, its frames handled, its
  // position kept; waits at most until `wake`.
  void StreamTurn(std::int64_t now, std::int64_t wake);

  FollowerOptions options_;
  Telemetry& telemetry_;
  StopSignal& stop_;
  std::unique_ptr<Reader> reader_;  // the network's (constructed before the members below use it)
  std::string network_;
  HttpClient http_;
  FollowDb db_;
  std::map<std::int64_t, std::unique_ptr<Held>> held_;
  std::map<std::string, std::unique_ptr<RateBudget>> budgets_;
  std::map<std::string, std::int64_t> shares_;  // follow_shares(): accounts all followers hold, per server
  std::int64_t next_claim_ms_ = 0;
  std::int64_t last_found_ms_ = 0;
  std::int64_t posts_found_ = 0, requests_ = 0;
  // Stream mode (streaming()).
  std::unique_ptr<JetstreamClient> stream_;
  std::atomic<std::int64_t> stream_cursor_us_{0};  // where a (re)connection starts
  std::int64_t position_us_ = 0;                   // every event up to here handled
  std::int64_t marked_us_ = 0;                     // ... and stored as the accounts' position
  std::int64_t next_mark_ms_ = 0;
  std::uint64_t connections_seen_ = 0;
  std::set<std::int64_t> covered_;                 // accounts whose position follows the stream's
  // Accounts that join the subscription (newly followed, taken over, held again) are read from
  // their own positions by a second, temporary connection, which leaves the live one live: it
  // replays the stream from the earliest of them until it has passed the moment they joined the
  // live one, then closes; they are covered from then on.
  std::set<std::int64_t> joining_;                 // joined; their catch-up starts soon
  std::int64_t join_from_us_ = INT64_MAX;          // ... from here
  std::int64_t catch_up_due_ms_ = 0;               // ... once the joins of the moment are in
  std::set<std::int64_t> catching_;                // read by the catch-up connection now
  std::unique_ptr<JetstreamClient> catch_up_;
  std::atomic<std::int64_t> catch_up_cursor_us_{0};
  std::int64_t catch_up_position_us_ = 0;
  std::int64_t catch_up_until_us_ = 0;             // it is done once past here
  std::int64_t catch_up_started_ms_ = 0;
  std::set<std::int64_t> gaps_;                    // accounts whose gap their feed fills first
  std::map<std::string, std::int64_t> by_did_;     // the subscription: DID -> follow_id
};

}  // namespace tweetkeeper::worker::follow
