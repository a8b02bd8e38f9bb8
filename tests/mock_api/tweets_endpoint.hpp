#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "mock_api/mock_config.hpp"
#include "mock_api/problems.hpp"

namespace tweetkeeper::mock {

// GET /2/tweets without the HTTP around it: validation and the body of the answer.

using QueryParams = std::multimap<std::string, std::string>;  // same as httplib::Params

constexpr const char* kJson = "application/json; charset=utf-8";
constexpr const char* kProblemJson = "application/problem+json";

// The answer of one endpoint before auth, rate-limit headers and faults are added.
struct EndpointReply {
  int status = 200;
  std::string content_type = kJson;
  std::string body;
  std::vector<uint64_t> returned;  // the posts in the answer: what X bills (errors are not billed)
};

struct TweetsRequest {
  std::vector<std::string> ids;  // distinct ids, request order, spelled as sent
  std::vector<uint64_t> values;  // the same ids, parsed
  size_t n_listed = 0;           // ids listed, duplicates included
  bool want_created_at = false;
  bool want_public_metrics = false;
  std::vector<InvalidParam> errors;  // non-empty: the request is answered 400
};

std::vector<std::string> SplitCommas(const std::string& text);

TweetsRequest ParseTweetsRequest(const QueryParams& params);

EndpointReply GetTweets(const QueryParams& params, const MockConfig& config, int64_t now_ms);

}  // namespace tweetkeeper::mock
