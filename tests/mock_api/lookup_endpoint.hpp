#pragma once

#include <cstdint>

#include "mock_api/mock_config.hpp"
#include "mock_api/tweets_endpoint.hpp"

namespace tweetkeeper::mock {

// API v1.1 GET (or POST) /1.1/statuses/lookup.json without the HTTP around it.
//   id=1,2,3 (1 to 100 decimal ids; repeated parameters are joined); map=true|1|t for
//   {"id":{"<id>":{tweet}|null,...}} in request order, otherwise a JSON array of the tweets
//   found, in reverse request order (like /2/tweets). Deleted and protected tweets are null in the
//   map and absent from the array. A tweet is X's Tweet object as its data dictionary shows it
//   (created_at, id, id_str, text, truncated, entities, source, in_reply_to_*, user, geo,
//   coordinates, place, contributors, is_quote_status, retweet_count, favorite_count, favorited,
//   retweeted, lang), its text, entities and author those of /2/tweets, its counts /2/tweets'
//   retweet_count and like_count. tweet_mode=extended sends the text as full_text with
//   display_text_range; without it a text of more than 140 characters is cut (115 of them, an
//   ellipsis and a t.co link; truncated true). trim_user=true sends the user's id only;
//   include_entities=false leaves entities out.
//   Errors (400): no id {"errors":[{"code":38,"message":"id parameter is missing."}]}, more than 100
//   code 18 "Too many terms specified in query.", an id not ^[0-9]{1,19}$ code 44 "id parameter is invalid.".
EndpointReply LookupStatuses(const QueryParams& params, const MockConfig& config, int64_t now_ms);

}  // namespace tweetkeeper::mock
