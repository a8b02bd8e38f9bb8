// The one place where C++ and PostgreSQL error handling meet.
//
// PostgreSQL reports errors with longjmp; C++ with exceptions. Neither may cross the other:
// a longjmp over a live C++ frame skips destructors, and an exception thrown through a C frame
// is undefined. So:
//  - every SQL-callable C++ function is declared with TK_FUNCTION; its body runs inside a
//    try block, and an escaping exception becomes ereport(ERROR) only after the catch block
//    has ended (no C++ object is alive any more);
//  - C++ code that calls PostgreSQL functions which may ereport wraps them in PgCall(), which
//    catches the longjmp at the boundary and rethrows it as a PgException carrying the
//    original ErrorData, which TK_FUNCTION re-raises unchanged (SQLSTATE, detail, hint kept).
// Code inside a PgCall lambda must not create C++ objects with non-trivial destructors.
// Should a C++ exception still leave a guarded region with PostgreSQL's error state changed (an
// error context callback pushed by the body, a PG_TRY left by a throw inside a PgCall),
// TK_FUNCTION restores PG_exception_stack and error_context_stack before raising (as pg_duckdb
// does); tests/pgtap/08_bridge.sql checks both. Pure C++ files include cpp_only.hpp, which makes
// including a PostgreSQL header there a compile error (ctest cpp_only_guard).
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "utils/elog.h"
#include "utils/memutils.h"
}

#include <stdexcept>
#include <type_traits>
#include <string>
#include <utility>

namespace tweetkeeper {

// A C++ error that should reach SQL with a specific SQLSTATE (ERRCODE_* from utils/errcodes.h).
class SqlError : public std::runtime_error {
 public:
  SqlError(int sqlstate, const std::string& message, std::string hint = {})
      : std::runtime_error(message), sqlstate_(sqlstate), hint_(std::move(hint)) {}
  int sqlstate() const { return sqlstate_; }
  const std::string& hint() const { return hint_; }

 private:
  int sqlstate_;
  std::string hint_;
};

// A PostgreSQL error caught by PgCall; owns a copy of its ErrorData (palloc'd).
class PgException : public std::exception {
 public:
  explicit PgException(ErrorData* edata) : edata_(edata) {}
  const char* what() const noexcept override { return edata_->message ? edata_->message : "error"; }
  ErrorData* edata() const { return edata_; }

 private:
  ErrorData* edata_;
};

namespace pg {

[[noreturn]] void ThrowCaughtError(MemoryContext caller_context);

// Runs f (plain PostgreSQL calls only) and turns an ereport(ERROR) into a PgException.
template <typename F>
void PgCallVoid(F&& f) {
  MemoryContext caller_context = CurrentMemoryContext;
  volatile bool failed = false;
  PG_TRY();
  { f(); }
  PG_CATCH();
  { failed = true; }
  PG_END_TRY();
  if (failed) ThrowCaughtError(caller_context);
}

template <typename F>
auto PgCall(F&& f) -> decltype(f()) {
  if constexpr (std::is_void_v<decltype(f())>) {
    PgCallVoid(f);
  } else {
    // The result lives outside the frame that calls sigsetjmp, so longjmp cannot clobber it.
    decltype(f()) result{};
    PgCallVoid([&] { result = f(); });
    return result;
  }
}

// Calls body and converts any escaping exception into ereport(ERROR). Used by TK_FUNCTION.
Datum InvokeCpp(Datum (*body)(FunctionCallInfo), FunctionCallInfo fcinfo);

}  // namespace pg
}  // namespace tweetkeeper

// Declares a SQL-callable function `name` whose C++ body follows the macro.
#define TK_FUNCTION(name)                                                     \
  static Datum name##_cpp(FunctionCallInfo fcinfo);                           \
  extern "C" {                                                                \
  PG_FUNCTION_INFO_V1(name);                                                  \
  PGDLLEXPORT Datum name(PG_FUNCTION_ARGS) {                                  \
    return tweetkeeper::pg::InvokeCpp(name##_cpp, fcinfo);                    \
  }                                                                           \
  }                                                                           \
  static Datum name##_cpp(FunctionCallInfo fcinfo)
