// tweetkeeper.next_delay(created_at): the original specification's Config.getTweetUpdateDelay.
// The age policy is read from tweetkeeper.age_policy once per backend and cached; a statement
// trigger on that table invalidates the cache in every backend (through the relcache
// invalidation machinery, so it is transactional and reaches other sessions at commit).
#include "pg_bridge.hpp"
#include "policy.hpp"

extern "C" {
#include "access/detoast.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/timestamp.h"
}

#include <cstring>
#include <string>

#include <vector>

namespace tweetkeeper {
namespace {

struct PolicyCache {
  bool valid = false;
  Oid relid = InvalidOid;
  AgePolicy policy;
  std::vector<Interval> delays;  // original intervals, indexed by PolicyRow::payload
};

PolicyCache cache;
bool callback_registered = false;

void InvalidatePolicy(Datum, Oid relid) {
  // InvalidOid means "everything": a full cache reset.
  if (relid == InvalidOid || relid == cache.relid) cache.valid = false;
}

Oid PolicyRelid() {
  return pg::PgCall([] {
    Oid nsp = get_namespace_oid("tweetkeeper", true);
    return OidIsValid(nsp) ? get_relname_relid("age_policy", nsp) : InvalidOid;
  });
}

void LoadPolicy(bool read_only) {
  if (!callback_registered) {
    CacheRegisterRelcacheCallback(InvalidatePolicy, (Datum)0);
    callback_registered = true;
  }
  Oid relid = PolicyRelid();
  if (!OidIsValid(relid))
    throw SqlError(ERRCODE_UNDEFINED_TABLE, "tweetkeeper.age_policy does not exist",
                   "Run CREATE EXTENSION tweetkeeper in this database.");

  struct Raw {
    Interval max_age;
    Interval delay;
  };
  // Read through SPI into a plain array first: no C++ objects live across the PG calls.
  Raw* raw = nullptr;
  uint64 n = 0;
  pg::PgCall([&] {
    SPI_connect();
    SPI_execute("SELECT max_age, delay FROM tweetkeeper.age_policy", read_only, 0);
    n = SPI_processed;
    raw = static_cast<Raw*>(MemoryContextAlloc(TopTransactionContext, sizeof(Raw) * (n ? n : 1)));
    for (uint64 i = 0; i < n; ++i) {
      bool null_age = false, null_delay = false;
      HeapTuple tup = SPI_tuptable->vals[i];
      Datum a = SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &null_age);
      Datum d = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &null_delay);
      if (null_age || null_delay) elog(ERROR, "tweetkeeper.age_policy has a NULL column");
      raw[i].max_age = *DatumGetIntervalP(a);
      raw[i].delay = *DatumGetIntervalP(d);
    }
    SPI_finish();
  });

  std::vector<PolicyRow> rows;
  std::vector<Interval> delays;
  for (uint64 i = 0; i < n; ++i) {
    const Interval& a = raw[i].max_age;
    const Interval& d = raw[i].delay;
    rows.push_back({IntervalToUsec(a.month, a.day, a.time), IntervalToUsec(d.month, d.day, d.time),
                    delays.size()});
    delays.push_back(d);
  }
  try {
    cache.policy = AgePolicy(std::move(rows));
  } catch (const PolicyError& e) {
    throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, e.what(),
                   "Fix the rows of tweetkeeper.age_policy.");
  }
  cache.delays = std::move(delays);
  cache.relid = relid;
  cache.valid = true;
}

}  // namespace
}  // namespace tweetkeeper

using namespace tweetkeeper;

namespace {
// An interval for SQL, in the caller's memory context (palloc, which may fail, inside PgCall).
Datum IntervalResult(const Interval& value) {
  Interval* result = pg::PgCall([] { return static_cast<Interval*>(palloc(sizeof(Interval))); });
  *result = value;
  return IntervalPGetDatum(result);
}
}  // namespace

// next_delay(created_at timestamptz) -> interval, NULL once the tweet is past the last bucket.
TK_FUNCTION(tk_next_delay) {
  TimestampTz created_at = PG_GETARG_TIMESTAMPTZ(0);
  if (TIMESTAMP_NOT_FINITE(created_at))
    throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, "created_at must be a finite timestamp");
  if (!cache.valid) LoadPolicy(true);
  int64_t age = 0;
  if (__builtin_sub_overflow(GetCurrentTransactionStartTimestamp(), created_at, &age))
    throw SqlError(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE, "created_at is out of range");
  std::optional<PolicyRow> row = cache.policy.ForAge(age);
  if (!row) PG_RETURN_NULL();
  return IntervalResult(cache.delays[row->payload]);
}

// Statement trigger on tweetkeeper.age_policy: drop every backend's cached policy at commit.
TK_FUNCTION(tk_age_policy_changed) {
  if (!CALLED_AS_TRIGGER(fcinfo))
    throw SqlError(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
                   "tweetkeeper_internal.age_policy_changed() must be called as a trigger");
  auto* trigdata = reinterpret_cast<TriggerData*>(fcinfo->context);
  Oid relid = RelationGetRelid(trigdata->tg_relation);
  pg::PgCall([&] { CacheInvalidateRelcacheByRelid(relid); });
  // The invalidation reaches this backend at the end of the command; the policy must be valid
  // now, so that a bad edit fails the statement that made it.
  // read_only = false: see the rows the triggering statement wrote.
  cache.valid = false;
  LoadPolicy(false);
  return PointerGetDatum(nullptr);
}

// policy_delay(created_at, at, max_ages interval[], delays interval[]) -> interval: next_delay
// with the time and the policy given, not read here, so IMMUTABLE: a completion reads its policy
// once and passes it along (refresh_delay_at). The last policy given is kept, parsed, for the
// next call.
namespace tweetkeeper {
namespace {
struct GivenPolicy {
  bool valid = false;
  std::string key;  // both arrays' bytes, as given
  AgePolicy policy;
  std::vector<Interval> delays;
};
GivenPolicy given;

void LoadGivenPolicy(ArrayType* ages, ArrayType* delays) {
  // Called for every row a completion updates, with the same arrays: compared in place, copied
  // only when they differ.
  const size_t a_len = VARSIZE(ages), d_len = VARSIZE(delays);
  if (given.valid && given.key.size() == a_len + d_len && memcmp(given.key.data(), ages, a_len) == 0 &&
      memcmp(given.key.data() + a_len, delays, d_len) == 0)
    return;
  std::string key(reinterpret_cast<const char*>(ages), a_len);
  key.append(reinterpret_cast<const char*>(delays), d_len);
  Datum* a = nullptr;
  Datum* d = nullptr;
  bool* a_null = nullptr;
  bool* d_null = nullptr;
  int na = 0, nd = 0;
  pg::PgCall([&] {
    deconstruct_array(ages, INTERVALOID, sizeof(Interval), false, TYPALIGN_DOUBLE, &a, &a_null, &na);
    deconstruct_array(delays, INTERVALOID, sizeof(Interval), false, TYPALIGN_DOUBLE, &d, &d_null, &nd);
  });
  if (na != nd)
    throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, "max_ages and delays must have as many elements");
  std::vector<PolicyRow> rows;
  std::vector<Interval> kept;
  for (int i = 0; i < na; ++i) {
    if (a_null[i] || d_null[i])
      throw SqlError(ERRCODE_NULL_VALUE_NOT_ALLOWED, "max_ages and delays must not contain NULL");
    const Interval* ai = DatumGetIntervalP(a[i]);
    const Interval* di = DatumGetIntervalP(d[i]);
    rows.push_back({IntervalToUsec(ai->month, ai->day, ai->time),
                    IntervalToUsec(di->month, di->day, di->time), kept.size()});
    kept.push_back(*di);
  }
  try {
    given.policy = AgePolicy(std::move(rows));
  } catch (const PolicyError& e) {
    throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, e.what());
  }
  given.delays = std::move(kept);
  given.key = std::move(key);
  given.valid = true;
}
}  // namespace
}  // namespace tweetkeeper

namespace {
// An interval array of kMaxPolicyRows elements (16 bytes each, with its header and null bitmap).
constexpr Size kMaxPolicyArrayBytes = 64 + kMaxPolicyRows * (sizeof(Interval) + 1);
}  // namespace

TK_FUNCTION(tk_policy_delay) {
  TimestampTz created_at = PG_GETARG_TIMESTAMPTZ(0);
  TimestampTz at = PG_GETARG_TIMESTAMPTZ(1);
  if (TIMESTAMP_NOT_FINITE(created_at) || TIMESTAMP_NOT_FINITE(at))
    throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, "created_at and at must be finite timestamps");
  ArrayType* ages = nullptr;
  ArrayType* delays = nullptr;
  pg::PgCall([&] {
    // (An age policy has a few rows: arrays of more are refused before they are read.)
    for (int arg = 2; arg <= 3; ++arg)
      if (toast_raw_datum_size(PG_GETARG_DATUM(arg)) > kMaxPolicyArrayBytes)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("policy_delay: max_ages and delays have at most %d elements", static_cast<int>(kMaxPolicyRows))));
    ages = PG_GETARG_ARRAYTYPE_P(2);
    delays = PG_GETARG_ARRAYTYPE_P(3);
  });
  LoadGivenPolicy(ages, delays);
  int64_t age = 0;
  if (__builtin_sub_overflow(at, created_at, &age))
    throw SqlError(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE, "created_at is out of range");
  std::optional<PolicyRow> row = given.policy.ForAge(age);
  if (!row) PG_RETURN_NULL();
  return IntervalResult(given.delays[row->payload]);
}
