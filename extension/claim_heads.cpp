// Where the claim's reads of tweets_lateness_idx start, remembered by each session between its
// claims. Every claim and completion moves a tweet out of the head of its delay's range and
// leaves a dead index entry behind until VACUUM removes it; a claim that starts each read at the
// beginning of the range walks all of them (0.1.0's claim did so on tweets_due_idx): under a
// backlog, the larger part of a claim. claim_batch() finds each delay's head (its oldest visible
// due_at) by a full look, remembers it, and from then on starts at the head it last saw.
//
// A head stays a lower bound of its delay's due times as long as no tweet is put below it: a
// claim moves its tweets later, and a completion, omission or problem puts a tweet at
// now + its delay, never before a head of its delay (every other tweet of it is due by then)
// unless that delay is shorter than the lease. Whatever else does (a release, an abandoned
// batch handed back, a delay shorter than the lease, a scheduled or updated tweet, an operator's
// UPDATE) is caught by the triggers on tweets (heads_moved()): the transaction marks this session
// (which then looks fully until the transaction ends) and, at commit, bumps an epoch in shared
// memory, which sends every session's next claim to a full look. Unless the tweet is due a
// max age (a second) or more after the transaction began: the full looks every session makes
// anyway find it before it is due. A transaction or subtransaction
// that rolls back forgets this session's heads (its own rows are back where they were). And a
// full look is made at least every max_age (a second), whatever happened.
//
// Without shared_preload_libraries there is no shared epoch, and every claim looks fully.
#include "pg_bridge.hpp"
#include "wakeup.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/datum.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
}

namespace {

// This session's heads (copies in TopMemoryContext; 0: none), the epoch they are valid for, and
// when they were last found by a full look.
Datum delays = (Datum)0;
Datum heads = (Datum)0;
uint64 epoch = 0;
TimestampTz looked_at = 0;
uint64 epoch_before_look = 0;  // read by claim_heads() before a full look
bool moved = false;            // this transaction may have put a tweet below a head
bool callbacks_registered = false;
// The longest a session keeps its heads without a full look: delay_heads() asks
// claim_heads(interval '1 second'), and heads_moved() relies on it.
constexpr TimestampTz kMaxAge = USECS_PER_SEC;

void Forget() {
  if (delays != (Datum)0) pfree(DatumGetPointer(delays));
  if (heads != (Datum)0) pfree(DatumGetPointer(heads));
  delays = heads = (Datum)0;
}

void AtTransactionEnd(XactEvent event, void*) {
  if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT) {
    tweetkeeper::wakeup::PublishHeadsMoved();
  } else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT) {
    moved = false;
    Forget();
  }
}

void AtSubtransactionEnd(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
  if (event == SUBXACT_EVENT_ABORT_SUB) Forget();
}

void RegisterCallbacks() {
  if (callbacks_registered) return;
  RegisterXactCallback(AtTransactionEnd, nullptr);
  RegisterSubXactCallback(AtSubtransactionEnd, nullptr);
  callbacks_registered = true;
}

}  // namespace

// (wakeup.hpp) Whichever of this file's and wakeup.cpp's commit callbacks runs first does it.
void tweetkeeper::wakeup::PublishHeadsMoved() {
  if (moved)
    if (pg_atomic_uint64* shared = HeadsEpoch()) pg_atomic_fetch_add_u64(shared, 1);
  moved = false;
}

// claim_heads(max_age interval, OUT delays interval[], OUT heads timestamptz[]): this session's
// heads, or NULLs when a full look is due (none remembered, the last full look older than
// max_age, a tweet put below a head since, or no shared memory).
TK_FUNCTION(tk_claim_heads) {
  const Interval* max_age = PG_GETARG_INTERVAL_P(0);
  const Datum result = tweetkeeper::pg::PgCall([&] {
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
      ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("claim_heads must return a record")));
    RegisterCallbacks();
    Datum values[2] = {(Datum)0, (Datum)0};
    bool nulls[2] = {true, true};
    pg_atomic_uint64* shared = tweetkeeper::wakeup::HeadsEpoch();
    const uint64 now_epoch = shared == nullptr ? 0 : pg_atomic_read_u64(shared);
    epoch_before_look = now_epoch;
    const TimestampTz fresh_until = DatumGetTimestampTz(DirectFunctionCall2(
        timestamptz_pl_interval, TimestampTzGetDatum(looked_at), PointerGetDatum(max_age)));
    if (shared != nullptr && delays != (Datum)0 && !moved && epoch == now_epoch &&
        GetCurrentTimestamp() < fresh_until) {
      values[0] = datumCopy(delays, false, -1);
      values[1] = datumCopy(heads, false, -1);
      nulls[0] = nulls[1] = false;
    }
    return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
  });
  PG_RETURN_DATUM(result);
}

// remember_claim_heads(delays interval[], heads timestamptz[], full_look boolean): keeps them for
// this session's next claims; full_look: found by a full look (valid for the epoch read before
// it, for max_age from now).
TK_FUNCTION(tk_remember_claim_heads) {
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2)) PG_RETURN_VOID();
  const Datum new_delays = PG_GETARG_DATUM(0);
  const Datum new_heads = PG_GETARG_DATUM(1);
  const bool full_look = PG_GETARG_BOOL(2);
  tweetkeeper::pg::PgCallVoid([&] {
    RegisterCallbacks();
    MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
    const Datum d = datumCopy(PointerGetDatum(PG_DETOAST_DATUM(new_delays)), false, -1);
    const Datum h = datumCopy(PointerGetDatum(PG_DETOAST_DATUM(new_heads)), false, -1);
    MemoryContextSwitchTo(old);
    Forget();
    delays = d;
    heads = h;
    if (full_look) {
      epoch = epoch_before_look;
      looked_at = GetCurrentTimestamp();
    }
  });
  PG_RETURN_VOID();
}

// heads_moved(): the trigger on tweets that marks this transaction as one that may have put a tweet
// below a head (see above; its WHEN clause says which rows).
TK_FUNCTION(tk_heads_moved) {
  auto* trigger = reinterpret_cast<TriggerData*>(fcinfo->context);
  if (!CALLED_AS_TRIGGER(fcinfo))
    tweetkeeper::pg::PgCallVoid([] {
      ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                      errmsg("tweetkeeper_internal.heads_moved() is a trigger function")));
    });
  // A row whose new due time is at least kMaxAge after this transaction's start is not a reason
  // for a full look: every session looks fully at least every kMaxAge, so each has looked again
  // since this commit by the time the tweet is due (later only by as long as this transaction
  // ran). A completion of a delay shorter than the lease is such a row (tweets_heads_moved's
  // WHEN passes it: its due time comes before its lease's expiry), and before it sent every
  // session's next claim to a full look, each walking the dead entries at the head of the claim
  // index: on 1,000,000 tweets with 1-5 s delays, claim + complete went from 20 to 33 ms mean in
  // 30 s as they piled up.
  if (TRIGGER_FIRED_FOR_ROW(trigger->tg_event) && TRIGGER_FIRED_BY_UPDATE(trigger->tg_event)) {
    const bool later = tweetkeeper::pg::PgCall([&] {
      TupleDesc desc = RelationGetDescr(trigger->tg_relation);
      const int attnum = SPI_fnumber(desc, "due_at");
      if (attnum <= 0) return false;
      bool isnull = true;
      const Datum due = heap_getattr(trigger->tg_newtuple, attnum, desc, &isnull);
      return !isnull && DatumGetTimestampTz(due) >= GetCurrentTransactionStartTimestamp() + kMaxAge;
    });
    if (later) return PointerGetDatum(trigger->tg_newtuple);
  }
  tweetkeeper::pg::PgCallVoid([] { RegisterCallbacks(); });
  moved = true;
  if (!TRIGGER_FIRED_FOR_ROW(trigger->tg_event)) return PointerGetDatum(nullptr);
  return PointerGetDatum(TRIGGER_FIRED_BY_UPDATE(trigger->tg_event) ? trigger->tg_newtuple : trigger->tg_trigtuple);
}
