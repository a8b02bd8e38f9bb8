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
  if (pg_error) ReThrowError(pg_error);
  ereport(ERROR, (errcode(sqlstate), errmsg("%s", message), hint[0] ? errhint("%s", hint) : 0));
  pg_unreachable();
}

}  // namespace tweetkeeper::pg
