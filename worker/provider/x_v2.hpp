#pragma once
// X API v2 `GET /2/tweets?ids=...` (see shared/x-api/FACTS.md): request URL and answer parsing.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "provider/json_fields.hpp"  // ProblemType, ParseTweetId
#include "provider/provider.hpp"
#include "provider/answer_status.hpp"   // ParseRateLimit

namespace tweetkeeper::worker {

class XV2Provider final : public Provider {
 public:
  // `api_url` is the validated base, e.g. "https://api.x.com" or "http://127.0.0.1:8080/mock".
  explicit XV2Provider(std::string api_url);

  std::string Name() const override { return "x-v2"; }
  std::string RequestUrl(const std::vector<std::int64_t>& ids) const override;
  BatchResult ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids) const override;
  // With keys.payloads: twarc2's tweet and user fields (not note_tweet, which twarc-csv refuses)
  // and the author_id expansion; each tweet and its author go to complete_batch.
  std::string RequestUrl(const std::vector<std::int64_t>& ids, const PostKeys& keys) const override;
  BatchResult ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids,
                          const PostKeys& keys) const override;

 private:
  static BatchResult ParseOk(std::string_view body, std::string_view content_type,
                             const std::vector<std::int64_t>& ids, const PostKeys& keys);

  std::string base_;
};

// Helpers, exposed for the unit tests.

// Percent-encodes a query value; keeps RFC 3986 unreserved characters and ',' (a sub-delim the
// API's own examples leave literal in `ids=1,2,3`).
std::string EncodeQueryValue(std::string_view value);

// "?name=v1&name=v2..." for the first `count` values (all by default), each encoded by
// EncodeQueryValue, `name` as it is: an array in a query as Bluesky's XRPC and Mastodon read it.
// "" when there is none.
std::string RepeatedQuery(std::string_view name, const std::vector<std::string>& values,
                          std::size_t count = std::numeric_limits<std::size_t>::max());

}  // namespace tweetkeeper::worker
