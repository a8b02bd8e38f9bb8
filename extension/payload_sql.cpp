// payload_without_counts(jsonb): a payload without what changes on every refresh (counts, the
// reader's own state, authors' counts), at any depth. One pass of PostgreSQL's own jsonb
// iterator, copying every token but the removed keys' (a removed key's value, however large, is
// skipped by counting its container's depth): linear in the document's size, and no recursion
// (the iterator and the parse state keep their own stacks). The PL/pgSQL walk it replaces copied
// its stack and the whole document on every step (quadratic in a hostile server's answer).
// The keys: count_keys.hpp, which the worker's content_hash.cpp reads too.
#include "count_keys.hpp"
#include "pg_bridge.hpp"

extern "C" {
#include "utils/jsonb.h"
}

using namespace tweetkeeper;

namespace {
// Plain PostgreSQL calls only (it runs inside PgCall): the copy without the count keys.
Jsonb* WithoutCounts(Jsonb* doc) {
  JsonbIterator* it = JsonbIteratorInit(&doc->root);
  JsonbParseState* state = nullptr;
  JsonbValue* result = nullptr;
  JsonbValue v;
  JsonbIteratorToken token;
  int skipping = 0;  // > 0: inside a removed key's container, this deep
  bool skip_value = false;
  while ((token = JsonbIteratorNext(&it, &v, false)) != WJB_DONE) {
    if (skipping > 0) {
      if (token == WJB_BEGIN_OBJECT || token == WJB_BEGIN_ARRAY) ++skipping;
      if (token == WJB_END_OBJECT || token == WJB_END_ARRAY) --skipping;
      continue;
    }
    if (skip_value) {  // the token after a removed key: its value, scalar or container
      skip_value = false;
      if (token == WJB_BEGIN_OBJECT || token == WJB_BEGIN_ARRAY) skipping = 1;
      continue;
    }
    if (token == WJB_KEY && IsCountKey({v.val.string.val, static_cast<std::size_t>(v.val.string.len)})) {
      skip_value = true;
      continue;
    }
    const bool carries = token == WJB_KEY || token == WJB_VALUE || token == WJB_ELEM;
    result = pushJsonbValue(&state, token, carries ? &v : nullptr);
  }
  return JsonbValueToJsonb(result);
}
}  // namespace

TK_FUNCTION(tk_payload_without_counts) {
  Jsonb* doc = PG_GETARG_JSONB_P(0);
  if (JB_ROOT_IS_SCALAR(doc)) PG_RETURN_JSONB_P(doc);
  PG_RETURN_JSONB_P(pg::PgCall([&] { return WithoutCounts(doc); }));
}
