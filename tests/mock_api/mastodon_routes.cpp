// Mastodon servers as the mock serves them, each under /mastodon/<host>/ or at the root of a port
// of its own (--mastodon-host): a token optional, a rate-limit window per server and caller with
// Rack::Attack's X-RateLimit-* headers. The answers themselves are mastodon_endpoint.*.
#include "mock_api/mastodon_endpoint.hpp"
#include "mock_api/mock_api.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {

void MockApi::AddMastodonRoutes() {
  Add(
      "GET", kMastodonPrefix,
      [this](const HttpCall& call, int64_t now_ms) {
        const std::string rest = call.path.substr(std::char_traits<char>::length(kMastodonPrefix));
        const size_t slash = rest.find('/');
        return Mastodon(rest.substr(0, slash), slash == std::string::npos ? "/" : rest.substr(slash), call, now_ms);
      },
      true);
}

HttpReply MockApi::HandleMastodonServer(const std::string& host, const HttpCall& call, int64_t now_ms) {
  // Only GET routes exist; anything else is Rails' 404 for a route it does not have.
  HttpReply reply = call.method == "GET" ? Mastodon(host, call.path, call, now_ms)
                                         : Reply(404, kJson, R"({"error":"Record not found"})");
  if (reply.status != 0) reply.headers.emplace_back("Date", FormatHttpDate(now_ms));  // as Handle() does
  return reply;
}

HttpReply MockApi::Mastodon(const std::string& host, const std::string& path, const HttpCall& call, int64_t now_ms) {
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

}  // namespace tweetkeeper::mock
