// parse_post_url(url text) and parse_profile_url(url text): post_url.hpp's parsers for SQL, so
// that the database and the workers read a URL by the same rules.
#include "pg_bridge.hpp"
#include "post_url.hpp"

extern "C" {
#include "access/detoast.h"
#include "access/htup_details.h"
#include "datatype/timestamp.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include <array>
#include <string_view>

using namespace tweetkeeper;

namespace {
// The first argument, a URL. A value far longer than any URL is refused by its first bytes,
// before the whole of it is read (detoasted) or copied.
std::string_view UrlArgument(FunctionCallInfo fcinfo) {
  text* arg = pg::PgCall([&] {
    const Datum d = PG_GETARG_DATUM(0);
    return toast_raw_datum_size(d) > VARHDRSZ + kMaxPostUrlBytes
               ? DatumGetTextPSlice(d, 0, static_cast<int32>(kMaxPostUrlBytes + 1))
               : PG_GETARG_TEXT_PP(0);
  });
  return {VARDATA_ANY(arg), VARSIZE_ANY_EXHDR(arg)};
}

// parse(the first argument); a URL it refuses is 22023, naming the value and what is wrong with it.
template <class Parse>
auto ParseUrlArgument(FunctionCallInfo fcinfo, Parse parse) {
  const std::string_view url = UrlArgument(fcinfo);
  try {
    return parse(url);
  } catch (const PostUrlError& e) {
    throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, e.what());
  }
}

// The record of N columns that `function` returns: make_values() (called where PostgreSQL may
// raise an error), NULL where nulls says.
template <int N, class MakeValues>
Datum RecordOf(FunctionCallInfo fcinfo, const char* function, MakeValues make_values, std::array<bool, N> nulls) {
  const HeapTuple tuple = pg::PgCall([&] {
    TupleDesc tupdesc;
    if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE || tupdesc->natts != N)
      elog(ERROR, "%s must return a record of %d columns", function, N);
    std::array<Datum, N> values = make_values();
    return heap_form_tuple(BlessTupleDesc(tupdesc), values.data(), nulls.data());
  });
  return HeapTupleGetDatum(tuple);
}
}  // namespace

// -> (network, host, author, post_key, created_at, canonical); 22023 naming the value and what
// is wrong with it when it is not a post URL. host and created_at are NULL where the URL has none.
TK_FUNCTION(tk_parse_post_url) {
  const PostRef ref = ParseUrlArgument(fcinfo, ParsePostUrl);
  const TimestampTz created =
      ref.created_ms ? *ref.created_ms * 1000 - (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY : 0;
  const auto values = [&] {
    return std::array<Datum, 6>{CStringGetTextDatum(NetworkName(ref.network)),
                                CStringGetTextDatum(ref.host.c_str()),
                                CStringGetTextDatum(ref.author.c_str()),
                                CStringGetTextDatum(ref.key.c_str()),
                                TimestampTzGetDatum(created),
                                CStringGetTextDatum(ref.canonical.c_str())};
  };
  PG_RETURN_DATUM(
      RecordOf<6>(fcinfo, "parse_post_url", values,
                  {false, ref.host.empty(), ref.author.empty(), false, !ref.created_ms.has_value(), false}));
}

// -> (network, host, handle, account_id, canonical); 22023 naming the value and what is wrong
// with it when it is not a profile URL. host, handle and account_id are NULL where the URL has
// none (handle or account_id is always there).
TK_FUNCTION(tk_parse_profile_url) {
  const ProfileRef ref = ParseUrlArgument(fcinfo, ParseProfileUrl);
  const auto values = [&] {
    return std::array<Datum, 5>{CStringGetTextDatum(NetworkName(ref.network)), CStringGetTextDatum(ref.host.c_str()),
                                CStringGetTextDatum(ref.handle.c_str()), CStringGetTextDatum(ref.account_id.c_str()),
                                CStringGetTextDatum(ref.canonical.c_str())};
  };
  PG_RETURN_DATUM(RecordOf<5>(fcinfo, "parse_profile_url", values,
                              {false, ref.host.empty(), ref.handle.empty(), ref.account_id.empty(), false}));
}
