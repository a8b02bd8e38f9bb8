// Bluesky's AppView as the mock serves it: the XRPC routes (app.bsky.feed.getPosts,
// com.atproto.identity.resolveHandle, the actor and feed reads of following), no token, one rate-limit window shared by every caller with
// the reference xrpc-server's RateLimit-* headers. The answers themselves are bluesky_endpoint.*.
#include "mock_api/bluesky_endpoint.hpp"
#include "mock_api/mock_api.hpp"

namespace tweetkeeper::mock {

void MockApi::AddBlueskyRoutes() {
  static const ProviderRoute kRoutes[] = {
      {"GET", "/xrpc/app.bsky.feed.getPosts", "uris", &GetBlueskyPosts, Dialect::kV2},
      {"GET", "/xrpc/com.atproto.identity.resolveHandle", "handle", &ResolveHandle, Dialect::kV2},
      {"GET", "/xrpc/app.bsky.actor.getProfile", "actor", &GetBlueskyProfile, Dialect::kV2},
      {"GET", "/xrpc/app.bsky.actor.getProfiles", "actors", &GetBlueskyProfiles, Dialect::kV2},
      {"GET", "/xrpc/app.bsky.feed.getAuthorFeed", "actor", &GetAuthorFeed, Dialect::kV2},
  };
  AddProviderRoutes(kRoutes, &MockApi::Xrpc);
}

HttpReply MockApi::Xrpc(const ProviderRoute& route, const HttpCall& call, int64_t now_ms) {
  return Serve(call, now_ms, {ListedIds(call.params, route.ids_param), "", route.path}, [&](Served& counted) {
    EndpointReply answer = route.endpoint(call.params, config_, now_ms);
    // The reference xrpc-server's limiter (FACTS.md 1.6): RateLimit-Limit, -Remaining, -Reset
    // (epoch seconds) and -Policy on every answer; a 429 adds Retry-After in seconds.
    const RateVerdict verdict = xrpc_limiter_.Take("xrpc", now_ms);
    HttpReply reply = Limited(verdict, std::move(answer),
                              R"({"error":"RateLimitExceeded","message":"Rate Limit Exceeded"})", counted);
    if (!verdict.allowed) {
      reply.headers.emplace_back("Retry-After",
                                 std::to_string(std::max<int64_t>(1, verdict.reset_epoch_s - now_ms / 1000)));
    }
    reply.headers.emplace_back("RateLimit-Limit", std::to_string(verdict.limit));
    reply.headers.emplace_back("RateLimit-Remaining", std::to_string(verdict.remaining));
    reply.headers.emplace_back("RateLimit-Reset", std::to_string(verdict.reset_epoch_s));
    reply.headers.emplace_back("RateLimit-Policy",
                               std::to_string(verdict.limit) + ";w=" + std::to_string(config_.xrpc_window_seconds));
    return reply;
  });
}

}  // namespace tweetkeeper::mock
