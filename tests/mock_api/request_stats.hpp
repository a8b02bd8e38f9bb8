#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "mock_api/faults.hpp"

namespace tweetkeeper::mock {

// Counters behind GET /mock/stats, so integration tests can see what the worker really sent.
class RequestStats {
 public:
  // One provider request. status 0: no answer (a hang or a drop). Batch sizes and ids_requested
  // only count usable answers: 200s whose body no fault corrupted. reused_connection: the
  // connection had carried an earlier request (a drop there is one a client may resend).
  void Record(int status, size_t n_ids, FaultKind fault = FaultKind::kNone, bool reused_connection = false);
  // The same, plus per-token counts. token_fp: TokenFingerprint of the request's token ("" when
  // it had none: not counted per token). window_start_ms >= 0 when the request was counted in a
  // rate-limit window (of endpoint, starting then): a 200 adds one to that window's count.
  void Record(int status, size_t n_ids, FaultKind fault, bool reused_connection, const std::string& token_fp,
              const std::string& endpoint, int64_t window_start_ms);
  // {"requests":N,"ids_requested":M,"status_counts":{"200":a,...},"batch_sizes":{"100":k,...},
  //  "faults":{"hang":h,"slow":s,"drop":d,"5xx":e,"truncated":t,"content-type":c,"huge":g},
  //  "drops_on_reused_connections":r,"tokens":{"<fp>":{"200":a,"429":b,...}},
  //  "windows":{"<fp>":[n_200_in_window_1,n_200_in_window_2,...]},"billed_reads":B,"billed":{"<fp>":b}}
  std::string ToJson() const;
  // Posts billed to a token (its first read of each post in a UTC day): "billed":{"<fp>":n}.
  void Bill(const std::string& token_fp, int64_t posts);
  void Reset();

 private:
  mutable std::mutex mutex_;
  uint64_t requests_ = 0;
  uint64_t ids_requested_ = 0;
  std::map<int, uint64_t> status_counts_;
  std::map<size_t, uint64_t> batch_sizes_;
  std::map<FaultKind, uint64_t> faults_;
  uint64_t drops_on_reused_connections_ = 0;
  std::map<std::string, std::map<int, uint64_t>> token_status_counts_;
  // Per token: 200s per window, ordered by the window's start (then endpoint).
  std::map<std::string, std::map<std::pair<int64_t, std::string>, uint64_t>> token_windows_;
  std::map<std::string, uint64_t> token_billed_;
};

}  // namespace tweetkeeper::mock
