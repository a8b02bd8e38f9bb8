// The background worker "tweetkeeper maintenance". On every tick, in tweetkeeper.database, it
// calls tweetkeeper.maintenance() (if the extension is installed there): that marks expired
// leases and purges old batch records. The queue itself needs no worker to stay correct (an
// expired lease is simply due again); this keeps the bookkeeping and the stats honest.
#include "bgworker.hpp"

#include "pg_bridge.hpp"
#include "settings.hpp"

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

// One tick, one transaction. Pure PostgreSQL C calls: an error aborts the transaction and
// exits the worker, and the postmaster starts it again after bgw_restart_time.
void Tick() {
  SetCurrentStatementStartTimestamp();
  StartTransactionCommand();
  SPI_connect();
  PushActiveSnapshot(GetTransactionSnapshot());
  pgstat_report_activity(STATE_RUNNING, "tweetkeeper maintenance tick");
  if (OidIsValid(get_extension_oid("tweetkeeper", true)))
    SPI_execute("SELECT tweetkeeper.maintenance()", false, 0);
  SPI_finish();
  PopActiveSnapshot();
  CommitTransactionCommand();
  pgstat_report_stat(false);
  pgstat_report_activity(STATE_IDLE, nullptr);
}

}  // namespace

void tk_maintenance_main(Datum) {
  pqsignal(SIGHUP, SignalHandlerForConfigReload);
  pqsignal(SIGTERM, die);
  BackgroundWorkerUnblockSignals();
  BackgroundWorkerInitializeConnection(tweetkeeper::settings::database, nullptr, 0);
  elog(LOG, "tweetkeeper maintenance started in database \"%s\"", tweetkeeper::settings::database);

  for (;;) {
    Tick();
    int rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                       tweetkeeper::settings::tick_interval_ms, PG_WAIT_EXTENSION);
    (void)rc;
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
    if (ConfigReloadPending) {
      ConfigReloadPending = false;
      ProcessConfigFile(PGC_SIGHUP);
    }
  }
}
