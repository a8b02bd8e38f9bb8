#pragma once
// The provider-neutral outcome of one API request for one batch of tweet ids.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tweetkeeper::worker {

// A metric the API did not send stays empty, never 0: complete_batch then keeps the tweet's
// last known value (and history records it as not reported).
struct Metrics {
  std::optional<std::int64_t> retweet_count;
  std::optional<std::int64_t> reply_count;
  std::optional<std::int64_t> like_count;
  std::optional<std::int64_t> quote_count;
  std::optional<std::int64_t> bookmark_count;
  std::optional<std::int64_t> impression_count;
};

// Each count with its name in complete_batch's payload (X API v2's public_metrics names), in
// the payload's order: what writes the payload and what checks it walk the same list.
struct CountField {
  const char* name;
  std::optional<std::int64_t> Metrics::*member;
};
inline constexpr std::array<CountField, 6> kCountFields{{{"retweet_count", &Metrics::retweet_count},
                                                         {"reply_count", &Metrics::reply_count},
                                                         {"like_count", &Metrics::like_count},
                                                         {"quote_count", &Metrics::quote_count},
                                                         {"bookmark_count", &Metrics::bookmark_count},
                                                         {"impression_count", &Metrics::impression_count}}};

struct Observation {
  std::int64_t id = 0;
  Metrics metrics;
  std::string invalid;  // counts the answer gave that are none ("like_count -5, ..."): not stored
  // When the post was made, as the answer says (Bluesky, Mastodon: their keys only estimate it;
  // X's ids say it exactly, so X's providers leave it empty). Unix milliseconds.
  std::optional<std::int64_t> created_ms;
  // With payloads on: the post's object as the API gave it (JSON text), and for X its author's
  // user object from includes.users. Empty: none.
  std::string payload;
  std::string author;
  std::string content_hash;  // the payload's hex md5 (provider/content_hash.hpp), set with it
  // X: the last of edit_history_tweet_ids when it is newer than `id` (the post was edited).
  std::optional<std::int64_t> newest_id;
  // Bluesky: the moment the answer's counts are as of (its Date header, Unix ms): stream counts
  // compare the read with the stream's count then (sql/replaceable/38_stream.sql).
  std::optional<std::int64_t> as_of_ms;
};

// A requested id the API answered with an error (deleted, protected, ...).
struct Problem {
  std::int64_t id = 0;
  std::string type;  // e.g. "resource-not-found" (the part after /2/problems/)
  std::string detail;
};

// Why a whole request failed; decides how long the worker waits before the next one.
enum class FailureKind {
  kNone,
  kTransport,          // no HTTP answer: DNS, connect, timeout, aborted
  kRateLimited,        // 429 for the 15-minute window: wait for x-rate-limit-reset
  kUsageCapped,        // 429 for the monthly cap: waiting for the window does not help
  kRejected,           // 401/403 (or a v1.1 auth error code): the token is wrong or lacks access
  kOurRequestInvalid,  // 400: the request we built is wrong (our bug); retrying the same ids fails again
  kOtherClientError,   // other 4xx and 3xx: most likely a wrong --api-url
  kServer,             // 5xx
  kUnparsable,         // a 200 whose body we cannot use

};

const char* FailureKindName(FailureKind kind);

// x-rate-limit-* headers, when present and numeric.
struct RateLimit {
  std::optional<std::int64_t> limit;
  std::optional<std::int64_t> remaining;
  std::optional<std::int64_t> reset_epoch_s;
};

struct BatchResult {
  FailureKind failure = FailureKind::kNone;
  std::string reason;  // readable, for logs and release_batch; empty on success
  std::vector<Observation> observations;
  std::vector<Problem> problems;
  std::size_t ignored = 0;            // entries about ids we did not ask for, or malformed entries
  std::vector<std::int64_t> omitted;  // requested ids the answer left out (neither found nor an error)
  RateLimit rate_limit;

  bool ok() const { return failure == FailureKind::kNone; }
};

}  // namespace tweetkeeper::worker
