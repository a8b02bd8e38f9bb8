// The background worker "tweetkeeper maintenance". On every tick, in tweetkeeper.database, it
// calls tweetkeeper.maintenance() (if the extension is installed there): that marks expired
// leases and purges old batch records. The queue itself needs no worker to stay correct (an
// expired lease is simply due again); this keeps the bookkeeping and the stats honest.
#include "bgworker.hpp"

#include "pg_bridge.hpp"
#include "settings.hpp"

#include <algorithm>

extern "C" {
#include "access/xact.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/snapmgr.h"

PGDLLEXPORT void tk_maintenance_main(Datum arg);
}

namespace tweetkeeper::bgworker {
namespace {
bool registered = false;
}

void Register() {
  BackgroundWorker worker;
  memset(&worker, 0, sizeof(worker));
  worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
  worker.bgw_restart_time = 5;  // seconds; PostgreSQL restarts us after a crash
  strlcpy(worker.bgw_library_name, "tweetkeeper", BGW_MAXLEN);
  strlcpy(worker.bgw_function_name, "tk_maintenance_main", BGW_MAXLEN);
  strlcpy(worker.bgw_name, "tweetkeeper maintenance", BGW_MAXLEN);
  strlcpy(worker.bgw_type, "tweetkeeper maintenance", BGW_MAXLEN);
  RegisterBackgroundWorker(&worker);
  registered = true;
}

bool Registered() { return registered; }

}  // namespace tweetkeeper::bgworker

namespace {

// One tick, one transaction: tweetkeeper.maintenance(), which returns how long nothing becomes
// claimable. Returns that in milliseconds (-1: unknown or nothing scheduled). Pure PostgreSQL C
// calls: an error aborts the transaction and exits the worker, and the postmaster starts it
// again after bgw_restart_time.
long Tick() {
  long wait_ms = -1;
  SetCurrentStatementStartTimestamp();
  StartTransactionCommand();
  SPI_connect();
  PushActiveSnapshot(GetTransactionSnapshot());
  pgstat_report_activity(STATE_RUNNING, "tweetkeeper maintenance tick");
  if (OidIsValid(get_extension_oid("tweetkeeper", true)) &&
      SPI_execute("SELECT extract(epoch FROM tweetkeeper.maintenance()) * 1000", false, 0) ==
          SPI_OK_SELECT &&
      SPI_processed == 1) {
    bool isnull = true;
    Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    if (!isnull) wait_ms = static_cast<long>(DatumGetFloat8(DirectFunctionCall1(numeric_float8, d)));
  }
  SPI_finish();
  PopActiveSnapshot();
  CommitTransactionCommand();
  pgstat_report_stat(false);
  pgstat_report_activity(STATE_IDLE, nullptr);
  return wait_ms;
}

}  // namespace

void tk_maintenance_main(Datum) {
  pqsignal(SIGHUP, SignalHandlerForConfigReload);
  pqsignal(SIGTERM, die);
  BackgroundWorkerUnblockSignals();
  BackgroundWorkerInitializeConnection(tweetkeeper::settings::database, nullptr, 0);
  elog(LOG, "tweetkeeper maintenance started in database \"%s\"", tweetkeeper::settings::database);

  for (;;) {
    // Sleep until the next tweet becomes claimable, but never longer than a tick: tweets
    // scheduled meanwhile may be due at once. A claimable batch was just notified; the workers
    // take it from there, so wait a full tick.
    long wait_ms = Tick();
    long tick = tweetkeeper::settings::tick_interval_ms;
    long timeout = (wait_ms <= 0 || wait_ms > tick) ? tick : std::max(wait_ms, 1L);
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout,
                    PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
    if (ConfigReloadPending) {
      ConfigReloadPending = false;
      ProcessConfigFile(PGC_SIGHUP);
    }
  }
}
