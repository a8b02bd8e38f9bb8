#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mock_api/compliance.hpp"
#include "mock_api/mock_config.hpp"
#include "mock_api/rate_limiter.hpp"
#include "mock_api/request_stats.hpp"
#include "mock_api/tweets_endpoint.hpp"

namespace tweetkeeper::mock {

// The whole server minus sockets: routing, auth, rate limits, stats and the request log.
// main.cpp only translates httplib requests into HttpCall and applies HttpReply. Each network
// registers its routes in a file of its own (x_routes.cpp, bluesky_routes.cpp,
// mastodon_routes.cpp); mock_api.cpp holds what they share and the test endpoints.

struct HttpCall {
  std::string method;
  std::string path;
  QueryParams params;
  std::string authorization;       // the Authorization header, "" when absent
  bool reused_connection = false;  // the connection carried an earlier request (for fault stats)
  std::string body{};              // read only for the routes main.cpp names (POST /mock/jetstream/posts)
  std::string content_type{};      // the Content-Type header (the storage host's uploads)
};

struct HttpReply {
  int status = 200;  // 0: send nothing, close the connection (after holding it, for a hang)
  std::string content_type = kJson;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  FaultPlan faults;  // applied by the edge before the reply is sent
};

// Receives one line per provider request; must be thread safe.
using LogSink = std::function<void(const std::string& line)>;

// The token of "Bearer <token>" (scheme case-insensitive), or nothing when missing or malformed.
std::optional<std::string> BearerToken(const std::string& authorization);

// First 12 hex digits of SHA-256(token): tells tokens apart in logs without revealing them.
std::string TokenFingerprint(const std::string& token);

// "<epoch_ms> <status> <n_ids> <fingerprint or ->"
std::string RequestLogLine(int64_t now_ms, int status, size_t n_ids, const std::string& fingerprint);

class MockApi {
 public:
  explicit MockApi(MockConfig config, LogSink request_log = {});

  HttpReply Handle(const HttpCall& call, int64_t now_ms);

  // A request to Mastodon server `host` at the root of its own port (--mastodon-host): answered
  // as /mastodon/<host><path> is, with the same window, faults and stats; other methods 404.
  HttpReply HandleMastodonServer(const std::string& host, const HttpCall& call, int64_t now_ms);

  // A request to the storage host (--storage-port) that X's compliance jobs' signed URLs name.
  HttpReply HandleStorage(const HttpCall& call, int64_t now_ms);
  // Where the storage host listens (http://host:port), once it does.
  void SetStorageUrl(const std::string& url) { compliance_.SetStorageUrl(url); }

  // The edge calls this when it lets go of a connection held for a hang fault.
  void HangEnded();

 private:
  using Endpoint = EndpointReply (*)(const QueryParams&, const MockConfig&, int64_t now_ms);
  using Handler = std::function<HttpReply(const HttpCall& call, int64_t now_ms)>;
  enum class Dialect { kV2, kV1 };  // which error bodies: v2 problems or v1.1 {"errors":[{"code":...}]}
  // A method and a path (or, with `prefix`, the start of one) and what answers them.
  struct Route {
    std::string method;
    std::string path;
    bool prefix = false;
    Handler handler;
  };
  // An endpoint that imitates a network's: the parameter whose ids are counted for the stats and
  // the log, the model that answers, and (X) which error bodies.
  struct ProviderRoute {
    const char* method;
    const char* path;
    const char* ids_param;
    Endpoint endpoint;
    Dialect dialect;
  };

  // What the operator (a test) did to a credential, and what it was billed: X bills a post
  // once per UTC day and token, however often it is read.
  struct TokenQuota {
    bool capped = false;   // POST /mock/cap: usage-capped until /mock/reset
    bool revoked = false;  // POST /mock/revoke: 403 until /mock/reset
    int64_t month = -1;    // year * 12 + month (UTC) that billed_this_month counts
    int64_t billed_this_month = 0;
    int64_t day = -1;  // days since the epoch (UTC) that read_today holds
    std::unordered_set<uint64_t> read_today;
  };

  // What a request is counted as in the stats and the request log; the API's part fills in the
  // rate-limit window it was counted in and the posts it was billed for.
  struct Served {
    size_t n_ids = 0;
    std::string fingerprint;  // of the caller's token; empty without one
    std::string path;
    int64_t window_start_ms = -1;  // set when the request was counted in a rate-limit window
    int64_t billed_reads = 0;      // posts this answer was billed for
  };

  void Add(const char* method, std::string path, Handler handler, bool prefix = false);
  // A network's endpoints (a static table), each served through `serve` (X, Xrpc): the network's
  // token, window and headers around the route's endpoint.
  using ProviderServe = HttpReply (MockApi::*)(const ProviderRoute& route, const HttpCall& call, int64_t now_ms);
  template <size_t N>
  void AddProviderRoutes(const ProviderRoute (&routes)[N], ProviderServe serve) {
    for (const ProviderRoute& route : routes) {
      Add(route.method, route.path,
          [this, &route, serve](const HttpCall& call, int64_t now_ms) { return (this->*serve)(route, call, now_ms); });
    }
  }
  // Each network registers its own routes, in its own file:
  void AddXRoutes();         // x_routes.cpp: X API v2 and v1.1
  void AddBlueskyRoutes();   // bluesky_routes.cpp: the AppView's XRPC methods
  void AddMastodonRoutes();  // mastodon_routes.cpp: Mastodon servers under /mastodon/<host>/
  void AddMockRoutes();      // mock_api.cpp: what the tests ask the mock (/mock/*, /healthz)

  HttpReply Dispatch(const HttpCall& call, int64_t now_ms);
  static HttpReply Reply(int status, const char* content_type, std::string body);
  // How many ids the parameter `name` lists (comma-separated, repeatable).
  static size_t ListedIds(const QueryParams& params, const char* name);
  // What api.twitter.com answers for unknown routes, with the headers every answer has.
  HttpReply NotFound(const HttpCall& call, int64_t now_ms);
  // Every request: the faults it draws, then `api`'s answer unless a fault stops it first, then
  // the stats and the request log.
  HttpReply Serve(const HttpCall& call, int64_t now_ms, const Served& served,
                  const std::function<HttpReply(Served& counted)>& api);
  // The endpoint's answer when the limiter let the request in, else a 429 with `refusal`.
  static HttpReply Limited(const RateVerdict& verdict, EndpointReply answer, const char* refusal, Served& counted);
  // X: a bearer token, a window per token and endpoint, the usage cap and the billing.
  HttpReply X(const ProviderRoute& route, const HttpCall& call, int64_t now_ms);
  // X's answer to a request with an app's bearer token: auth, revocation, the usage cap, the
  // window of `limiter` (per token and `path`), the rate-limit headers; `endpoint` answers (for the
  // token), computed before the quota lock when `before_the_lock`, else only if let in.
  HttpReply XServe(const char* path, size_t n_ids, Dialect dialect, RateLimiter& limiter, const HttpCall& call,
                   int64_t now_ms, const std::function<EndpointReply(const std::string& token)>& endpoint,
                   bool before_the_lock);
  // X's batch compliance jobs (compliance_routes.cpp): POST and GET /2/compliance/jobs,
  // GET /2/compliance/jobs/:id.
  void AddComplianceRoutes();
  // X: GET /2/tweets/:id, the id taken from the path.
  HttpReply XSingle(const HttpCall& call, int64_t now_ms);
  // X: GET /2/users/by/username/:username and GET /2/users/:id/tweets.
  HttpReply XUsers(const HttpCall& call, int64_t now_ms);
  // GET /mock/follow/accounts and /mock/follow/posts (follow_world.hpp).
  HttpReply FollowWorld(const HttpCall& call, int64_t now_ms, bool posts);
  // Bluesky's XRPC methods: no token, one shared window with RateLimit-* headers.
  HttpReply Xrpc(const ProviderRoute& route, const HttpCall& call, int64_t now_ms);
  // Mastodon server `host`'s answer to `path`: a window per server, X-RateLimit-* headers.
  HttpReply Mastodon(const std::string& host, const std::string& path, const HttpCall& call, int64_t now_ms);
  // The faults a request draws, applied to its reply (hang, drop, 5xx, corrupt bodies).
  FaultPlan DrawFaults();
  // What a request that a fault stops before the API gets: nothing (hang, drop) or a 5xx.
  static std::optional<HttpReply> BeforeTheApi(const FaultPlan& plan);
  void CorruptBody(FaultPlan& plan, HttpReply& reply) const;
  // One line of --request-log, if any.
  void LogRequest(int64_t now_ms, int status, size_t n_ids, const std::string& fingerprint, FaultKind fault) const;
  static std::vector<std::pair<std::string, std::string>> RateHeaders(const RateVerdict& verdict);
  HttpReply TokenAction(const HttpCall& call, bool revoke);
  HttpReply Truth(const HttpCall& call) const;
  // GET /mock/truth?network=bluesky&key=<at:// URI>&at_us=T: the net counts of the post's
  // Jetstream events before T (engagement_events.hpp).
  HttpReply TruthAt(const std::string& key, const std::string& at_us) const;

  const MockConfig config_;
  LogSink request_log_;
  RateLimiter limiter_;
  RateLimiter xrpc_limiter_;
  RateLimiter mastodon_limiter_;
  RateLimiter compliance_limiter_;
  ComplianceJobs compliance_;
  RequestStats stats_;
  std::vector<Route> routes_;
  std::mutex quota_mutex_;                    // held across the cap check, the rate limiter and the billing
  std::map<std::string, TokenQuota> quotas_;  // by token
  std::atomic<uint64_t> request_seq_{0};
  std::atomic<int> hangs_held_{0};
};

}  // namespace tweetkeeper::mock
