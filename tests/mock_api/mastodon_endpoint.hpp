#pragma once
// Mastodon servers as the mock answers them (FACTS.md section 2), many behind one port: a request
// for server H comes under the path prefix /mastodon/H (the worker's --instance H=URL points
// there), or at the root of a port of its own (--mastodon-host H=PORT). GET
// /api/v1/statuses?id[]=... (4.3+; at most 20 distinct ids or 422), GET /api/v1/statuses/:id,
// GET /api/v2/instance, and for followers GET /api/v1/accounts/lookup?acct= and
// GET /api/v1/accounts/:id/statuses. Statuses it will not show are left out of the list (404 for a single
// one), the list's order is not the request's, ids are per server. Servers named old* run 4.2 (no
// GET /api/v1/statuses: 404); servers named locked* are in authorized-fetch mode (401 without a
// token); the others run 4.5. Each Status carries the attributes its server's version sends
// (the documentation's entities, mastodon/documentation 2903485d), with reblogs, replies, polls,
// images, link cards, edits and content warnings in some of them (README.md says how many).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mock_api/follow_world.hpp"
#include "mock_api/mock_config.hpp"
#include "mock_api/tweets_endpoint.hpp"

namespace tweetkeeper::mock {

constexpr const char* kMastodonPrefix = "/mastodon/";

// X-RateLimit-Reset as Mastodon sends it: ISO 8601 with microseconds ("2026-11-24T20:05:00.000000Z").
std::string MastodonResetTime(int64_t unix_s);

// A Datetime as Mastodon sends one, milliseconds included: "2022-12-08T16:43:47.123Z".
std::string MastodonTime(int64_t unix_ms);

// The answer to `path` (after /mastodon/<host>, or at the root of the server's own port) of
// server `host`; `authorized`: a bearer token came.
EndpointReply MastodonApi(const std::string& host, const std::string& path, const QueryParams& params, bool authorized,
                          const MockConfig& config, int64_t now_ms);

// "HOST=PORT" of --mastodon-host: a server name (letters, digits, '-', '.', at most 253
// characters) and a port from 0 to 65535 (0: any free one). Nothing, with `error` set, otherwise.
std::optional<std::pair<std::string, int>> ParseMastodonHost(const std::string& spec, std::string* error);

// The statuses server `host`'s posting accounts (follow_world.hpp; their first --follow-accounts)
// made in [from_ms, to_ms]: GET /api/v1/accounts/:id/statuses lists them, and /api/v1/statuses
// answers them with that author.
std::vector<MadePost> MastodonMadePosts(const std::string& host, int64_t from_ms, int64_t to_ms,
                                       const MockConfig& config);

// Profile URLs of server `host`'s posting accounts, the busiest first, with their rates.
std::vector<std::pair<std::string, double>> MastodonPosters(const std::string& host, const MockConfig& config);

// The seed of a status's counts and contents on a server.
uint64_t MastodonSeed(const std::string& host, uint64_t id);

}  // namespace tweetkeeper::mock
