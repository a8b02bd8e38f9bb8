#pragma once
// Mastodon, `GET /api/v1/statuses?id[]=...&id[]=...` (4.3+; FACTS.md section 2; a batch of one
// status is `GET /api/v1/statuses/:id`, which older servers have too): at most 20
// statuses of one server per request, each asked of the server that holds it (ids are per
// server; the counts are that server's view). Statuses it will not show are left out, the order
// is not the request's, so they are matched by `id`. Counts: favourites_count -> like_count,
// reblogs_count -> retweet_count, replies_count -> reply_count, quotes_count (4.5+) ->
// quote_count; no bookmarks or views (NULL); a reblog's are its original's (in `reblog`: its own
// are always 0). The creation time is `created_at`. The window is
// X-RateLimit-Limit/-Remaining/-Reset (an ISO 8601 time); a 401 means the server wants a token
// (authorized fetch, or no unauthenticated API): the endpoint then waits for a worker with one.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "provider/provider.hpp"

namespace tweetkeeper::worker {

class MastodonProvider final : public KeyedProvider {
 public:
  // `instances`: host -> base URL for the servers not reached at https://<host> (--instance).
  // `allow_private_hosts` (--allow-private-hosts): an unmapped host may resolve to a loopback or
  // private address too; otherwise its requests connect to public addresses only.
  explicit MastodonProvider(std::map<std::string, std::string> instances = {}, bool allow_private_hosts = false);

  std::string Name() const override { return "mastodon"; }
  int MaxBatch() const override { return 20; }
  std::string RequestUrl(const std::vector<std::int64_t>& ids, const PostKeys& keys) const override;
  BatchResult ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids,
                          const PostKeys& keys) const override;

  // The server of an endpoint ("mastodon:a.social" -> "a.social"), and where it is asked.
  static std::string HostOf(const std::string& endpoint);
  std::string BaseUrl(const std::string& host) const;

  static BatchResult ParseOk(std::string_view body, const std::vector<std::int64_t>& ids, const PostKeys& keys);

  // GET /api/v2/instance's answer: the reason to read this server one status at a time (its
  // version is older than 4.3, which added GET /api/v1/statuses), or nothing.
  static std::optional<std::string> OldServer(const HttpResponse& instance);

  // Through the Provider interface: each server's token is its host's; a 404 to a batch of more
  // than one status asks /api/v2/instance, and an old server's answer says single-status.
  std::optional<std::string> EndpointToken(const std::string& endpoint) const override { return HostOf(endpoint); }
  // A host taken from a post's URL, not mapped with --instance: public addresses only (unless
  // --allow-private-hosts).
  bool PublicAddressesOnly(const std::string& endpoint) const override;
  std::string DiagnosisUrl(const PostKeys& keys, std::size_t ids, const HttpResponse& failed) const override;
  std::optional<Diagnosis> Diagnose(const HttpResponse& answer) const override;

 private:
  std::map<std::string, std::string> instances_;
  bool allow_private_hosts_;
};

// X-RateLimit-Limit / -Remaining / -Reset (ISO 8601, as Mastodon sends it) as RateLimit.
RateLimit ParseMastodonRateLimit(const Headers& headers);

}  // namespace tweetkeeper::worker
