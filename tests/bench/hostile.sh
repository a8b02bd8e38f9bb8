#!/usr/bin/env bash
# make bench-hostile (issue 49): what a hostile server's answer of the largest size a worker
# accepts (16 MiB) costs the database's payload comparison, payload_without_counts(): an object
# of a million keys, and an array of a quarter million objects of four keys each (a removed key
# beside a nested object with another), a million keys too; both within the 16 MiB cap as
# compact JSON. Each is built into a table first; the time printed is the call's backend time (the median
# of ROUNDS, minus a pass that only reads the same value), against a target of under a second.
# The PL/pgSQL walk it replaced (0.4.0) took 3 min 42 s for 14,000 small objects in all. Then the
# worker's side of the same comparison, content_hash.cpp, on an object of a million keys: the
# median CPU seconds of tweetkeeper-content-hash-bench (tests/bench/content_hash.cpp, the worker's
# flags: the parse, the canonical text and its md5), against the same target.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults ROUNDS=5 KEYS=1000000
tk_workdir hostile-bench
tk_pg_start "$dir" || exit 1
tk_psql -c "CREATE EXTENSION tweetkeeper" >/dev/null || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE TABLE public.docs (name text, d jsonb);
INSERT INTO public.docs SELECT 'object of $KEYS keys', jsonb_object_agg('k' || g, g) FROM generate_series(1, $KEYS) g;
INSERT INTO public.docs SELECT 'array of $((KEYS / 4)) objects', jsonb_agg(jsonb_build_object('likeCount', g, 'a', jsonb_build_object('viewer', g, 'b', g)))
  FROM generate_series(1, $KEYS / 4) g;
SQL
# ms NAME EXPRESSION: the median backend time of EXPRESSION over the document NAME, in ms.
ms() {
  tk_psql -At <<SQL
CREATE TEMP TABLE t (ms float8);
DO \$\$
DECLARE s timestamptz; ok bool;
BEGIN
  FOR i IN 1 .. $ROUNDS LOOP
    s := clock_timestamp();
    SELECT $2 IS NOT NULL INTO ok FROM public.docs WHERE name = '$1';
    INSERT INTO t VALUES (extract(epoch FROM clock_timestamp() - s) * 1000);
  END LOOP;
END \$\$;
SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)) FROM t;
SQL
}
failed=0
for name in "object of $KEYS keys" "array of $((KEYS / 4)) objects"; do
  read_ms=$(ms "$name" "jsonb_typeof(d)")
  call_ms=$(ms "$name" "tweetkeeper.payload_without_counts(d)")
  net=$((call_ms - read_ms))
  verdict=ok; [ "$net" -lt 1000 ] || { verdict="over the target of 1,000 ms"; failed=1; }
  size=$(tk_psql -Atc "SELECT pg_size_pretty(length(replace(replace(d::text, ', ', ','), ': ', ':'))::bigint) FROM public.docs WHERE name = '$name'")
  echo "payload_without_counts, $name ($size as compact JSON): ${net} ms (call ${call_ms} ms, read ${read_ms} ms, median of $ROUNDS): $verdict"
done
cmake --build "$TK_BUILD" -j2 --target tweetkeeper-content-hash-bench >/dev/null || exit 1
line=$("$TK_BUILD/tests/mock_api/tweetkeeper-content-hash-bench" --keys 1000000 --rounds "$ROUNDS")
cpu=$(sed -n 's/^content_hash: 1000000 keys in \([0-9.]*\) s of CPU.*/\1/p' <<<"$line")
[ -n "$cpu" ] || { echo "content_hash: no time printed by tweetkeeper-content-hash-bench: $line"; exit 1; }
verdict=ok; awk -v s="$cpu" 'BEGIN { exit !(s < 1.0) }' || { verdict="over the target of 1 s"; failed=1; }
echo "content_hash (the worker), object of 1000000 keys: ${cpu} s of CPU, ${line#*CPU }: $verdict"
exit $failed
