#pragma once
// Bluesky's AppView, `GET /xrpc/app.bsky.feed.getPosts?uris=at://...&uris=...` (FACTS.md section
// 1; the lexicons of @atproto/api, which tests/mock_api/spec/spec.sh validates against): at most 25 at:// URIs with DIDs, no token;
// posts it will not show are left out (no per-URI error), the order is not the request's, so
// posts are matched to ids by `uri`. Counts map to the tweets' columns: likeCount -> like_count,
// repostCount -> retweet_count, replyCount -> reply_count, quoteCount -> quote_count,
// bookmarkCount -> bookmark_count; no views (impression_count stays NULL); a count an AppView
// leaves out is NULL, never 0. The creation time is the earlier of record.createdAt and
// indexedAt (the sortAt rule): the record key's time is only the client's word.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "provider/provider.hpp"

namespace tweetkeeper::worker {

class BlueskyProvider final : public KeyedProvider {
 public:
  // `api_url`: the AppView, e.g. "https://public.api.bsky.app".
  explicit BlueskyProvider(std::string api_url);

  std::string Name() const override { return "bluesky"; }
  int MaxBatch() const override { return 25; }
  std::string RequestUrl(const std::vector<std::int64_t>& ids, const PostKeys& keys) const override;
  BatchResult ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids,
                          const PostKeys& keys) const override;
  bool SplitsRefusals() const override { return true; }
  // A 400 InvalidRequest "Error: uris/<i> must be a valid at-uri" names the URI at position i.
  std::optional<std::size_t> RefusedKey(const HttpResponse& response) const override;

  // The answer of a 200, exposed for tests and the fuzzer.
  static BatchResult ParseOk(std::string_view body, const std::vector<std::int64_t>& ids, const PostKeys& keys);

  // Handles: posts known by handle only (endpoint bluesky-handle) are asked for by DID, so each
  // handle is resolved first, one GET /xrpc/com.atproto.identity.resolveHandle?handle=... each.
  std::string ResolveHandleUrl(const std::string& handle) const;
  // What an answer says: a DID (as Resolution::key), or that the handle does not resolve (a 400
  // InvalidRequest or HandleNotFound), or (failure set) that nothing was learnt: transport, 5xx,
  // 429, garbage; failure.rate_limit is the AppView's window as its headers said.
  static Resolution ParseResolveHandle(const HttpResponse& response);
  // The same through the Provider interface: posts of endpoint bluesky-handle, named by the
  // handles in their at:// URIs.
  bool ResolvesNames(const std::string& endpoint) const override { return endpoint == "bluesky-handle"; }
  std::vector<std::string> NamesToResolve(const PostKeys& keys) const override;
  std::string ResolveUrl(const std::string& name) const override { return ResolveHandleUrl(name); }
  Resolution ParseResolution(const HttpResponse& response) const override { return ParseResolveHandle(response); }

 private:
  std::string base_;
};

// RateLimit-Limit / -Remaining / -Reset (epoch seconds), and on a 429 Retry-After (seconds) when
// no reset is given; as RateLimit for complete_batch's `rate`.
RateLimit ParseXrpcRateLimit(const Headers& headers, std::int64_t now_epoch_s);

// An RFC 3339 time as Bluesky and Mastodon send it ("2024-10-01T12:00:00.123Z", offsets and any
// number of fraction digits) in Unix milliseconds; nothing when it is not one.
std::optional<std::int64_t> ParseRfc3339Millis(std::string_view text);

}  // namespace tweetkeeper::worker
