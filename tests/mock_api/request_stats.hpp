#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "mock_api/faults.hpp"

namespace tweetkeeper::mock {

// Counters behind GET /mock/stats, so integration tests can see what the worker really sent.
class RequestStats {
 public:
  // One provider request. status 0: no answer (a hang or a drop). Batch sizes and ids_requested
  // only count usable answers: 200s whose body no fault corrupted. reused_connection: the
  // connection had carried an earlier request (a drop there is one a client may resend).
  void Record(int status, size_t n_ids, FaultKind fault = FaultKind::kNone, bool reused_connection = false);
  // {"requests":N,"ids_requested":M,"status_counts":{"200":a,...},"batch_sizes":{"100":k,...},
  //  "faults":{"hang":h,"slow":s,"drop":d,"5xx":e,"truncated":t,"content-type":c,"huge":g},
  //  "drops_on_reused_connections":r}
  std::string ToJson() const;
  void Reset();

 private:
  mutable std::mutex mutex_;
  uint64_t requests_ = 0;
  uint64_t ids_requested_ = 0;
  std::map<int, uint64_t> status_counts_;
  std::map<size_t, uint64_t> batch_sizes_;
  std::map<FaultKind, uint64_t> faults_;
  uint64_t drops_on_reused_connections_ = 0;
};

}  // namespace tweetkeeper::mock
