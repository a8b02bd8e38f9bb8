#!/usr/bin/env bash
# make bench-scale: does the claim stay index-driven as the queue grows? For each size in SIZES
# (100,000 and 10,000,000 tracked tweets), a fresh queue of tweets of five ages, every one of them
# due (a second after it was made, long ago), under a policy of five delays of 1 to 5 seconds (so that even 100,000 tweets never run
# dry while they are claimed and completed 30,000 a second); then pgbench runs the worker's claim
# + complete for SECONDS with CLIENTS clients, logging every transaction, and the claim order's
# latency percentiles are printed. Target (issue 9): p99 at 10M within 1.5x of p99 at 100k.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
SIZES=${SIZES:-"100000 10000000"}
SECONDS_RUN=${SECONDS_RUN:-15}
CLIENTS=${CLIENTS:-4}

tk_workdir scale
tk_pg_start "$dir" -c shared_buffers=2GB -c max_wal_size=8GB -c checkpoint_timeout=30min || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
DELETE FROM tweetkeeper.age_policy;
INSERT INTO tweetkeeper.age_policy VALUES ('15 minutes', '1 second'), ('1 hour', '2 seconds'),
  ('1 day', '3 seconds'), ('7 days', '4 seconds'), ('30 days', '5 seconds');
SQL
# The worker's claim and complete, in one statement so that a claim that finds nothing due (for
# a moment, at 100,000 tweets) completes nothing instead of aborting pgbench.
cat >"$dir/claim_complete.pgbench" <<'PGB'
WITH c AS (SELECT lease_id, tweet_ids FROM tweetkeeper.claim_batch('pgbench', 100) WHERE lease_id IS NOT NULL)
SELECT tweetkeeper.complete_batch(c.lease_id,
  (SELECT jsonb_agg(jsonb_build_object('id', id, 'retweet_count', 1, 'reply_count', 2, 'like_count', 3,
          'quote_count', 4, 'bookmark_count', 5, 'impression_count', 6)) FROM unnest(c.tweet_ids) AS id))
  FROM c;
PGB
echo "size order p50_ms p99_ms tps"
declare -A p99
for n in $SIZES; do
  per=$((n / 5))
  tk_psql >/dev/null <<SQL || exit 1
TRUNCATE tweetkeeper.tweets, tweetkeeper.metric_history, tweetkeeper.batches;
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '10 minutes' $per 0));
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '30 minutes' $per 20000000));
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '12 hours' $per 40000000));
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '3 days' $per 60000000));
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '20 days' $per 80000000));
VACUUM ANALYZE tweetkeeper.tweets;
CHECKPOINT;
SQL
  for order in lateness due; do
    tk_psql -c "ALTER DATABASE tweetkeeper SET tweetkeeper.claim_order = $order" >/dev/null
    rm -f "$dir"/pgbench_log.*
    (cd "$dir" && pgbench -n -c "$CLIENTS" -j 2 -T "$SECONDS_RUN" -l \
      -f "$dir/claim_complete.pgbench" >"$dir/pgbench.out" 2>&1) || { cat "$dir/pgbench.out"; exit 1; }
    tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$dir/pgbench.out" | head -1)
    # Per-transaction log: column 3 is the latency in microseconds.
    read -r p50 p99v < <(cat "$dir"/pgbench_log.* | awk '{ print $3 / 1000 }' | sort -n |
      awk '{ a[NR] = $1 } END { print a[int(NR * 0.5) + 1], a[int(NR * 0.99) + 1] }')
    echo "$n $order $p50 $p99v $tps"
    p99[$n-$order]=$p99v
  done
done
set -- $SIZES
small=$1
large=${2:-$1}
echo "== result"
echo "lateness claim+complete p99: ${p99[$small-lateness]} ms at $small, ${p99[$large-lateness]} ms at $large" \
  "(ratio $(awk -v a="${p99[$small-lateness]}" -v b="${p99[$large-lateness]}" 'BEGIN { printf "%.2f", b / a }'), target <= 1.5)"
awk -v a="${p99[$small-lateness]}" -v b="${p99[$large-lateness]}" 'BEGIN { exit !(b <= 1.5 * a) }'
