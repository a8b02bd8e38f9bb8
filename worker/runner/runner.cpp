#include "runner/runner.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <mutex>
#include <pqxx/pqxx>
#include <fmt/chrono.h>
#include <thread>

#include "provider/refusals.hpp"
#include "queue/database_state.hpp"
#include "dsn/dsn.hpp"
#include "http/redact_token.hpp"
#include "queue/due_listener.hpp"
#include "queue/payload.hpp"
#include "queue/retry_policy.hpp"

namespace tweetkeeper::worker {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

constexpr Millis kFailureBase{1000}, kFailureCap{60'000};     // API or SQL failure, per slot
constexpr Millis kWindowCap{15 * 60'000};      // a rate-limit window is 15 minutes
constexpr Millis kUsageCapPause{15 * 60'000};  // monthly cap: retry rarely, loudly

std::int64_t NowMs() {
  return std::chrono::duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

std::vector<std::string> CredentialNames(const std::map<std::string, std::string>& tokens) {
  std::vector<std::string> names;
  for (const auto& [name, token] : tokens) names.push_back(name);
  return names;
}

// The x-rate-limit-* headers as complete_batch/release_batch take them.
std::string RateJson(const RateLimit& rl) {
  if (!rl.limit && !rl.remaining && !rl.reset_epoch_s) return "null";
  auto field = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string("null"); };
  return fmt::format(R"({{"limit":{},"remaining":{},"reset":{}}})", field(rl.limit), field(rl.remaining),
                     field(rl.reset_epoch_s));
}

// What the credential's refusal was, in release_batch's words (which are FailureKindName's for
// the three kinds that say something about the credential), or "" for any other failure.
std::string Refusal(FailureKind kind) {
  const bool refusal =
      kind == FailureKind::kRateLimited || kind == FailureKind::kUsageCapped || kind == FailureKind::kRejected;
  return refusal ? FailureKindName(kind) : "";
}

std::string Opt(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "?"; }

// What an answer got wrong about single tweets, one line each kind per batch: ids it left out
// (complete_batch put them off; 'missing' after tweetkeeper.missing_after in a row) and counts
// that are none (not stored; the tweet's last known count stays).
void LogAnswerProblems(const std::string& label, std::int64_t lease, std::size_t asked, const BatchResult& result) {
  if (!result.omitted.empty()) {
    spdlog::warn("{}: lease {}: the answer left out {} of {} ids (first {}): put off, not asked again at once", label,
                 lease, result.omitted.size(), asked, result.omitted.front());
  }
  std::size_t invalid = 0;
  const Observation* first = nullptr;
  for (const Observation& o : result.observations) {
    if (o.invalid.empty()) continue;
    if (!first) first = &o;
    ++invalid;
  }
  if (first) {
    spdlog::warn("{}: lease {}: the answer gave {} tweet(s) counts that are none (first {}: {}): not stored, the "
                 "last known kept",
                 label, lease, invalid, first->id, first->invalid);
  }
}

}  // namespace

struct Runner::Slot {
  Slot(int index, const RunnerOptions& o, StopSignal& stop)
      : label("slot " + std::to_string(index)),
        queue(o.dsn, o.name, label, o.provider, CredentialNames(o.tokens)),
        http(o.http),
        claim_retry(ClaimRetry(label, reconnect_backoff, stop)),
        finish_retry(FinishRetry(label, reconnect_backoff, stop)) {}

  std::string label;
  Queue queue;
  HttpClient http;
  Backoff failure_backoff{kFailureBase, kFailureCap};
  Backoff reconnect_backoff{kReconnectBase, kReconnectCap};
  int failures = 0;  // consecutive failed batches or claims
  RetryPolicy claim_retry;   // as long as it takes, until shutdown
  RetryPolicy finish_retry;  // complete/release: a few tries
};

Runner::Runner(RunnerOptions options, std::unique_ptr<Provider> provider)
    : options_(std::move(options)), provider_(std::move(provider)), telemetry_(options_.name, options_.provider) {
  telemetry_.Slots(options_.concurrency);
}

Runner::~Runner() = default;

bool Runner::Connect() {
  const auto started = steady_clock::now();
  Backoff backoff{kReconnectBase, kReconnectCap};
  std::string waiting_for;  // the state last logged; empty: not waiting
  for (int attempt = 0; static_cast<int>(slots_.size()) < options_.concurrency;) {
    auto slot = std::make_unique<Slot>(static_cast<int>(slots_.size()) + 1, options_, stop_);
    std::string state, error;
    try {
      slot->queue.Connect();
      slots_.push_back(std::move(slot));
      if (!waiting_for.empty()) {
        spdlog::info("database available after {:.1f} s", std::chrono::duration<double>(steady_clock::now() - started).count());
        waiting_for.clear();
      }
      attempt = 0;
      continue;
    } catch (const DatabaseUnusable& e) {
      throw std::runtime_error(e.what());
    } catch (const DatabaseInRecovery& e) {
      state = "in recovery (a standby, not yet promoted)";
      error = e.what();
    } catch (const pqxx::sql_error& e) {
      throw std::runtime_error("the database has no usable tweetkeeper SQL API: SQLSTATE " + e.sqlstate() + ": " +
                               SqlMessage(e, options_.dsn));
    } catch (const pqxx::broken_connection& e) {
      error = RedactDsnSecrets(e.what(), options_.dsn);
      const ConnectFailure failure = ClassifyConnectFailure(options_.dsn, e.what());
      if (failure == ConnectFailure::kRefused) throw std::runtime_error("cannot connect to the database: " + error);
      state = ConnectFailureName(failure);
    } catch (const std::exception& e) {
      throw std::runtime_error("cannot connect to the database: " + RedactDsnSecrets(e.what(), options_.dsn));
    }
    // Worth waiting for. Said once per state, not once per attempt.
    const auto limit = options_.startup_timeout;
    if (state != waiting_for) {
      spdlog::warn("database {}: {}; waiting for it (retrying every {:.1f} to {:.0f} s{})", state, error,
                   Secs(kReconnectBase), Secs(kReconnectCap),
                   limit.count() ? fmt::format(", for at most {} s: --startup-timeout", limit.count()) : "");
      waiting_for = state;
    }
    Millis delay = backoff.Next(++attempt);
    if (limit.count()) {
      const auto left = std::chrono::duration_cast<Millis>(started + limit - steady_clock::now());
      if (left <= Millis{0}) {
        throw std::runtime_error(fmt::format("database still {} after {} s (--startup-timeout): {}", state,
                                             limit.count(), error));
      }
      delay = std::min(delay, left);
    }
    if (!stop_.SleepUnlessStopped(delay)) {
      spdlog::info("stopped while waiting for the database");
      return false;
    }
  }
  return true;
}

int Runner::Run() {
  spdlog::info("tweetkeeper-worker {} started: {} slots, batch size {}, api {} ({}), poll {} ms, exit when idle: {}",
               options_.name, options_.concurrency, options_.batch_size, options_.api_url, provider_->Name(),
               options_.poll_interval.count(),
               options_.exit_when_idle.count() ? std::to_string(options_.exit_when_idle.count()) + " s" : "never");
  const auto started = steady_clock::now();
  last_activity_ms_ = NowMs();

  DueListener listener(options_.dsn, [this] { stop_.Wake(); });
  listener.Start();
  std::vector<std::thread> threads;
  for (auto& slot : slots_) threads.emplace_back([this, &slot] { SlotLoop(*slot); });

  // The main thread reports; it wakes early only to notice the end.
  Totals before = Snapshot();
  while (!stop_.stopping()) {
    if (!stop_.SleepUnlessStopped(options_.summary_interval)) break;
    Totals now = Snapshot();
    if (now.batches != before.batches || now.errors != before.errors) {
      spdlog::info("last {} s: {}", options_.summary_interval.count(), Describe(now, before));
    }
    before = now;
  }
  if (!idle_stop_logged_) {
    spdlog::info("stopping: finishing {} batch(es) in flight", in_flight_.load());
  }
  for (auto& t : threads) t.join();
  slots_.clear();  // closes the connections

  const double uptime = std::chrono::duration<double>(steady_clock::now() - started).count();
  spdlog::info("stopped after {:.1f} s: {}", uptime, Describe(Snapshot(), Totals{}));
  return exit_code_;
}

Runner::Totals Runner::Snapshot() const {
  return {counters_.batches,  counters_.tweets, counters_.found,
          counters_.problems, counters_.errors, counters_.expired};
}

std::string Runner::Describe(const Totals& now, const Totals& before) {
  const auto tweets = now.tweets - before.tweets, found = now.found - before.found,
             problems = now.problems - before.problems;
  return fmt::format("{} batches, {} tweets ({} found, {} problems), {} errors, {} expired leases",
                     now.batches - before.batches, tweets, found, problems, now.errors - before.errors,
                     now.expired - before.expired);
}

void Runner::SlotLoop(Slot& slot) {
  try {
    while (!stop_.stopping()) {
      if (!WaitForApi()) break;

      // Counted in flight before the claim, so an idle neighbour cannot stop the worker
      // between our claim and our first look at its result.
      ++in_flight_;
      const std::uint64_t wakes_seen = stop_.wakes();
      std::optional<Lease> lease;
      const auto claim_started = steady_clock::now();
      const DbOutcome claimed =
          GuardDb(slot.label, "claim", 0, options_.dsn, [&] { lease = slot.queue.Claim(options_.batch_size, slot.claim_retry); });
      if (claimed == DbOutcome::kOk) {
        telemetry_.Claim(std::chrono::duration<double>(steady_clock::now() - claim_started).count());
      }
      Millis wait{0};
      if (claimed != DbOutcome::kOk) {
        --in_flight_;
        if (stop_.stopping()) break;
        wait = slot.failure_backoff.Next(++slot.failures);
      } else if (lease && lease->wait) {
        // Tweets are due but no credential has quota: sleep until the earliest reset (a NOTIFY
        // would only say again that tweets are due).
        --in_flight_;
        WaitForQuota(slot, *lease->wait);
        continue;
      } else if (!lease) {
        --in_flight_;
        CheckIdle();
        IdleWait(wakes_seen);
        continue;
      } else {
        NoteActivity();
        telemetry_.Batch("claimed");
        telemetry_.SlotsBusy(++busy_);
        wait = Process(slot, *lease);
        telemetry_.SlotsBusy(--busy_);
        NoteActivity();
        --in_flight_;
      }
      if (wait.count() > 0) stop_.SleepUnlessStopped(wait);
    }
  } catch (const std::exception& e) {
    spdlog::critical("{}: unexpected error, stopping the worker: {}", slot.label, e.what());
    exit_code_ = 1;
    stop_.RequestStop();
  }
}

Millis Runner::Process(Slot& slot, const Lease& lease) {
  const auto started = steady_clock::now();
  if (lease.tweet_ids.empty()) {
    Release(slot, lease.id, "claim returned no readable tweet ids");
    ++counters_.errors;
    return slot.failure_backoff.Next(++slot.failures);
  }
  if (stop_.stopping()) {  // claimed just as the signal came: hand it back unsent
    Release(slot, lease.id, "worker shutting down");
    return Millis{0};
  }
  if (provider_->ResolvesNames(lease.endpoint)) return ResolveNames(slot, lease);
  std::vector<std::int64_t> ids = lease.tweet_ids;
  PostKeys keys{lease.post_keys, lease.endpoint, lease.payloads != "none" && provider_->KeepsPayloads(),
                &lease.kept_hashes, lease.payloads == "first"};
  if (lease.payloads != "none" && !keys.payloads && !no_payloads_logged_.exchange(true)) {
    spdlog::warn("{}: tweetkeeper.payloads is '{}' in this database, but the {} provider keeps no payloads: "
                 "only the counts are stored (--provider x-v2 keeps them)",
                 slot.label, lease.payloads, provider_->Name());
  }
  if (static_cast<int>(ids.size()) > options_.batch_size) {
    // More than asked for: send what fits; complete_batch hands back the ids we did not answer.
    spdlog::warn("{}: lease {}: the claim returned {} ids for a batch size of {}", slot.label, lease.id, ids.size(),
                 options_.batch_size);
    ids.resize(static_cast<std::size_t>(options_.batch_size));
    if (keys.keys.size() > ids.size()) keys.keys.resize(ids.size());
  }

  // The claimed credential's token; without registered credentials, the only one we have. Where
  // the endpoint picks it (a Mastodon server: its host's in the credentials file), that one, if any.
  const std::optional<std::string> endpoint_token = provider_->EndpointToken(lease.endpoint);
  const auto token_it = endpoint_token             ? options_.tokens.find(*endpoint_token)
                        : lease.credential.empty() ? options_.tokens.begin()
                                                   : options_.tokens.find(lease.credential);
  if (token_it == options_.tokens.end() && !endpoint_token) {
    Release(slot, lease.id, "worker " + options_.name + " has no token for credential " + lease.credential);
    ++counters_.errors;
    spdlog::error("{}: lease {}: claim_batch gave credential '{}', which this worker has no token for", slot.label,
                  lease.id, lease.credential);
    return slot.failure_backoff.Next(++slot.failures);
  }
  static const std::string kNone;
  const bool has_token = token_it != options_.tokens.end();
  const std::string& token = has_token ? token_it->second : kNone;
  const std::string& token_name = has_token ? token_it->first : kNone;
  std::string url;
  HttpResponse response;  // the last answer
  const SendPart send = [&](const std::vector<std::int64_t>& part, const PostKeys& part_keys) {
    url = provider_->RequestUrl(part, part_keys);
    spdlog::trace("{}: lease {}: GET {} ({})", slot.label, lease.id, url, token_name);
    response = slot.http.Get(url, token, stop_.abort_flag());
    RedactToken(response.body, token);  // before anything quotes the body
    ++counters_.batches;  // counted when answered, so an interval's numbers add up
    counters_.tweets += part.size();
    PartAnswer answer{provider_->ParseAnswer(response, part, part_keys), provider_->RefusedKey(response)};
    telemetry_.Request(token_name.empty() ? "default" : token_name, RequestOutcome(response, answer.result.failure),
                       response.elapsed_ms / 1000.0);
    return answer;
  };
  PartAnswer first = send(ids, keys);
  const bool split = first.result.failure == FailureKind::kOurRequestInvalid && provider_->SplitsRefusals();
  BatchResult result = split ? AnswerAroundRefusals(ids, keys, std::move(first), send,
                                                          [this] { return stop_.stopping(); })
                                   : std::move(first.result);
  if (split && result.ok()) {
    spdlog::warn("{}: lease {}: the API refused the whole batch for a key it calls invalid; answered in parts, "
                 "the refused key(s) marked invalid-key",
                 slot.label, lease.id);
  }
  // Registered credentials (X) and every endpoint of Bluesky and Mastodon keep their quota in the
  // database, where claims count it for all workers.
  const bool quota_in_database = !lease.credential.empty() || provider_->Keyed();
  const std::optional<Millis> paused = ApplyRateLimit(slot, result, quota_in_database);
  QuotaReport quota{RateJson(result.rate_limit), result.ok() ? "" : Refusal(result.failure)};
  std::string reason = result.reason;
  const std::string diagnosis_url = result.ok() ? "" : provider_->DiagnosisUrl(keys, ids.size(), response);
  if (!diagnosis_url.empty()) {
    // One more request explains the failure (a Mastodon server older than 4.3: one status per
    // request from then on).
    if (std::optional<Diagnosis> d = provider_->Diagnose(slot.http.Get(diagnosis_url, token, stop_.abort_flag()))) {
      quota.refusal = d->refusal;
      reason = d->reason;
    }
  }

  if (!result.ok()) {
    Release(slot, lease.id, reason, quota);
    if (stop_.aborting() && response.status == 0) {
      spdlog::info("{}: lease {}: request aborted by shutdown; batch released", slot.label, lease.id);
      return Millis{0};
    }
    ++counters_.errors;
    const Millis wait = paused ? Millis{0} : slot.failure_backoff.Next(++slot.failures);
    const bool ours = result.failure == FailureKind::kOurRequestInvalid;  // a 400 is a bug on our side
    const auto level =
        result.failure == FailureKind::kRejected || ours ? spdlog::level::err : spdlog::level::warn;
    if (ours) {
      spdlog::error("{}: lease {}: the API called our request invalid (HTTP 400), a bug in tweetkeeper: GET {}; "
                    "please report it",
                    slot.label, lease.id, url);
    }
    const std::string next =
        stop_.stopping() ? "" : fmt::format(", next try in {:.1f} s", Secs(paused ? *paused : wait));
    spdlog::log(level, "{}: lease {}: API request for {} ids failed ({}): {}; batch released{}", slot.label, lease.id,
                ids.size(), FailureKindName(result.failure), result.reason, next);
    return wait;
  }

  counters_.found += result.observations.size();
  counters_.problems += result.problems.size();
  int stored = 0;
  const auto complete_started = steady_clock::now();
  const DbOutcome completed = GuardDb(slot.label, "complete", lease.id, options_.dsn, [&] {
    stored = slot.queue.Complete(lease.id, ObservationsJson(result.observations), ProblemsJson(result.problems),
                                 quota, slot.finish_retry);
  });
  if (completed == DbOutcome::kOk) {
    telemetry_.Complete(std::chrono::duration<double>(steady_clock::now() - complete_started).count());
    telemetry_.Batch("completed");
    telemetry_.Stored(stored);
    telemetry_.Problems(result);
    telemetry_.Success();
    LogAnswerProblems(slot.label, lease.id, ids.size(), result);
  }
  if (completed == DbOutcome::kSqlError || completed == DbOutcome::kOther) {
    Release(slot, lease.id, "complete_batch failed");
  }
  if (completed != DbOutcome::kOk) {
    ++counters_.errors;
    return slot.failure_backoff.Next(++slot.failures);
  }

  const std::size_t answered = result.observations.size() + result.problems.size();
  if (static_cast<std::size_t>(stored) < answered) {
    // Not an error: we were too slow (the lease expired), or our session ended while we waited
    // for the API (the batch was handed back); the tweets are another claim's now.
    ++counters_.expired;
    spdlog::warn("{}: lease {} had expired or was handed back: {} of {} answers stored, the rest belong to a newer "
                 "lease",
                 slot.label, lease.id, stored, answered);
  }
  const double ms = std::chrono::duration<double, std::milli>(steady_clock::now() - started).count();
  spdlog::debug("{}: lease {}: {} ids, {} found, {} problems, {} ignored, {} stored, {:.0f} ms (api {:.0f} ms)",
                slot.label, lease.id, ids.size(), result.observations.size(), result.problems.size(), result.ignored,
                stored, ms, response.elapsed_ms);
  slot.failures = 0;
  return Millis{0};
}

Millis Runner::ResolveNames(Slot& slot, const Lease& lease) {
  const std::vector<std::string> handles = provider_->NamesToResolve(PostKeys{lease.post_keys, lease.endpoint});
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartArray();
  for (const std::string& handle : handles) {
    if (stop_.stopping()) {
      Release(slot, lease.id, "worker shutting down");
      return Millis{0};
    }
    HttpResponse response = slot.http.Get(provider_->ResolveUrl(handle), "", stop_.abort_flag());
    ++counters_.batches;
    const Resolution r = provider_->ParseResolution(response);
    telemetry_.Request("default", RequestOutcome(response, r.failure.failure), response.elapsed_ms / 1000.0);
    if (!r.failure.ok()) {
      // Nothing learnt of this handle: the whole batch goes back (what was resolved is asked
      // again; the AppView's window is the endpoint's, as for getPosts).
      const QuotaReport quota{RateJson(r.failure.rate_limit), Refusal(r.failure.failure)};
      Release(slot, lease.id, "resolving " + handle + ": " + r.failure.reason, quota);
      ++counters_.errors;
      spdlog::warn("{}: lease {}: resolving the handle {} failed ({}): {}; batch released", slot.label, lease.id,
                   handle, FailureKindName(r.failure.failure), r.failure.reason);
      return slot.failure_backoff.Next(++slot.failures);
    }
    w.StartObject();
    w.Key("handle");
    w.String(handle.c_str(), static_cast<rapidjson::SizeType>(handle.size()));
    w.Key(r.key.empty() ? "problem" : "did");
    const std::string& value = r.key.empty() ? r.problem : r.key;
    w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
    w.EndObject();
  }
  w.EndArray();
  int settled = 0;
  const DbOutcome done = GuardDb(slot.label, "complete_handles", lease.id, options_.dsn, [&] {
    settled = slot.queue.CompleteHandles(lease.id, std::string(buffer.GetString(), buffer.GetSize()), slot.finish_retry);
  });
  if (done == DbOutcome::kSqlError || done == DbOutcome::kOther) Release(slot, lease.id, "complete_handles failed");
  if (done != DbOutcome::kOk) {
    ++counters_.errors;
    return slot.failure_backoff.Next(++slot.failures);
  }
  telemetry_.Batch("completed");
  spdlog::debug("{}: lease {}: {} handles resolved, {} posts settled", slot.label, lease.id, handles.size(), settled);
  slot.failures = 0;
  return Millis{0};
}

void Runner::Release(Slot& slot, std::int64_t lease_id, const std::string& reason, const QuotaReport& quota) {
  const DbOutcome released =
      GuardDb(slot.label, "release", lease_id, options_.dsn, [&] { slot.queue.Release(lease_id, reason, quota, slot.finish_retry); });
  if (released != DbOutcome::kOk) ++counters_.errors;
  else telemetry_.Batch("released");
}

// Every credential is spent: one line per new reason (not per slot, not per poll), then sleep
// until the earliest reset, at most a minute at a time so new quota is noticed. Waiting for the
// even pace is normal work, logged at debug level only.
void Runner::WaitForQuota(Slot& slot, const QuotaWait& wait) {
  const std::int64_t now_ms =
      std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch()).count();
  // At least 20 ms: the database never says "until" in the past, but clocks differ a little.
  const Millis pause = std::clamp(Millis{wait.until_epoch_ms - now_ms}, Millis{20}, Millis{60'000});
  if (wait.Paced()) {
    spdlog::debug("{}: {}; next request in {} ms", slot.label, wait.reason, pause.count());
  } else {
    std::lock_guard<std::mutex> lock(quota_log_mutex_);
    if (wait.reason != last_quota_reason_) {
      last_quota_reason_ = wait.reason;
      spdlog::info("{}: tweets are due but no credential has quota until {} ({}); waiting", slot.label,
                   fmt::format("{:%H:%M:%S} UTC", fmt::gmtime(static_cast<std::time_t>(wait.until_epoch_ms / 1000))),
                   wait.reason);
    }
  }
  stop_.SleepUnlessStopped(pause);
}

// Rate limits apply to the token, so one slot's 429 pauses every slot of this process.
std::optional<Millis> Runner::ApplyRateLimit(Slot& slot, const BatchResult& result, bool quota_in_database) {
  // With credentials registered, the database keeps each one's quota (claim_batch hands out
  // only credentials with quota left), so a 429 for one must not pause the others.
  if (quota_in_database) return std::nullopt;
  const RateLimit& rl = result.rate_limit;
  const std::int64_t now_s =
      std::chrono::duration_cast<seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (result.failure == FailureKind::kRateLimited) {
    const Millis pause =
        RateLimitPause(rl.reset_epoch_s, now_s, kWindowCap, slot.failure_backoff.Next(++slot.failures));
    if (PauseApi(pause)) {
      spdlog::warn("{}: rate limited (HTTP 429, {}/{} left); pausing all requests for {:.0f} s until the window resets",
                   slot.label, Opt(rl.remaining), Opt(rl.limit), Secs(pause));
    }
    return pause;
  }
  if (result.failure == FailureKind::kUsageCapped) {
    if (PauseApi(kUsageCapPause)) {
      spdlog::error(
          "{}: the token's usage cap is exhausted ({}); waiting for the rate-limit window does not "
          "help. Pausing all requests for {:.0f} s; they fail until the cap resets or the plan changes",
          slot.label, result.reason, Secs(kUsageCapPause));
    }
    return kUsageCapPause;
  }
  if (result.ok() && rl.remaining && *rl.remaining == 0 && rl.reset_epoch_s) {
    // The next request would be a certain 429: wait for the window instead.
    const Millis pause = RateLimitPause(rl.reset_epoch_s, now_s, kWindowCap, Millis{0});
    if (PauseApi(pause)) {
      spdlog::info("{}: rate-limit window used up ({} requests); pausing requests for {:.0f} s until it resets",
                   slot.label, Opt(rl.limit), Secs(pause));
    }
    return pause;
  }
  return std::nullopt;
}

bool Runner::PauseApi(Millis duration) {
  const std::int64_t until = NowMs() + duration.count();
  std::int64_t current = api_paused_until_ms_.load();
  while (until > current + 1000) {
    if (api_paused_until_ms_.compare_exchange_weak(current, until)) return true;
  }
  return false;
}

bool Runner::WaitForApi() {
  for (;;) {
    const std::int64_t left = api_paused_until_ms_.load() - NowMs();
    if (left <= 0) return !stop_.stopping();
    if (!stop_.SleepUnlessStopped(Millis{left})) return false;
  }
}

// Nothing claimable: wait for the database's NOTIFY. Polling is only the safety net, and one
// poll per interval for the whole process is enough: a slot whose timer runs out while another
// slot found nothing more recently goes back to sleep instead of asking again.
void Runner::IdleWait(std::uint64_t wakes_seen) {
  const std::int64_t interval = options_.poll_interval.count();
  last_poll_ms_ = NowMs();
  Millis sleep = options_.poll_interval;
  for (;;) {
    stop_.SleepUntilWoken(sleep, wakes_seen);
    if (stop_.stopping() || stop_.wakes() != wakes_seen) return;
    // Timers of several slots run out together: the one that moves last_poll_ms_ polls.
    std::int64_t last = last_poll_ms_.load();
    const std::int64_t now = NowMs();
    if (now - last >= interval && last_poll_ms_.compare_exchange_strong(last, now)) return;
    sleep = Millis{std::max<std::int64_t>(1, last_poll_ms_.load() + interval - now)};
  }
}

void Runner::NoteActivity() { last_activity_ms_ = NowMs(); }

// --exit-when-idle: only an answer "nothing to claim" counts as idle, so a database outage or
// an API pause never ends the worker by accident.
void Runner::CheckIdle() {
  const auto idle = options_.exit_when_idle;
  if (idle.count() == 0 || in_flight_.load() != 0) return;
  if (NowMs() - last_activity_ms_.load() < std::chrono::duration_cast<milliseconds>(idle).count()) return;
  if (!idle_stop_logged_.exchange(true)) {
    spdlog::info("nothing claimed for {} s (--exit-when-idle); stopping", idle.count());
  }
  stop_.RequestStop();
}

}  // namespace tweetkeeper::worker
