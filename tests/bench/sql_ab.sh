#!/usr/bin/env bash
# The SQL of the claim and the completion against a release's, on one cluster and one library:
# a database made with the release's frozen script (CREATE EXTENSION tweetkeeper VERSION
# RELEASE) and one made with this tree's, each with TWEETS due X tweets, then ROUNDS rounds that
# each run N claim_batch + complete_batch cycles of 100 (a transaction each) in each database,
# alternating. Measured as the backend's CPU time (utime + stime of /proc/self/stat), not wall
# time: on a shared machine it moves far less with what else runs. Prints each round and the
# ratio of the means (this tree / the release; below 1 is cheaper). For a change to the SQL
# alone (issue 34: the claim's and completion's cut into steps, within 3% of 0.3.0's).
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults RELEASE=0.3.0 TWEETS=100000 N=500 ROUNDS=6

tk_workdir sql-ab
tk_pg_start "$dir" -c shared_buffers=512MB || exit 1
for v in "$RELEASE" "$TK_VERSION"; do
  db=ab_${v//./_}
  tk_psql -d postgres -c "CREATE DATABASE $db" -c "ALTER DATABASE $db SET tweetkeeper.buffer_ttl = 0" || exit 1
  tk_psql -d "$db" -c "CREATE EXTENSION tweetkeeper VERSION '$v'" || exit 1
  tk_psql -d "$db" >/dev/null <<SQL || exit 1
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' "$TWEETS"));
CREATE PROCEDURE public.cycles(n int) LANGUAGE plpgsql AS \$\$
DECLARE c record;
BEGIN
  FOR i IN 1..n LOOP
    SELECT * INTO c FROM tweetkeeper.claim_batch('sql-ab', 100);
    PERFORM tweetkeeper.complete_batch(c.lease_id,
      (SELECT jsonb_agg(jsonb_build_object('id', x, 'like_count', i, 'retweet_count', 1)) FROM unnest(c.tweet_ids) x));
    COMMIT;
  END LOOP;
END \$\$;
SQL
done
# run DB: CPU seconds of its backend per 1,000 cycles, from the same state each time (every tweet
# due, vacuumed).
run() {
  tk_psql -d "$1" -c "UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 hour' - tweet_id % 1000 * interval '1 ms', lease_id = NULL" \
    -c "VACUUM ANALYZE tweetkeeper.tweets" -c "VACUUM ANALYZE tweetkeeper.batches" >/dev/null
  tk_psql -d "$1" <<SQL | tail -1
SET tweetkeeper.spending = burst;
CREATE TEMP VIEW cpu AS SELECT split_part(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ', 12)::bigint
  + split_part(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ', 13)::bigint AS ticks;
CREATE TEMP TABLE t0 AS SELECT ticks FROM cpu;
CALL public.cycles($N);
SELECT round((c.ticks - t0.ticks) / 100.0 * 1000 / $N, 3) FROM cpu c, t0;
SQL
}
declare -a a b
for r in $(seq 1 "$ROUNDS"); do
  a+=("$(run "ab_${RELEASE//./_}")")
  b+=("$(run "ab_${TK_VERSION//./_}")")
  echo "round $r: $RELEASE ${a[-1]} s, $TK_VERSION ${b[-1]} s (backend CPU per 1,000 claim+complete cycles of 100)"
done
echo "${a[*]} | ${b[*]}" | awk -v r="$RELEASE" -v c="$TK_VERSION" '{
  n = 0; for (i = 1; i <= NF && $i != "|"; i++) { sa += $i; n++ }
  for (i = n + 2; i <= NF; i++) sb += $i
  printf "sql-ab: %s %.3f s, %s %.3f s per 1,000 cycles (means of %d rounds), ratio %.3f\n", r, sa / n, c, sb / n, n, sb / sa }'
