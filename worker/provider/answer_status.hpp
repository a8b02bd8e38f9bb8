#pragma once
// What an answer says about the credential and the request, independent of the endpoint:
// the x-rate-limit-* headers of every answer, and why a failed request failed.

#include <string_view>

#include "http/http_response.hpp"
#include "batch/batch_result.hpp"

namespace tweetkeeper::worker {

// x-rate-limit-limit / -remaining / -reset; absent, negative or non-numeric values stay empty.
RateLimit ParseRateLimit(const Headers& headers);

// The failure kind for an answer that is not a 200. `body` may be X API v2 problem JSON
// ({"title","detail","type"}), v1.1 error JSON ({"errors":[{"code","message"}]}), or anything.
//   status 0                                     -> kTransport
//   429 with type .../2/problems/usage-capped
//       or title "UsageCapExceeded"              -> kUsageCapped
//   429, or v1.1 code 88                         -> kRateLimited
//   401/403, or a v1.1 authentication code       -> kRejected
//   400                                          -> kOurRequestInvalid
//   5xx                                          -> kServer
//   anything else (404, 3xx, ...)                -> kOtherClientError
FailureKind ClassifyFailure(long status, std::string_view body);

// A failed answer (status 0 or not 200) as a BatchResult: kind as ClassifyFailure says, reason
// "HTTP <status> <title>: <detail> (<first error message>)" (or the transport error), and
// the rate-limit headers.
BatchResult FailedAnswer(const HttpResponse& response);

// A failed request of `kind`, with a readable reason (an unusable 200, say).
BatchResult Failed(FailureKind kind, std::string reason);

}  // namespace tweetkeeper::worker
