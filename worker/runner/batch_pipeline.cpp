// A batch's way through the API, from a claimed lease to its completion or release: checks of the
// lease, the token its requests carry, the request (in parts around a key the API refuses whole,
// provider/refusals.hpp), what the answer means for the API gate and the credential's quota, one
// more request that explains a failure where the provider has one, then complete_batch() with
// what the answer said, or release_batch() with why not and a backoff.
#include <spdlog/spdlog.h>

#include "http/redact_token.hpp"
#include "provider/refusals.hpp"
#include "queue/payload.hpp"
#include "runner/runner.hpp"
#include "runner/slot.hpp"

namespace tweetkeeper::worker {
namespace {

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
    spdlog::warn(
        "{}: lease {}: the answer gave {} tweet(s) counts that are none (first {}: {}): not stored, the "
        "last known kept",
        label, lease, invalid, first->id, first->invalid);
  }
}

}  // namespace

// What a batch's requests came to.
struct Runner::Exchange {
  std::size_t asked = 0;  // ids the batch asked for (all its parts together)
  BatchResult result;
  HttpResponse response;         // the last answer
  std::string url;               // the last request
  QuotaReport quota;             // for complete_batch/release_batch
  std::string reason;            // why it failed (result.reason, or what the diagnosis said)
  std::optional<Millis> paused;  // the API gate closed by this answer, for every slot
};

Millis Runner::Process(Slot& slot, const Lease& lease) {
  const auto started = std::chrono::steady_clock::now();
  if (lease.tweet_ids.empty()) {
    Release(slot, lease.id, "claim returned no readable tweet ids");
    ++counters_.errors;
    return slot.Failed();
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
    spdlog::warn(
        "{}: tweetkeeper.payloads is '{}' in this database, but the {} provider keeps no payloads: "
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
  const std::optional<BatchToken> token = TokenForBatch(*provider_, lease.endpoint, lease.credential, options_.tokens);
  if (!token) {
    Release(slot, lease.id, "worker " + options_.name + " has no token for credential " + lease.credential);
    ++counters_.errors;
    spdlog::error("{}: lease {}: claim_batch gave credential '{}', which this worker has no token for", slot.label,
                  lease.id, lease.credential);
    return slot.Failed();
  }
  Exchange exchange = Ask(slot, lease, ids, keys, *token);
  Judge(slot, lease, keys, *token, exchange);
  return exchange.result.ok() ? Store(slot, lease, exchange, started) : Fail(slot, lease, exchange);
}

// The batch's requests: one, or the parts around a key the API refuses whole (when the provider
// splits refusals). Each answer is counted, timed and cleared of the token before it is read.
Runner::Exchange Runner::Ask(Slot& slot, const Lease& lease, const std::vector<std::int64_t>& ids, const PostKeys& keys,
                             const BatchToken& token) {
  Exchange exchange;
  exchange.asked = ids.size();
  const SendPart send = [&](const std::vector<std::int64_t>& part, const PostKeys& part_keys) {
    exchange.url = provider_->RequestUrl(part, part_keys);
    spdlog::trace("{}: lease {}: GET {} ({})", slot.label, lease.id, exchange.url, token.name);
    HttpResponse& response = exchange.response;
    response = slot.http.Get(exchange.url, token.token, stop_.abort_flag(), ReachOf(lease));
    RedactToken(response.body, token.token);  // before anything quotes the body
    ++counters_.batches;                      // counted when answered, so an interval's numbers add up
    counters_.tweets += part.size();
    PartAnswer answer{provider_->ParseAnswer(response, part, part_keys), provider_->RefusedKey(response)};
    telemetry_.Request(token.name.empty() ? "default" : token.name, RequestOutcome(response, answer.result.failure),
                       response.elapsed_ms / 1000.0);
    return answer;
  };
  PartAnswer first = send(ids, keys);
  const bool split = first.result.failure == FailureKind::kOurRequestInvalid && provider_->SplitsRefusals();
  exchange.result = split ? AnswerAroundRefusals(ids, keys, std::move(first), send, [this] { return stop_.stopping(); })
                          : std::move(first.result);
  if (split && exchange.result.ok()) {
    spdlog::warn(
        "{}: lease {}: the API refused the whole batch for a key it calls invalid; answered in parts, "
        "the refused key(s) marked invalid-key",
        slot.label, lease.id);
  }
  return exchange;
}

// What the answer means beyond the batch: for the API gate shared by all slots, for the
// credential's quota, and, for a failure one more request can explain, that request's word.
void Runner::Judge(Slot& slot, const Lease& lease, const PostKeys& keys, const BatchToken& token, Exchange& exchange) {
  const BatchResult& result = exchange.result;
  // Registered credentials (X) and every endpoint of Bluesky and Mastodon keep their quota in the
  // database, where claims count it for all workers: a 429 for one must not pause the others.
  const bool quota_in_database = !lease.credential.empty() || provider_->Keyed();
  if (!quota_in_database) exchange.paused = api_gate_.Apply(slot.label, result, [&slot] { return slot.Failed(); });
  exchange.quota = QuotaReportOf(result);
  exchange.reason = result.reason;
  const std::string diagnosis_url = result.ok() ? "" : provider_->DiagnosisUrl(keys, exchange.asked, exchange.response);
  if (!diagnosis_url.empty()) {
    // One more request explains the failure (a Mastodon server older than 4.3: one status per
    // request from then on).
    if (std::optional<Diagnosis> d =
            provider_->Diagnose(slot.http.Get(diagnosis_url, token.token, stop_.abort_flag(), ReachOf(lease)))) {
      exchange.quota.refusal = d->refusal;
      exchange.reason = d->reason;
    }
  }
}

// A failed batch: handed back with why, and the slot backs off (unless the API gate already
// makes it wait).
Millis Runner::Fail(Slot& slot, const Lease& lease, const Exchange& exchange) {
  const BatchResult& result = exchange.result;
  Release(slot, lease.id, exchange.reason, exchange.quota);
  if (stop_.aborting() && exchange.response.status == 0) {
    spdlog::info("{}: lease {}: request aborted by shutdown; batch released", slot.label, lease.id);
    return Millis{0};
  }
  ++counters_.errors;
  const Millis wait = exchange.paused ? Millis{0} : slot.Failed();
  const bool ours = result.failure == FailureKind::kOurRequestInvalid;  // a 400 is a bug on our side
  auto level = result.failure == FailureKind::kRejected || ours ? spdlog::level::err : spdlog::level::warn;
  if (ours) {
    spdlog::error(
        "{}: lease {}: the API called our request invalid (HTTP 400), a bug in tweetkeeper: GET {}; "
        "please report it",
        slot.label, lease.id, exchange.url);
  }
  const std::string next =
      stop_.stopping() ? "" : fmt::format(", next try in {:.1f} s", Secs(exchange.paused ? *exchange.paused : wait));
  if (const HttpResponse& r = exchange.response; !r.refused_address.empty()) {
    // A host from a post's URL that resolves into this network: nothing was sent. Said once per
    // host every kRefusedLogEvery (anyone can schedule posts there); each batch at debug.
    if (FirstRefusalIn(r.refused_host)) {
      spdlog::warn(
          "{}: {}: refusing {}: it resolves to a private or loopback address ({}); map it with --instance or pass "
          "--allow-private-hosts; its posts are handed back and tried again (said once per host every {} min)",
          slot.label, provider_->Name(), r.refused_host, r.refused_address,
          std::chrono::duration_cast<std::chrono::minutes>(kRefusedLogEvery).count());
    }
    level = spdlog::level::debug;
  }
  spdlog::log(level, "{}: lease {}: API request for {} ids failed ({}): {}; batch released{}", slot.label, lease.id,
              exchange.asked, FailureKindName(result.failure), result.reason, next);
  return wait;
}

// An answered batch: complete_batch() stores it (or, when that fails, the batch goes back).
Millis Runner::Store(Slot& slot, const Lease& lease, const Exchange& exchange,
                     std::chrono::steady_clock::time_point started) {
  const BatchResult& result = exchange.result;
  counters_.found += result.observations.size();
  counters_.problems += result.problems.size();
  int stored = 0;
  const auto complete_started = std::chrono::steady_clock::now();
  const DbOutcome completed = GuardDb(slot.label, "complete", lease.id, slot.dsn, [&] {
    stored = slot.queue.Complete(lease.id, ObservationsJson(result.observations), ProblemsJson(result.problems),
                                 exchange.quota, slot.finish_retry);
  });
  if (completed == DbOutcome::kOk) {
    telemetry_.Complete(std::chrono::duration<double>(std::chrono::steady_clock::now() - complete_started).count());
    telemetry_.Batch("completed");
    telemetry_.Stored(stored);
    telemetry_.Problems(result);
    telemetry_.Success();
    LogAnswerProblems(slot.label, lease.id, exchange.asked, result);
  }
  if (completed == DbOutcome::kSqlError || completed == DbOutcome::kOther) {
    Release(slot, lease.id, "complete_batch failed");
  }
  if (completed != DbOutcome::kOk) {
    ++counters_.errors;
    return slot.Failed();
  }
  const std::size_t answered = result.observations.size() + result.problems.size();
  if (static_cast<std::size_t>(stored) < answered) {
    // Not an error: we were too slow (the lease expired), or our session ended while we waited
    // for the API (the batch was handed back); the tweets are another claim's now.
    ++counters_.expired;
    spdlog::warn(
        "{}: lease {} had expired or was handed back: {} of {} answers stored, the rest belong to a newer "
        "lease",
        slot.label, lease.id, stored, answered);
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  spdlog::debug("{}: lease {}: {} ids, {} found, {} problems, {} ignored, {} stored, {:.0f} ms (api {:.0f} ms)",
                slot.label, lease.id, exchange.asked, result.observations.size(), result.problems.size(),
                result.ignored, stored, ms, exchange.response.elapsed_ms);
  slot.failures = 0;
  return Millis{0};
}

Reach Runner::ReachOf(const Lease& lease) const {
  return provider_->PublicAddressesOnly(lease.endpoint) ? Reach::kPublicOnly : Reach::kAny;
}

bool Runner::FirstRefusalIn(const std::string& host) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(refused_log_mutex_);
  if (refused_logged_.size() >= 1024) {  // hosts whose interval is over are forgotten
    for (auto e = refused_logged_.begin(); e != refused_logged_.end();) {
      e = now - e->second >= kRefusedLogEvery ? refused_logged_.erase(e) : std::next(e);
    }
  }
  const auto [it, first] = refused_logged_.try_emplace(host, now);
  if (first || now - it->second >= kRefusedLogEvery) {
    it->second = now;
    return true;
  }
  return false;
}

void Runner::Release(Slot& slot, std::int64_t lease_id, const std::string& reason, const QuotaReport& quota) {
  const DbOutcome released = GuardDb(slot.label, "release", lease_id, slot.dsn,
                                     [&] { slot.queue.Release(lease_id, reason, quota, slot.finish_retry); });
  if (released != DbOutcome::kOk)
    ++counters_.errors;
  else
    telemetry_.Batch("released");
}

}  // namespace tweetkeeper::worker
