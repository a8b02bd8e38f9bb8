#include "telemetry/telemetry.hpp"

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <stdexcept>

namespace tweetkeeper::worker {
namespace {

// Seconds: API requests take 0.1-2 s (up to --http-timeout); claims and completions milliseconds.
const prometheus::Histogram::BucketBoundaries kApiBuckets{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
const prometheus::Histogram::BucketBoundaries kDbBuckets{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                         0.1,   0.25,   0.5,   1,    2.5};

}  // namespace

std::string RequestOutcome(const HttpResponse& response, FailureKind failure) {
  if (response.status == 0) return response.timed_out ? "timeout" : "transport";
  if (failure == FailureKind::kUnparsable) return "parse_error";
  if (response.status == 429) return "429";
  if (response.status >= 200 && response.status < 600) return std::to_string(response.status / 100) + "xx";
  return "other";
}

Telemetry::Telemetry(const std::string& worker_name, const std::string& provider)
    : registry_(std::make_shared<prometheus::Registry>()), provider_(provider) {
  // Every series names its worker and the API it reads (x-v2, x-v1.1, bluesky, mastodon), so
  // that a dashboard splits throughput, problems and claims by network.
  const prometheus::Labels worker{{"worker", worker_name}, {"provider", provider_}};
  requests_ = &prometheus::BuildCounter()
                   .Name("tweetkeeper_worker_api_requests_total")
                   .Help("API requests, by provider, credential and outcome (status class, 429, timeout, "
                         "transport, parse_error)")
                   .Labels(worker)
                   .Register(*registry_);
  api_seconds_ = &prometheus::BuildHistogram()
                      .Name("tweetkeeper_worker_api_request_seconds")
                      .Help("Time from sending an API request to its answer (or failure)")
                      .Labels(worker)
                      .Register(*registry_)
                      .Add({}, kApiBuckets);
  stored_ = &prometheus::BuildCounter()
                 .Name("tweetkeeper_worker_tweets_stored_total")
                 .Help("Tweets whose result complete_batch stored (metrics or a problem)")
                 .Labels(worker)
                 .Register(*registry_)
                 .Add({});
  problems_ = &prometheus::BuildCounter()
                   .Name("tweetkeeper_worker_tweet_problems_total")
                   .Help("Per-tweet problems in answers, by type (resource-not-found, ..., omitted: left out of the answer, "
                         "invalid-count: a count that is none)")
                   .Labels(worker)
                   .Register(*registry_);
  batches_ = &prometheus::BuildCounter()
                  .Name("tweetkeeper_worker_batches_total")
                  .Help("Batches claimed, completed and released (handed back after a failure)")
                  .Labels(worker)
                  .Register(*registry_);
  for (const char* event : {"claimed", "completed", "released"}) batches_->Add({{"event", event}});
  claim_seconds_ = &prometheus::BuildHistogram()
                        .Name("tweetkeeper_worker_claim_seconds")
                        .Help("Duration of claim_batch calls")
                        .Labels(worker)
                        .Register(*registry_)
                        .Add({}, kDbBuckets);
  complete_seconds_ = &prometheus::BuildHistogram()
                           .Name("tweetkeeper_worker_complete_seconds")
                           .Help("Duration of complete_batch calls")
                           .Labels(worker)
                           .Register(*registry_)
                           .Add({}, kDbBuckets);
  slots_busy_ = &prometheus::BuildGauge()
                     .Name("tweetkeeper_worker_slots_busy")
                     .Help("Slots with a batch in flight")
                     .Labels(worker)
                     .Register(*registry_)
                     .Add({});
  slots_ = &prometheus::BuildGauge()
                .Name("tweetkeeper_worker_slots")
                .Help("Slots (--concurrency)")
                .Labels(worker)
                .Register(*registry_)
                .Add({});
  last_success_ = &prometheus::BuildGauge()
                       .Name("tweetkeeper_worker_last_success_timestamp_seconds")
                       .Help("Unix time of the last completed batch (0: none yet)")
                       .Labels(worker)
                       .Register(*registry_)
                       .Add({});
  // A follower's (--follow): the accounts it holds, the posts it found, and how late it found
  // them after their creation (the lag an alert watches).
  follow_accounts_ = &prometheus::BuildGauge()
                          .Name("tweetkeeper_follower_accounts")
                          .Help("Followed accounts this follower holds under lease")
                          .Labels(worker)
                          .Register(*registry_)
                          .Add({});
  follow_posts_ = &prometheus::BuildCounter()
                       .Name("tweetkeeper_follower_posts_found_total")
                       .Help("New posts of followed accounts scheduled by this follower")
                       .Labels(worker)
                       .Register(*registry_)
                       .Add({});
  follow_lag_ = &prometheus::BuildHistogram()
                     .Name("tweetkeeper_follower_lag_seconds")
                     .Help("From a found post's creation to its read (the newest post of each read)")
                     .Labels(worker)
                     .Register(*registry_)
                     .Add({}, prometheus::Histogram::BucketBoundaries{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600});
  follow_read_delay_ = &prometheus::BuildHistogram()
                            .Name("tweetkeeper_follower_read_delay_seconds")
                            .Help("How long after its planned moment each read of a followed account went (its "
                                  "window's gate, other accounts due at once): a post waits its account's poll "
                                  "interval plus this")
                            .Labels(worker)
                            .Register(*registry_)
                            .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300});
  follow_connections_ = &prometheus::BuildCounter()
                             .Name("tweetkeeper_follower_stream_connections_total")
                             .Help("Connections a follower made to its stream (Jetstream): the first and each reconnection")
                             .Labels(worker)
                             .Register(*registry_)
                             .Add({});
  follow_deleted_ = &prometheus::BuildCounter()
                         .Name("tweetkeeper_follower_posts_deleted_total")
                         .Help("Tracked posts a follower's stream said were deleted, marked so at once")
                         .Labels(worker)
                         .Register(*registry_)
                         .Add({});
}

Telemetry::~Telemetry() = default;

int Telemetry::Serve(const std::string& address) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address, 1);
  } catch (const std::exception&) {
    // civetweb says only "null context ... Possible problem binding to port".
    throw std::runtime_error("cannot serve metrics on '" + address +
                             "': the port is in use or the address is not HOST:PORT of this machine (IPv4)");
  }
  exposer_->RegisterCollectable(registry_);
  const auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void Telemetry::Request(const std::string& credential, const std::string& outcome, double seconds) {
  prometheus::Counter* counter;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = request_children_[credential + '\n' + outcome];
    if (!slot) slot = &requests_->Add({{"credential", credential}, {"outcome", outcome}});
    counter = slot;
  }
  counter->Increment();
  api_seconds_->Observe(seconds);
}

void Telemetry::Stored(std::int64_t tweets) { stored_->Increment(static_cast<double>(tweets)); }

void Telemetry::Problems(const BatchResult& result) {
  for (const Problem& p : result.problems) problems_->Add({{"type", p.type.empty() ? "unknown" : p.type}}).Increment();
  if (!result.omitted.empty()) problems_->Add({{"type", "omitted"}}).Increment(static_cast<double>(result.omitted.size()));
  for (const Observation& o : result.observations) {
    if (!o.invalid.empty()) problems_->Add({{"type", "invalid-count"}}).Increment();
  }
}

void Telemetry::Batch(const char* event) { batches_->Add({{"event", event}}).Increment(); }
void Telemetry::Claim(double seconds) { claim_seconds_->Observe(seconds); }
void Telemetry::Complete(double seconds) { complete_seconds_->Observe(seconds); }
void Telemetry::SlotsBusy(int busy) { slots_busy_->Set(busy); }
void Telemetry::Slots(int total) { slots_->Set(total); }

void Telemetry::Success() {
  last_success_->Set(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
}

void Telemetry::FollowAccounts(std::int64_t held) { follow_accounts_->Set(static_cast<double>(held)); }
void Telemetry::FollowPosts(std::int64_t found) { follow_posts_->Increment(static_cast<double>(found)); }
void Telemetry::FollowLag(double seconds) { follow_lag_->Observe(seconds); }
void Telemetry::FollowReadDelay(double seconds) { follow_read_delay_->Observe(seconds); }
void Telemetry::FollowStreamConnection() { follow_connections_->Increment(); }
void Telemetry::FollowDeleted(std::int64_t posts) { follow_deleted_->Increment(static_cast<double>(posts)); }

std::string Telemetry::Text() const { return prometheus::TextSerializer().Serialize(registry_->Collect()); }

}  // namespace tweetkeeper::worker
