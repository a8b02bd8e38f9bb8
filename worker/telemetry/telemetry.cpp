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

// A metric family of this worker's series, registered in `registry`.
prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& registry, const prometheus::Labels& worker,
                                                       const std::string& name, const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Labels(worker).Register(registry);
}
prometheus::Family<prometheus::Gauge>& GaugeFamily(prometheus::Registry& registry, const prometheus::Labels& worker,
                                                   const std::string& name, const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Labels(worker).Register(registry);
}
prometheus::Family<prometheus::Histogram>& HistogramFamily(prometheus::Registry& registry,
                                                           const prometheus::Labels& worker, const std::string& name,
                                                           const std::string& help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Labels(worker).Register(registry);
}

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
  prometheus::Registry& r = *registry_;
  requests_ = &CounterFamily(r, worker, "tweetkeeper_worker_api_requests_total",
                             "API requests, by provider, credential and outcome (status class, 429, timeout, "
                             "transport, parse_error)");
  api_seconds_ = &HistogramFamily(r, worker, "tweetkeeper_worker_api_request_seconds",
                                  "Time from sending an API request to its answer (or failure)")
                      .Add({}, kApiBuckets);
  stored_ = &CounterFamily(r, worker, "tweetkeeper_worker_tweets_stored_total",
                           "Tweets whose result complete_batch stored (metrics or a problem)")
                 .Add({});
  problems_ = &CounterFamily(r, worker, "tweetkeeper_worker_tweet_problems_total",
                             "Per-tweet problems in answers, by type (resource-not-found, ..., omitted: left out of "
                             "the answer, invalid-count: a count that is none)");
  batches_ = &CounterFamily(r, worker, "tweetkeeper_worker_batches_total",
                            "Batches claimed, completed and released (handed back after a failure)");
  for (const char* event : {"claimed", "completed", "released"}) batches_->Add({{"event", event}});
  claim_seconds_ =
      &HistogramFamily(r, worker, "tweetkeeper_worker_claim_seconds", "Duration of claim_batch calls").Add({}, kDbBuckets);
  complete_seconds_ = &HistogramFamily(r, worker, "tweetkeeper_worker_complete_seconds", "Duration of complete_batch calls")
                           .Add({}, kDbBuckets);
  slots_busy_ = &GaugeFamily(r, worker, "tweetkeeper_worker_slots_busy", "Slots with a batch in flight").Add({});
  slots_ = &GaugeFamily(r, worker, "tweetkeeper_worker_slots", "Slots (--concurrency)").Add({});
  last_success_ = &GaugeFamily(r, worker, "tweetkeeper_worker_last_success_timestamp_seconds",
                               "Unix time of the last completed batch (0: none yet)")
                       .Add({});
  // A follower's (--follow): the accounts it holds, the posts it found, and how late it found
  // them after their creation (the lag an alert watches).
  follow_accounts_ = &GaugeFamily(r, worker, "tweetkeeper_follower_accounts",
                                  "Followed accounts this follower holds under lease")
                          .Add({});
  follow_posts_ = &CounterFamily(r, worker, "tweetkeeper_follower_posts_found_total",
                                 "New posts of followed accounts scheduled by this follower")
                       .Add({});
  follow_lag_ = &HistogramFamily(r, worker, "tweetkeeper_follower_lag_seconds",
                                 "From a found post's creation to its read (the newest post of each read)")
                     .Add({}, prometheus::Histogram::BucketBoundaries{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600});
  follow_read_delay_ =
      &HistogramFamily(r, worker, "tweetkeeper_follower_read_delay_seconds",
                       "How long after its planned moment each read of a followed account went (its window's gate, "
                       "other accounts due at once): a post waits its account's poll interval plus this")
           .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300});
  follow_connections_ =
      &CounterFamily(r, worker, "tweetkeeper_follower_stream_connections_total",
                     "Connections a follower made to its stream (Jetstream): the first and each reconnection")
           .Add({});
  follow_deleted_ = &CounterFamily(r, worker, "tweetkeeper_follower_posts_deleted_total",
                                   "Tracked posts a follower's stream said were deleted, marked so at once")
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
