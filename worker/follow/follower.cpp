#include "follow/follower.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <pqxx/pqxx>

#include "dsn/dsn.hpp"
#include "follow/bluesky_follow.hpp"
#include "follow/timeline.hpp"
#include "provider/answer_status.hpp"
#include "provider/bluesky.hpp"
#include "provider/mastodon.hpp"
#include "retry/backoff.hpp"

namespace tweetkeeper::worker::follow {
namespace {

std::int64_t NowMs() {
  return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Status ids and tweet ids are decimal: the longer is the larger.
bool IdLess(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

constexpr Millis kFailedPause{60'000};  // an account whose read failed is tried again after this
constexpr int kMaxPages = 32;           // X: 3,200 posts, all a timeline gives
// Jetstream replays 36 hours: a position older than 35 is filled from the account's feed instead.
constexpr std::int64_t kReplayUs = 35LL * 3600 * 1'000'000;
constexpr std::int64_t kRewindUs = 3'000'000;  // a reconnection starts this much before the position
constexpr std::int64_t kSettleMs = 1500;       // an options_update takes effect before a gap is filled

}  // namespace

// One held account: what the database said, and when to read it next.
struct Follower::Held {
  Followed f;
  std::int64_t next_poll_ms = 0;
  Millis interval{0};
  int failures = 0;
  Budget* budget = nullptr;  // BudgetOf()'s, once found
};

// A budget of requests: a Mastodon server, the AppView, an X credential's timeline window.
struct Follower::Budget {
  explicit Budget(double limit, double window_s) : limit(limit), window_s(window_s), gate(0) {}
  double limit;
  double window_s;
  Gate gate;
  bool repace = true;  // accounts came or went, or the limit changed
  double planned_rps = 0;  // the rate the accounts' intervals were planned for
  double weight = 1;       // this follower's part of the accounts all followers read through it
  std::int64_t window_reset_s = 0;  // the window the last answer spoke of (its reset) ...
  std::int64_t mine = 0;            // ... and this follower's requests in it
};

// What one read of an account found.
struct ReadOutcome {
  bool ok = false;
  std::string reason;
  std::vector<FoundPost> posts;
  std::string newest_id;
  std::int64_t checked_until_ms = 0;
  bool more = false;  // a full page: read again at once
  std::optional<Account> account;  // the account is gone or hidden
  std::vector<std::vector<std::string>> returned_pages;  // X: every post each page returned (each one billed)
};

using Fetch = std::function<HttpResponse(const std::string& url, Reach reach)>;

// A network's requests and answers for a follower (the parsers are timeline.* and bluesky_follow.*).
class Follower::Reader {
 public:
  virtual ~Reader() = default;
  virtual std::string Group(const Followed& f) const = 0;
  virtual double DefaultLimit() const = 0;
  virtual double WindowSeconds() const = 0;
  virtual RateLimit Rate(const HttpResponse& r) const = 0;
  virtual Account Lookup(const Followed& f, const Fetch& fetch) const = 0;
  // Several accounts looked up at once, when the network has a request for that (at most
  // LookupBatch() of them): one answer for each, in order.
  virtual std::size_t LookupBatch() const { return 1; }
  virtual std::vector<Account> LookupAll(const std::vector<Followed>& fs, const Fetch& fetch) const {
    std::vector<Account> out;
    for (const Followed& f : fs) out.push_back(Lookup(f, fetch));
    return out;
  }
  virtual ReadOutcome Read(const Followed& f, const Fetch& fetch) const = 0;
};

namespace {

class MastodonReader : public Follower::Reader {
 public:
  MastodonReader(const FollowerOptions& o) : provider_(o.instances, o.allow_private_hosts) {}
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
};

class XReader : public Follower::Reader {
 public:
  explicit XReader(const FollowerOptions& o) : api_(o.api_url) {
    if (!o.tokens.empty()) credential_ = o.tokens.begin()->first;
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
  std::string credential_;
};

class BlueskyReader : public Follower::Reader {
 public:
  explicit BlueskyReader(const FollowerOptions& o) : api_(o.api_url) {}
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

Follower::Follower(FollowerOptions options, Telemetry& telemetry, StopSignal& stop)
    : options_(std::move(options)),
      telemetry_(telemetry),
      stop_(stop),
      network_(options_.provider == "bluesky" ? "bluesky" : options_.provider == "mastodon" ? "mastodon" : "x"),
      http_(options_.http),
      db_(options_.dsn, options_.name, network_,
          network_ == "x" && !options_.tokens.empty() ? options_.tokens.begin()->first : "") {
  if (network_ == "mastodon") reader_ = std::make_unique<MastodonReader>(options_);
  else if (network_ == "bluesky") reader_ = std::make_unique<BlueskyReader>(options_);
  else reader_ = std::make_unique<XReader>(options_);
  if (network_ == "bluesky" && !options_.jetstream_url.empty()) {
    stream_ = std::make_unique<JetstreamClient>(options_.jetstream_url, [this] {
      // A cursor older than the replay window would be clamped silently: never ask for one.
      const std::int64_t cursor = stream_cursor_us_.load();
      return cursor == 0 ? 0 : std::max(cursor, NowMs() * 1000 - kReplayUs);  // 0: live
    });
  }
}

Follower::~Follower() = default;

bool Follower::Connect(std::chrono::seconds startup_timeout) {
  const auto started = std::chrono::steady_clock::now();
  Backoff backoff{Millis(500), Millis(30'000)};
  for (int attempt = 1;; ++attempt) {
    try {
      db_.Connect();
      return true;
    } catch (const pqxx::broken_connection& e) {
      const std::string error = RedactDsnSecrets(e.what(), options_.dsn);
      if (startup_timeout.count() && std::chrono::steady_clock::now() - started > startup_timeout)
        throw std::runtime_error("database still unavailable after --startup-timeout: " + error);
      if (attempt == 1) spdlog::warn("database unavailable: {}; waiting for it", error);
    } catch (const pqxx::sql_error& e) {
      throw std::runtime_error("the database has no usable tweetkeeper SQL API for followers: SQLSTATE " + e.sqlstate() +
                               ": " + RedactDsnSecrets(e.what(), options_.dsn));
    }
    if (!stop_.SleepUnlessStopped(backoff.Next(attempt))) return false;
  }
}

Follower::Budget& Follower::BudgetOf(Held& held) {
  // An account's budget never changes (its server, the credential): found once, kept.
  if (held.budget) return *held.budget;
  auto& b = budgets_[reader_->Group(held.f)];
  if (!b) {
    b = std::make_unique<Budget>(reader_->DefaultLimit(), reader_->WindowSeconds());
    b->gate.SetBudget(Configured(*b));
  }
  held.budget = b.get();
  return *b;
}

double Follower::Configured(const Budget& budget) const {
  return options_.share * budget.limit / budget.window_s * budget.weight;
}

void Follower::ForgetLeases() {
  held_.clear();
  covered_.clear();
  gaps_.clear();
  by_did_.clear();
  joining_.clear();
  catching_.clear();
  join_from_us_ = INT64_MAX;
  catch_up_.reset();
  next_claim_ms_ = 0;
  // Frames taken and not stored: the stream starts again from the positions kept.
  if (streaming()) stream_->Reconnect();
}

void Follower::ClaimAccounts() {
  const std::int64_t now = NowMs();
  std::vector<Followed> claimed = db_.Claim(options_.max_accounts, options_.lease_seconds);
  std::map<std::int64_t, std::unique_ptr<Held>> next;
  for (Followed& f : claimed) {
    auto it = held_.find(f.follow_id);
    std::unique_ptr<Held> h;
    if (it != held_.end()) {
      h = std::move(it->second);
      // Ours already: what we know is newer, but a missing or private account's recheck time
      // is the database's.
      if (h->f.status != "following") h->next_poll_ms = f.poll_after_ms;
    } else {
      h = std::make_unique<Held>();
      h->f = f;
      h->next_poll_ms = std::max<std::int64_t>(f.poll_after_ms, 0);
      BudgetOf(*h).repace = true;
      spdlog::debug("following {} ({}{}) now", f.follow_id, f.handle.empty() ? f.account_id : f.handle,
                    f.host.empty() ? "" : "@" + f.host);
    }
    next.emplace(f.follow_id, std::move(h));
  }
  // How many accounts the other followers read through the same windows: a change replans.
  std::map<std::string, std::int64_t> shares = db_.Shares();
  if (next.size() != held_.size() || shares != shares_)
    for (auto& [group, budget] : budgets_) budget->repace = true;
  shares_ = std::move(shares);
  held_ = std::move(next);
  next_claim_ms_ = now + options_.lease_seconds * 1000 / 3;
  telemetry_.FollowAccounts(static_cast<std::int64_t>(held_.size()));
  if (streaming()) Subscribe();
}

void Follower::Subscribe() {
  const std::int64_t now = NowMs();
  if (position_us_ == 0) position_us_ = marked_us_ = now * 1000;
  std::map<std::string, std::int64_t> dids;
  for (auto& [id, h] : held_) {
    Followed& f = h->f;
    if (f.status != "following" || f.account_id.empty()) continue;
    dids.emplace(f.account_id, id);
    if (covered_.count(id) || gaps_.count(id) || joining_.count(id) || catching_.count(id)) continue;
    // New to the subscription (newly followed, taken over from another follower, or held again
    // after a lost connection): read up to a moment the stream still replays, a catch-up
    // connection replays it from there; read up to an older one (or never, followed long ago),
    // its feed fills the gap.
    const std::int64_t from = f.checked_ms > 0 ? f.checked_ms : f.since_ms;
    if (from * 1000 > now * 1000 - kReplayUs) {
      joining_.insert(id);
      join_from_us_ = std::min(join_from_us_, from * 1000);
      // Accounts join a few at a time (as they resolve, as claims bring them): one catch-up for
      // those of a moment, not one each.
      if (catch_up_due_ms_ == 0) catch_up_due_ms_ = now + 500;
      h->next_poll_ms = INT64_MAX / 2;
    } else {
      gaps_.insert(id);
      h->next_poll_ms = now + kSettleMs;
    }
  }
  for (std::set<std::int64_t>* held : {&covered_, &gaps_, &joining_, &catching_})
    for (auto it = held->begin(); it != held->end();) it = held_.count(*it) ? std::next(it) : held->erase(it);
  if (dids != by_did_) {
    by_did_ = std::move(dids);
    std::vector<std::string> list;
    for (const auto& [did, id] : by_did_) list.push_back(did);
    if (list.size() > kJetstreamMaxDids) {
      spdlog::warn("{} accounts held, more than one Jetstream connection follows ({}): run another follower, or "
                   "lower --follow-max-accounts", list.size(), kJetstreamMaxDids);
      list.resize(kJetstreamMaxDids);
    }
    stream_->SetDids(std::move(list));
  }
}

// The accounts that joined read from their positions up to the moment they joined the live
// stream, by a connection of their own (the live stream stays live: replaying it instead held every
// live post behind the replay, 19 s at worst in make bench). Jetstream says nothing when a
// filtered replay reaches the present, so the catch-up follows every held account (their events
// mark its progress) and keeps only the joining ones'; it is done once it has passed the moment
// they joined the live subscription, with a margin for the two clocks.
void Follower::CatchUp() {
  const std::int64_t now = NowMs();
  if (catch_up_) {
    if (catch_up_position_us_ < catch_up_until_us_) {
      if (now - catch_up_started_ms_ > 60'000 && catch_up_position_us_ == 0 && catch_up_->connections() > 1)
        spdlog::warn("Jetstream catch-up: no event yet after {:.0f} s: {}", (now - catch_up_started_ms_) / 1000.0,
                     catch_up_->last_error());
      return;
    }
    spdlog::info("Jetstream: {} account(s) caught up in {:.1f} s", catching_.size(), (now - catch_up_started_ms_) / 1000.0);
    covered_.insert(catching_.begin(), catching_.end());
    catching_.clear();
    catch_up_.reset();
  }
  if (joining_.empty() || now < catch_up_due_ms_) return;
  catch_up_due_ms_ = 0;
  catching_ = std::move(joining_);
  joining_.clear();
  catch_up_cursor_us_ = std::max(join_from_us_ - kRewindUs, now * 1000 - kReplayUs);
  join_from_us_ = INT64_MAX;
  catch_up_position_us_ = 0;
  // They joined the live subscription by now (Subscribe() set its DIDs): every event after this,
  // give or take the clocks, comes to the live stream too.
  catch_up_until_us_ = std::max(position_us_, now * 1000) + kRewindUs;
  catch_up_started_ms_ = now;
  spdlog::info("Jetstream: {} account(s) joined: reading them from {:.1f} s back on a second connection", catching_.size(),
               (now * 1000 - catch_up_cursor_us_.load()) / 1e6);
  catch_up_ = std::make_unique<JetstreamClient>(options_.jetstream_url, [this] { return catch_up_cursor_us_.load(); });
  std::vector<std::string> list;
  for (const auto& [did, id] : by_did_) list.push_back(did);
  if (list.size() > kJetstreamMaxDids) list.resize(kJetstreamMaxDids);
  catch_up_->SetDids(std::move(list));
}

void Follower::HandleFrames(const std::vector<std::string>& frames, bool catch_up) {
  struct Found {
    std::vector<FoundPost> posts;
    std::vector<std::string> deleted;
  };
  std::map<std::int64_t, Found> by_account;
  std::int64_t newest_us = 0;
  std::size_t refused = 0;
  for (const std::string& frame : frames) {
    JetstreamEvent e;
    std::string reason;
    if (!ParseJetstreamEvent(frame, &e, &reason)) {
      if (++refused == 1) spdlog::warn("Jetstream: an event refused: {}", reason);
      continue;
    }
    newest_us = std::max(newest_us, e.time_us);
    const auto it = by_did_.find(e.did);
    if (it == by_did_.end()) continue;
    // The catch-up's events are the joining accounts' only (the others' come live).
    if (catch_up && !catching_.count(it->second)) continue;
    if (e.kind == JetstreamEvent::Kind::kPostCreated) {
      // A replay starts a little before the position: posts from before the follow are not new.
      const auto h = held_.find(it->second);
      if (h != held_.end() && e.created_ms < h->second->f.since_ms) continue;
      by_account[it->second].posts.push_back({e.rkey, e.url(), e.created_ms});
    } else if (e.kind == JetstreamEvent::Kind::kPostDeleted) {
      by_account[it->second].deleted.push_back(e.url());
    } else if (e.kind == JetstreamEvent::Kind::kAccount && !e.active) {
      // Taken down, deleted, deactivated: marked missing, asked about again after the recheck.
      const auto h = held_.find(it->second);
      if (h != held_.end()) {
        db_.Resolve(it->second, {Account::Status::kMissing, "", "", "account " + (e.status.empty() ? "inactive" : e.status)});
        h->second->f.status = "missing";
        h->second->next_poll_ms = INT64_MAX / 2;
        covered_.erase(it->second);
        next_claim_ms_ = 0;
      }
    }
  }
  const std::int64_t now = NowMs();
  for (auto& [id, found] : by_account) {
    const auto h = held_.find(id);
    if (h == held_.end()) continue;
    Followed& f = h->second->f;
    if (!found.posts.empty()) {
      // Only a covered account's position moves with the stream; another's waits for its gap.
      // (A post made in the last millisecond may not have come yet: read up to the one before.)
      const std::int64_t checked = covered_.count(id) ? newest_us / 1000 - 1 : f.since_ms;
      const std::int64_t added = db_.Store(id, found.posts, "", checked, now + 86'400'000);
      f.posts_found += added;
      if (added > 0) {
        posts_found_ += added;
        last_found_ms_ = now;
        telemetry_.FollowPosts(added);
      }
      std::int64_t newest_post = 0;
      for (const FoundPost& p : found.posts) newest_post = std::max(newest_post, p.created_ms);
      telemetry_.FollowLag(static_cast<double>(now - newest_post) / 1000.0);
    }
    if (!found.deleted.empty()) {
      const std::int64_t gone = db_.DeletePosts(id, found.deleted);
      if (gone > 0) telemetry_.FollowDeleted(gone);
    }
  }
  if (refused > 1) spdlog::warn("Jetstream: {} events refused in all", refused);
  spdlog::debug("Jetstream{}: {} event(s) to {} µs: {} account(s) with new or deleted posts", catch_up ? " catch-up" : "",
                frames.size(), newest_us, by_account.size());
  if (catch_up) {
    if (newest_us > catch_up_position_us_) {
      catch_up_position_us_ = newest_us;
      catch_up_cursor_us_ = newest_us - kRewindUs;
    }
    return;
  }
  if (newest_us > position_us_) {
    position_us_ = newest_us;
    stream_cursor_us_ = position_us_ - kRewindUs;
  }
}

void Follower::MarkStreamRead(bool now) {
  const std::int64_t t = NowMs();
  // (Only the covered accounts': those catching up are behind the stream's position.)
  if ((!now && t < next_mark_ms_) || position_us_ <= marked_us_ || covered_.empty()) return;
  db_.MarkRead(std::vector<std::int64_t>(covered_.begin(), covered_.end()), position_us_ / 1000 - 1);
  marked_us_ = position_us_;
  next_mark_ms_ = t + 1000;
}

void Follower::Repace(const std::string& group) {
  Budget& budget = *budgets_[group];
  std::vector<Held*> accounts;
  std::vector<double> rates;
  const std::int64_t now = NowMs();
  for (auto& [id, h] : held_) {
    // The accounts still resolving share the budget too: they are to be read as soon as they
    // are, and counting them from the start keeps the first ones resolved from taking it all.
    if (reader_->Group(h->f) != group || (h->f.status != "following" && h->f.status != "resolving")) continue;
    accounts.push_back(h.get());
    rates.push_back(PostRate(h->f.posts_found, static_cast<double>(now - h->f.since_ms) / 1000.0));
  }
  // Planned for 90% of what the window allows (the gate lets the whole through): reads come due
  // unevenly, and a schedule that spends it all makes them queue at the gate, each a little later
  // than its interval (measured by make bench: 41 s beyond it at p99 on X, against 2 s).
  // What this follower gets of the window: its share, weighed by its part of the accounts all
  // followers read through it (follow_shares()), or less when the window's headers say another
  // client spends it too (Learn()).
  const auto all = shares_.find(accounts.empty() ? "" : accounts.front()->f.host);
  budget.weight = all == shares_.end() || all->second <= static_cast<std::int64_t>(accounts.size())
                      ? 1.0
                      : static_cast<double>(accounts.size()) / static_cast<double>(all->second);
  if (budget.gate.budget() > Configured(budget)) budget.gate.SetBudget(Configured(budget));
  const double rps = std::min(Configured(budget), budget.gate.budget());
  budget.planned_rps = rps;
  const std::vector<Millis> intervals = PollIntervals(rates, 0.9 * rps, options_.min_poll, options_.max_poll);
  for (std::size_t i = 0; i < accounts.size(); ++i) {
    // A longer interval than before takes effect from the last read, a shorter one at once.
    const Millis before = accounts[i]->interval;
    accounts[i]->interval = intervals[i];
    if (before.count() > 0 && intervals[i] < before)
      accounts[i]->next_poll_ms = std::min(accounts[i]->next_poll_ms, now + intervals[i].count());
  }
  budget.repace = false;
}

void Follower::Learn(Budget& budget, const HttpResponse& response) {
  const RateLimit rate = reader_->Rate(response);
  if (rate.limit && *rate.limit > 0 && static_cast<double>(*rate.limit) != budget.limit) {
    budget.limit = static_cast<double>(*rate.limit);
    budget.gate.SetBudget(Configured(budget));
    budget.repace = true;
  }
  const std::int64_t now = NowMs();
  // What is left of the window, spread over the time left of it, less what the others on the same
  // address or credential (a second follower, a refreshing worker) were seen to spend of it
  // (pacing.hpp WindowShare: two followers converge on halves, evenly spread).
  const double configured = Configured(budget);
  if (rate.remaining && rate.reset_epoch_s && *rate.reset_epoch_s * 1000 > now) {
    // This follower's requests in the window the answer speaks of (a new reset time: a new window).
    if (*rate.reset_epoch_s != budget.window_reset_s) budget.window_reset_s = *rate.reset_epoch_s, budget.mine = 0;
    ++budget.mine;
    const double left_s = static_cast<double>(*rate.reset_epoch_s * 1000 - now) / 1000.0;
    budget.gate.SetBudget(WindowShare(configured, budget.limit, static_cast<double>(*rate.remaining), left_s,
                                      budget.window_s, static_cast<double>(budget.mine), 2, budget.weight));
    // A schedule planned for a rate this far from the one the gate lets through is planned again:
    // reads planned faster than they can go queue at the gate and lose their order.
    // (5%: a schedule 20% too fast for the gate, as this once allowed, queued reads for minutes.)
    if (budget.planned_rps > 0 && std::abs(budget.gate.budget() - budget.planned_rps) > 0.05 * budget.planned_rps)
      budget.repace = true;
  }
  if (response.status == 429 || (rate.remaining && *rate.remaining <= 1)) {
    const std::int64_t until = rate.reset_epoch_s ? *rate.reset_epoch_s * 1000 + 1000 : now + 60'000;
    budget.gate.PauseUntil(std::min(until, now + 15 * 60'000));
    spdlog::warn("{}: the window is spent ({}); reading again in {:.0f} s",
                 response.status == 429 ? "refused (429)" : "answered with remaining 0",
                 response.status == 429 ? "429" : "remaining 0", (std::min(until, now + 15 * 60'000) - now) / 1000.0);
  }
}

// An account as the log names it: handle (or id) and server.
static std::string NameOf(const Followed& f) {
  return (f.handle.empty() ? f.account_id : f.handle) + (f.host.empty() ? "" : "@" + f.host);
}

// What a lookup found of a held account: it is followed (its first read takes its turn), the same
// account as another followed one (followed once: no longer held), missing or private (marked), or
// not known yet (asked again later). Whether it is to join the stream's subscription.
bool Follower::Resolved(Held& held, const Account& a) {
  Budget& budget = BudgetOf(held);
  Followed& f = held.f;
  const std::string name = NameOf(f);
  if (a.status == Account::Status::kFailed) {
    held.next_poll_ms = NowMs() + kFailedPause.count();
    spdlog::warn("{}: could not look the account up: {}", name, a.reason);
    return false;
  }
  budget.repace = true;
  if (!db_.Resolve(f.follow_id, a)) {
    spdlog::info("{}: the same account as another followed one; following it once", name);
    held_.erase(f.follow_id);
    return false;
  }
  if (a.status != Account::Status::kFound) {
    f.status = a.status == Account::Status::kPrivate ? "private" : "missing";
    held.next_poll_ms = INT64_MAX / 2;  // the next claim says when to ask again
    next_claim_ms_ = 0;
    spdlog::warn("{}: {} ({})", name, f.status, a.reason);
    return false;
  }
  f.status = "following";
  f.account_id = a.account_id;
  if (!a.handle.empty()) f.handle = a.handle;
  spdlog::info("{}: following account {}", name, f.account_id);
  if (budget.repace) Repace(reader_->Group(f));
  if (streaming()) return true;
  // Its first read comes when its server may be asked again: this one thread meanwhile asks
  // the servers that may be asked now.
  held.next_poll_ms = NowMs();
  return false;
}

void Follower::Poll(Held& held) {
  Budget& budget = BudgetOf(held);
  const std::string token_name = network_ == "x" && !options_.tokens.empty() ? options_.tokens.begin()->first : "";
  // When the read's first request went (after the gate's wait): every post made before it was seen.
  std::int64_t first_sent = 0;
  const Fetch fetch = [&](const std::string& url, Reach reach) {
    for (;;) {
      // A read's first request waits its turn; its next pages go at once (they borrow the turns
      // after it: Gate::Sent), unless the window is spent.
      const std::int64_t wait = (first_sent == 0 ? budget.gate.NextAt() : budget.gate.PausedUntil()) - NowMs();
      if (wait <= 0) break;
      if (!stop_.SleepUnlessStopped(Millis(wait))) {
        HttpResponse stopped;
        stopped.error = "stopping";
        return stopped;
      }
    }
    budget.gate.Sent(NowMs());
    if (first_sent == 0) first_sent = NowMs();
    std::string token;
    if (network_ == "x") token = options_.tokens.empty() ? "" : options_.tokens.begin()->second;
    if (network_ == "mastodon") {
      const auto it = options_.tokens.find(held.f.host);
      if (it != options_.tokens.end()) token = it->second;
    }
    HttpResponse r = http_.Get(url, token, stop_.abort_flag(), reach);
    ++requests_;
    if (network_ == "x" && r.status != 200 && r.status != 0) {
      // A refusal of the credential as a whole is recorded as a refresh's is, and this
      // follower waits: a month for a cap, until someone resets a rejected credential.
      const FailureKind kind = ClassifyFailure(r.status, r.body);
      if (kind == FailureKind::kUsageCapped || kind == FailureKind::kRejected) {
        const std::string refusal = kind == FailureKind::kUsageCapped ? "usage-capped" : "rejected";
        db_.RecordRefusal(held.f.follow_id, token_name, refusal, FailedAnswer(r).reason.substr(0, 500));
        budget.gate.PauseUntil(NowMs() + 15 * 60'000);
        spdlog::error("credential {} {} by X: following paused (15 min, then asked again)", token_name,
                      kind == FailureKind::kUsageCapped ? "usage-capped" : "rejected");
      }
    }
    telemetry_.Request(token_name, RequestOutcome(r, r.status == 200 ? FailureKind::kNone : ClassifyFailure(r.status, r.body)),
                       r.elapsed_ms / 1000.0);
    Learn(budget, r);
    return r;
  };
  Followed& f = held.f;
  const std::string name = NameOf(f);
  if (f.status != "following" || f.account_id.empty()) {
    // With the others of its group due to be resolved too, as many as one request looks up.
    std::vector<Held*> batch{&held};
    const std::int64_t now = NowMs();
    for (auto& [id, h] : held_) {
      if (batch.size() >= reader_->LookupBatch()) break;
      if (h.get() != &held && (h->f.status != "following" || h->f.account_id.empty()) && h->next_poll_ms <= now &&
          &BudgetOf(*h) == held.budget)
        batch.push_back(h.get());
    }
    std::vector<Followed> asked;
    std::vector<std::int64_t> ids;
    for (Held* h : batch) asked.push_back(h->f), ids.push_back(h->f.follow_id);
    const std::vector<Account> found = reader_->LookupAll(asked, fetch);
    bool subscribe = false;
    for (std::size_t i = 0; i < ids.size() && i < found.size(); ++i) {
      const auto it = held_.find(ids[i]);  // (one found to be another's account is no longer held)
      if (it != held_.end()) subscribe = Resolved(*it->second, found[i]) || subscribe;
    }
    // Subscribed first; their gaps (since they were followed) filled once the stream has them.
    if (subscribe) Subscribe();
    return;
  }
  if (network_ == "x") {
    // Every post a timeline returns is billed: none is read past the credential's monthly cap.
    std::int64_t until = 0;
    std::string why;
    if (!db_.ReadAllowed(token_name, &until, &why)) {
      budget.gate.PauseUntil(until > 0 ? until : NowMs() + 15 * 60'000);
      held.next_poll_ms = std::max(held.next_poll_ms, budget.gate.NextAt());
      spdlog::warn("{}: not read: {}", name, why);
      return;
    }
  }
  first_sent = 0;
  const std::int64_t planned = held.next_poll_ms;  // the moment the last read planned this one for
  ReadOutcome out = reader_->Read(f, fetch);
  if (stop_.aborting()) return;
  if (first_sent > 0) telemetry_.FollowReadDelay(static_cast<double>(std::max<std::int64_t>(first_sent - planned, 0)) / 1000.0);
  out.checked_until_ms = std::min(out.checked_until_ms, first_sent > 0 ? first_sent : NowMs());
  if (!out.ok) {
    ++held.failures;
    held.next_poll_ms = NowMs() + std::min<std::int64_t>(kFailedPause.count(), 2000LL << std::min(held.failures, 5));
    spdlog::warn("{}: reading its new posts failed: {}", name, out.reason);
    return;
  }
  held.failures = 0;
  if (out.account) {
    db_.Resolve(f.follow_id, *out.account);
    f.status = out.account->status == Account::Status::kPrivate ? "private" : "missing";
    held.next_poll_ms = INT64_MAX / 2;
    next_claim_ms_ = 0;
    budget.repace = true;
    spdlog::warn("{}: {} ({})", name, f.status, out.account->reason);
    return;
  }
  if (held.interval.count() == 0 || budget.repace) Repace(reader_->Group(f));
  const std::int64_t now = NowMs();
  std::int64_t poll_after = out.more ? now : now + held.interval.count();
  if (streaming()) {
    // The gap is filled up to the read; from here the stream keeps its position.
    poll_after = now + 86'400'000;
    gaps_.erase(f.follow_id);
    covered_.insert(f.follow_id);
  }
  FollowDb::Billing billing{token_name, out.returned_pages};
  const std::int64_t added = db_.Store(f.follow_id, out.posts, out.newest_id, out.checked_until_ms, poll_after,
                                       network_ == "x" ? &billing : nullptr);
  if (!out.newest_id.empty()) f.newest_post_id = out.newest_id;
  f.checked_ms = std::max(f.checked_ms, out.checked_until_ms);
  f.posts_found += added;
  held.next_poll_ms = streaming() ? INT64_MAX / 2 : poll_after;
  if (added > 0) {
    posts_found_ += added;
    last_found_ms_ = now;
    telemetry_.FollowPosts(added);
  }
  // (make bench reads these: a post made after a read waits the interval that read planned.)
  spdlog::debug("read {} ({}): planned for {}, sent at {}, next in {} ms, {} new post(s)", f.follow_id, name, planned,
                first_sent, poll_after - now, added);
  std::int64_t newest_post = 0;
  for (const FoundPost& p : out.posts) newest_post = std::max(newest_post, p.created_ms);
  if (newest_post > 0) telemetry_.FollowLag(static_cast<double>(now - newest_post) / 1000.0);
}

int Follower::Run() {
  spdlog::info("tweetkeeper-worker {} following {} accounts: at most {}, reads every {:.0f} to {:.0f} s, {:.0f}% of "
               "each window",
               options_.name, network_, options_.max_accounts, Secs(options_.min_poll), Secs(options_.max_poll),
               options_.share * 100);
  last_found_ms_ = NowMs();
  Backoff backoff{Millis(500), Millis(30'000)};
  int failures = 0;
  std::int64_t next_summary = NowMs() + 60'000;
  std::int64_t summary_requests = 0, summary_posts = 0;
  while (!stop_.stopping()) {
    try {
      if (!db_.connected()) {
        db_.Connect();  // (what it held was forgotten when the connection was lost)
        next_claim_ms_ = 0;
        spdlog::info("database connection back");
      }
      std::int64_t now = NowMs();
      if (now >= next_claim_ms_) ClaimAccounts();
      for (auto& [group, budget] : budgets_)
        if (budget->repace) Repace(group);
      // The account to read next: due the soonest, counting its budget's wait (one thread reads
      // for every server: it takes an account whose server may be asked now before one whose
      // server's window must be waited for).
      // An account to resolve goes before one to read again at the same moment: resolving is
      // asked once, and an account not resolved is not followed at all.
      Held* due = nullptr;
      std::int64_t due_at = INT64_MAX;
      bool due_resolves = false;
      for (auto& [id, h] : held_) {
        if (h->next_poll_ms >= INT64_MAX / 2) continue;
        const std::int64_t at = std::max(h->next_poll_ms, BudgetOf(*h).gate.NextAt());
        const bool resolves = h->f.status != "following";
        // At the same moment (several waiting for one server's window): resolving first, then the
        // account due the longest (not the first in id order: the busiest accounts, followed first,
        // would take every turn and starve the quiet ones; make bench saw 0 reads of 100 of them).
        if (at < due_at || (at == due_at && ((resolves && !due_resolves) ||
                                             (resolves == due_resolves && h->next_poll_ms < due->next_poll_ms))))
          due = h.get(), due_at = at, due_resolves = resolves;
      }
      now = NowMs();
      if (now >= next_summary) {
        spdlog::info("last 60 s: {} account(s) held, {} request(s), {} new post(s)", held_.size(), requests_ - summary_requests,
                     posts_found_ - summary_posts);
        summary_requests = requests_;
        summary_posts = posts_found_;
        next_summary = now + 60'000;
      }
      if (options_.exit_when_idle.count() > 0 && now - last_found_ms_ > options_.exit_when_idle.count() * 1000) {
        spdlog::info("no new post for {} s (--exit-when-idle): stopping", options_.exit_when_idle.count());
        break;
      }
      const std::int64_t wake = std::min(next_claim_ms_, due_at);
      if (streaming()) {
        if (stream_->connections() != connections_seen_) {
          connections_seen_ = stream_->connections();
          telemetry_.FollowStreamConnection();
          if (connections_seen_ == 1) spdlog::info("Jetstream: connected to {}", options_.jetstream_url);
          if (connections_seen_ > 1)
            spdlog::warn("Jetstream: reconnected (connection {}) from {:.1f} s back; before: {}", connections_seen_,
                         (now * 1000 - stream_cursor_us_.load()) / 1e6, stream_->last_error());
          if (position_us_ < now * 1000 - kReplayUs) {
            // Away longer than the stream replays: every account's gap is filled from its feed.
            for (std::int64_t id : covered_)
              if (auto h = held_.find(id); h != held_.end()) h->second->next_poll_ms = now, gaps_.insert(id);
            covered_.clear();
          }
        }
        CatchUp();
        const auto wait = Millis(std::clamp<std::int64_t>(wake - now, 0, catch_up_ ? 10 : 200));
        const std::vector<std::string> frames = stream_->Take(wait, 5000);
        if (!frames.empty()) HandleFrames(frames, false);
        if (catch_up_) {
          const std::vector<std::string> caught = catch_up_->Take(Millis(0), 5000);
          if (!caught.empty()) HandleFrames(caught, true);
        }
        MarkStreamRead(false);
        if (!due || due_at > NowMs()) continue;
      } else if (wake > now) {
        stop_.SleepUnlessStopped(Millis(std::min<std::int64_t>(wake - now, 1000)));
        continue;
      }
      if (due) Poll(*due);
      failures = 0;
    } catch (const pqxx::broken_connection& e) {
      spdlog::warn("database connection lost: {}; reconnecting", RedactDsnSecrets(e.what(), options_.dsn));
      ForgetLeases();
      stop_.SleepUnlessStopped(backoff.Next(++failures));
      try {
        db_.Connect();
        next_claim_ms_ = 0;
      } catch (const std::exception&) {
      }
    } catch (const pqxx::sql_error& e) {
      // 55000: the lease is gone (taken over after a stall) or the account was unfollowed.
      spdlog::warn("SQLSTATE {}: {}", e.sqlstate(), RedactDsnSecrets(e.what(), options_.dsn));
      ForgetLeases();
      stop_.SleepUnlessStopped(backoff.Next(++failures));
    }
  }
  if (streaming()) {
    stream_->Stop();
    try {
      // What was handled is kept: a restart resumes from it.
      if (db_.connected()) MarkStreamRead(true);
    } catch (const std::exception& e) {
      spdlog::warn("could not keep the stream's position: {}", e.what());
    }
  }
  try {
    db_.Release();
  } catch (const std::exception& e) {
    spdlog::warn("could not hand the accounts back (their leases will expire): {}", e.what());
  }
  spdlog::info("stopped: {} request(s), {} new post(s)", requests_, posts_found_);
  return 0;
}

}  // namespace tweetkeeper::worker::follow
