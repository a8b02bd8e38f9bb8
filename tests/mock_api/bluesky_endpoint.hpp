#pragma once
// Bluesky's AppView as the mock answers it (public.api.bsky.app, no token): app.bsky.feed.getPosts
// and com.atproto.identity.resolveHandle, true to ../shared/providers/FACTS.md section 1 and to the
// lexicons of @atproto/api (spec/spec.sh validates against them): at most 25 URIs or the whole request is a 400,
// a malformed URI is a 400 naming its index, posts it will not show are left out silently, an
// at:// URI with a handle finds nothing, duplicates are answered once, the order is not the
// request's, every count is sent.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mock_api/engagement_events.hpp"
#include "mock_api/follow_world.hpp"
#include "mock_api/mock_config.hpp"
#include "mock_api/tweets_endpoint.hpp"

namespace tweetkeeper::mock {

// The creation time (Unix ms) a TID record key encodes (microseconds << 10, base32-sortable), or
// nothing when the key is not a TID.
std::optional<int64_t> TidMillis(const std::string& rkey);

// A TID's clock id (its last 10 bits), which decides the post's fate in the mock's world.
uint64_t TidClock(const std::string& rkey);

// Whether s is a DID as the AppView's lexicons check one (did:<method>:<id>).
bool IsDid(const std::string& s);

// The DID the mock's world gives a handle: did:plc: and 24 base32 characters from its hash.
std::string MockDid(const std::string& handle);

// GET /xrpc/app.bsky.feed.getPosts?uris=at://...&uris=...: {"posts":[postView, ...]}.
EndpointReply GetBlueskyPosts(const QueryParams& params, const MockConfig& config, int64_t now_ms);

// GET /xrpc/com.atproto.identity.resolveHandle?handle=...: {"did":"did:plc:..."}; a handle that
// starts with "gone" does not resolve (400 "Unable to resolve handle").
EndpointReply ResolveHandle(const QueryParams& params, const MockConfig& config, int64_t now_ms);

// For followers (issue 38). The world's accounts are user<k>.bsky.social (k below 5,000), by the
// DIDs MockDid gives those handles; the first --follow-accounts of them post (follow_world.hpp).
// GET /xrpc/app.bsky.actor.getProfile?actor=<handle or DID>: profileViewDetailed; a DID of no
// world account, or a handle starting with "gone", is 400 InvalidRequest "Profile not found".
EndpointReply GetBlueskyProfile(const QueryParams& params, const MockConfig& config, int64_t now_ms);
// GET /xrpc/app.bsky.actor.getProfiles?actors=...: {"profiles": [...]}, at most 25 actors; those
// with no profile are left out (no error), the rest once each, in the order asked.
EndpointReply GetBlueskyProfiles(const QueryParams& params, const MockConfig& config, int64_t now_ms);
// GET /xrpc/app.bsky.feed.getAuthorFeed?actor=&limit=&cursor=&filter=: {"feed":[{"post":...}],
// "cursor"}, newest first; other accounts' feeds are empty.
EndpointReply GetAuthorFeed(const QueryParams& params, const MockConfig& config, int64_t now_ms);
// The posts the posting accounts made in [from_ms, to_ms] (at:// URIs by DID).
std::vector<MadePost> BlueskyMadePosts(int64_t from_ms, int64_t to_ms, const MockConfig& config);
// Profile URLs of the posting accounts, the busiest first, with their rates.
std::vector<std::pair<std::string, double>> BlueskyPosters(const MockConfig& config);

// Jetstream's events (its v1 JSON, jetstream_server.cpp sends them) of the posting accounts among
// `dids` (all of them when empty) with after_us < time_us <= until_us, in time order: a create
// for each post (its record as getPosts shows it, time_us a moment after its creation) and a
// delete for each post deleted (--follow-delete-every).
std::vector<std::pair<int64_t, std::string>> JetstreamEvents(const std::set<std::string>& dids, int64_t after_us,
                                                             int64_t until_us, const MockConfig& config);

// Jetstream's delete commit of an app.bsky.feed.post record (POST /mock/gone).
std::string JetstreamPostDeleteJson(const std::string& did, const std::string& rkey, int64_t time_us);

// The seed of a post's counts and contents: its at:// URI's FNV-1a (as the mock's answers use it).
uint64_t BlueskySeed(const std::string& uri);

// A did:plc: of 24 base32 characters from a hash (MockDid's of a handle is this of its hash).
std::string PlcDid(uint64_t h);

// A post whose engagement Jetstream streams (POST /mock/jetstream/posts): its record's CID as
// getPosts shows it, the createdAt its counts' age starts from, the seed of its counts.
struct TrackedPost {
  std::string uri;
  std::string did;
  std::string cid;
  uint64_t seed = 0;
  int64_t created_ms = 0;
};
// Only at://<DID>/app.bsky.feed.post/<TID>: nothing for anything else.
std::optional<TrackedPost> TrackablePost(const std::string& uri);

// One engagement commit (engagement_events.hpp) as Jetstream's v1 JSON, by PlcDid(e.actor): a
// create with its record (app.bsky.feed.like or .repost with subject {uri, cid}; a reply, an
// app.bsky.feed.post whose reply root and parent are the subject; a quote, one whose embed is
// app.bsky.embed.record, or for three in ten app.bsky.embed.recordWithMedia with images) and its
// CID; a delete with collection and rkey only. A background event (e.subject != 0) names a post
// of nobody's from its hash; otherwise `subject` is the tracked post.
std::string EngagementCommitJson(const StreamEvent& e, const TrackedPost* subject);
// The collection an engagement commit is in.
const char* EngagementCollection(const StreamEvent& e);

}  // namespace tweetkeeper::mock
