#pragma once
// What a follower reads of a followed account on Mastodon and X: who the account is (a lookup by
// its name), and its new posts since a cursor (a page of its timeline). Requests as URLs, answers
// parsed from plain HttpResponse data, so that the parsers are tested without I/O; every answer
// is hostile until parsed (bounded depth, sizes checked, a clear reason when refused).
// Sources: ../shared/x-api (users/by/username, users/:id/tweets) and mastodon/documentation
// (methods/accounts.md: lookup, statuses; api/rate-limits.md).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/http_response.hpp"

namespace tweetkeeper::worker::follow {

// Who an account is, as the network answered a lookup by its name.
struct Account {
  enum class Status {
    kFound,    // account_id and handle set
    kMissing,  // no such account (or suspended: its posts cannot be read)
    kPrivate,  // it exists; its posts are not readable (X protected; Mastodon: none public)
    kFailed,   // the answer says nothing of the account (an error, a window, unparsable): ask again later
  };
  Status status = Status::kFailed;
  std::string account_id;
  std::string handle;
  std::string reason;  // the service's words, or what is wrong with the answer (one line)
};

// A post found on an account's timeline.
struct FoundPost {
  std::string id;      // the post's id on its network (X: the tweet id; Mastodon: the status id)
  std::string url;     // what schedule_post() reads
  std::int64_t created_ms = 0;
};

// A page of an account's new posts, newest first as the services send them.
struct TimelinePage {
  bool ok = false;
  std::vector<FoundPost> posts;
  std::string reason;  // when !ok: why (one line)
  // Mastodon: the page was full, more new posts may follow (read again at once from the newest).
  bool more = false;
  // X: the next page of the same read (older posts, still after since_id).
  std::string next_token;
  // The account's timeline says the account is gone or hidden (X: an error for it in a 200).
  std::optional<Account> account;
};

// --- Mastodon -----------------------------------------------------------------------------------
// A status id of a Mastodon server for a moment (milliseconds << 16): the min_id that reads only
// statuses made after it, for an account followed since then and not yet read.
std::string MastodonIdAt(std::int64_t epoch_ms);
inline constexpr int kMastodonPageSize = 40;  // the most a page of statuses holds (limit's maximum)
// GET /api/v1/accounts/lookup?acct=<user> on the account's own server (base: https://<host>).
std::string MastodonLookupUrl(const std::string& base, const std::string& user);
Account ParseMastodonLookup(const HttpResponse& response);
// GET /api/v1/accounts/:id/statuses?min_id=<cursor>&limit=40&exclude_reblogs=true: the statuses
// right after the cursor (min_id, not since_id, which gives the newest page and leaves a gap).
std::string MastodonStatusesUrl(const std::string& base, const std::string& account_id, const std::string& min_id);
// host: the account's server (the statuses' URLs are https://<host>/@<username>/<id>).
TimelinePage ParseMastodonStatuses(const HttpResponse& response, const std::string& host);

// --- X API v2 -----------------------------------------------------------------------------------
inline constexpr int kXPageSize = 100;  // max_results' maximum
std::string XLookupUrl(const std::string& base, const std::string& username);
Account ParseXLookup(const HttpResponse& response);
// GET /2/users/:id/tweets?max_results=100&tweet.fields=created_at&exclude=retweets and since_id
// (the newest read), or start_time (the moment the account was followed) when none was read yet.
std::string XTimelineUrl(const std::string& base, const std::string& user_id, const std::string& since_id,
                         std::int64_t start_ms, const std::string& next_token = "");
TimelinePage ParseXTimeline(const HttpResponse& response);

}  // namespace tweetkeeper::worker::follow
