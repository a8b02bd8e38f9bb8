// A slot with nothing to send: every credential spent (wait for the earliest reset), nothing due
// (wait for the database's NOTIFY, with one poll per interval for the whole process as the safety
// net), or nothing claimed for --exit-when-idle (end the worker).
#include <fmt/chrono.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <mutex>

#include "runner/runner.hpp"
#include "runner/slot.hpp"

namespace tweetkeeper::worker {

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

// Nothing claimable: wait for the database's NOTIFY, or the moment it said something may be
// claimable (claim_wait(): a partial batch's buffer TTL, the next post due), whichever comes
// first. Polling is only the safety net, and one poll per interval per database is enough: a
// slot whose timer runs out while another slot of its database found nothing more recently goes
// back to sleep instead of asking again. (Per database: with partitions, a slot of another node
// finding nothing there says nothing of this one's; shared, one node's slots could keep the
// other's from ever polling, and its posts waited for a NOTIFY: partitions.sh saw a batch 5 s
// late.) A moment said is kept to within [250 ms, poll interval]: a
// moment already past (the claim just found nothing there: its endpoint's lanes, locks) must not
// turn into a stream of claims.
void Runner::IdleWait(std::uint64_t wakes_seen, int database, std::int64_t until_epoch_ms) {
  std::atomic<std::int64_t>& last_poll_ms = last_poll_ms_[database];
  std::int64_t interval = options_.poll_interval.count();
  if (until_epoch_ms > 0) {
    const std::int64_t now_ms =
        std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch()).count();
    interval = std::clamp<std::int64_t>(until_epoch_ms - now_ms, 250, interval);
  }
  last_poll_ms = SteadyNowMs();
  Millis sleep{interval};
  for (;;) {
    stop_.SleepUntilWoken(sleep, wakes_seen);
    if (stop_.stopping() || stop_.wakes() != wakes_seen) return;
    // Timers of several slots run out together: the one that moves last_poll_ms polls.
    std::int64_t last = last_poll_ms.load();
    const std::int64_t now = SteadyNowMs();
    if (now - last >= interval && last_poll_ms.compare_exchange_strong(last, now)) return;
    sleep = Millis{std::max<std::int64_t>(1, last_poll_ms.load() + interval - now)};
  }
}

void Runner::NoteActivity() { last_activity_ms_ = SteadyNowMs(); }

// --exit-when-idle: only an answer "nothing to claim" counts as idle, so a database outage or
// an API pause never ends the worker by accident.
void Runner::CheckIdle() {
  const auto idle = options_.exit_when_idle;
  if (idle.count() == 0 || in_flight_.load() != 0) return;
  if (SteadyNowMs() - last_activity_ms_.load() < std::chrono::duration_cast<Millis>(idle).count()) return;
  if (!idle_stop_logged_.exchange(true)) {
    spdlog::info("nothing claimed for {} s (--exit-when-idle); stopping", idle.count());
  }
  stop_.RequestStop();
}

}  // namespace tweetkeeper::worker
