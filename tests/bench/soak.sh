#!/usr/bin/env bash
# make soak: steady refreshing for SOAK_MINUTES (30 by default) with a fast policy, history in
# one-minute partitions kept for RETENTION_MINUTES (3), the background worker doing the
# housekeeping; every minute, the size of every table and index that the run writes to. After a
# warm-up (the first third of the run, at least 5 minutes: the retention must have started
# dropping), every size must stay within 10% of its mean: nothing grows without bound.
# Prints the curve (one line per minute), then per relation: mean, min, max, largest deviation.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults SOAK_MINUTES=30 TWEETS=20000 "DELAY=10 seconds" RETENTION_MINUTES=3 WORKERS=2 SAMPLE_SECONDS=60 LIMIT_PERCENT=10

tk_workdir soak
tk_pg_start "$dir" -c tweetkeeper.history_partition=1min -c "tweetkeeper.history_retention=${RETENTION_MINUTES}min" \
  -c tweetkeeper.housekeeping_interval=20s -c tweetkeeper.batch_retention=1min || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
-- One bucket for the whole run: every tweet refreshed every $DELAY.
DELETE FROM tweetkeeper.age_policy;
INSERT INTO tweetkeeper.age_policy VALUES ('3650 days', '$DELAY');
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 hour' "$TWEETS"));
SQL
tk_mock_start "$dir/mock.log" --threads 8 --rate-limit 100000000 || exit 1
export TWEETKEEPER_BEARER_TOKEN=soak
tk_start_workers "$WORKERS" soak --api-url "$TK_MOCK_URL" --concurrency 4 --log-level warn

# What is measured: each table with its TOAST, and each of its indexes apart (the history as the
# sum of its partitions).
sizes_sql="
SELECT 'tweets (heap)', pg_table_size('tweetkeeper.tweets')
UNION ALL SELECT i.indexrelid::regclass::text, pg_relation_size(i.indexrelid)
  FROM pg_index i WHERE i.indrelid = 'tweetkeeper.tweets'::regclass
UNION ALL SELECT 'metric_history (all partitions)', coalesce(sum(pg_total_relation_size(inhrelid)), 0)::bigint
  FROM pg_inherits WHERE inhparent = 'tweetkeeper.metric_history_hot'::regclass
UNION ALL SELECT 'batches', pg_total_relation_size('tweetkeeper.batches')
UNION ALL SELECT 'credentials', pg_total_relation_size('tweetkeeper.credentials')
UNION ALL SELECT 'daily_usage', pg_total_relation_size('tweetkeeper.daily_usage')"
echo "# $TWEETS tweets every $DELAY, $WORKERS workers, history kept ${RETENTION_MINUTES} min in 1-min partitions, ${SOAK_MINUTES} min"
: >"$dir/sizes.tsv"
start=$SECONDS
for ((m = 1; m <= SOAK_MINUTES; m++)); do
  sleep $((start + m * SAMPLE_SECONDS - SECONDS)) # sleep-ok: sizes are sampled once a minute of the soak
  tk_psql -F $'\t' -c "SELECT $m, * FROM ($sizes_sql) s" >>"$dir/sizes.tsv"
  tk_psql -F ' ' -c "SELECT format('minute %s: %s refreshes/s, history %s rows in %s partitions, tweets %s, lateness idx %s, batches %s', $m,
      (SELECT round(sum(stored) / 60.0) FROM tweetkeeper.batches WHERE finished_at > now() - interval '1 minute'),
      (SELECT count(*) FROM tweetkeeper.metric_history), (SELECT count(*) FROM tweetkeeper.history_partitions),
      pg_size_pretty(pg_table_size('tweetkeeper.tweets')), pg_size_pretty(pg_relation_size('tweetkeeper.tweets_lateness_idx')),
      pg_size_pretty(pg_total_relation_size('tweetkeeper.batches')))"
done
tk_stop_workers

warmup=$((SOAK_MINUTES / 3))
[ "$warmup" -lt 5 ] && warmup=5
echo "== sizes after minute $warmup (warm-up), kB: mean, min, max, largest deviation from the mean (limit ${LIMIT_PERCENT}%)"
awk -F '\t' -v w="$warmup" -v lim="$LIMIT_PERCENT" '
  $1 > w { n[$2]++; s[$2] += $3; if (!($2 in lo) || $3 < lo[$2]) lo[$2] = $3; if ($3 > hi[$2]) hi[$2] = $3 }
  END {
    bad = 0
    for (r in n) {
      mean = s[r] / n[r]
      dev = mean > 0 ? 100 * ((hi[r] - mean > mean - lo[r]) ? hi[r] - mean : mean - lo[r]) / mean : 0
      # Relations of a few pages move by a page at a time; 64 kB of slack keeps them from failing on it.
      ok = dev <= lim || hi[r] - lo[r] <= 65536
      printf "%s %-40s %10.0f %10.0f %10.0f %6.1f%%\n", ok ? "ok    " : "not ok", r, mean / 1024, lo[r] / 1024, hi[r] / 1024, dev
      if (!ok) bad++
    }
    exit bad > 0
  }' "$dir/sizes.tsv" | sort -k2 | tee "$dir/verdict.txt"
bad=$(grep -c '^not ok' "$dir/verdict.txt")
samples=$(awk -F '\t' -v w="$warmup" '$1 > w' "$dir/sizes.tsv" | wc -l)
[ "$samples" -gt 0 ] && [ "$bad" -eq 0 ]
tk_ok "every size within ${LIMIT_PERCENT}% of its mean after minute $warmup ($bad relations outside)" $?
tk_summary soak
