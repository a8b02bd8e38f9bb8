// Which database session claimed a batch, and whether it is still there. A worker holds its
// connection for as long as it lives, so a batch whose claiming session is gone was abandoned
// (the worker was killed, or lost its connection) and can be handed out again at once instead
// of after tweetkeeper.lease_ttl. A session is named by its pid and its start time, so that a
// pid the operating system reuses for a new session is not mistaken for the old one.
#include "pg_bridge.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/backend_status.h"
#include "utils/timestamp.h"
}

namespace {

// Looks the pid up in this transaction's copy of the backend status array. Returns whether it
// is there with that start time.
bool StatusSays(int pid, TimestampTz started) {
  const int n = pgstat_fetch_stat_numbackends();
  for (int i = 1; i <= n; ++i) {
    LocalPgBackendStatus* entry = pgstat_fetch_stat_local_beentry(i);
    if (entry != nullptr && entry->backendStatus.st_procpid == pid)
      return entry->backendStatus.st_proc_start_timestamp == started;
  }
  return false;
}

}  // namespace

// backend_start() -> timestamptz: when this session started (pg_stat_activity.backend_start),
// without reading the whole status array as pg_stat_activity does.
TK_FUNCTION(tk_backend_start) { PG_RETURN_TIMESTAMPTZ(MyStartTimestamp); }

// backend_alive(pid, started) -> bool: whether the session with this pid and start time still
// exists. The process array is live, so a gone pid is known at once; the start time comes from
// the status copy PostgreSQL keeps per transaction, which is read again once if it is older
// than the session asked about (so a stale copy never declares a live session dead).
TK_FUNCTION(tk_backend_alive) {
  const int pid = PG_GETARG_INT32(0);
  const TimestampTz started = PG_GETARG_TIMESTAMPTZ(1);
  const bool alive = tweetkeeper::pg::PgCall([&] {
    if (BackendPidGetProc(pid) == nullptr) return false;
    if (StatusSays(pid, started)) return true;
    pgstat_clear_backend_activity_snapshot();
    return StatusSays(pid, started);
  });
  PG_RETURN_BOOL(alive);
}
