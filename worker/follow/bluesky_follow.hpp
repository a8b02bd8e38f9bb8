#pragma once
// What a follower reads of followed Bluesky accounts: who an account is (app.bsky.actor.getProfile
// and getProfiles on the AppView), its posts (app.bsky.feed.getAuthorFeed, to fill a gap the stream cannot replay
// and to start a newly followed account), and the events of Jetstream's /subscribe (posts made
// and deleted as they happen). Requests as URLs, answers parsed from plain data, hostile until
// parsed. Sources: bluesky-social/atproto's lexicons (app/bsky/actor/getProfile.json,
// app/bsky/feed/getAuthorFeed.json, app/bsky/feed/defs.json) and the AppView's handlers
// (packages/bsky/src/api/...), bluesky-social/jetstream's README and models (the v1 wire format,
// which its rewrite keeps on /subscribe).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "follow/timeline.hpp"

namespace tweetkeeper::worker::follow {

inline constexpr int kBlueskyFeedPageSize = 100;  // getAuthorFeed's limit maximum
// At most this many DIDs per Jetstream connection (wantedDids; its source's cap).
inline constexpr std::size_t kJetstreamMaxDids = 10000;

// GET /xrpc/app.bsky.actor.getProfile?actor=<handle or DID>
std::string BlueskyProfileUrl(const std::string& base, const std::string& actor);
Account ParseBlueskyProfile(const HttpResponse& response);

// GET /xrpc/app.bsky.actor.getProfiles?actors=...&actors=... (at most kBlueskyProfilesPerRequest):
// a follower resolves the accounts it holds 25 to a request, not one each.
inline constexpr std::size_t kBlueskyProfilesPerRequest = 25;  // getProfiles.json: "maxLength": 25
std::string BlueskyProfilesUrl(const std::string& base, const std::vector<std::string>& actors);
// Each actor asked, in order: found (the profile whose DID it is, or whose handle it is), missing
// (the AppView leaves out an actor it has no profile of: unknown, taken down, deactivated), or,
// when the answer is no list of profiles, every one failed with the reason.
std::vector<Account> ParseBlueskyProfiles(const HttpResponse& response, const std::vector<std::string>& actors);

// GET /xrpc/app.bsky.feed.getAuthorFeed?actor=<DID>&limit=100&filter=posts_with_replies[&cursor=]
std::string BlueskyAuthorFeedUrl(const std::string& base, const std::string& did, const std::string& cursor);
// Only the account's own posts (no reposts, no pinned post: those carry a reason), as at:// URIs
// by DID. The page's cursor, when the feed goes on, is in next_token.
TimelinePage ParseBlueskyAuthorFeed(const HttpResponse& response, const std::string& did);

// One event of Jetstream's /subscribe, as far as a follower cares.
struct JetstreamEvent {
  enum class Kind {
    kPostCreated,    // did made post rkey (created_ms: its record's createdAt, at most time_us)
    kPostDeleted,    // did deleted post rkey
    kAccount,        // did's account: active or not (status says why: takendown, deleted, ...)
    kIdentity,       // did's handle changed (handle; empty when it no longer validates)
    kOther,          // anything else (other collections, updates): the cursor moves on
  };
  Kind kind = Kind::kOther;
  std::string did;
  std::int64_t time_us = 0;  // Jetstream's cursor
  std::string rkey;
  std::int64_t created_ms = 0;
  bool active = true;
  std::string status;
  std::string handle;
  std::string url() const { return "at://" + did + "/app.bsky.feed.post/" + rkey; }
};
// Parses one text frame; returns false with *reason set when it is not an event as Jetstream sends
// them (the caller logs it and reads on).
bool ParseJetstreamEvent(std::string_view frame, JetstreamEvent* event, std::string* reason);

// The /subscribe URL for these DIDs (at most kJetstreamMaxDids) from a cursor (0: live).
std::string JetstreamUrl(const std::string& base, const std::vector<std::string>& dids, std::int64_t cursor_us);

}  // namespace tweetkeeper::worker::follow
