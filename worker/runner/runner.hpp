#pragma once
// The worker loop. Each slot is one thread with its own database connection and HTTP client:
//   claim a batch -> one API request -> parse -> complete (or release on failure) -> repeat,
// sleeping `poll_interval` when nothing is due and backing off after failures.
// runner.cpp owns the slots' lives (start-up wait, the loop, shutdown, summaries); the other
// runner/*.cpp files each own one concern of it, named in the private part below.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "http/http_client.hpp"
#include "provider/batch_token.hpp"
#include "provider/provider.hpp"
#include "queue/queue.hpp"
#include "service/backoff.hpp"
#include "runner/api_gate.hpp"
#include "runner/counters.hpp"
#include "stop/stop_signal.hpp"
#include "telemetry/telemetry.hpp"

namespace tweetkeeper::worker {

struct RunnerOptions {
  std::string name;  // passed to claim_batch and shown in logs
  std::string dsn;
  // Partitions (docs/partitions.md): every node's DSN, dsn first; `concurrency` slots on each,
  // each slot claiming from its own node. Empty: dsn alone.
  std::vector<std::string> partitions;
  // Credential name -> bearer token; tokens only ever go into the Authorization header. The
  // names are the credentials registered in tweetkeeper.credentials (when any are).
  std::map<std::string, std::string> tokens;
  std::string provider = "x-v2";
  std::string api_url;  // for the start line
  int concurrency = 2;
  int batch_size = 100;
  Millis poll_interval{500};
  std::chrono::seconds exit_when_idle{0};   // 0: never
  std::chrono::seconds startup_timeout{0};  // give up waiting for the database at start-up; 0: never
  std::chrono::seconds summary_interval{10};
  HttpOptions http;
};

class Runner {
 public:
  Runner(RunnerOptions options, std::unique_ptr<Provider> provider);
  ~Runner();

  // Opens one connection per slot (per partition: `concurrency` each), waiting for a database that is down, starting or in
  // recovery (bounded, jittered backoff; one log line per change of its state) until it is
  // there, options.startup_timeout passes, or a stop is requested (then returns false).
  // Throws std::runtime_error with a one-line message that never contains the password when
  // waiting cannot help (login refused, no extension, no grants) or the time is up.
  bool Connect();

  // Runs until stopped (signal or --exit-when-idle); returns the process exit code.
  int Run();

  StopSignal& stop_signal() { return stop_; }
  // Its Prometheus metrics; main() serves them when --metrics-address is given.
  Telemetry& telemetry() { return telemetry_; }

 private:
  struct Slot;      // slot.hpp
  struct Exchange;  // batch_pipeline.cpp

  // runner.cpp: the slots' lives, from the claim to the wait for the next one.
  void SlotLoop(Slot& slot);

  // batch_pipeline.cpp: a claimed batch's way through the API to its completion or release.
  // Process, Fail and Store return how long the slot should wait before its next claim.
  Millis Process(Slot& slot, const Lease& lease);
  Exchange Ask(Slot& slot, const Lease& lease, const std::vector<std::int64_t>& ids, const PostKeys& keys,
               const BatchToken& token);
  void Judge(Slot& slot, const Lease& lease, const PostKeys& keys, const BatchToken& token, Exchange& exchange);
  Millis Fail(Slot& slot, const Lease& lease, const Exchange& exchange);
  Millis Store(Slot& slot, const Lease& lease, const Exchange& exchange, std::chrono::steady_clock::time_point started);
  void Release(Slot& slot, std::int64_t lease_id, const std::string& reason, const QuotaReport& quota = {});
  // Where a lease's requests may connect (the provider's word on its endpoint), and whether a
  // refused host (one that resolves into this network) is to be logged now: once per host every
  // kRefusedLogEvery.
  Reach ReachOf(const Lease& lease) const;
  bool FirstRefusalIn(const std::string& host);
  static constexpr std::chrono::minutes kRefusedLogEvery{10};

  // handle_resolution.cpp: a batch of names to resolve (Bluesky: posts known by handle): resolve
  // each, store the keys (complete_handles).
  Millis ResolveNames(Slot& slot, const Lease& lease);

  // waits.cpp: a slot with nothing to send waits for quota, for a wake-up, or ends the worker.
  void WaitForQuota(Slot& slot, const QuotaWait& wait);
  // until_epoch_ms: when the database says something may be claimable (claim_wait()); 0: not said.
  void IdleWait(std::uint64_t wakes_seen, int database, std::int64_t until_epoch_ms = 0);
  void NoteActivity();
  void CheckIdle();

  RunnerOptions options_;
  std::unique_ptr<Provider> provider_;
  StopSignal stop_;
  ApiGate api_gate_;
  std::vector<std::unique_ptr<Slot>> slots_;
  Counters counters_;
  std::atomic<int> in_flight_{0};
  std::atomic<std::int64_t> last_activity_ms_{0};  // steady clock
  // Per database (the partitions' DSNs): steady clock, its last idle poll (a claim that found nothing).
  std::unique_ptr<std::atomic<std::int64_t>[]> last_poll_ms_;
  std::mutex quota_log_mutex_;
  std::string last_quota_reason_;
  std::atomic<bool> idle_stop_logged_{false};
  std::mutex refused_log_mutex_;
  std::map<std::string, std::chrono::steady_clock::time_point> refused_logged_;  // host -> when last logged
  std::atomic<bool> no_payloads_logged_{false};  // payloads on, and this provider keeps none
  std::atomic<int> exit_code_{0};
  std::atomic<int> busy_{0};  // slots between a claimed lease and its completion or release
  Telemetry telemetry_;
};

}  // namespace tweetkeeper::worker
