#include "mock_api/mock_api.hpp"

#include <openssl/sha.h>
#include <strings.h>

#include <cstdio>

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
      limiter_(config_.rate_limit, config_.window_seconds) {}

HttpReply MockApi::Handle(const HttpCall& call, int64_t now_ms) {
  // Endpoints that imitate the provider; /1.1/statuses/lookup.json ("id") belongs in this table.
  static const ProviderRoute kProviders[] = {{"GET", "/2/tweets", "ids", &GetTweets}};
  for (const ProviderRoute& route : kProviders) {
    if (call.method == route.method && call.path == route.path) return Provider(route, call, now_ms);
  }
  if (call.method == "GET" && call.path == "/healthz") return Reply(200, "text/plain", "ok");
  if (call.method == "GET" && call.path == "/mock/stats") return Reply(200, kJson, stats_.ToJson());
  if (call.method == "POST" && call.path == "/mock/reset") {
    stats_.Reset();
    limiter_.Reset();
    return Reply(200, kJson, R"({"reset":true})");
  }
  // What api.twitter.com answers for unknown routes.
  return Reply(404, kJson, R"({"errors":[{"message":"Sorry, that page does not exist","code":34}]})");
}

HttpReply MockApi::Provider(const ProviderRoute& route, const HttpCall& call, int64_t now_ms) {
  const size_t n_ids = ListedIds(call.params, route.ids_param);
  const std::optional<std::string> token = BearerToken(call.authorization);
  FaultPlan plan = PlanFaults(config_.faults, request_seq_++);
  if (plan.kind == FaultKind::kHang && ++hangs_held_ > config_.faults.max_hangs) {
    // Every held connection holds a server thread: past the cap, let go at once.
    --hangs_held_;
    plan.kind = FaultKind::kDrop;
    plan.hold_ms = 0;
  }

  HttpReply reply;
  if (LeavesUnanswered(plan.kind)) {
    // The request never reaches the API: no auth, no rate limit, no answer.
    reply.status = 0;
  } else if (plan.kind == FaultKind::k5xx) {
    // From in front of the API, which never saw the request: no rate-limit headers.
    FaultAnswer answer = ServerErrorAnswer(plan.variant);
    reply = Reply(answer.status, answer.content_type, std::move(answer.body));
  } else if (!token || (!config_.tokens.empty() && config_.tokens.count(*token) == 0)) {
    reply = Reply(401, kJson, GenericProblem(401, "Unauthorized"));  // no rate-limit headers: unknown caller
  } else {
    // Keyed by endpoint too: X counts each endpoint's limit separately.
    const RateVerdict verdict = limiter_.Take(call.path + " " + *token, now_ms);
    if (!verdict.allowed) {
      reply = Reply(429, kJson, GenericProblem(429, "Too Many Requests"));
    } else {
      EndpointReply answer = route.endpoint(call.params, config_, now_ms);
      reply = Reply(answer.status, answer.content_type.c_str(), std::move(answer.body));
    }
    reply.headers = {{"x-rate-limit-limit", std::to_string(verdict.limit)},
                     {"x-rate-limit-remaining", std::to_string(verdict.remaining)},
                     {"x-rate-limit-reset", std::to_string(verdict.reset_epoch_s)}};
  }
  if (CorruptsBody(plan.kind)) {
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
  reply.faults = plan;
  stats_.Record(reply.status, n_ids, plan.kind, call.reused_connection);
  if (request_log_) {
    std::string line = RequestLogLine(now_ms, reply.status, n_ids, token ? TokenFingerprint(*token) : "-");
    if (plan.kind != FaultKind::kNone) line += std::string(" ") + FaultKindName(plan.kind);
    request_log_(line);
  }
  return reply;
}

void MockApi::HangEnded() { --hangs_held_; }

}  // namespace tweetkeeper::mock
