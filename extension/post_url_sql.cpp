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
}  // namespace

// -> (network, host, author, post_key, created_at, canonical); 22023 naming the value and what
// is wrong with it when it is not a post URL. host and created_at are NULL where the URL has none.
TK_FUNCTION(tk_parse_post_url) {
  const std::string_view url = UrlArgument(fcinfo);
  PostRef ref;
  try {
    ref = ParsePostUrl(url);
  } catch (const PostUrlError& e) {
    throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, e.what());
  }
  const char* network = NetworkName(ref.network);
  const TimestampTz created =
      ref.created_ms ? *ref.created_ms * 1000 - (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY : 0;
  const HeapTuple tuple = pg::PgCall([&] {
    TupleDesc tupdesc;
    if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE || tupdesc->natts != 6)
      elog(ERROR, "parse_post_url must return a record of 6 columns");
    Datum values[6] = {CStringGetTextDatum(network),
                       CStringGetTextDatum(ref.host.c_str()),
                       CStringGetTextDatum(ref.author.c_str()),
                       CStringGetTextDatum(ref.key.c_str()),
                       TimestampTzGetDatum(created),
                       CStringGetTextDatum(ref.canonical.c_str())};
    bool nulls[6] = {false, ref.host.empty(), ref.author.empty(), false, !ref.created_ms.has_value(), false};
    return heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls);
  });
  PG_RETURN_DATUM(HeapTupleGetDatum(tuple));
}

// -> (network, host, handle, account_id, canonical); 22023 naming the value and what is wrong
// with it when it is not a profile URL. host, handle and account_id are NULL where the URL has
// none (handle or account_id is always there).
TK_FUNCTION(tk_parse_profile_url) {
  const std::string_view url = UrlArgument(fcinfo);
  ProfileRef ref;
  try {
    ref = ParseProfileUrl(url);
  } catch (const PostUrlError& e) {
    throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, e.what());
  }
  const HeapTuple tuple = pg::PgCall([&] {
    TupleDesc tupdesc;
    if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE || tupdesc->natts != 5)
      elog(ERROR, "parse_profile_url must return a record of 5 columns");
    Datum values[5] = {CStringGetTextDatum(NetworkName(ref.network)), CStringGetTextDatum(ref.host.c_str()),
                       CStringGetTextDatum(ref.handle.c_str()), CStringGetTextDatum(ref.account_id.c_str()),
                       CStringGetTextDatum(ref.canonical.c_str())};
    bool nulls[5] = {false, ref.host.empty(), ref.handle.empty(), ref.account_id.empty(), false};
    return heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls);
  });
  PG_RETURN_DATUM(HeapTupleGetDatum(tuple));
}
