// Module entry: settings, the background worker's registration, small SQL helpers.
#include "bgworker.hpp"
#include "pg_bridge.hpp"
#include "settings.hpp"
#include "wakeup.hpp"

extern "C" {
#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

PG_MODULE_MAGIC;
void _PG_init(void);
}

using namespace tweetkeeper;

void _PG_init(void) {
  if (IsBinaryUpgrade) return;
  settings::Define(process_shared_preload_libraries_in_progress);
  // Without shared_preload_libraries the SQL API still works (workers need nothing more), but
  // nothing runs on a clock; CREATE EXTENSION warns about it, see sql/tweetkeeper.sql.
  if (process_shared_preload_libraries_in_progress) {
    wakeup::RequestSharedMemory();
    bgworker::Register();
  }
}


// settings() -> (buffer_ttl, lease_ttl, batch_retention, unavailable_recheck, history_partition,
// history_retention, history_rollup, history_keep_unchanged, housekeeping_interval,
// missing_after): the GUCs
// typed, so that SQL code reads them through the module (which guarantees they are defined).
// lease_settings() is its 0.1.0 name with the first four columns only, kept for databases (and
// queries) made with 0.1.0: the record is filled up to the caller's number of columns.
namespace {
// (Everything here allocates with palloc, which may fail: all of it inside PgCall.)
Datum SettingsRecord(FunctionCallInfo fcinfo) {
  return pg::PgCall([&] {
  TupleDesc tupdesc;
  if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("settings must return a record")));
  auto ms = [](int64 ms) {
    auto* iv = static_cast<Interval*>(palloc0(sizeof(Interval)));
    iv->time = ms * 1000;
    return IntervalPGetDatum(iv);
  };
  auto seconds = [&](int s) { return ms(int64{s} * 1000); };
  Datum values[] = {ms(settings::buffer_ttl_ms),
                    ms(settings::lease_ttl_ms),
                    seconds(settings::batch_retention_s),
                    seconds(settings::unavailable_recheck_s),
                    seconds(settings::history_partition_s),
                    seconds(settings::history_retention_s),
                    BoolGetDatum(settings::history_rollup),
                    BoolGetDatum(settings::history_keep_unchanged),
                    seconds(settings::housekeeping_interval_s),
                    Int32GetDatum(settings::missing_after)};
  constexpr int kColumns = sizeof(values) / sizeof(values[0]);
  if (tupdesc->natts > kColumns)
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("settings has more columns than this library knows")));
  bool nulls[kColumns] = {};
  return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
  });
}
}  // namespace

TK_FUNCTION(tk_settings) { return SettingsRecord(fcinfo); }
TK_FUNCTION(tk_lease_settings) { return SettingsRecord(fcinfo); }

// preloaded() -> bool: whether the module was loaded through shared_preload_libraries.
TK_FUNCTION(tk_preloaded) { PG_RETURN_BOOL(bgworker::Registered()); }
