// history_codec.hpp for SQL: pack_history (arrays of a post's observations -> bytea),
// unpack_history (bytea -> its rows, in time order), merge_history (two packed spans -> one) and
// history_without (one observation taken out), which compact_history() and the metric_history
// view use.
#include "history_codec.hpp"
#include "pg_bridge.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include <string>
#include <string_view>
#include <vector>

using namespace tweetkeeper;

namespace {

struct Column {
  Datum* values = nullptr;
  bool* nulls = nullptr;
  int n = 0;
};

// A one-dimensional bigint or timestamptz array (both 8 bytes, passed as int8 is).
// (NULL: an empty array, as array_agg() gives for no rows.)
Column ArrayArg(FunctionCallInfo fcinfo, int arg, Oid type) {
  Column c;
  if (PG_ARGISNULL(arg)) return c;
  pg::PgCallVoid([&] {
    ArrayType* a = PG_GETARG_ARRAYTYPE_P(arg);
    if (ARR_NDIM(a) > 1) ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                         errmsg("pack_history takes one-dimensional arrays")));
    deconstruct_array(a, type, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &c.values, &c.nulls, &c.n);
  });
  return c;
}

std::string_view ByteaArg(FunctionCallInfo fcinfo, int arg) {
  bytea* b = pg::PgCall([&] { return PG_GETARG_BYTEA_PP(arg); });
  return {VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b)};
}

Datum ByteaResult(const std::string& s) {
  return pg::PgCall([&] {
    bytea* out = static_cast<bytea*>(palloc(VARHDRSZ + s.size()));
    SET_VARSIZE(out, VARHDRSZ + s.size());
    memcpy(VARDATA(out), s.data(), s.size());
    return PointerGetDatum(out);
  });
}

std::vector<HistoryRow> Unpack(std::string_view packed) {
  try {
    return UnpackHistory(packed);
  } catch (const HistoryCodecError& e) {
    throw SqlError(ERRCODE_DATA_CORRUPTED, e.what());
  }
}

}  // namespace

// pack_history(observed_at timestamptz[], lease_id bigint[], retweet_count bigint[], ...,
// impression_count bigint[]) -> bytea: the arrays of equal length, one element per observation,
// in (observed_at, lease_id) order.
TK_FUNCTION(tk_pack_history) {
  const Column times = ArrayArg(fcinfo, 0, TIMESTAMPTZOID);
  const Column leases = ArrayArg(fcinfo, 1, INT8OID);
  std::vector<Column> counts;
  for (int c = 0; c < kHistoryCounts; ++c) counts.push_back(ArrayArg(fcinfo, 2 + c, INT8OID));
  if (static_cast<std::size_t>(times.n) > kMaxHistoryRows)  // (before rows are allocated for them)
    throw SqlError(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "pack_history: " + std::to_string(times.n) +
                                                       " observations in one packed span; at most " +
                                                       std::to_string(kMaxHistoryRows));
  std::vector<HistoryRow> rows(times.n);
  for (int i = 0; i < 2 + kHistoryCounts; ++i) {
    const Column& col = i == 0 ? times : i == 1 ? leases : counts[i - 2];
    if (col.n != times.n) throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, "pack_history takes arrays of one length");
  }
  for (int r = 0; r < times.n; ++r) {
    if (times.nulls[r] || leases.nulls[r]) {
      throw SqlError(ERRCODE_NULL_VALUE_NOT_ALLOWED, "pack_history: observed_at and lease_id cannot be NULL");
    }
    rows[r].observed_at = DatumGetTimestampTz(times.values[r]);
    rows[r].lease_id = DatumGetInt64(leases.values[r]);
    for (int c = 0; c < kHistoryCounts; ++c) {
      if (!counts[c].nulls[r]) rows[r].counts[c] = DatumGetInt64(counts[c].values[r]);
    }
  }
  try {
    return ByteaResult(PackHistory(rows));
  } catch (const std::invalid_argument& e) {
    throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, std::string("pack_history: ") + e.what());
  }
}

// unpack_history(packed bytea) -> SETOF (observed_at, lease_id, the six counts), in order.
TK_FUNCTION(tk_unpack_history) {
  const std::vector<HistoryRow> rows = Unpack(ByteaArg(fcinfo, 0));
  pg::PgCallVoid([&] {
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    if (rsinfo->setDesc->natts != 2 + kHistoryCounts) elog(ERROR, "unpack_history must return 8 columns");
    Datum values[2 + kHistoryCounts];
    bool nulls[2 + kHistoryCounts];
    for (const HistoryRow& r : rows) {
      values[0] = TimestampTzGetDatum(r.observed_at);
      values[1] = Int64GetDatum(r.lease_id);
      nulls[0] = nulls[1] = false;
      for (int c = 0; c < kHistoryCounts; ++c) {
        nulls[2 + c] = !r.counts[c].has_value();
        values[2 + c] = Int64GetDatum(r.counts[c].value_or(0));
      }
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return static_cast<Datum>(0);
}

// merge_history(a bytea, b bytea) -> bytea: both spans' observations in one, each once.
TK_FUNCTION(tk_merge_history) {
  const std::string_view a = ByteaArg(fcinfo, 0);
  const std::string_view b = ByteaArg(fcinfo, 1);
  try {
    return ByteaResult(MergeHistory(a, b));
  } catch (const HistoryCodecError& e) {
    throw SqlError(ERRCODE_DATA_CORRUPTED, e.what());
  } catch (const std::invalid_argument& e) {  // (more than kMaxHistoryRows together)
    throw SqlError(ERRCODE_PROGRAM_LIMIT_EXCEEDED, std::string("merge_history: ") + e.what());
  }
}

// history_without(packed bytea, observed_at timestamptz, lease_id bigint) -> bytea: without that
// observation (a DELETE on metric_history of a compacted one).
TK_FUNCTION(tk_history_without) {
  const std::string_view packed = ByteaArg(fcinfo, 0);
  const TimestampTz at = pg::PgCall([&] { return PG_GETARG_TIMESTAMPTZ(1); });
  const int64 lease = pg::PgCall([&] { return PG_GETARG_INT64(2); });
  try {
    return ByteaResult(HistoryWithout(packed, at, lease));
  } catch (const HistoryCodecError& e) {
    throw SqlError(ERRCODE_DATA_CORRUPTED, e.what());
  }
}
