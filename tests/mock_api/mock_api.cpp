// What every route of the mock shares: the route table and its dispatch, the faults a request
// draws, the stats and the request log, the 404 of an unknown route, and the test endpoints
// (/healthz, /mock/*). The networks' own routes are x_routes.cpp, bluesky_routes.cpp and
// mastodon_routes.cpp.
#include "mock_api/mock_api.hpp"

#include <openssl/sha.h>
#include <strings.h>

#include <cstdio>

#include "mock_api/bluesky_endpoint.hpp"
#include "mock_api/engagement.hpp"
#include "mock_api/jetstream_posts.hpp"
#include "mock_api/jetstream_zstd.hpp"
#include "mock_api/mastodon_endpoint.hpp"
#include "mock_api/tweet_model.hpp"
#include "mock_api/x_users_endpoint.hpp"

namespace tweetkeeper::mock {

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
      mastodon_limiter_(config_.mastodon_rate_limit, config_.mastodon_window_seconds),
      compliance_limiter_(config_.compliance_rate_limit, config_.window_seconds) {
  AddXRoutes();
  AddComplianceRoutes();
  AddBlueskyRoutes();
  AddMastodonRoutes();
  AddMockRoutes();
}

HttpReply MockApi::Handle(const HttpCall& call, int64_t now_ms) {
  HttpReply reply = Dispatch(call, now_ms);
  // Every answer has a Date (RFC 9110: a server with a clock sends one), faults' too.
  if (reply.status != 0) reply.headers.emplace_back("Date", FormatHttpDate(now_ms));
  return reply;
}

HttpReply MockApi::Reply(int status, const char* content_type, std::string body) {
  HttpReply reply;
  reply.status = status;
  reply.content_type = content_type;
  reply.body = std::move(body);
  return reply;
}

size_t MockApi::ListedIds(const QueryParams& params, const char* name) {
  size_t n = 0;
  auto range = params.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) n += it->second.empty() ? 0 : SplitCommas(it->second).size();
  return n;
}

void MockApi::Add(const char* method, std::string path, Handler handler, bool prefix) {
  routes_.push_back({method, std::move(path), prefix, std::move(handler)});
}

HttpReply MockApi::Dispatch(const HttpCall& call, int64_t now_ms) {
  for (const struct Route& route : routes_) {
    const bool matches = route.prefix ? call.path.rfind(route.path, 0) == 0 : call.path == route.path;
    if (call.method == route.method && matches) return route.handler(call, now_ms);
  }
  return NotFound(call, now_ms);
}

HttpReply MockApi::NotFound(const HttpCall& call, int64_t now_ms) {
  HttpReply reply = Reply(404, kJson, R"({"errors":[{"message":"Sorry, that page does not exist","code":34}]})");
  reply.headers = RateHeaders(limiter_.Peek(call.path, now_ms));
  return reply;
}

namespace {

// {"error":"..."}: the test endpoints' refusals.
std::string ErrorJson(const std::string& error) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("error");
  w.String(error.c_str(), static_cast<rapidjson::SizeType>(error.size()));
  w.EndObject();
  return buf.GetString();
}

}  // namespace

void MockApi::AddMockRoutes() {
  Add("GET", "/healthz", [](const HttpCall&, int64_t) { return Reply(200, "text/plain", "ok"); });
  Add("GET", "/mock/stats", [this](const HttpCall&, int64_t) { return Reply(200, kJson, stats_.ToJson()); });
  Add("POST", "/mock/reset", [this](const HttpCall&, int64_t) {
    stats_.Reset();
    {
      std::lock_guard<std::mutex> lock(quota_mutex_);
      limiter_.Reset();
      xrpc_limiter_.Reset();
      mastodon_limiter_.Reset();
      compliance_limiter_.Reset();
      quotas_.clear();
    }
    compliance_.Clear();
    JetstreamPosts().Clear();
    return Reply(200, kJson, R"({"reset":true})");
  });
  Add("GET", "/mock/follow/accounts",
      [this](const HttpCall& call, int64_t now_ms) { return FollowWorld(call, now_ms, false); });
  Add("GET", "/mock/follow/posts", [this](const HttpCall& call, int64_t now_ms) { return FollowWorld(call, now_ms, true); });
  Add("POST", "/mock/jetstream/drop", [](const HttpCall&, int64_t) {
    DropJetstreamConnections();
    return Reply(200, kJson, R"({"dropped":true})");
  });
  Add("POST", "/mock/jetstream/posts", [this](const HttpCall& call, int64_t) {
    size_t count = 0;
    std::string error;
    if (!JetstreamPosts().Register(call.body, config_, &count, &error)) {
      return Reply(400, kJson, ErrorJson(error));
    }
    return Reply(200, kJson, "{\"registered\":" + std::to_string(count) + ",\"total\":" +
                                 std::to_string(JetstreamPosts().size()) + "}");
  });
  Add("GET", "/mock/jetstream/dictionary", [](const HttpCall&, int64_t) {
    const std::shared_ptr<const std::string> dictionary = JetstreamDictionary();
    if (!dictionary) return Reply(404, kJson, R"({"error":"no Jetstream here: start the mock with --jetstream-port"})");
    return Reply(200, "application/octet-stream", *dictionary);
  });
  Add("POST", "/mock/gone", [this](const HttpCall& call, int64_t) {
    size_t applied = 0;
    int64_t time_us = 0;
    std::string error;
    if (!config_.gone->Apply(call.body, &applied, &time_us, &error)) {
      return Reply(400, kJson, ErrorJson(error));
    }
    return Reply(200, kJson, "{\"applied\":" + std::to_string(applied) + ",\"time_us\":" + std::to_string(time_us) + "}");
  });
  Add("POST", "/mock/cap", [this](const HttpCall& call, int64_t) { return TokenAction(call, false); });
  Add("POST", "/mock/revoke", [this](const HttpCall& call, int64_t) { return TokenAction(call, true); });
  Add("GET", "/mock/truth", [this](const HttpCall& call, int64_t) { return Truth(call); });
}

// What a post's counts truly are at the ages asked (seconds since its creation), whatever was
// read: for tests and benches (README.md, "Engagement"), never a path of a real API.
HttpReply MockApi::Truth(const HttpCall& call) const {
  const auto param = [&call](const char* name) {
    const auto it = call.params.find(name);
    return it == call.params.end() ? std::string() : it->second;
  };
  const std::optional<Network> network = ParseNetwork(param("network"));
  if (!network) return Reply(400, kJson, R"({"error":"network must be x, bluesky or mastodon"})");
  if (call.params.count("at_us")) {
    if (*network != Network::kBluesky) return Reply(400, kJson, R"({"error":"at_us is for network=bluesky only"})");
    return TruthAt(param("key"), param("at_us"));
  }
  const std::optional<uint64_t> seed = SeedOfKey(*network, param("key"));
  if (!seed)
    return Reply(400, kJson, R"({"error":"key must be an X id, a Bluesky at:// URI or a Mastodon host/status id"})");
  std::vector<int64_t> ages;
  const std::string list = param("ages");
  for (size_t from = 0; from <= list.size() && ages.size() <= 1000;) {
    const size_t comma = std::min(list.find(',', from), list.size());
    const std::string one = list.substr(from, comma - from);
    if (one.empty() || one.size() > 10 || one.find_first_not_of("0123456789") != std::string::npos)
      return Reply(400, kJson, R"({"error":"ages must be 1 to 1000 comma-separated whole seconds"})");
    ages.push_back(std::stoll(one));
    from = comma + 1;
  }
  if (ages.empty() || ages.size() > 1000)
    return Reply(400, kJson, R"({"error":"ages must be 1 to 1000 comma-separated whole seconds"})");
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("points");
  w.StartArray();
  for (const int64_t age : ages) {
    const PublicMetrics m = Engagement(config_, *network, *seed, age);
    w.StartObject();
    w.Key("age");
    w.Int64(age);
    for (const auto& [name, value] : {std::pair{"reposts", m.retweet_count}, {"replies", m.reply_count},
                                      {"likes", m.like_count}, {"quotes", m.quote_count},
                                      {"bookmarks", m.bookmark_count}, {"views", m.impression_count}}) {
      w.Key(name);
      w.Int64(value);
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return Reply(200, kJson, buf.GetString());
}

HttpReply MockApi::TruthAt(const std::string& key, const std::string& at_us) const {
  const std::optional<TrackedPost> post = TrackablePost(key);
  if (!post) return Reply(400, kJson, R"({"error":"key must be at://<DID>/app.bsky.feed.post/<TID> with at_us"})");
  if (at_us.empty() || at_us.size() > 18 || at_us.find_first_not_of("0123456789") != std::string::npos)
    return Reply(400, kJson, R"({"error":"at_us must be Unix microseconds"})");
  const EngagementCurve curve(config_, post->seed, post->created_ms);
  const std::array<int64_t, kCountedActs> n = NetCountsAt(curve, std::stoll(at_us));
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("at_us");
  w.Int64(std::stoll(at_us));
  for (const auto& [name, act] : {std::pair{"likes", Act::kLike}, {"reposts", Act::kRepost}, {"replies", Act::kReply},
                                  {"quotes", Act::kQuote}}) {
    w.Key(name);
    w.Int64(n[static_cast<int>(act)]);
  }
  w.EndObject();
  return Reply(200, kJson, buf.GetString());
}

HttpReply MockApi::FollowWorld(const HttpCall& call, int64_t now_ms, bool posts) {
  const auto param = [&call](const char* name) {
    const auto it = call.params.find(name);
    return it == call.params.end() ? std::string() : it->second;
  };
  const std::string network = param("network"), host = param("host");
  if (network != "x" && network != "bluesky" && network != "mastodon")
    return Reply(400, kJson, R"({"error":"network must be x, bluesky or mastodon"})");
  if ((network == "mastodon") == host.empty())
    return Reply(400, kJson, R"({"error":"host names the Mastodon server, and only for mastodon"})");
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  if (posts) {
    // [from_ms, to_ms]: by default the last minute up to now.
    int64_t from = now_ms - 60'000, to = now_ms;
    try {
      if (!param("from_ms").empty()) from = std::stoll(param("from_ms"));
      if (!param("to_ms").empty()) to = std::min<int64_t>(now_ms, std::stoll(param("to_ms")));
    } catch (const std::exception&) {
      return Reply(400, kJson, R"({"error":"from_ms and to_ms must be Unix milliseconds"})");
    }
    if (to - from > 7 * 86'400'000LL) return Reply(400, kJson, R"({"error":"at most a week of posts at once"})");
    const std::vector<MadePost> made = network == "x"         ? XMadePosts(from, to, config_)
                                       : network == "bluesky" ? BlueskyMadePosts(from, to, config_)
                                                              : MastodonMadePosts(host, from, to, config_);
    w.Key("posts");
    w.StartArray();
    for (const MadePost& p : made) {
      w.StartObject();
      w.Key("url");
      w.String(p.url.c_str(), static_cast<rapidjson::SizeType>(p.url.size()));
      w.Key("created_ms");
      w.Int64(p.created_ms);
      if (p.deleted_ms != 0) {
        w.Key("deleted_ms");
        w.Int64(p.deleted_ms);
      }
      w.EndObject();
    }
    w.EndArray();
  } else {
    const auto posters = network == "x"         ? XPosters(config_)
                         : network == "bluesky" ? BlueskyPosters(config_)
                                                : MastodonPosters(host, config_);
    w.Key("accounts");
    w.StartArray();
    for (const auto& [url, rate] : posters) {
      w.StartObject();
      w.Key("url");
      w.String(url.c_str(), static_cast<rapidjson::SizeType>(url.size()));
      w.Key("posts_per_second");
      w.Double(rate);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  return Reply(200, kJson, buf.GetString());
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
               std::string(R"({"token":")") + TokenFingerprint(it->second) +
                   (revoke ? R"(","revoked":true})" : R"(","capped":true})"));
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

HttpReply MockApi::Limited(const RateVerdict& verdict, EndpointReply answer, const char* refusal, Served& counted) {
  if (!verdict.allowed) return Reply(429, kJson, refusal);
  counted.window_start_ms = verdict.window_start_ms;
  HttpReply reply = Reply(answer.status, answer.content_type.c_str(), std::move(answer.body));
  reply.headers = std::move(answer.headers);
  return reply;
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
