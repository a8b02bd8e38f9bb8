// The keys payload_without_counts() (extension/payload_sql.cpp) and the worker's content hash
// (worker/provider/content_hash.cpp) leave out of a payload, at every depth: counts (the history
// keeps them), the reader's own state and authors' counts, a poll's votes. One list, so that the
// hash a worker sends and the one the database computes can never disagree on a key.
// (Plain C++: the extension includes it beside PostgreSQL's headers, the worker without them.)
#pragma once

#include <algorithm>
#include <iterator>
#include <string_view>

namespace tweetkeeper {

inline constexpr std::string_view kCountKeys[] = {
    "public_metrics",  "non_public_metrics", "organic_metrics", "promoted_metrics", "edit_controls",
    "likeCount",       "repostCount",        "replyCount",      "quoteCount",       "bookmarkCount",
    "viewer",          "favourites_count",   "reblogs_count",   "replies_count",    "quotes_count",
    "favourited",      "reblogged",          "muted",           "bookmarked",       "pinned",
    "followers_count", "following_count",    "statuses_count",  "last_status_at",   "votes_count",
    "voters_count"};

inline bool IsCountKey(std::string_view key) {
  return std::find(std::begin(kCountKeys), std::end(kCountKeys), key) != std::end(kCountKeys);
}

}  // namespace tweetkeeper
