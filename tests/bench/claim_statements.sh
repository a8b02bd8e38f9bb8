#!/usr/bin/env bash
# Where a Bluesky claim's time goes, statement by statement, at a given queue size:
#   tests/bench/claim_statements.sh 30000
#   tests/bench/claim_statements.sh 3000000
# N Bluesky posts by DID, all due; one pgbench session claims PRE batches (each claim its own
# transaction, its posts then put off an hour), then MEASURED more with auto_explain logging the
# duration of every statement inside claim_posts (no analyze: no timing per plan node). Prints,
# per statement, its mean duration. Compare two sizes run one after the other: the machine's hour
# moves every number. HUGE_PAGES=on needs vm.nr_hugepages set for SHARED_BUFFERS.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
N=${1:?usage: claim_statements.sh NUMBER_OF_POSTS}
tk_defaults PRE=500 MEASURED=300 SHARED_BUFFERS=4GB HUGE_PAGES=try
[ $((N / 25)) -gt $((PRE + MEASURED)) ] || { echo "$N posts run dry in $((PRE + MEASURED)) claims of 25" >&2; exit 2; }

tk_workdir statements
tk_pg_start "$dir" -c shared_buffers="$SHARED_BUFFERS" -c max_wal_size=8GB -c huge_pages="$HUGE_PAGES" >/dev/null || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
ALTER DATABASE tweetkeeper SET tweetkeeper.max_ids_per_call = 10000000;
$(tk_tid_sql)
$(tk_bluesky_posts_sql '2 hours' "$N" '1 microsecond')
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 second';
INSERT INTO tweetkeeper.endpoints (endpoint, answered_at) VALUES ('bluesky', now());
VACUUM ANALYZE tweetkeeper.tweets;
CHECKPOINT;
CREATE FUNCTION public.claim_one() RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE l bigint;
BEGIN
  SELECT lease_id INTO l FROM tweetkeeper.claim_posts('statements', 25, 'bluesky');
  UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 hour', lease_id = NULL
   WHERE tweet_id = ANY ((SELECT tweet_ids FROM tweetkeeper.batches WHERE lease_id = l)::bigint[]);
END \$\$;
SQL
echo "SELECT public.claim_one();" >"$dir/claim.sql"
pgbench -n -c 1 -t "$PRE" -f "$dir/claim.sql" >/dev/null 2>&1 || { echo "pgbench failed" >&2; exit 1; }
tk_psql -c "LOAD 'auto_explain'" -c "ALTER SYSTEM SET session_preload_libraries = 'auto_explain'" \
  -c "ALTER SYSTEM SET auto_explain.log_min_duration = 0" -c "ALTER SYSTEM SET auto_explain.log_nested_statements = on" \
  -c "SELECT pg_reload_conf()" >/dev/null || exit 1
pgbench -n -c 1 -t "$MEASURED" -f "$dir/claim.sql" >/dev/null 2>&1 || { echo "pgbench failed" >&2; exit 1; }
echo "# $N posts, $PRE claims before, $MEASURED measured; mean ms per statement (auto_explain, no analyze)"
python3 - "$dir/pg/server.log" <<'PY'
import collections, re, sys
total, count = collections.defaultdict(float), collections.Counter()
lines = open(sys.argv[1]).read().split('\n')
for i, line in enumerate(lines):
    m = re.search(r'duration: ([0-9.]+) ms\s+plan:', line)
    if m and i + 1 < len(lines):
        q = re.sub(r'\s+', ' ', lines[i + 1].replace('Query Text:', '').strip())[:70]
        total[q] += float(m.group(1))
        count[q] += 1
for q, t in sorted(total.items(), key=lambda x: -x[1]):
    if 'claim_one' not in q and 'interval \'1 hour\'' not in q:
        print(f"{t / count[q]:8.3f} ms x {count[q]:4d}  {q}")
PY
