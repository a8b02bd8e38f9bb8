// The background worker "tweetkeeper maintenance". On every tick, in tweetkeeper.database, it
// calls tweetkeeper.maintenance() (if the extension is installed there): that hands back batches
// whose worker is gone, marks expired leases, purges old batch records and notifies idle workers
// when a batch is claimable. The queue itself needs no worker to stay correct (an expired lease
// is simply due again); this makes recovery fast and keeps the bookkeeping and stats honest.
//
// Every tweetkeeper.housekeeping_interval it also calls tweetkeeper.housekeeping() in a
// transaction of its own: history partitions ahead, retention and rollups, unless pg_cron ran
// them more recently (tweetkeeper.schedule_housekeeping()).
//
// It sleeps as long as maintenance() says nothing can happen: until the next tweet is due, or a
// tick while batches are in flight (a dead worker is noticed within a tick). A transaction that
// schedules tweets wakes it at commit (wakeup.cpp), so an idle system costs almost nothing.
#include "bgworker.hpp"

#include "pg_bridge.hpp"
#include "settings.hpp"
#include "wakeup.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

extern "C" {
#include "access/xact.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "utils/fmgrprotos.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

PGDLLEXPORT void tk_maintenance_main(Datum arg);
}

namespace tweetkeeper::bgworker {
namespace {
bool registered = false;
}  // namespace

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

// The longest sleep: a safety net for changes that do not wake the worker (rows written into
// tweetkeeper.tweets directly, a database still on an older extension version).
constexpr long kIdleSleepMs = 10'000;

// ALTER EXTENSION tweetkeeper UPDATE takes this advisory lock exclusively at the start of its
// script (sql/tweetkeeper--0.2.0--0.3.0.sql and later ones); every transaction of this worker
// takes it shared before it touches a table of the extension. So an update waits for the tick in
// progress and holds the next one back before that locks anything: the two never deadlock,
// whatever order the script takes its locks in.
constexpr int64 kUpdateLockKey = 8388903688909320804;  // "tk_upgrd"

// Whether the extension is installed in this database; if so, the update lock is held (shared)
// to the end of the transaction.
bool InstalledAndNotUpdating() {
  if (!OidIsValid(get_extension_oid("tweetkeeper", true))) return false;
  DirectFunctionCall1(pg_advisory_xact_lock_shared_int8, Int64GetDatum(kUpdateLockKey));
  return true;
}

// Runs `work` in a transaction of its own with SPI and a snapshot, as pg_cron's ticks do, shown
// in pg_stat_activity as `activity`. Pure PostgreSQL C calls: an error aborts the transaction
// and exits the worker, and the postmaster starts it again after bgw_restart_time.
template <typename Work>
void InTransaction(const char* activity, Work&& work) {
  SetCurrentStatementStartTimestamp();
  StartTransactionCommand();
  SPI_connect();
  PushActiveSnapshot(GetTransactionSnapshot());
  pgstat_report_activity(STATE_RUNNING, activity);
  work();
  SPI_finish();
  PopActiveSnapshot();
  CommitTransactionCommand();
  pgstat_report_stat(false);
  pgstat_report_activity(STATE_IDLE, nullptr);
}

// One tick: tweetkeeper.maintenance(), which returns how long the worker may sleep (0 or less:
// a tick). Returns that in milliseconds, rounded up; nullopt when nothing is scheduled or the
// extension is not installed.
std::optional<long> Tick() {
  std::optional<long> wait_ms;
  InTransaction("tweetkeeper maintenance tick", [&] {
    if (InstalledAndNotUpdating() &&
        SPI_execute("SELECT extract(epoch FROM tweetkeeper.maintenance()) * 1000", false, 0) == SPI_OK_SELECT &&
        SPI_processed == 1) {
      bool isnull = true;
      Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
      if (!isnull) wait_ms = static_cast<long>(std::ceil(DatumGetFloat8(DirectFunctionCall1(numeric_float8, d))));
    }
  });
  return wait_ms;
}

// The history's housekeeping, in a transaction of its own so that it never delays the queue's
// tick. housekeeping() records a failed task and carries on; it skips tasks that ran within the
// interval (pg_cron). A database still on 0.1.0 has no housekeeping() and is left alone.
// Returns whether the extension is installed: until it is, this is tried again at every tick,
// so that a new extension gets its first partitions at once; after that, once an interval.
bool HousekeepingTick() {
  bool installed = false;
  InTransaction("tweetkeeper housekeeping", [&] {
    installed = InstalledAndNotUpdating();
    if (installed &&
        SPI_execute("SELECT to_regprocedure('tweetkeeper.housekeeping(interval)') IS NOT NULL", true, 0) ==
            SPI_OK_SELECT &&
        SPI_processed == 1) {
      bool isnull = true;
      Datum exists = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
      if (!isnull && DatumGetBool(exists))
        SPI_execute("SELECT tweetkeeper.housekeeping((tweetkeeper.settings()).housekeeping_interval "
                    "- interval '1 second')",
                    false, 0);
    }
  });
  return installed;
}

}  // namespace

void tk_maintenance_main(Datum) {
  pqsignal(SIGHUP, SignalHandlerForConfigReload);
  pqsignal(SIGTERM, die);
  BackgroundWorkerUnblockSignals();
  BackgroundWorkerInitializeConnection(tweetkeeper::settings::database, nullptr, 0);
  // This session is the bootstrap superuser: nothing it runs may resolve a name through a schema
  // someone else controls (CVE-2018-1058's pattern: a database owner's public.*(numeric, integer)
  // would run as superuser on the `* 1000` below). pg_catalog, then temporary tables only (pg_temp
  // is never searched for functions or operators); over whatever ALTER DATABASE or ALTER ROLE
  // set, and kept across configuration reloads.
  SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
  tweetkeeper::wakeup::PublishMaintenancePid();
  elog(LOG, "tweetkeeper maintenance started in database \"%s\"", tweetkeeper::settings::database);

  TimestampTz next_housekeeping = 0;  // at once: a new database gets its first partitions
  for (;;) {
    const std::optional<long> wait_ms = Tick();
    const TimestampTz now = GetCurrentTimestamp();
    if (now >= next_housekeeping && HousekeepingTick())
      next_housekeeping = GetCurrentTimestamp() + int64{tweetkeeper::settings::housekeeping_interval_s} * USECS_PER_SEC;
    const long tick = tweetkeeper::settings::tick_interval_ms;
    long timeout = !wait_ms ? kIdleSleepMs : *wait_ms <= 0 ? tick : std::min(*wait_ms, kIdleSleepMs);
    if (next_housekeeping > now) {
      const long until_housekeeping = static_cast<long>((next_housekeeping - GetCurrentTimestamp()) / 1000);
      timeout = std::max(1L, std::min(timeout, until_housekeeping));
    }
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
