// The adaptive refresh policy's SQL entry points (extension/adaptive.cpp decides): which posts
// follow it, the completion's step, and what a post's kept state says (tweetkeeper.why_due).
#include "adaptive.hpp"
#include "pg_bridge.hpp"
#include "policy.hpp"
#include "settings.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include <cstring>

using namespace tweetkeeper;

namespace {

Datum IntervalDatum(int64_t usec) {
  Interval* result = pg::PgCall([] { return static_cast<Interval*>(palloc0(sizeof(Interval))); });
  result->time = usec;
  return IntervalPGetDatum(result);
}

// A post's six counts from a bigint[] (NULL elements, or a NULL array: -1, not reported).
Counts CountsArg(FunctionCallInfo fcinfo, int arg, int64_t if_null) {
  Counts c;
  c.fill(if_null);
  if (PG_ARGISNULL(arg)) return c;
  Datum* values = nullptr;
  bool* nulls = nullptr;
  int n = 0;
  pg::PgCallVoid([&] {
    ArrayType* a = PG_GETARG_ARRAYTYPE_P(arg);
    if (ARR_NDIM(a) > 1 || ARR_ELEMTYPE(a) != INT8OID)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("counts must be a one-dimensional bigint[]")));
    deconstruct_array(a, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &values, &nulls, &n);
  });
  if (n != kCountKinds)
    throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, "counts must hold 6 elements (reposts, replies, likes, quotes, bookmarks, views)");
  for (int k = 0; k < kCountKinds; ++k) c[k] = nulls[k] ? -1 : DatumGetInt64(values[k]);
  return c;
}

int64_t IntervalUsec(Datum d) {
  const Interval* i = DatumGetIntervalP(d);
  return IntervalToUsec(i->month, i->day, i->time);
}

// Unix microseconds of a timestamptz (PostgreSQL counts from 2000-01-01).
int64_t UnixUsec(TimestampTz t) {
  return t + (static_cast<int64_t>(POSTGRES_EPOCH_JDATE) - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
}

bool Done(const AdaptiveState& s) { return s.reason == DueReason::kStopped || s.reason == DueReason::kPastTable; }

}  // namespace

// adaptive_for(endpoint text, post_policy text) -> boolean: whether a post follows the adaptive
// policy: its own (set_refresh_policy) if it has one, else its network's (tweetkeeper.refresh_policy).
TK_FUNCTION(tk_adaptive_for) {
  if (!PG_ARGISNULL(1)) {
    const text* policy = pg::PgCall([&] { return PG_GETARG_TEXT_PP(1); });  // (may detoast)
    const size_t len = VARSIZE_ANY_EXHDR(policy);
    PG_RETURN_BOOL(len == 8 && memcmp(VARDATA_ANY(policy), "adaptive", 8) == 0);
  }
  int bit = kAdaptiveX;
  if (!PG_ARGISNULL(0)) {
    const text* endpoint = pg::PgCall([&] { return PG_GETARG_TEXT_PP(0); });
    const char* e = VARDATA_ANY(endpoint);
    const size_t len = VARSIZE_ANY_EXHDR(endpoint);
    bit = len >= 9 && memcmp(e, "mastodon:", 9) == 0 ? kAdaptiveMastodon : kAdaptiveBluesky;
  }
  PG_RETURN_BOOL((settings::adaptive_networks & bit) != 0);
}

// adaptive_step(at, created_at, previous_at, floor, before bigint[], after bigint[], state, x)
// -> bigint: the post's new state after an observation at `at` (its gap is the delay to its next
// read; adaptive_gap() reads it). previous_at NULL: its first observation (before then: zeros);
// floor NULL: past the age table's last bucket.
TK_FUNCTION(tk_adaptive_step) {
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(7))
    throw SqlError(ERRCODE_NULL_VALUE_NOT_ALLOWED, "adaptive_step: at, created_at and x must not be NULL");
  const TimestampTz at = PG_GETARG_TIMESTAMPTZ(0), created = PG_GETARG_TIMESTAMPTZ(1);
  const bool first = PG_ARGISNULL(2);
  if (TIMESTAMP_NOT_FINITE(at) || TIMESTAMP_NOT_FINITE(created) || (!first && TIMESTAMP_NOT_FINITE(PG_GETARG_TIMESTAMPTZ(2))))
    throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, "adaptive_step: at, created_at and previous_at must be finite");
  Observation obs;
  obs.now_usec = UnixUsec(at);
  obs.age_usec = at - created;
  obs.since_usec = first ? obs.age_usec : at - PG_GETARG_TIMESTAMPTZ(2);
  if (!PG_ARGISNULL(3)) obs.floor_usec = IntervalUsec(PG_GETARG_DATUM(3));
  obs.before = first ? Counts{} : CountsArg(fcinfo, 4, -1);
  obs.now = CountsArg(fcinfo, 5, -1);
  obs.x_billing = PG_GETARG_BOOL(7);
  const AdaptiveState state = PG_ARGISNULL(6) ? AdaptiveState{} : UnpackState(PG_GETARG_INT64(6));
  AdaptiveSettings s;
  s.share = settings::adaptive_share;
  s.max_gap_usec = int64_t{settings::adaptive_max_gap_s} * 1000000;
  s.stop_quiet_usec = settings::adaptive_stop_quiet_s == 0 ? INT64_MAX : int64_t{settings::adaptive_stop_quiet_s} * 1000000;
  s.keep_engaged = settings::adaptive_keep_engaged;
  const Decision d = DecideNext(obs, first ? AdaptiveState{} : state, s);
  PG_RETURN_INT64(PackState(d.state));
}

// adaptive_gap(state) -> interval: the delay the last decision chose; NULL when it made the post done.
TK_FUNCTION(tk_adaptive_gap) {
  const AdaptiveState s = UnpackState(PG_GETARG_INT64(0));
  if (Done(s)) PG_RETURN_NULL();
  return IntervalDatum(s.gap_usec);
}

// adaptive_reason(state) -> text: why the post is due when it is ('quiet', 'revived', ...).
TK_FUNCTION(tk_adaptive_reason) {
  const std::string_view name = DueReasonName(UnpackState(PG_GETARG_INT64(0)).reason);
  return pg::PgCall([&] { return PointerGetDatum(cstring_to_text_with_len(name.data(), static_cast<int>(name.size()))); });
}

// adaptive_quiet_since(state) -> interval: the post's age when its counts last moved.
TK_FUNCTION(tk_adaptive_quiet_since) { return IntervalDatum(UnpackState(PG_GETARG_INT64(0)).quiet_since_usec); }
