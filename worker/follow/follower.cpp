#include "follow/follower.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <pqxx/pqxx>

#include "dsn/dsn.hpp"
#include "follow/bluesky_follow.hpp"
#include "provider/answer_status.hpp"
#include "service/backoff.hpp"
#include "service/connect.hpp"

namespace tweetkeeper::worker::follow {
namespace {

std::int64_t NowMs() {
  return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr Millis kFailedPause{60'000};  // an account whose read failed is tried again after this
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
  RateBudget* budget = nullptr;  // BudgetOf()'s, once found: a Mastodon server, the AppView, an
                                 // X credential's timeline window
};

Follower::Follower(FollowerOptions options, Telemetry& telemetry, StopSignal& stop)
    : options_(std::move(options)),
      telemetry_(telemetry),
      stop_(stop),
      reader_(MakeReader(options_)),
      network_(reader_->Network()),
      http_(options_.http),
      db_(options_.dsn, options_.name, network_, reader_->Credential()) {
  if (reader_->Streams() && !options_.jetstream_url.empty()) {
    stream_ = std::make_unique<JetstreamClient>(options_.jetstream_url, [this] {
      // A cursor older than the replay window would be clamped silently: never ask for one.
      const std::int64_t cursor = stream_cursor_us_.load();
      return cursor == 0 ? 0 : std::max(cursor, NowMs() * 1000 - kReplayUs);  // 0: live
    }, options_.jetstream_dictionary);
  }
}

Follower::~Follower() = default;

bool Follower::Connect(std::chrono::seconds startup_timeout) {
  DatabaseWait wait(options_.dsn, startup_timeout, stop_, "tweetkeeper SQL API for followers");
  return wait.Connect([this] { db_.Connect(); });
}

RateBudget& Follower::BudgetOf(Held& held) {
  // An account's budget never changes (its server, the credential): found once, kept.
  if (held.budget) return *held.budget;
  auto& b = budgets_[reader_->Group(held.f)];
  if (!b) b = std::make_unique<RateBudget>(reader_->DefaultLimit(), reader_->WindowSeconds(), options_.share);
  held.budget = b.get();
  return *b;
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
  catch_up_ = std::make_unique<JetstreamClient>(
      options_.jetstream_url, [this] { return catch_up_cursor_us_.load(); }, options_.jetstream_dictionary);
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
      // Taken down, deleted, deactivated: marked missing, asked about again after the recheck;
      // its tracked posts go with it at once (the database decides which statuses take them).
      const auto h = held_.find(it->second);
      if (h != held_.end()) {
        db_.Resolve(it->second, {Account::Status::kMissing, "", "", "account " + (e.status.empty() ? "inactive" : e.status)});
        const std::int64_t gone = db_.AccountStatus(it->second, false, e.status);
        if (gone > 0) {
          spdlog::info("Jetstream: account {} {}: {} tracked post(s) marked gone", e.did, e.status, gone);
          telemetry_.FollowDeleted(gone);
        }
        h->second->f.status = "missing";
        h->second->next_poll_ms = INT64_MAX / 2;
        covered_.erase(it->second);
        next_claim_ms_ = 0;
      }
    } else if (e.kind == JetstreamEvent::Kind::kAccount) {
      // Active (again): the posts its going took come back (due at once), and the account is
      // resolved anew, its gap read from its feed, as a newly followed one.
      const auto h = held_.find(it->second);
      if (h != held_.end()) {
        const std::int64_t back = db_.AccountStatus(it->second, true, "");
        if (back > 0) spdlog::info("Jetstream: account {} active again: {} tracked post(s) back", e.did, back);
        if (h->second->f.status == "missing") {
          h->second->f.status = "resolving";
          h->second->next_poll_ms = 0;
          next_claim_ms_ = 0;
        }
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
  RateBudget& budget = *budgets_[group];
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
  // followers read through it (follow_shares(): a follower holding 1 of a server's 100 accounts
  // read that one every 2 s with half the window, the other's 99 fell minutes behind, issue 49),
  // or less when the window's headers say another client spends it too (Learn()).
  const auto all = shares_.find(accounts.empty() ? "" : accounts.front()->f.host);
  budget.SetWeight(all == shares_.end() || all->second <= static_cast<std::int64_t>(accounts.size())
                       ? 1.0
                       : static_cast<double>(accounts.size()) / static_cast<double>(all->second));
  const double rps = std::min(budget.configured_rps(), budget.gate().budget());
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

void Follower::Learn(RateBudget& budget, const HttpResponse& response) {
  const std::int64_t now = NowMs();
  const std::optional<std::int64_t> paused = budget.Learn(reader_->Rate(response), response.status == 429, now);
  if (paused) {
    spdlog::warn("{}: the window is spent ({}); reading again in {:.0f} s",
                 response.status == 429 ? "refused (429)" : "answered with remaining 0",
                 response.status == 429 ? "429" : "remaining 0", (*paused - now) / 1000.0);
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
  RateBudget& budget = BudgetOf(held);
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

HttpResponse Follower::Send(Held& held, const std::string& url, Reach reach, std::int64_t* first_sent) {
  RateBudget& budget = BudgetOf(held);
  for (;;) {
    // A read's first request waits its turn; its next pages go at once (they borrow the turns
    // after it: Gate::Sent), unless the window is spent.
    const std::int64_t wait = (*first_sent == 0 ? budget.gate().NextAt() : budget.gate().PausedUntil()) - NowMs();
    if (wait <= 0) break;
    if (!stop_.SleepUnlessStopped(Millis(wait))) {
      HttpResponse stopped;
      stopped.error = "stopping";
      return stopped;
    }
  }
  budget.gate().Sent(NowMs());
  if (*first_sent == 0) *first_sent = NowMs();
  HttpResponse r = http_.Get(url, reader_->TokenFor(held.f), stop_.abort_flag(), reach);
  ++requests_;
  const std::string credential = reader_->Credential();
  if (const std::optional<std::string> refusal = reader_->CredentialRefusal(r)) {
    // A refusal of the credential as a whole is recorded as a refresh's is, and this
    // follower waits: a month for a cap, until someone resets a rejected credential.
    db_.RecordRefusal(held.f.follow_id, credential, *refusal, FailedAnswer(r).reason.substr(0, 500));
    budget.gate().PauseUntil(NowMs() + 15 * 60'000);
    spdlog::error("credential {} {} by {}: following paused (15 min, then asked again)", credential, *refusal,
                  reader_->DisplayName());
  }
  telemetry_.Request(credential, RequestOutcome(r, r.status == 200 ? FailureKind::kNone : ClassifyFailure(r.status, r.body)),
                     r.elapsed_ms / 1000.0);
  Learn(budget, r);
  return r;
}

void Follower::ResolveDue(Held& held, const Fetch& fetch) {
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
}

void Follower::Poll(Held& held) {
  RateBudget& budget = BudgetOf(held);
  // When the read's first request went (after the gate's wait): every post made before it was seen.
  std::int64_t first_sent = 0;
  const Fetch fetch = [&](const std::string& url, Reach reach) { return Send(held, url, reach, &first_sent); };
  Followed& f = held.f;
  if (f.status != "following" || f.account_id.empty()) {
    ResolveDue(held, fetch);
    return;
  }
  if (reader_->Billed()) {
    // Every post a read returns is billed: none is read past the credential's monthly cap.
    std::int64_t until = 0;
    std::string why;
    if (!db_.ReadAllowed(reader_->Credential(), &until, &why)) {
      budget.gate().PauseUntil(until > 0 ? until : NowMs() + 15 * 60'000);
      held.next_poll_ms = std::max(held.next_poll_ms, budget.gate().NextAt());
      spdlog::warn("{}: not read: {}", NameOf(f), why);
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
    spdlog::warn("{}: reading its new posts failed: {}", NameOf(f), out.reason);
    return;
  }
  held.failures = 0;
  if (out.account) {
    db_.Resolve(f.follow_id, *out.account);
    f.status = out.account->status == Account::Status::kPrivate ? "private" : "missing";
    held.next_poll_ms = INT64_MAX / 2;
    next_claim_ms_ = 0;
    budget.repace = true;
    spdlog::warn("{}: {} ({})", NameOf(f), f.status, out.account->reason);
    return;
  }
  StoreRead(held, out, planned, first_sent);
}

void Follower::StoreRead(Held& held, ReadOutcome& out, std::int64_t planned, std::int64_t first_sent) {
  Followed& f = held.f;
  if (held.interval.count() == 0 || BudgetOf(held).repace) Repace(reader_->Group(f));
  const std::int64_t now = NowMs();
  std::int64_t poll_after = out.more ? now : now + held.interval.count();
  if (streaming()) {
    // The gap is filled up to the read; from here the stream keeps its position.
    poll_after = now + 86'400'000;
    gaps_.erase(f.follow_id);
    covered_.insert(f.follow_id);
  }
  FollowDb::Billing billing{reader_->Credential(), out.returned_pages};
  const std::int64_t added = db_.Store(f.follow_id, out.posts, out.newest_id, out.checked_until_ms, poll_after,
                                       reader_->Billed() ? &billing : nullptr);
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
  spdlog::debug("read {} ({}): planned for {}, sent at {}, next in {} ms, {} new post(s)", f.follow_id, NameOf(f), planned,
                first_sent, poll_after - now, added);
  std::int64_t newest_post = 0;
  for (const FoundPost& p : out.posts) newest_post = std::max(newest_post, p.created_ms);
  if (newest_post > 0) telemetry_.FollowLag(static_cast<double>(now - newest_post) / 1000.0);
}

Follower::Held* Follower::NextDue(std::int64_t* due_at) {
  // The account to read next: due the soonest, counting its budget's wait (one thread reads
  // for every server: it takes an account whose server may be asked now before one whose
  // server's window must be waited for).
  // An account to resolve goes before one to read again at the same moment: resolving is
  // asked once, and an account not resolved is not followed at all.
  Held* due = nullptr;
  *due_at = INT64_MAX;
  bool due_resolves = false;
  for (auto& [id, h] : held_) {
    if (h->next_poll_ms >= INT64_MAX / 2) continue;
    const std::int64_t at = std::max(h->next_poll_ms, BudgetOf(*h).gate().NextAt());
    const bool resolves = h->f.status != "following";
    // At the same moment (several waiting for one server's window): resolving first, then the
    // account due the longest (not the first in id order: the busiest accounts, followed first,
    // would take every turn and starve the quiet ones; make bench saw 0 reads of 100 of them).
    if (at < *due_at || (at == *due_at && ((resolves && !due_resolves) ||
                                           (resolves == due_resolves && h->next_poll_ms < due->next_poll_ms))))
      due = h.get(), *due_at = at, due_resolves = resolves;
  }
  return due;
}

void Follower::StreamTurn(std::int64_t now, std::int64_t wake) {
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
}

int Follower::Run() {
  spdlog::info("tweetkeeper-worker {} following {} accounts: at most {}, reads every {:.0f} to {:.0f} s, {:.0f}% of "
               "each window",
               options_.name, network_, options_.max_accounts, Secs(options_.min_poll), Secs(options_.max_poll),
               options_.share * 100);
  last_found_ms_ = NowMs();
  Backoff backoff = ReconnectBackoff();
  int failures = 0;
  std::int64_t next_summary = NowMs() + 60'000;
  std::int64_t summary_requests = 0, summary_posts = 0;
  // The session is gone, and with it the leases: wait, then connect again.
  const auto reconnect = [&](const char* what) {
    spdlog::warn("database connection lost: {}; reconnecting", RedactDsnSecrets(what, options_.dsn));
    ForgetLeases();
    stop_.SleepUnlessStopped(backoff.Next(++failures));
    try {
      db_.Connect();
      next_claim_ms_ = 0;
    } catch (const std::exception&) {
    }
  };
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
      std::int64_t due_at = INT64_MAX;
      Held* due = NextDue(&due_at);
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
        StreamTurn(now, wake);
        if (!due || due_at > NowMs()) continue;
      } else if (wake > now) {
        stop_.SleepUnlessStopped(Millis(std::min<std::int64_t>(wake - now, 1000)));
        continue;
      }
      if (due) Poll(*due);
      failures = 0;
    } catch (const pqxx::broken_connection& e) {
      reconnect(e.what());
    } catch (const pqxx::in_doubt_error& e) {
      // Lost while a COMMIT was on its way (seen when PostgreSQL restarted under a read's store,
      // make check's follow suite: the follower exited 1). A store that did commit has moved its
      // account's position on; one that did not is read again from the old position.
      reconnect(e.what());
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
