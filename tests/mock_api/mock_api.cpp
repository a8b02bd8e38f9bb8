#include "mock_api/mock_api.hpp"

#include <openssl/sha.h>
#include <strings.h>

#include <cstdio>
#include <ctime>

#include "mock_api/bluesky_endpoint.hpp"
#include "mock_api/lookup_endpoint.hpp"
#include "mock_api/mastodon_endpoint.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {

namespace {

HttpReply Reply(int status, const char* content_type, std::string body) {
  HttpReply reply;
  reply.status = status;
  reply.content_type = content_type;
  reply.body = std::move(body);
  return reply;
}

size_t ListedIds(const QueryParams& params, const char* name) {
  size_t n = 0;
  auto range = params.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) n += it->second.empty() ? 0 : SplitCommas(it->second).size();
  return n;
}

int64_t UtcMonth(int64_t now_ms) {
  const std::time_t secs = static_cast<std::time_t>(now_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return int64_t{tm.tm_year + 1900} * 12 + tm.tm_mon;
}

// A stable, per-credential stand-in for the developer account behind a token.
uint64_t AccountId(const std::string& fingerprint) { return std::stoull(fingerprint.substr(0, 12), nullptr, 16); }

}  // namespace

std::optional<std::string> BearerToken(const std::string& authorization) {
  constexpr size_t kPrefix = 7;  // "Bearer "
  if (authorization.size() <= kPrefix || strncasecmp(authorization.c_str(), "bearer ", kPrefix) != 0) return {};
  std::string token = authorization.substr(kPrefix);
  if (token.find_first_of(" \t") != std::string::npos) return {};
  return token;
}

std::string TokenFingerprint(const std::string& token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  char hex[13];
  for (int i = 0; i < 6; ++i) std::snprintf(hex + 2 * i, 3, "%02x", digest[i]);
  return std::string(hex, 12);
}

std::string RequestLogLine(int64_t now_ms, int status, size_t n_ids, const std::string& fingerprint) {
  return std::to_string(now_ms) + " " + std::to_string(status) + " " + std::to_string(n_ids) + " " + fingerprint;
}

MockApi::MockApi(MockConfig config, LogSink request_log)
    : config_(std::move(config)),
      request_log_(std::move(request_log)),
      limiter_(config_.rate_limit, config_.window_seconds),
      xrpc_limiter_(config_.xrpc_rate_limit, config_.xrpc_window_seconds),
      mastodon_limiter_(config_.mastodon_rate_limit, config_.mastodon_window_seconds) {}

HttpReply MockApi::Handle(const HttpCall& call, int64_t now_ms) {
  HttpReply reply = Route(call, now_ms);
  // Every answer has a Date (RFC 9110: a server with a clock sends one), faults' too.
  if (reply.status != 0) reply.headers.emplace_back("Date", FormatHttpDate(now_ms));
  return reply;
}

HttpReply MockApi::Route(const HttpCall& call, int64_t now_ms) {
  // Endpoints that imitate the provider. POST lookups reach here with the form body in params.
  static const ProviderRoute kProviders[] = {
      {"GET", "/2/tweets", "ids", &GetTweets, Dialect::kV2},
      {"GET", "/1.1/statuses/lookup.json", "id", &LookupStatuses, Dialect::kV1},
      {"POST", "/1.1/statuses/lookup.json", "id", &LookupStatuses, Dialect::kV1},
  };
  for (const ProviderRoute& route : kProviders) {
    if (call.method == route.method && call.path == route.path) return Provider(route, call, now_ms);
  }
  static const ProviderRoute kXrpc[] = {
      {"GET", "/xrpc/app.bsky.feed.getPosts", "uris", &GetBlueskyPosts, Dialect::kV2},
      {"GET", "/xrpc/com.atproto.identity.resolveHandle", "handle", &ResolveHandle, Dialect::kV2},
  };
  for (const ProviderRoute& route : kXrpc) {
    if (call.method == route.method && call.path == route.path) return Xrpc(route, call, now_ms);
  }
  if (call.method == "GET" && call.path.rfind(kMastodonPrefix, 0) == 0) return Mastodon(call, now_ms);
  // GET /2/tweets/:id (getPostsById): the id travels to the endpoint as a parameter of its own.
  static const std::string kSinglePrefix = "/2/tweets/";
  if (call.method == "GET" && call.path.size() > kSinglePrefix.size() && call.path.rfind(kSinglePrefix, 0) == 0 &&
      call.path.find('/', kSinglePrefix.size()) == std::string::npos) {
    static const ProviderRoute kSingle = {"GET", "/2/tweets/:id", kPathIdParam, &GetTweetById, Dialect::kV2};
    HttpCall single = call;
    single.params.erase(kPathIdParam);  // the path's id, not a query parameter of that name
    single.params.emplace(kPathIdParam, call.path.substr(kSinglePrefix.size()));
    return Provider(kSingle, single, now_ms);
  }
  if (call.method == "GET" && call.path == "/healthz") return Reply(200, "text/plain", "ok");
  if (call.method == "GET" && call.path == "/mock/stats") return Reply(200, kJson, stats_.ToJson());
  if (call.method == "POST" && call.path == "/mock/reset") {
    stats_.Reset();
    {
      std::lock_guard<std::mutex> lock(quota_mutex_);
      limiter_.Reset();
      xrpc_limiter_.Reset();
      mastodon_limiter_.Reset();
      quotas_.clear();
    }
    return Reply(200, kJson, R"({"reset":true})");
  }
  if (call.method == "POST" && call.path == "/mock/cap") return TokenAction(call, false);
  if (call.method == "POST" && call.path == "/mock/revoke") return TokenAction(call, true);
  // What api.twitter.com answers for unknown routes, with the headers every answer has.
  HttpReply reply = Reply(404, kJson, R"({"errors":[{"message":"Sorry, that page does not exist","code":34}]})");
  reply.headers = RateHeaders(limiter_.Peek(call.path, now_ms));
  return reply;
}

std::vector<std::pair<std::string, std::string>> MockApi::RateHeaders(const RateVerdict& verdict) {
  return {{"x-rate-limit-limit", std::to_string(verdict.limit)},
          {"x-rate-limit-remaining", std::to_string(verdict.remaining)},
          {"x-rate-limit-reset", std::to_string(verdict.reset_epoch_s)}};
}

HttpReply MockApi::TokenAction(const HttpCall& call, bool revoke) {
  auto it = call.params.find("token");
  if (it == call.params.end() || it->second.empty()) {
    return Reply(400, kJson, R"({"error":"the token query parameter is required"})");
  }
  {
    std::lock_guard<std::mutex> lock(quota_mutex_);
    TokenQuota& quota = quotas_[it->second];
    (revoke ? quota.revoked : quota.capped) = true;
  }
  return Reply(200, kJson,
               std::string(R"({"token":")") + TokenFingerprint(it->second) + (revoke ? R"(","revoked":true})" : R"(","capped":true})"));
}

HttpReply MockApi::Serve(const HttpCall& call, int64_t now_ms, const Served& served,
                         const std::function<HttpReply(Served& counted)>& api) {
  Served counted = served;
  FaultPlan plan = DrawFaults();
  std::optional<HttpReply> reply = BeforeTheApi(plan);
  if (!reply) reply = api(counted);
  CorruptBody(plan, *reply);
  reply->faults = plan;
  stats_.Record(reply->status, counted.n_ids, plan.kind, call.reused_connection, counted.fingerprint, counted.path,
                counted.window_start_ms);
  if (counted.billed_reads > 0) stats_.Bill(counted.fingerprint, counted.billed_reads);
  LogRequest(now_ms, reply->status, counted.n_ids, counted.fingerprint.empty() ? "-" : counted.fingerprint, plan.kind);
  return std::move(*reply);
}

HttpReply MockApi::Provider(const ProviderRoute& route, const HttpCall& call, int64_t now_ms) {
  const std::optional<std::string> token = BearerToken(call.authorization);
  const std::string fingerprint = token ? TokenFingerprint(*token) : "";
  const bool v1 = route.dialect == Dialect::kV1;
  return Serve(call, now_ms, {ListedIds(call.params, route.ids_param), fingerprint, route.path}, [&](Served& counted) {
    if (!token || (!config_.tokens.empty() && config_.tokens.count(*token) == 0)) {
      // An unknown caller: the rate-limit headers of a window it never started (FACTS.md: every
      // answer has them). Problems go as application/problem+json, as the spec maps Problem.
      HttpReply reply = v1 ? Reply(401, kJson, V1Error(89, "Invalid or expired token."))
                           : Reply(401, kProblemJson, GenericProblem(401, "Unauthorized"));
      reply.headers = RateHeaders(limiter_.Peek(std::string(route.path) + " ", now_ms));
      return reply;
    }
    // Computed before the lock (it only depends on the request), so the lock is held briefly.
    EndpointReply answer = route.endpoint(call.params, config_, now_ms);
    // Keyed by endpoint too: X counts each endpoint's limit separately.
    const std::string limiter_key = std::string(route.path) + " " + *token;
    std::lock_guard<std::mutex> lock(quota_mutex_);
    TokenQuota& quota = quotas_[*token];
    if (const int64_t month = UtcMonth(now_ms); month != quota.month) {
      quota.month = month;
      quota.billed_this_month = 0;
    }
    if (const int64_t day = now_ms / 86'400'000; day != quota.day) {
      quota.day = day;
      quota.read_today.clear();
    }
    HttpReply reply;
    RateVerdict verdict;
    if (quota.revoked) {
      verdict = limiter_.Peek(limiter_key, now_ms);  // refused before it counts
      reply = v1 ? Reply(403, kJson, V1Error(200, "Forbidden."))
                 : Reply(403, kProblemJson, GenericProblem(403, "Forbidden"));
    } else if (quota.capped || (config_.monthly_cap > 0 && quota.billed_this_month >= config_.monthly_cap)) {
      verdict = limiter_.Peek(limiter_key, now_ms);  // not counted: the window may show plenty left
      reply = Reply(429, v1 ? kJson : kProblemJson, UsageCappedProblem(AccountId(fingerprint)));
    } else {
      verdict = limiter_.Take(limiter_key, now_ms);
      if (!verdict.allowed) {
        reply = v1 ? Reply(429, kJson, V1Error(88, "Rate limit exceeded"))
                   : Reply(429, kProblemJson, GenericProblem(429, "Too Many Requests"));
      } else {
        counted.window_start_ms = verdict.window_start_ms;
        // Billed: the posts returned that this token had not read yet this UTC day. Like X, a
        // request under the cap is answered in full, so the last one may pass it a little.
        if (answer.status == 200) {
          for (uint64_t id : answer.returned) counted.billed_reads += quota.read_today.insert(id).second ? 1 : 0;
        }
        quota.billed_this_month += counted.billed_reads;
        reply = Reply(answer.status, answer.content_type.c_str(), std::move(answer.body));
      }
    }
    reply.headers = RateHeaders(verdict);
    return reply;
  });
}

HttpReply MockApi::Limited(const RateVerdict& verdict, EndpointReply answer, const char* refusal, Served& counted) {
  if (!verdict.allowed) return Reply(429, kJson, refusal);
  counted.window_start_ms = verdict.window_start_ms;
  return Reply(answer.status, answer.content_type.c_str(), std::move(answer.body));
}

HttpReply MockApi::Xrpc(const ProviderRoute& route, const HttpCall& call, int64_t now_ms) {
  return Serve(call, now_ms, {ListedIds(call.params, route.ids_param), "", route.path}, [&](Served& counted) {
    EndpointReply answer = route.endpoint(call.params, config_, now_ms);
    // The reference xrpc-server's limiter (FACTS.md 1.6): RateLimit-Limit, -Remaining, -Reset
    // (epoch seconds) and -Policy on every answer; a 429 adds Retry-After in seconds.
    const RateVerdict verdict = xrpc_limiter_.Take("xrpc", now_ms);
    HttpReply reply =
        Limited(verdict, std::move(answer), R"({"error":"RateLimitExceeded","message":"Rate Limit Exceeded"})", counted);
    if (!verdict.allowed) {
      reply.headers.emplace_back("Retry-After",
                                 std::to_string(std::max<int64_t>(1, verdict.reset_epoch_s - now_ms / 1000)));
    }
    reply.headers.emplace_back("RateLimit-Limit", std::to_string(verdict.limit));
    reply.headers.emplace_back("RateLimit-Remaining", std::to_string(verdict.remaining));
    reply.headers.emplace_back("RateLimit-Reset", std::to_string(verdict.reset_epoch_s));
    reply.headers.emplace_back("RateLimit-Policy", std::to_string(verdict.limit) + ";w=" +
                                                       std::to_string(config_.xrpc_window_seconds));
    return reply;
  });
}

HttpReply MockApi::Mastodon(const HttpCall& call, int64_t now_ms) {
  const std::string rest = call.path.substr(std::char_traits<char>::length(kMastodonPrefix));
  const size_t slash = rest.find('/');
  const std::string host = rest.substr(0, slash);
  const std::string path = slash == std::string::npos ? "/" : rest.substr(slash);
  const std::optional<std::string> token = BearerToken(call.authorization);
  const Served served{std::max<size_t>(1, ListedIds(call.params, "id[]")), token ? TokenFingerprint(*token) : "",
                      "/mastodon/" + host};
  return Serve(call, now_ms, served, [&](Served& counted) {
    EndpointReply answer = MastodonApi(host, path, call.params, token.has_value(), config_, now_ms);
    // Rack::Attack per server and caller: the headers of the limit closest to exceeding, Reset
    // as ISO 8601 with microseconds (FACTS.md 2.5).
    const RateVerdict verdict = mastodon_limiter_.Take(host + " " + token.value_or("-"), now_ms);
    HttpReply reply = Limited(verdict, std::move(answer), R"({"error":"Too many requests"})", counted);
    reply.headers.emplace_back("X-RateLimit-Limit", std::to_string(verdict.limit));
    reply.headers.emplace_back("X-RateLimit-Remaining", std::to_string(verdict.remaining));
    reply.headers.emplace_back("X-RateLimit-Reset", MastodonResetTime(verdict.reset_epoch_s));
    return reply;
  });
}

std::optional<HttpReply> MockApi::BeforeTheApi(const FaultPlan& plan) {
  // The request never reaches the API: no auth, no rate limit, no answer.
  if (LeavesUnanswered(plan.kind)) return HttpReply{0, kJson, "", {}, {}};
  if (plan.kind != FaultKind::k5xx) return std::nullopt;
  // From in front of the API, which never saw the request: no rate-limit headers.
  FaultAnswer answer = ServerErrorAnswer(plan.variant);
  return Reply(answer.status, answer.content_type, std::move(answer.body));
}

FaultPlan MockApi::DrawFaults() {
  FaultPlan plan = PlanFaults(config_.faults, request_seq_++);
  if (plan.kind == FaultKind::kHang && ++hangs_held_ > config_.faults.max_hangs) {
    // Every held connection holds a server thread: past the cap, let go at once.
    --hangs_held_;
    plan.kind = FaultKind::kDrop;
    plan.hold_ms = 0;
  }
  return plan;
}

void MockApi::CorruptBody(FaultPlan& plan, HttpReply& reply) const {
  if (!CorruptsBody(plan.kind)) return;
  if (reply.status != 200) {
    plan.kind = FaultKind::kNone;  // only a 200 is corrupted; anything else is answered as is
  } else if (plan.kind == FaultKind::kTruncated) {
    reply.body = TruncatedBody(reply.body, plan.variant);
  } else if (plan.kind == FaultKind::kContentType) {
    reply.content_type = kHtml;
    reply.body = HtmlPage();
  } else {
    reply.body = HugeBody(reply.body, config_.faults.huge_bytes);
  }
}

void MockApi::LogRequest(int64_t now_ms, int status, size_t n_ids, const std::string& fingerprint,
                         FaultKind fault) const {
  if (!request_log_) return;
  std::string line = RequestLogLine(now_ms, status, n_ids, fingerprint);
  if (fault != FaultKind::kNone) line += std::string(" ") + FaultKindName(fault);
  request_log_(line);
}

void MockApi::HangEnded() { --hangs_held_; }

}  // namespace tweetkeeper::mock
