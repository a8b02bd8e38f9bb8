// The slots' lives: opening their connections (waiting for the database at start-up), one thread
// each claiming batches until a stop, and the summaries the main thread logs meanwhile and at the
// end. What happens to a claimed batch is batch_pipeline.cpp's; the waits between claims waits.cpp's.
#include "runner/runner.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <pqxx/pqxx>
#include <thread>

#include "dsn/dsn.hpp"
#include "service/connect.hpp"
#include "queue/due_listener.hpp"
#include "queue/retry_policy.hpp"
#include "runner/slot.hpp"

namespace tweetkeeper::worker {

Runner::Runner(RunnerOptions options, std::unique_ptr<Provider> provider)
    : options_(std::move(options)), provider_(std::move(provider)), telemetry_(options_.name, options_.provider) {
  if (options_.partitions.empty()) options_.partitions.push_back(options_.dsn);
  last_poll_ms_ = std::make_unique<std::atomic<std::int64_t>[]>(options_.partitions.size());
  telemetry_.Slots(options_.concurrency * static_cast<int>(options_.partitions.size()));
}

Runner::~Runner() = default;

bool Runner::Connect() {
  const int n = static_cast<int>(options_.partitions.size());
  for (int p = 0; p < n; ++p) {
    const std::string& dsn = options_.partitions[p];
    DatabaseWait wait(dsn, options_.startup_timeout, stop_, "tweetkeeper SQL API");
    for (int i = 0; i < options_.concurrency; ++i) {
      auto slot = std::make_unique<Slot>(static_cast<int>(slots_.size()) + 1, options_, stop_, dsn, n > 1 ? p + 1 : 0);
      if (!wait.Connect([&slot] { slot->queue.Connect(); })) return false;
      slots_.push_back(std::move(slot));
    }
  }
  return true;
}

int Runner::Run() {
  spdlog::info("tweetkeeper-worker {} started: {} slots{}, batch size {}, api {} ({}), poll {} ms, exit when idle: {}",
               options_.name, slots_.size(),
               options_.partitions.size() > 1 ? fmt::format(" ({} on each of {} databases)", options_.concurrency,
                                                             options_.partitions.size())
                                              : std::string(),
               options_.batch_size, options_.api_url, provider_->Name(),
               options_.poll_interval.count(),
               options_.exit_when_idle.count() ? std::to_string(options_.exit_when_idle.count()) + " s" : "never");
  const auto started = std::chrono::steady_clock::now();
  last_activity_ms_ = SteadyNowMs();

  // One listener per database: a slot idle on one wakes when any says work is due (a wake-up costs
  // one claim that may find nothing).
  std::vector<std::unique_ptr<DueListener>> listeners;
  for (const std::string& dsn : options_.partitions) {
    listeners.push_back(std::make_unique<DueListener>(dsn, [this](const std::string& payload) {
      if (NotifyIsFor(options_.provider, payload)) stop_.Wake();
    }));
    listeners.back()->Start();
  }
  std::vector<std::thread> threads;
  for (auto& slot : slots_) threads.emplace_back([this, &slot] { SlotLoop(*slot); });

  // The main thread reports; it wakes early only to notice the end.
  Totals before = counters_.Snapshot();
  while (!stop_.stopping()) {
    if (!stop_.SleepUnlessStopped(options_.summary_interval)) break;
    Totals now = counters_.Snapshot();
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

  const double uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  spdlog::info("stopped after {:.1f} s: {}", uptime, Describe(counters_.Snapshot(), Totals{}));
  return exit_code_;
}

void Runner::SlotLoop(Slot& slot) {
  try {
    while (!stop_.stopping()) {
      if (!api_gate_.Wait(stop_)) break;

      // Counted in flight before the claim, so an idle neighbour cannot stop the worker
      // between our claim and our first look at its result.
      ++in_flight_;
      const std::uint64_t wakes_seen = stop_.wakes();
      std::optional<Lease> lease;
      const auto claim_started = std::chrono::steady_clock::now();
      const DbOutcome claimed = GuardDb(slot.label, "claim", 0, slot.dsn,
                                        [&] { lease = slot.queue.Claim(options_.batch_size, slot.claim_retry); });
      if (claimed == DbOutcome::kOk) {
        telemetry_.Claim(std::chrono::duration<double>(std::chrono::steady_clock::now() - claim_started).count());
      }
      Millis wait{0};
      if (claimed != DbOutcome::kOk) {
        --in_flight_;
        if (stop_.stopping()) break;
        wait = slot.Failed();
      } else if (lease && lease->wait && !lease->wait->Idle()) {
        // Tweets are due but no credential has quota: sleep until the earliest reset (a NOTIFY
        // would only say again that tweets are due).
        --in_flight_;
        WaitForQuota(slot, *lease->wait);
        continue;
      } else if (!lease || lease->wait) {
        // Nothing claimable: until the database said something may be (claim_wait()), or a NOTIFY.
        --in_flight_;
        CheckIdle();
        IdleWait(wakes_seen, slot.database, lease ? lease->wait->until_epoch_ms : 0);
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

}  // namespace tweetkeeper::worker
