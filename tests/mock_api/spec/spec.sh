#!/usr/bin/env bash
# The mock against X's official OpenAPI description: a sample of every kind of answer it gives on
# GET /2/tweets and /2/tweets/{id} validated by validate_answers.py against the extract
# x-api-tweets-2.159.json, which is first checked to be exactly what extract_spec.py makes of
# ../shared/x-api/openapi.json (TK_OPENAPI), when that file is at hand. The same for Bluesky: the
# mock's AppView answers validated with Bluesky's own validator, @atproto/lexicon
# (bluesky/validate_bluesky.mjs), against the lexicon documents of the pinned npm package
# @atproto/api, written out at test time into this run's directory (bluesky/lexicons_from_npm.cjs,
# bluesky/needed_lexicons.py: the documents the mock's answers need must all be there; none are
# kept in the repository). Neither source is skipped: a spec that cannot be read fails its check.
# Then Bluesky's official client, @atproto/api, reads the mock's getPosts answers
# (bluesky/client_check.mjs), and each post's CID is recomputed from its record.
# Prints "spec: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../../lib/common.sh"
here="$TK_ROOT/tests/mock_api/spec"
tk_workdir spec
# tally FILE RC WHAT: counts FILE's "ok - " and "not ok - " lines (printed first) into the suite's;
# a checker that exited non-zero without a "not ok" line failed too (it did not run to the end).
tally() {
  local line before=$TK_FAILED
  cat "$1"
  while IFS= read -r line; do
    case "$line" in
      "ok - "*) TK_PASSED=$((TK_PASSED + 1)) ;;
      "not ok - "*) TK_FAILED=$((TK_FAILED + 1)) ;;
    esac
  done <"$1"
  if [ "$2" -ne 0 ] && [ "$TK_FAILED" -eq "$before" ]; then
    tk_fail "$3 ran to the end" "$(tail -5 "$1")"
  fi
}
# npm_ci FOLDER PREFIX LOG: the npm packages FOLDER's package-lock.json pins, installed with npm ci
# into PREFIX (once per build directory: again only when the lock file differs), npm's output in LOG.
npm_ci() {
  if ! cmp -s "$here/$1/package-lock.json" "$2/package-lock.json" || [ ! -d "$2/node_modules" ]; then
    rm -rf "$2" && mkdir -p "$2" && cp "$here/$1/package.json" "$here/$1/package-lock.json" "$2/" &&
      (cd "$2" && npm ci --no-audit --no-fund --loglevel=error) >"$3" 2>&1
  fi
}
openapi=${TK_OPENAPI:-$TK_ROOT/../shared/x-api/openapi.json}
if [ -f "$openapi" ]; then
  if out=$(/usr/bin/python3 "$here/extract_spec.py" --check "$here/x-api-tweets-2.159.json" "$openapi" 2>&1); then
    tk_pass "the extract is exactly what $(basename "$openapi") gives"
  else
    tk_fail "the extract is exactly what $(basename "$openapi") gives" "$out"
  fi
else
  # (X's OpenAPI description is a reference kept beside the repository, never copied into it: a
  # clone with nothing beside it skips this one check, by name.)
  tk_skip "the extract is exactly what X's openapi.json gives" "$openapi is not here (set TK_OPENAPI)"
fi
tk_mock_start "$dir/mock.log" --deleted-every 53 --protected-every 61 --omitted-every 97 --rate-limit 3 \
  --compliance-upload-seconds 8 --compliance-processing-ms 300 \
  --mastodon-host a.social=0 --mastodon-host old.social=0 --mastodon-host locked.social=0 \
  --jetstream-port 0 --jetstream-rate 100 --follow-delete-every 5 --follow-rate 20 || exit 1
jetstream_url=$(sed -n 's/^tweetkeeper-mock-api jetstream listening on \(ws[^ ]*\).*/\1/p' "$dir/mock.log.out")
/usr/bin/python3 "$here/validate_answers.py" "$here/x-api-tweets-2.159.json" "$TK_MOCK_URL" >"$dir/out" 2>&1
tally "$dir/out" $? validate_answers.py
# X's most-used JavaScript client, twitter-api-v2 1.29.1 (pinned whole by x/package-lock.json;
# npm ci once per build directory into build/npm-x), reads every kind of answer from a mock of
# its own (x/client_check.mjs names the options and tokens it needs: edited tweets, gzip-compressed
# answers, a window of 4 requests, a monthly cap of 150 posts; each check its own token).
x_npm=$TK_BUILD/npm-x
npm_ci x "$x_npm" "$dir/npm-x.log"
main_mock=$TK_MOCK_URL main_mock_pid=$TK_MOCK_PID
if tk_mock_start "$dir/mock-x.log" --deleted-every 53 --protected-every 61 --omitted-every 97 --edited-every 43 \
  --gzip-every 2 --rate-limit 4 --monthly-cap 150 --token tk-read --token tk-window --token tk-cap \
  --token tk-revoked --token tk-bad --token tk-comply --compliance-processing-ms 300; then
  node "$here/x/client_check.mjs" "$x_npm" "$TK_MOCK_URL" >"$dir/x-client" 2>&1 ||
    { rc=$?; tail -3 "$dir/npm-x.log" 2>/dev/null | sed 's/^/# npm: /' >>"$dir/x-client"; (exit $rc); }
  tally "$dir/x-client" $? x/client_check.mjs
else
  tk_fail "a second mock for twitter-api-v2 starts" "$(tail -5 "$dir/mock-x.log")"
fi
TK_MOCK_URL=$main_mock TK_MOCK_PID=$main_mock_pid
# The npm packages the Bluesky checks read, pinned whole by bluesky/package-lock.json (npm ci,
# once per build directory, into build/npm-atproto: warc.sh may install into build/npm at the
# same time): Bluesky's client @atproto/api 0.20.41, the lexicon validator it validates with,
# @atproto/lexicon 0.7.19, and @ipld/dag-cbor, the data model's encoder, to recompute each
# record's CID.
npm_prefix=$TK_BUILD/npm-atproto
npm_ci bluesky "$npm_prefix" "$dir/npm.log"
# The lexicon documents the Bluesky checks validate against: those @atproto/api 0.20.41 carries,
# written out into this run's directory, of which the ones the mock's answers need (getPosts,
# resolveHandle, a follower's reads, a post's record and embeds, and all they refer to) are
# copied into $dir/lexicons; a document missing from the package fails here.
node "$here/bluesky/lexicons_from_npm.cjs" "$npm_prefix" "$dir/lexicons-npm" >"$dir/lexicons.log" 2>&1 ||
  cat "$dir/npm.log" "$dir/lexicons.log" 2>/dev/null | tail -5 | sed 's/^/# /'
if out=$(/usr/bin/python3 "$here/bluesky/needed_lexicons.py" "$dir/lexicons-npm" "$dir/lexicons" 2>&1); then
  tk_pass "@atproto/api 0.20.41 (npm) holds every lexicon document the mock's answers need ($out)"
else
  tk_fail "@atproto/api 0.20.41 (npm) holds every lexicon document the mock's answers need" "$out"
fi
# Every answer through Bluesky's lexicon validator, and the AppView's ways no schema says.
node "$here/bluesky/validate_bluesky.mjs" "$npm_prefix" "$dir/lexicons" "$TK_MOCK_URL" >"$dir/bsky" 2>&1
tally "$dir/bsky" $? validate_bluesky.mjs
# Bluesky's own client reads every answer (and checks it against the lexicons); the CIDs are the
# records'.
node "$here/bluesky/client_check.mjs" "$npm_prefix" "$TK_MOCK_URL" >"$dir/client" 2>&1 ||
  { rc=$?; tail -3 "$dir/npm.log" 2>/dev/null | sed 's/^/# npm: /' >>"$dir/client"; (exit $rc); }
tally "$dir/client" $? client_check.mjs
# Bluesky's Jetstream: @skyware/jetstream 0.2.5, a client of the ecosystem (with ws 8.18.3; both
# pinned whole by jetstream/package-lock.json; npm ci once per build directory into
# build/npm-jetstream), replays, follows live, updates its options; each record through
# @atproto/lexicon against the lexicons written out above. Then the engagement of registered posts
# (likes, reposts, replies, quotes, their deletes) amid --jetstream-rate's traffic: net counts
# against getPosts' at its Date second.
js_prefix=$TK_BUILD/npm-jetstream
npm_ci jetstream "$js_prefix" "$dir/npm-jetstream.log"
node "$here/jetstream/client_check.mjs" "$js_prefix" "$npm_prefix" "$dir/lexicons" "$TK_MOCK_URL" "$jetstream_url" \
  >"$dir/jetstream" 2>&1 || { rc=$?; tail -3 "$dir/npm-jetstream.log" 2>/dev/null | sed 's/^/# npm: /' >>"$dir/jetstream"; (exit $rc); }
tally "$dir/jetstream" $? jetstream/client_check.mjs
# Mastodon: masto, a Mastodon client library (8.0.0, pinned whole by mastodon/package-lock.json;
# npm ci once per build directory into build/npm-mastodon), talks to three of the mock's servers
# at the roots of their own ports (--mastodon-host: 4.5, 4.2 and one in authorized-fetch mode) and
# checks every entity it reads against the attributes the documentation lists
# (mastodon/entities-2903485d.json). That file is first checked to be what extract_entities.py
# reads in a mastodon/documentation checkout (TK_MASTODON_DOCS); without one that check is
# reported as skipped (tk_skip: counted on the "# skipped" line after the summary).
masto_prefix=$TK_BUILD/npm-mastodon
npm_ci mastodon "$masto_prefix" "$dir/npm-mastodon.log"
if [ -n "${TK_MASTODON_DOCS:-}" ]; then
  if out=$(/usr/bin/python3 "$here/mastodon/extract_entities.py" --check "$here/mastodon/entities-2903485d.json" "$TK_MASTODON_DOCS" 2>&1); then
    tk_pass "the Mastodon entity extract is exactly what $TK_MASTODON_DOCS gives"
  else
    tk_fail "the Mastodon entity extract is exactly what $TK_MASTODON_DOCS gives" "$out"
  fi
else
  tk_skip "the Mastodon entity extract is exactly what the documentation gives" "TK_MASTODON_DOCS names no mastodon/documentation checkout"
fi
masto_urls=()
for host in a.social old.social locked.social; do
  masto_urls+=("$(tk_mock_mastodon_url "$dir/mock.log" "$host")")
done
node "$here/mastodon/client_check.mjs" "$masto_prefix" "$here/mastodon/entities-2903485d.json" "${masto_urls[@]}" \
  >"$dir/masto" 2>&1 || { rc=$?; tail -3 "$dir/npm-mastodon.log" 2>/dev/null | sed 's/^/# npm: /' >>"$dir/masto"; (exit $rc); }
tally "$dir/masto" $? mastodon/client_check.mjs
tk_summary spec
