#pragma once
// X API v2's users as a follower reads them (issue 38): GET /2/users/by/username/:username and
// GET /2/users/:id/tweets (the user's posts, newest first), true to the OpenAPI description
// (../shared/x-api) and FACTS.md. The mock's users are mock_<id> for ids 100000 to 104999 (the
// authors of /2/tweets' posts); the first --follow-accounts of them post (follow_world.hpp), and
// each post they make is a tweet /2/tweets answers, with that author. A username starting with
// "gone" is no user; one starting with "locked" is a protected user; any other valid one is a
// user who never posts.

#include <cstdint>
#include <string>
#include <vector>

#include "mock_api/follow_world.hpp"
#include "mock_api/mock_config.hpp"
#include "mock_api/tweets_endpoint.hpp"

namespace tweetkeeper::mock {

// The path's values reach the endpoints as these parameters.
constexpr const char* kPathUsernameParam = ":username";
constexpr const char* kPathUserIdParam = ":id";

// 200 {"data":{"id","name","username",...}}, or 200 {"errors":[resource-not-found]}; 400 for a
// username the spec's pattern refuses.
EndpointReply GetUserByUsername(const QueryParams& params, const MockConfig& config, int64_t now_ms);

// 200 {"data":[tweets newest first],"meta":{"result_count","newest_id","oldest_id","next_token"}},
// {"meta":{"result_count":0}} when nothing matches; {"errors":[...]} for a protected or unknown
// user; 400 for parameters the spec refuses. The tweets returned are billed (EndpointReply::returned).
EndpointReply GetUserTweets(const QueryParams& params, const MockConfig& config, int64_t now_ms);

// The tweet account k (user 100000 + k) posted at ms: its id encodes the time, and the mock's
// model says it is visible and by that author.
uint64_t XFollowPostId(uint64_t k, int64_t ms, const MockConfig& config);

// The posts the posting users made in [from_ms, to_ms].
std::vector<MadePost> XMadePosts(int64_t from_ms, int64_t to_ms, const MockConfig& config);

// Profile URLs of the posting users, the busiest first, with their rates.
std::vector<std::pair<std::string, double>> XPosters(const MockConfig& config);

}  // namespace tweetkeeper::mock
