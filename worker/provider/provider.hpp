#pragma once
// The API seam: how one batch of ids becomes a request URL, and how the answer becomes a
// BatchResult. Implementations are pure (no I/O) so they can be tested on recorded bodies.
// X API v2 (GET /2/tweets) lives in x_v2.hpp, v1.1 (statuses/lookup) in x_v1_1.hpp; factory.hpp
// picks one by --provider. Another API is one more class implementing this interface.

#include <cstdint>
#include <string>
#include <vector>

#include "http/http_response.hpp"
#include "batch/batch_result.hpp"

namespace tweetkeeper::worker {

class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string Name() const = 0;
  virtual std::string RequestUrl(const std::vector<std::int64_t>& ids) const = 0;
  // `ids` are the ids requested; anything else in the answer is ignored.
  virtual BatchResult ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids) const = 0;
};

}  // namespace tweetkeeper::worker
