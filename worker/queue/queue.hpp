#pragma once
// The batch queue as the worker sees it: tweetkeeper.claim_batch / complete_batch /
// release_batch over one libpqxx connection (one Queue per slot, so per thread).
//
// Each call is one statement, its own transaction. The lease lives in the database (claim
// pushes the tweets' due time forward; complete checks the lease), so no transaction stays open
// during the API call and a worker that dies simply lets its leases expire.
//
// Errors: pqxx::broken_connection is retried here (reconnect, then the call again) as long as
// `RetryPolicy` says so: every call is safe to repeat whether or not it committed before the
// connection broke (see Queue::Call). pqxx::sql_error goes to the caller.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <pqxx/transaction_base>
#include <string>
#include <unordered_map>
#include <vector>

#include "batch/batch_result.hpp"

namespace tweetkeeper::worker {

// Due tweets, but no registered credential has quota: claim_batch says until when and why. A
// reason starting with "paced:" is even spending's pace (tweetkeeper.spending), not a shortage.
struct QuotaWait {
  std::int64_t until_epoch_ms = 0;
  std::string reason;
  bool Paced() const { return reason.rfind("paced:", 0) == 0; }
  // Nothing claimable, and the database says when something may be (claim_wait()): an idle
  // wait, which a NOTIFY cuts short, not a quota wait.
  bool Idle() const { return reason.rfind("idle:", 0) == 0; }
};

struct Lease {
  std::int64_t id = 0;
  std::vector<std::int64_t> tweet_ids;  // empty if the database sent something unreadable
  std::string credential;               // whose quota this request spends; empty: no quota kept
  // claim_posts() (Bluesky, Mastodon): each id's key on its network, in the ids' order, and the
  // endpoint they are read from. Empty for X.
  std::vector<std::string> post_keys;
  std::string endpoint;
  // tweetkeeper.payloads in the database, read with each claim: none, first or changed. When
  // on, the request asks for a payload's fields and the completion carries the new objects.
  std::string payloads = "none";
  // With payloads on: the content hash (hex md5) of each claimed post's last kept payload, for
  // the posts that have one.
  std::unordered_map<std::int64_t, std::string> kept_hashes;
  std::optional<QuotaWait> wait;        // set (and id 0) when nothing could be claimed for quota
};

// What the API said of the credential, for complete/release: its x-rate-limit-* headers as
// JSON ("null" when absent) and, on a refusal, "rate-limited", "usage-capped" or "rejected".
struct QuotaReport {
  std::string rate_json = "null";
  std::string refusal;  // empty: not a refusal
};

// The report of an answer: its rate limit, and its failure when that is one of the three kinds that
// say something about the credential (FailureKindName's words: rate-limited, usage-capped, rejected).
QuotaReport QuotaReportOf(const BatchResult& answer);

// Called after the connection broke, with the attempt number (1, 2, ...) and the redacted
// error. It waits as long as it likes (and logs); false gives up: the exception is rethrown.
using RetryPolicy = std::function<bool(int attempt, const std::string& error)>;

class Queue {
 public:
  // `label` prefixes this queue's own log lines (e.g. "slot 1"). Claims are for `provider`
  // and only spend the quota of `credentials` (the names this worker holds tokens for).
  Queue(std::string dsn, std::string worker_name, std::string label, std::string provider,
        std::vector<std::string> credentials);
  ~Queue();
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // Connects, checks that the database can serve a worker, and prepares the statements.
  // Throws pqxx::broken_connection when the database is unreachable (DatabaseInRecovery when
  // it takes no writes yet), DatabaseUnusable when it lacks the extension or this role the
  // grants, pqxx::sql_error when the tweetkeeper SQL API is otherwise unusable.
  void Connect();

  std::optional<Lease> Claim(int max_ids, const RetryPolicy& retry);
  // Returns how many tweets of the lease were stored (fewer than sent: the lease had expired).
  int Complete(std::int64_t lease_id, const std::string& observations_json, const std::string& problems_json,
               const QuotaReport& quota, const RetryPolicy& retry);
  void Release(std::int64_t lease_id, const std::string& reason, const QuotaReport& quota,
               const RetryPolicy& retry);
  // complete_handles(): the DIDs (or problems) of a Bluesky batch of posts known by handle,
  // [{"handle":..,"did":..} | {"handle":..,"problem":..}]. Returns how many posts were settled.
  int CompleteHandles(std::int64_t lease_id, const std::string& resolutions_json, const RetryPolicy& retry);

 private:
  // What the extension's claims offer, by its version (CheckUsable() raises when unusable).
  struct Usable {
    bool claims_hashes = false;  // the claim gives payload hashes (0.3.0 and later)
    bool claim_wait = false;     // claim_wait() says when an empty claim may find something (0.4.0)
  };
  static Usable CheckUsable(pqxx::transaction_base& tx, bool keyed);
  template <typename Body>
  auto Call(const RetryPolicy& retry, Body&& body);

  std::string dsn_;
  std::string worker_name_;
  std::string label_;
  std::string provider_;
  bool keyed_;  // claimed with claim_posts(): Bluesky, Mastodon
  std::string credentials_array_;  // a PostgreSQL text[] literal
  std::unique_ptr<pqxx::connection> connection_;  // pqxx 6: connection_base has no virtual dtor
};

}  // namespace tweetkeeper::worker
