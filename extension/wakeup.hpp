// Waking the background worker when its plan is out of date: it sleeps until the next tweet
// becomes claimable, so a transaction that schedules tweets wakes it at commit.
#pragma once

extern "C" {
#include "postgres.h"
#include "port/atomics.h"
}

namespace tweetkeeper::wakeup {

// From _PG_init while preloading: ask for the shared memory slot that names the worker.
void RequestSharedMemory();
// From the background worker: publish (or withdraw, at exit) its pid.
void PublishMaintenancePid();
// The claim heads' epoch (claim_heads.cpp), bumped by every commit that may have put an X tweet
// below a head; nullptr when the library was not preloaded (no shared memory).
pg_atomic_uint64* HeadsEpoch();
// At commit, before the background worker is woken: bumps the heads' epoch now if this
// transaction moved a head (claim_heads.cpp), so that the worker never looks with the old one.
// (Transaction callbacks run in reverse order of registration: a session that registered the
// wake after the heads' callback woke the worker first, and it could sleep past the new tweets.)
void PublishHeadsMoved();

}  // namespace tweetkeeper::wakeup
