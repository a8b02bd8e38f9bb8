#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace tweetkeeper::mock {

// Counters behind GET /mock/stats, so integration tests can see what the worker really sent.
class RequestStats {
 public:
  // One provider request; batch sizes and ids_requested only count 200 answers.
  void Record(int status, size_t n_ids);
  // {"requests":N,"ids_requested":M,"status_counts":{"200":a,...},"batch_sizes":{"100":k,...}}
  std::string ToJson() const;
  void Reset();

 private:
  mutable std::mutex mutex_;
  uint64_t requests_ = 0;
  uint64_t ids_requested_ = 0;
  std::map<int, uint64_t> status_counts_;
  std::map<size_t, uint64_t> batch_sizes_;
};

}  // namespace tweetkeeper::mock
