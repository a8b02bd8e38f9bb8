#include "batch/batch_result.hpp"

namespace tweetkeeper::worker {

const char* FailureKindName(FailureKind kind) {
  switch (kind) {
    case FailureKind::kNone:
      return "none";
    case FailureKind::kTransport:
      return "transport";
    case FailureKind::kRateLimited:
      return "rate-limited";
    case FailureKind::kUsageCapped:
      return "usage-capped";
    case FailureKind::kRejected:
      return "rejected";
    case FailureKind::kOurRequestInvalid:
      return "invalid-request";
    case FailureKind::kOtherClientError:
      return "bad-request";
    case FailureKind::kServer:
      return "server";
    case FailureKind::kUnparsable:
      return "unparsable";
  }
  return "?";
}

}  // namespace tweetkeeper::worker
