#!/usr/bin/env bash
# The mock against X's official OpenAPI description: a sample of every kind of answer it gives on
# GET /2/tweets and /2/tweets/{id} validated by validate_answers.py against the extract
# x-api-tweets-2.159.json, which is first checked to be exactly what extract_spec.py makes of
# ../shared/x-api/openapi.json (TK_OPENAPI), when that file is at hand. The same for Bluesky: the
# mock's AppView answers validated by bluesky/validate_bluesky.py against the lexicon extract
# bluesky/lexicons-d6296a1c.json (checked against an atproto checkout's lexicons/, TK_ATPROTO_LEXICONS,
# when one is at hand).
# Prints "spec: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../../lib/common.sh"
here="$TK_ROOT/tests/mock_api/spec"
tk_workdir spec
openapi=${TK_OPENAPI:-$TK_ROOT/../shared/x-api/openapi.json}
if [ -f "$openapi" ]; then
  if out=$(/usr/bin/python3 "$here/extract_spec.py" --check "$here/x-api-tweets-2.159.json" "$openapi" 2>&1); then
    tk_pass "the extract is exactly what $(basename "$openapi") gives"
  else
    tk_fail "the extract is exactly what $(basename "$openapi") gives" "$out"
  fi
else
  echo "# $openapi is not here: the extract is used as committed"
fi
tk_mock_start "$dir/mock.log" --deleted-every 53 --protected-every 61 --omitted-every 97 --rate-limit 3 || exit 1
/usr/bin/python3 "$here/validate_answers.py" "$here/x-api-tweets-2.159.json" "$TK_MOCK_URL" >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
while IFS= read -r line; do
  case "$line" in
    "ok - "*) TK_PASSED=$((TK_PASSED + 1)) ;;
    "not ok - "*) TK_FAILED=$((TK_FAILED + 1)) ;;
  esac
done <"$dir/out"
if [ $rc -ne 0 ] && [ "$TK_FAILED" -eq 0 ]; then
  tk_fail "validate_answers.py ran to the end" "$(tail -5 "$dir/out")"
fi
lexicons=${TK_ATPROTO_LEXICONS:-}
if [ -n "$lexicons" ] && [ -d "$lexicons" ]; then
  if out=$(/usr/bin/python3 "$here/bluesky/extract_lexicons.py" --check "$here/bluesky/lexicons-d6296a1c.json" "$lexicons" 2>&1); then
    tk_pass "the lexicon extract is exactly what $lexicons gives"
  else
    tk_fail "the lexicon extract is exactly what $lexicons gives" "$out"
  fi
fi
/usr/bin/python3 "$here/bluesky/validate_bluesky.py" "$here/bluesky/lexicons-d6296a1c.json" "$TK_MOCK_URL" >"$dir/bsky" 2>&1
rc=$?
cat "$dir/bsky"
before=$TK_FAILED
while IFS= read -r line; do
  case "$line" in
    "ok - "*) TK_PASSED=$((TK_PASSED + 1)) ;;
    "not ok - "*) TK_FAILED=$((TK_FAILED + 1)) ;;
  esac
done <"$dir/bsky"
if [ $rc -ne 0 ] && [ "$TK_FAILED" -eq "$before" ]; then
  tk_fail "validate_bluesky.py ran to the end" "$(tail -5 "$dir/bsky")"
fi
tk_summary spec
