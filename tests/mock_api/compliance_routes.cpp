// X's batch compliance jobs as the mock serves them (compliance.hpp): the three API routes, each
// with its own window per token (X: 150 requests per 15 minutes per app, --compliance-rate-limit),
// behind X's auth, revocation and usage cap (XServe); and the storage host the jobs' signed URLs
// name (--storage-port), which takes no token.
#include "mock_api/mock_api.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {

void MockApi::AddComplianceRoutes() {
  Add("POST", "/2/compliance/jobs", [this](const HttpCall& call, int64_t now_ms) {
    return XServe("/2/compliance/jobs POST", 0, Dialect::kV2, compliance_limiter_, call, now_ms,
                  [&](const std::string& token) { return compliance_.Create(token, call.body, config_, now_ms); },
                  false);
  });
  Add("GET", "/2/compliance/jobs", [this](const HttpCall& call, int64_t now_ms) {
    return XServe("/2/compliance/jobs", 0, Dialect::kV2, compliance_limiter_, call, now_ms,
                  [&](const std::string& token) { return compliance_.List(token, call.params, config_, now_ms); },
                  false);
  });
  Add(
      "GET", "/2/compliance/jobs/",
      [this](const HttpCall& call, int64_t now_ms) {
        const std::string id = call.path.substr(std::string("/2/compliance/jobs/").size());
        if (id.find('/') != std::string::npos) return NotFound(call, now_ms);
        return XServe("/2/compliance/jobs/:id", 0, Dialect::kV2, compliance_limiter_, call, now_ms,
                      [&](const std::string& token) { return compliance_.Get(token, id, call.params, config_, now_ms); },
                      false);
      },
      true);
}

HttpReply MockApi::HandleStorage(const HttpCall& call, int64_t now_ms) {
  EndpointReply answer =
      compliance_.Storage(call.method, call.path, call.params, call.content_type, call.body, config_, now_ms);
  HttpReply reply = Reply(answer.status, answer.content_type.c_str(), std::move(answer.body));
  reply.headers.emplace_back("Date", FormatHttpDate(now_ms));
  return reply;
}

}  // namespace tweetkeeper::mock
