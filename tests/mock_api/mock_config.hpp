#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "mock_api/faults.hpp"
#include "mock_api/gone.hpp"

namespace tweetkeeper::mock {

class EngagementFile;  // engagement.hpp

// Everything the command line can change; the defaults are the real API's current app limits.
// Faults (FaultConfig, FaultPlan, PlanFaults) are in faults.hpp.
struct MockConfig {
  uint64_t deleted_every = 53;      // id % D == 7  -> "deleted" (0 disables)
  uint64_t protected_every = 61;    // id % P == 11 -> "protected" (0 disables)
  uint64_t omitted_every = 0;       // id % O == 13 -> left out of answers: neither data nor errors (0: never)
  uint64_t edited_every = 0;        // id % E == 5 -> edited a second later: edit_history_tweet_ids
                                    //   ends in EditedVersion(id) (0: never)
  // Bluesky: an at:// URI whose record key's clock id % R == 5 is refused as malformed: the whole
  // getPosts request fails (400 "uris/<i> must be a valid at-uri", as the AppView's lexicon check
  // answers). Our URL parser never sends such a URI; this stands in for one the AppView's rules
  // refuse and ours do not. 0: never.
  uint64_t bluesky_refused_every = 0;
  bool repost_count_alias = false;  // spec 2.167 renames retweet_count to repost_count
  int64_t rate_limit = 3500;        // requests per window, per token
  int64_t window_seconds = 900;
  int64_t monthly_cap = 0;  // billed post reads per token per calendar month (UTC) before usage-capped 429s; 0: none
  std::set<std::string> tokens;  // empty: any non-empty bearer token is accepted
  // Bluesky's AppView (no token): one window for every caller, as the PDS's 3000 per 5 minutes
  // per IP (FACTS.md 1.6: the AppView publishes no number).
  int64_t xrpc_rate_limit = 3000;
  int64_t xrpc_window_seconds = 300;
  // Each Mastodon server: 300 requests per 5 minutes per caller (FACTS.md 2.5's defaults).
  int64_t mastodon_rate_limit = 300;
  int64_t mastodon_window_seconds = 300;
  // The accounts that post (follow_world.hpp): how many per network (and per Mastodon server), and
  // how many posts per second they make between them (Zipf-shared). 0 accounts: no one posts.
  uint64_t follow_accounts = 20;
  double follow_rate = 1.0;
  // Bluesky: one post in D of the posting accounts is deleted 5 s after it was made (Jetstream
  // sends its delete event; getPosts and getAuthorFeed stop showing it). 0: none.
  uint64_t follow_delete_every = 0;
  // Jetstream: events a second of the network's other traffic, on posts nobody tracks
  // (--jetstream-rate; engagement_events.hpp BackgroundEventsIn). 0: none.
  int64_t jetstream_rate = 0;
  // X's batch compliance jobs (compliance.hpp): requests per window (--window-seconds) per token
  // and endpoint (X: 150 per 15 minutes); how long an uploaded job takes to complete; how long the
  // upload URL and the download URL live (X: 15 minutes; a week from the job's creation).
  int64_t compliance_rate_limit = 150;
  int64_t compliance_processing_ms = 1000;
  int64_t compliance_upload_seconds = 900;
  int64_t compliance_download_seconds = 7 * 86'400;
  FaultConfig faults;
  // Posts and accounts made gone (POST /mock/gone), from the moment they were: shared by every
  // copy of this config (the HTTP side and the Jetstream).
  std::shared_ptr<GoneWorld> gone = std::make_shared<GoneWorld>();
  // --engagement FILE: the posts whose true curves it holds answer them; the others the model's.
  std::shared_ptr<const EngagementFile> engagement;
};

}  // namespace tweetkeeper::mock
