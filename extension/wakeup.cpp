#include "wakeup.hpp"

#include "pg_bridge.hpp"

extern "C" {
#include "access/xact.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
}

namespace tweetkeeper::wakeup {
namespace {

struct SharedState {
  pg_atomic_uint32 maintenance_pid;  // 0: no background worker running
  pg_atomic_uint64 heads_epoch;      // see HeadsEpoch()
};

SharedState* shared = nullptr;
shmem_request_hook_type prev_shmem_request_hook = nullptr;
shmem_startup_hook_type prev_shmem_startup_hook = nullptr;
bool wake_pending = false;
bool callback_registered = false;

void ShmemRequest() {
  if (prev_shmem_request_hook) prev_shmem_request_hook();
  RequestAddinShmemSpace(sizeof(SharedState));
}

void ShmemStartup() {
  if (prev_shmem_startup_hook) prev_shmem_startup_hook();
  bool found = false;
  LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
  shared = static_cast<SharedState*>(ShmemInitStruct("tweetkeeper", sizeof(SharedState), &found));
  if (!found) {
    pg_atomic_init_u32(&shared->maintenance_pid, 0);
    pg_atomic_init_u64(&shared->heads_epoch, 0);
  }
  LWLockRelease(AddinShmemInitLock);
}

void Withdraw(int, Datum) {
  uint32 mine = static_cast<uint32>(MyProcPid);
  if (shared) pg_atomic_compare_exchange_u32(&shared->maintenance_pid, &mine, 0);
}

// Only after commit: woken earlier, the worker would look before the new rows are visible and
// go back to sleep for long.
void AtTransactionEnd(XactEvent event, void*) {
  if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PARALLEL_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE)
    return;
  const bool wake = wake_pending && (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT);
  wake_pending = false;
  if (!wake || shared == nullptr) return;
  PublishHeadsMoved();
  const uint32 pid = pg_atomic_read_u32(&shared->maintenance_pid);
  if (pid == 0) return;
  if (PGPROC* proc = BackendPidGetProc(static_cast<int>(pid))) SetLatch(&proc->procLatch);
}

}  // namespace

void RequestSharedMemory() {
  prev_shmem_request_hook = shmem_request_hook;
  shmem_request_hook = ShmemRequest;
  prev_shmem_startup_hook = shmem_startup_hook;
  shmem_startup_hook = ShmemStartup;
}

pg_atomic_uint64* HeadsEpoch() { return shared == nullptr ? nullptr : &shared->heads_epoch; }

void PublishMaintenancePid() {
  if (shared == nullptr) return;
  pg_atomic_write_u32(&shared->maintenance_pid, static_cast<uint32>(MyProcPid));
  before_shmem_exit(Withdraw, 0);
}

}  // namespace tweetkeeper::wakeup

// wake_maintenance(): when this transaction commits, the background worker looks at the queue
// again at once (schedule_tweet and schedule_tweets call it). A no-op without the worker.
TK_FUNCTION(tk_wake_maintenance) {
  using namespace tweetkeeper::wakeup;
  if (!callback_registered) {
    tweetkeeper::pg::PgCallVoid([] { RegisterXactCallback(AtTransactionEnd, nullptr); });
    callback_registered = true;
  }
  wake_pending = true;
  PG_RETURN_VOID();
}
