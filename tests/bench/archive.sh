#!/usr/bin/env bash
# make bench (issue 22): what keeping more than the counts costs on the end-to-end rate. X
# workers against the mock on loopback, TWEETS due tweets, from the same fresh state each time:
#   off       tweetkeeper.payloads = none (the default)
#   changed   tweetkeeper.payloads = changed, first sight (every payload new: stored)
#   again     the same tweets due again, content unchanged (compared, nothing stored)
#   warc      payloads none, the workers recording every exchange with --warc-dir
# Prints each rate, its ratio to off (target: at least 0.9), and bytes per post of the payloads
# table and of the WARC files.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
TWEETS=${TWEETS:-200000}
WORKERS=${WORKERS:-2}
CONCURRENCY=${CONCURRENCY:-4}

tk_workdir archive-bench
tk_pg_start "$dir" -c shared_buffers=1GB -c max_wal_size=4GB -c checkpoint_timeout=30min || exit 1
tk_psql -c "CREATE EXTENSION tweetkeeper" >/dev/null || exit 1
tk_mock_start "$dir/mock.log" --threads 32 --rate-limit 100000000 || exit 1

fresh_state() {
  tk_psql >/dev/null <<SQL
TRUNCATE tweetkeeper.tweets, tweetkeeper.metric_history_hot, tweetkeeper.metric_history_compact, tweetkeeper.batches,
  tweetkeeper.payloads, tweetkeeper.tombstones, tweetkeeper.edits;
SELECT tweetkeeper.schedule_tweets(ARRAY(
  SELECT (((extract(epoch FROM now() - interval '2 hours') * 1000)::bigint - g / 10 - 1288834974657) << 22) + g
    FROM generate_series(1, $TWEETS) g));
VACUUM ANALYZE tweetkeeper.tweets;
CHECKPOINT;
SQL
}
# run NAME [worker options...]: the workers until idle; prints the rate (posts settled per second
# from the first claim to the last completion).
run() {
  local name=$1 pids=() w
  shift
  tk_psql -c "TRUNCATE tweetkeeper.batches" >/dev/null
  for w in $(seq 1 "$WORKERS"); do
    TWEETKEEPER_BEARER_TOKEN=bench "$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --concurrency "$CONCURRENCY" \
      --name "$name-$w" --exit-when-idle 3 --log-level warn "$@" >"$dir/$name-$w.log" 2>&1 &
    pids+=($!)
    TK_PIDS+=($!)
  done
  for w in "${pids[@]}"; do
    tk_wait_exit "$w" 1200
    [ "$TK_RC" = 0 ] || { echo "worker exited with $TK_RC" >&2; tail -n 5 "$dir/$name"-*.log >&2; exit 1; }
  done
  tk_psql -c "SELECT round(sum(stored) / extract(epoch FROM max(finished_at) - min(claimed_at)))
                FROM tweetkeeper.batches WHERE outcome = 'completed'"
}
ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }

echo "== $TWEETS due X tweets, $WORKERS workers x $CONCURRENCY batches in flight, mock API on loopback"
fresh_state
off=$(run off)
echo "payloads none:             $off updates/s"

fresh_state
tk_psql -c "ALTER DATABASE tweetkeeper SET tweetkeeper.payloads = 'changed'" >/dev/null
changed=$(run changed)
read -r kept bytes < <(tk_psql -F ' ' -c "SELECT count(*), pg_total_relation_size('tweetkeeper.payloads') FROM tweetkeeper.payloads")
echo "payloads changed, new:     $changed updates/s, ratio $(ratio "$changed" "$off") (target >= 0.9); $kept payloads, $((bytes / (kept > 0 ? kept : 1))) bytes per post (table, TOAST and index)"
tk_psql -c "UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE due_at IS NOT NULL" >/dev/null
tk_psql -c "VACUUM ANALYZE tweetkeeper.tweets" -c "CHECKPOINT" >/dev/null
again=$(run again)
kept2=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.payloads")
echo "payloads changed, same:    $again updates/s, ratio $(ratio "$again" "$off") (target >= 0.9); $((kept2 - kept)) payloads more"
tk_psql -c "ALTER DATABASE tweetkeeper SET tweetkeeper.payloads = 'none'" >/dev/null

fresh_state
mkdir -p "$dir/warc"
warc=$(run warc --warc-dir "$dir/warc")
warc_bytes=$(du -sb "$dir/warc" | cut -f1)
echo "WARC recording:            $warc updates/s, ratio $(ratio "$warc" "$off") (target >= 0.9); $((warc_bytes / TWEETS)) bytes per post in $(ls "$dir/warc" | wc -l) files"
