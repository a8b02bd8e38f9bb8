#pragma once
// The worker's Prometheus metrics (--metrics-address): what it asked the API and how that went,
// what it stored, its batches and slots, and how long the API, claims and completions take.
// Labels are provider, credential name and outcome: never a token. Served by prometheus-cpp's
// exposer (Debian prometheus-cpp-dev) at http://HOST:PORT/metrics.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "batch/batch_result.hpp"
#include "http/http_response.hpp"

namespace prometheus {
class Counter;
class Exposer;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace tweetkeeper::worker {

// The outcome label of one API request: "2xx", "3xx", "4xx", "429", "5xx" by status, or
// "timeout", "transport" (no answer) and "parse_error" (an answer we could not use).
std::string RequestOutcome(const HttpResponse& response, FailureKind failure);

class Telemetry {
 public:
  // Registers every family with the constant label worker=<name>. Serving starts with Serve().
  Telemetry(const std::string& worker_name, const std::string& provider);
  ~Telemetry();
  Telemetry(const Telemetry&) = delete;
  Telemetry& operator=(const Telemetry&) = delete;

  // Serves /metrics on "HOST:PORT" (IPv4 or a name; port 0 picks a free one). Returns the port.
  // Throws std::runtime_error with a readable message if it cannot listen there.
  int Serve(const std::string& address);

  void Request(const std::string& credential, const std::string& outcome, double seconds);
  void Stored(std::int64_t tweets);
  void Problems(const BatchResult& result);  // per-id errors, omitted ids, invalid counts
  void Batch(const char* event);  // claimed, completed, released
  void Claim(double seconds);
  void Complete(double seconds);
  void SlotsBusy(int busy);
  void Slots(int total);
  void Success();  // a batch completed: the time of the last success
  // A follower (--follow): accounts held, new posts found, and the lag of a read's newest post.
  void FollowAccounts(std::int64_t held);
  void FollowPosts(std::int64_t found);
  void FollowLag(double seconds);
  void FollowReadDelay(double seconds);  // a read's first request, after the moment it was planned for
  void FollowStreamConnection();  // a Jetstream connection made (the first, or a reconnection)
  void FollowDeleted(std::int64_t posts);  // posts its stream said were deleted

  // The exposition text, as /metrics serves it (for tests).
  std::string Text() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string provider_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Counter>* problems_;
  prometheus::Family<prometheus::Counter>* batches_;
  prometheus::Histogram* api_seconds_;  // of this worker's provider
  prometheus::Counter* stored_;
  prometheus::Histogram* claim_seconds_;
  prometheus::Histogram* complete_seconds_;
  prometheus::Gauge* slots_busy_;
  prometheus::Gauge* slots_;
  prometheus::Gauge* last_success_;
  prometheus::Gauge* follow_accounts_;
  prometheus::Counter* follow_posts_;
  prometheus::Histogram* follow_lag_;
  prometheus::Histogram* follow_read_delay_;
  prometheus::Counter* follow_connections_;
  prometheus::Counter* follow_deleted_;
  std::mutex mutex_;  // Family::Add is thread-safe; the lookups of children we cache are not
  std::map<std::string, prometheus::Counter*> request_children_;
};

}  // namespace tweetkeeper::worker
