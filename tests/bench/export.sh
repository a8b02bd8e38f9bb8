#!/usr/bin/env bash
# make bench (issue 22): tweetkeeper-export of POSTS X posts with payloads (1,000,000 by default),
# as twarc2 pages and as CSV: time, output size and the exporter's peak memory (constant: it reads
# through a cursor, 2,000 rows a fetch). About a minute.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
POSTS=${POSTS:-1000000}
tk_workdir export-bench
tk_pg_start "$dir" -c shared_buffers=512MB -c max_wal_size=4GB || exit 1
tk_psql -c "CREATE EXTENSION tweetkeeper" >/dev/null || exit 1
# The posts and, for each, a payload of about the size the mock's tweets have, 100 to a batch.
tk_psql >/dev/null <<SQL || exit 1
SELECT tweetkeeper.schedule_tweets($(tk_floor_ids_sql "$POSTS"));
INSERT INTO tweetkeeper.payloads (tweet_id, seen_at, lease_id, content_hash, payload, author)
SELECT t.tweet_id, now(), row_number() OVER (ORDER BY t.tweet_id) / 100, '\x00',
       jsonb_build_object('id', t.tweet_id::text, 'text', 'Mock tweet ' || t.tweet_id || ' ' || repeat('x', 200),
                          'author_id', (t.tweet_id % 1000)::text, 'edit_history_tweet_ids', jsonb_build_array(t.tweet_id::text),
                          'lang', 'en', 'public_metrics', jsonb_build_object('like_count', 1)),
       jsonb_build_object('id', (t.tweet_id % 1000)::text, 'username', 'u' || t.tweet_id % 1000)
  FROM tweetkeeper.tweets t;
SQL
tk_psql -c "VACUUM ANALYZE tweetkeeper.payloads" -c "VACUUM ANALYZE tweetkeeper.tweets" >/dev/null
echo "== tweetkeeper-export of $POSTS posts with payloads"
for format in twarc2 csv; do
  t0=$(date +%s.%N)
  "$TK_BUILD/worker/tweetkeeper-export" --dsn "$TK_DSN" --format "$format" -o "$dir/out.$format" 2>"$dir/err" &
  pid=$!
  rss=0  # the peak resident set (VmHWM), read until the export ends
  while kill -0 "$pid" 2>/dev/null; do
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
    [ -n "$hwm" ] && [ "$hwm" -gt "$rss" ] && rss=$hwm
    sleep 0.2 # sleep-ok: the sampling interval of the peak RSS, read until the export ends
  done
  wait "$pid" || { cat "$dir/err"; exit 1; }
  secs=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }")
  echo "$format: $secs s, $(( $(stat -c %s "$dir/out.$format") / 1000000 )) MB in $(wc -l <"$dir/out.$format") lines, peak memory $((rss / 1024)) MiB"
done
