#include "pg_bridge.hpp"

#include <cstring>

namespace tweetkeeper::pg {

void ThrowCaughtError(MemoryContext caller_context) {
  // Called right after PG_END_TRY: the error is still PostgreSQL's current one.
  MemoryContextSwitchTo(caller_context);
  ErrorData* edata = CopyErrorData();
  FlushErrorState();
  throw PgException(edata);
}

Datum InvokeCpp(Datum (*body)(FunctionCallInfo), FunctionCallInfo fcinfo) {
  // PostgreSQL's error state as the caller left it. A C++ exception that leaves a guarded region
  // skips the code that would pop what the body pushed: an error context callback on this
  // stack frame, or a PG_TRY's jump buffer (if code inside a PgCall threw). Both are restored
  // before raising, or the ereport below would call a dead callback or longjmp into a dead frame.
  sigjmp_buf* const saved_exception_stack = PG_exception_stack;
  ErrorContextCallback* const saved_context_stack = error_context_stack;
  // Fixed buffers, not palloc: nothing here may itself throw or longjmp while a C++ exception
  // object is alive.
  char message[1024] = {0};
  char hint[512] = {0};
  int sqlstate = ERRCODE_INTERNAL_ERROR;
  ErrorData* pg_error = nullptr;
  try {
    return body(fcinfo);
  } catch (const PgException& e) {
    pg_error = e.edata();
  } catch (const SqlError& e) {
    sqlstate = e.sqlstate();
    strlcpy(message, e.what(), sizeof(message));
    strlcpy(hint, e.hint().c_str(), sizeof(hint));
  } catch (const std::exception& e) {
    strlcpy(message, e.what(), sizeof(message));
  } catch (...) {
    strlcpy(message, "unknown C++ exception", sizeof(message));
  }
  // Every C++ object of the try block is destroyed by now; longjmp is safe again.
  PG_exception_stack = saved_exception_stack;
  error_context_stack = saved_context_stack;
  if (pg_error) ReThrowError(pg_error);
  ereport(ERROR, (errcode(sqlstate), errmsg("%s", message), hint[0] ? errhint("%s", hint) : 0));
  pg_unreachable();
}

}  // namespace tweetkeeper::pg

namespace {
void SelftestContext(void*) { errcontext("tweetkeeper bridge selftest frame"); }
}  // namespace

// bridge_selftest(mode) exists for tests/pgtap/08_bridge.sql only (not part of the extension's
// SQL): a body that breaks the rules InvokeCpp guards against, then throws.
//   1: leaves an error context callback of its own frame on error_context_stack;
//   2: throws a C++ exception from inside a PgCall (skipping PG_END_TRY's restore).
// Without InvokeCpp's restore, mode 1's error carries that dead frame's context line (or
// worse) and mode 2 longjmps into a dead frame and crashes the backend.
TK_FUNCTION(tk_bridge_selftest) {
  const int mode = PG_GETARG_INT32(0);
  if (mode == 1) {
    ErrorContextCallback callback;
    callback.callback = SelftestContext;
    callback.arg = nullptr;
    callback.previous = error_context_stack;
    error_context_stack = &callback;
    throw tweetkeeper::SqlError(ERRCODE_INTERNAL_ERROR, "bridge selftest: exception with a context pushed");
  }
  if (mode == 2) {
    tweetkeeper::pg::PgCallVoid([] { throw tweetkeeper::SqlError(ERRCODE_INTERNAL_ERROR, "bridge selftest: exception inside PgCall"); });
  }
  PG_RETURN_VOID();
}
