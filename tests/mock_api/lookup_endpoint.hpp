#pragma once

#include <cstdint>

#include "mock_api/mock_config.hpp"
#include "mock_api/tweets_endpoint.hpp"

namespace tweetkeeper::mock {

// API v1.1 GET (or POST) /1.1/statuses/lookup.json without the HTTP around it.
//   id=1,2,3 (1 to 100 decimal ids; repeated parameters are joined); map=true|1|t for
//   {"id":{"<id>":{tweet}|null,...}} in request order, otherwise a JSON array of the tweets
//   found, in reverse request order (like /2/tweets). Deleted and protected tweets are null in the
//   map and absent from the array. Other parameters (include_entities, trim_user, ...) are ignored.
//   A tweet: {"created_at":"Tue Mar 21 20:50:14 +0000 2006","id":N,"id_str":"N","text":"<its text>",
//   "retweet_count":r,"favorite_count":l}, r and l equal to /2/tweets' retweet_count and like_count.
//   Errors (400): no id {"errors":[{"code":38,"message":"id parameter is missing."}]}, more than 100
//   code 18 "Too many terms specified in query.", an id not ^[0-9]{1,19}$ code 44 "id parameter is invalid.".
EndpointReply LookupStatuses(const QueryParams& params, const MockConfig& config, int64_t now_ms);

}  // namespace tweetkeeper::mock
