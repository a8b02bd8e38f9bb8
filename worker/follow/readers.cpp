// The followers' readers, one per network (reader.hpp): the one place the follower's code names a
// network. Their requests and parsers are timeline.* (Mastodon, X) and bluesky_follow.* (Bluesky).
#include <algorithm>
#include <chrono>

#include "follow/bluesky_follow.hpp"
#include "follow/follower.hpp"
#include "follow/reader.hpp"
#include "follow/timeline.hpp"
#include "provider/answer_status.hpp"
#include "provider/bluesky.hpp"
#include "provider/mastodon.hpp"

namespace tweetkeeper::worker::follow {
namespace {

std::int64_t NowMs() {
  return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Status ids and tweet ids are decimal: the longer is the larger.
bool IdLess(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

constexpr int kMaxPages = 32;  // X: 3,200 posts, all a timeline gives

class MastodonReader : public Reader {
 public:
  explicit MastodonReader(const FollowerOptions& o) : provider_(o.instances, o.allow_private_hosts), tokens_(o.tokens) {}
  std::string Network() const override { return "mastodon"; }
  // A server's own token (host=token), where one was given.
  std::string TokenFor(const Followed& f) const override {
    const auto it = tokens_.find(f.host);
    return it != tokens_.end() ? it->second : "";
  }
  std::string Group(const Followed& f) const override { return "mastodon:" + f.host; }
  double DefaultLimit() const override { return 300; }  // Rack::Attack's default per 5 minutes
  double WindowSeconds() const override { return 300; }
  RateLimit Rate(const HttpResponse& r) const override { return ParseMastodonRateLimit(r.headers); }
  Reach ReachOf(const Followed& f) const {
    return provider_.PublicAddressesOnly("mastodon:" + f.host) ? Reach::kPublicOnly : Reach::kAny;
  }
  Account Lookup(const Followed& f, const Fetch& fetch) const override {
    if (f.handle.empty()) return {Account::Status::kMissing, "", "", "no username to look up"};
    return ParseMastodonLookup(fetch(MastodonLookupUrl(provider_.BaseUrl(f.host), f.handle), ReachOf(f)));
  }
  ReadOutcome Read(const Followed& f, const Fetch& fetch) const override {
    ReadOutcome out;
    const std::string min_id = f.newest_post_id.empty() ? MastodonIdAt(f.since_ms) : f.newest_post_id;
    const TimelinePage page =
        ParseMastodonStatuses(fetch(MastodonStatusesUrl(provider_.BaseUrl(f.host), f.account_id, min_id), ReachOf(f)), f.host);
    if (!page.ok) {
      out.reason = page.reason;
      return out;
    }
    out.ok = true;
    out.account = page.account;
    out.posts = page.posts;
    out.more = page.more;
    out.checked_until_ms = INT64_MAX;  // the first request's moment (Follower::Poll)
    for (const FoundPost& p : page.posts) {
      if (out.newest_id.empty() || IdLess(out.newest_id, p.id)) out.newest_id = p.id;
      if (page.more) out.checked_until_ms = std::min(out.checked_until_ms, p.created_ms);
    }
    return out;
  }

 private:
  MastodonProvider provider_;
  Credentials tokens_;
};

class XReader : public Reader {
 public:
  explicit XReader(const FollowerOptions& o) : api_(o.api_url) {
    if (!o.tokens.empty()) credential_ = o.tokens.begin()->first, token_ = o.tokens.begin()->second;
  }
  std::string Network() const override { return "x"; }
  std::string DisplayName() const override { return "X"; }
  std::string Credential() const override { return credential_; }
  std::string TokenFor(const Followed&) const override { return token_; }
  // Every post a timeline returns is billed: none is read past the credential's monthly cap.
  bool Billed() const override { return true; }
  // A refusal of the credential as a whole is recorded as a refresh's is, and this follower
  // waits: a month for a cap, until someone resets a rejected credential.
  std::optional<std::string> CredentialRefusal(const HttpResponse& r) const override {
    if (r.status == 200 || r.status == 0) return std::nullopt;
    const FailureKind kind = ClassifyFailure(r.status, r.body);
    if (kind == FailureKind::kUsageCapped) return "usage-capped";
    if (kind == FailureKind::kRejected) return "rejected";
    return std::nullopt;
  }
  std::string Group(const Followed&) const override { return "x:" + credential_; }
  double DefaultLimit() const override { return 900; }  // users/:id/tweets per user and 15 minutes
  double WindowSeconds() const override { return 900; }
  RateLimit Rate(const HttpResponse& r) const override { return ParseRateLimit(r.headers); }
  Account Lookup(const Followed& f, const Fetch& fetch) const override {
    // Followed by id (x.com/i/user/<id>): its timeline says whether it is there.
    if (f.handle.empty() && !f.account_id.empty()) return {Account::Status::kFound, f.account_id, "", ""};
    return ParseXLookup(fetch(XLookupUrl(api_, f.handle), Reach::kAny));
  }
  ReadOutcome Read(const Followed& f, const Fetch& fetch) const override {
    ReadOutcome out;
    std::string token;
    for (int page_no = 0; page_no < kMaxPages; ++page_no) {
      const TimelinePage page =
          ParseXTimeline(fetch(XTimelineUrl(api_, f.account_id, f.newest_post_id, f.since_ms, token), Reach::kAny));
      if (!page.ok) {
        if (page_no == 0 || out.returned_pages.empty()) {
          out.reason = page.reason;
          return out;
        }
        break;  // the pages read so far are stored; the rest is read next time from since_id
      }
      if (page.account) {
        out.ok = true;
        out.account = page.account;
        return out;
      }
      out.returned_pages.emplace_back();
      for (const FoundPost& p : page.posts) out.returned_pages.back().push_back(p.id);
      // start_time goes in whole seconds: the posts made in that second before the account was
      // followed are not its new posts.
      for (const FoundPost& p : page.posts)
        if (p.created_ms >= f.since_ms) out.posts.push_back(p);
      if (page.next_token.empty()) break;
      token = page.next_token;
    }
    out.ok = true;
    out.checked_until_ms = INT64_MAX;  // the first request's moment (Follower::Poll)
    // The next read starts after the newest post returned, kept or not (one from before the
    // follow, in its first second): a post is read, and billed, once.
    for (const std::vector<std::string>& ids : out.returned_pages)
      for (const std::string& id : ids)
        if (out.newest_id.empty() || IdLess(out.newest_id, id)) out.newest_id = id;
    return out;
  }

 private:
  std::string api_;
  std::string credential_, token_;
};

class BlueskyReader : public Reader {
 public:
  explicit BlueskyReader(const FollowerOptions& o) : api_(o.api_url) {}
  std::string Network() const override { return "bluesky"; }
  std::string TokenFor(const Followed&) const override { return ""; }
  bool Streams() const override { return true; }  // Jetstream
  std::string Group(const Followed&) const override { return "bluesky"; }
  double DefaultLimit() const override { return 3000; }  // per 5 minutes (FACTS.md 1.6)
  double WindowSeconds() const override { return 300; }
  RateLimit Rate(const HttpResponse& r) const override {
    return ParseXrpcRateLimit(r.headers, NowMs() / 1000);
  }
  Account Lookup(const Followed& f, const Fetch& fetch) const override {
    return ParseBlueskyProfile(fetch(BlueskyProfileUrl(api_, Actor(f)), Reach::kAny));
  }
  // 25 to a request (getProfiles): 1,000 accounts resolve in 40 requests, not 1,000.
  std::size_t LookupBatch() const override { return kBlueskyProfilesPerRequest; }
  std::vector<Account> LookupAll(const std::vector<Followed>& fs, const Fetch& fetch) const override {
    if (fs.size() == 1) return {Lookup(fs[0], fetch)};  // (getProfile says why one is missing)
    std::vector<std::string> actors;
    for (const Followed& f : fs) actors.push_back(Actor(f));
    return ParseBlueskyProfiles(fetch(BlueskyProfilesUrl(api_, actors), Reach::kAny), actors);
  }
  static std::string Actor(const Followed& f) { return f.account_id.empty() ? f.handle : f.account_id; }
  ReadOutcome Read(const Followed& f, const Fetch& fetch) const override {
    ReadOutcome out;
    // Newest first, back to a minute before the last read (a post indexed late is found then;
    // scheduling is idempotent), or to the moment the account was followed.
    const std::int64_t stop_ms = f.checked_ms > 0 ? std::max(f.since_ms, f.checked_ms - 60'000) : f.since_ms;
    std::string cursor;
    for (int page_no = 0; page_no < kMaxPages; ++page_no) {
      const TimelinePage page = ParseBlueskyAuthorFeed(fetch(BlueskyAuthorFeedUrl(api_, f.account_id, cursor), Reach::kAny), f.account_id);
      if (!page.ok) {
        out.reason = page.reason;
        return out;
      }
      if (page.account) {
        out.ok = true;
        out.account = page.account;
        return out;
      }
      bool older = false;
      for (const FoundPost& p : page.posts) {
        if (p.created_ms < stop_ms) {
          older = true;
          continue;
        }
        out.posts.push_back(p);
      }
      if (older || page.next_token.empty()) break;
      cursor = page.next_token;
    }
    out.ok = true;
    out.checked_until_ms = INT64_MAX;  // the first request's moment (Follower::Poll)
    std::int64_t newest_ms = 0;
    for (const FoundPost& p : out.posts)
      if (p.created_ms >= newest_ms) newest_ms = p.created_ms, out.newest_id = p.url;
    return out;
  }

 private:
  std::string api_;
};

}  // namespace

std::unique_ptr<Reader> MakeReader(const FollowerOptions& options) {
  if (options.provider == "mastodon") return std::make_unique<MastodonReader>(options);
  if (options.provider == "bluesky") return std::make_unique<BlueskyReader>(options);
  return std::make_unique<XReader>(options);
}

}  // namespace tweetkeeper::worker::follow
