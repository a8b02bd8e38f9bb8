#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mock_api/mock_config.hpp"
#include "mock_api/json_fields.hpp"
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
  std::vector<std::pair<std::string, std::string>> headers;  // of the answer itself (Mastodon's Link)
};

struct TweetsRequest {
  std::vector<std::string> ids;  // distinct ids, request order, spelled as sent
  std::vector<uint64_t> values;  // the same ids, parsed
  size_t n_listed = 0;           // ids listed, duplicates included
  std::set<std::string> tweet_fields;  // tweet.fields asked for
  std::set<std::string> expansions;
  std::set<std::string> user_fields;
  std::vector<InvalidParam> errors;  // non-empty: the request is answered 400
};

// GET /2/tweets/:id reaches the endpoint with the id from the path as this parameter.
constexpr const char* kPathIdParam = ":id";

std::vector<std::string> SplitCommas(const std::string& text);

// single: GET /2/tweets/:id, whose id is the kPathIdParam parameter.
TweetsRequest ParseTweetsRequest(const QueryParams& params, bool single = false);

// GET /2/tweets (getPostsByIds): {"data":[...],"includes":{...},"errors":[...]}, each key only
// when it has an item (the spec's arrays have minItems 1).
EndpointReply GetTweets(const QueryParams& params, const MockConfig& config, int64_t now_ms);

// GET /2/tweets/:id (getPostsById): 200 {"data":{...}} or, for a tweet that is not there,
// 200 {"errors":[...]} (Get2TweetsIdResponse); an omitted id gets {}.
EndpointReply GetTweetById(const QueryParams& params, const MockConfig& config, int64_t now_ms);

// One tweet object as /2/tweets sends it, with the fields `req` asks for (what the user timeline
// sends too).
void WriteTweetObject(JsonWriter& w, uint64_t id, const TweetsRequest& req, const MockConfig& config, int64_t now_ms);

}  // namespace tweetkeeper::mock
