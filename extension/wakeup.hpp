// Waking the background worker when its plan is out of date: it sleeps until the next tweet
// becomes claimable, so a transaction that schedules tweets wakes it at commit.
#pragma once

namespace tweetkeeper::wakeup {

// From _PG_init while preloading: ask for the shared memory slot that names the worker.
void RequestSharedMemory();
// From the background worker: publish (or withdraw, at exit) its pid.
void PublishMaintenancePid();

}  // namespace tweetkeeper::wakeup
