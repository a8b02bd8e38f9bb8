// X API v2 (GET /2/tweets, GET /2/tweets/:id) and v1.1 (statuses/lookup, GET or POST with a form
// body) as the mock serves them: the routes, a bearer token that must be known, a rate-limit
// window per token and endpoint, the usage cap and the billing of post reads. The answers
// themselves are tweets_endpoint.* and lookup_endpoint.*.
#include <ctime>

#include "mock_api/lookup_endpoint.hpp"
#include "mock_api/mock_api.hpp"
#include "mock_api/problems.hpp"
#include "mock_api/tweets_endpoint.hpp"
#include "mock_api/x_users_endpoint.hpp"

namespace tweetkeeper::mock {
namespace {

int64_t UtcMonth(int64_t now_ms) {
  const std::time_t secs = static_cast<std::time_t>(now_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return int64_t{tm.tm_year + 1900} * 12 + tm.tm_mon;
}

// A stable, per-credential stand-in for the developer account behind a token.
uint64_t AccountId(const std::string& fingerprint) { return std::stoull(fingerprint.substr(0, 12), nullptr, 16); }

}  // namespace

void MockApi::AddXRoutes() {
  // POST lookups reach here with the form body in params.
  static const ProviderRoute kRoutes[] = {
      {"GET", "/2/tweets", "ids", &GetTweets, Dialect::kV2},
      {"GET", "/1.1/statuses/lookup.json", "id", &LookupStatuses, Dialect::kV1},
      {"POST", "/1.1/statuses/lookup.json", "id", &LookupStatuses, Dialect::kV1},
  };
  AddProviderRoutes(kRoutes, &MockApi::X);
  Add(
      "GET", "/2/tweets/", [this](const HttpCall& call, int64_t now_ms) { return XSingle(call, now_ms); }, true);
  Add(
      "GET", "/2/users/", [this](const HttpCall& call, int64_t now_ms) { return XUsers(call, now_ms); }, true);
}

HttpReply MockApi::XUsers(const HttpCall& call, int64_t now_ms) {
  // GET /2/users/by/username/:username and GET /2/users/:id/tweets: the path's value travels to
  // the endpoint as a parameter of its own. Each has its own window per token; the posts a
  // timeline returns are billed as /2/tweets' are.
  static const ProviderRoute kByName = {"GET", "/2/users/by/username/:username", kPathUsernameParam,
                                        &GetUserByUsername, Dialect::kV2};
  static const ProviderRoute kTweets = {"GET", "/2/users/:id/tweets", kPathUserIdParam, &GetUserTweets, Dialect::kV2};
  static const std::string kByNamePrefix = "/2/users/by/username/";
  const std::string rest = call.path.substr(std::string("/2/users/").size());
  HttpCall routed = call;
  if (call.path.rfind(kByNamePrefix, 0) == 0 && call.path.find('/', kByNamePrefix.size()) == std::string::npos &&
      call.path.size() > kByNamePrefix.size()) {
    routed.params.erase(kPathUsernameParam);
    routed.params.emplace(kPathUsernameParam, call.path.substr(kByNamePrefix.size()));
    return X(kByName, routed, now_ms);
  }
  const size_t slash = rest.find('/');
  if (slash != std::string::npos && slash > 0 && rest.substr(slash) == "/tweets") {
    routed.params.erase(kPathUserIdParam);
    routed.params.emplace(kPathUserIdParam, rest.substr(0, slash));
    return X(kTweets, routed, now_ms);
  }
  return NotFound(call, now_ms);
}

HttpReply MockApi::XSingle(const HttpCall& call, int64_t now_ms) {
  // GET /2/tweets/:id (getPostsById): the id travels to the endpoint as a parameter of its own.
  static const std::string kSinglePrefix = "/2/tweets/";
  if (call.path.size() == kSinglePrefix.size() || call.path.find('/', kSinglePrefix.size()) != std::string::npos) {
    return NotFound(call, now_ms);
  }
  static const ProviderRoute kSingle = {"GET", "/2/tweets/:id", kPathIdParam, &GetTweetById, Dialect::kV2};
  HttpCall single = call;
  single.params.erase(kPathIdParam);  // the path's id, not a query parameter of that name
  single.params.emplace(kPathIdParam, call.path.substr(kSinglePrefix.size()));
  return X(kSingle, single, now_ms);
}

HttpReply MockApi::X(const ProviderRoute& route, const HttpCall& call, int64_t now_ms) {
  return XServe(route.path, ListedIds(call.params, route.ids_param), route.dialect, limiter_, call, now_ms,
                [&](const std::string&) { return route.endpoint(call.params, config_, now_ms); }, true);
}

HttpReply MockApi::XServe(const char* path, size_t n_ids, Dialect dialect, RateLimiter& limiter, const HttpCall& call,
                          int64_t now_ms, const std::function<EndpointReply(const std::string& token)>& endpoint,
                          bool before_the_lock) {
  const std::optional<std::string> token = BearerToken(call.authorization);
  const std::string fingerprint = token ? TokenFingerprint(*token) : "";
  const bool v1 = dialect == Dialect::kV1;
  return Serve(call, now_ms, {n_ids, fingerprint, path}, [&](Served& counted) {
    if (!token || (!config_.tokens.empty() && config_.tokens.count(*token) == 0)) {
      // An unknown caller: the rate-limit headers of a window it never started (FACTS.md: every
      // answer has them). Problems go as application/problem+json, as the spec maps Problem.
      HttpReply reply = v1 ? Reply(401, kJson, V1Error(89, "Invalid or expired token."))
                           : Reply(401, kProblemJson, GenericProblem(401, "Unauthorized"));
      reply.headers = RateHeaders(limiter.Peek(std::string(path) + " ", now_ms));
      return reply;
    }
    // A read is computed before the lock (it only depends on the request), so the lock is held
    // briefly; what changes state (a compliance job made) only once the request is let in.
    std::optional<EndpointReply> early;
    if (before_the_lock) early = endpoint(*token);
    // Keyed by endpoint too: X counts each endpoint's limit separately.
    const std::string limiter_key = std::string(path) + " " + *token;
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
      verdict = limiter.Peek(limiter_key, now_ms);  // refused before it counts
      reply = v1 ? Reply(403, kJson, V1Error(200, "Forbidden."))
                 : Reply(403, kProblemJson, GenericProblem(403, "Forbidden"));
    } else if (quota.capped || (config_.monthly_cap > 0 && quota.billed_this_month >= config_.monthly_cap)) {
      verdict = limiter.Peek(limiter_key, now_ms);  // not counted: the window may show plenty left
      reply = Reply(429, v1 ? kJson : kProblemJson, UsageCappedProblem(AccountId(fingerprint)));
    } else {
      verdict = limiter.Take(limiter_key, now_ms);
      if (!verdict.allowed) {
        reply = v1 ? Reply(429, kJson, V1Error(88, "Rate limit exceeded"))
                   : Reply(429, kProblemJson, GenericProblem(429, "Too Many Requests"));
      } else {
        EndpointReply answer = early ? std::move(*early) : endpoint(*token);
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

}  // namespace tweetkeeper::mock
