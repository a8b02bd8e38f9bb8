#!/usr/bin/env bash
# make bench (issue 39): metrics_at() for POSTS posts (1,000,000 by default) at five ages, the view
# lifespans over them, and tweetkeeper-report of them all. Each post has OBS observations (8) over its first 30 days, as the age
# policy's refreshes would have left them (more in the first hours); half the posts were made six
# weeks ago, their history compacted, the other half this week, their history recent. Target:
# metrics_at within 60 s on this machine. Prints the times and checks the answer is whole (a row
# per post and age, values where the observations say there are).
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults POSTS=1000000 OBS=8
tk_workdir curves-bench
tk_pg_start "$dir" -c shared_buffers=1GB -c max_wal_size=8GB -c work_mem=256MB || exit 1
tk_psql -c "CREATE EXTENSION tweetkeeper" >/dev/null || exit 1
t0=$(date +%s.%N)
# Posts 1..POSTS (X ids; scheduled then made done with their observations in place), the odd ones
# made 42 days ago, the even ones 3 days ago. Observation k of a post at 10 min * 3^k (10 min,
# 30 min, 1.5 h, 4.5 h, 13.5 h, 40.5 h, 5 days, 15 days), cut at now; likes growing to a
# post-dependent ceiling.
tk_psql >/dev/null <<SQL || exit 1
SET session_replication_role = replica;  -- (no triggers: the rows are written as they would stand)
INSERT INTO tweetkeeper.tweets (tweet_id, created_at, state, due_at, delay, updated_at, update_count)
SELECT g, now() - CASE WHEN g % 2 = 1 THEN interval '42 days' ELSE interval '3 days' END, 'done', NULL, NULL, NULL, $OBS
  FROM generate_series(1, $POSTS) g;
INSERT INTO tweetkeeper.metric_history_hot (tweet_id, lease_id, observed_at, retweet_count, reply_count, like_count,
                                            quote_count, bookmark_count, impression_count)
SELECT t.tweet_id, k, t.created_at + interval '10 minutes' * power(3, k), (t.tweet_id % 50) * (k + 1) / $OBS, k,
       (t.tweet_id % 1000) * (k + 1) * (k + 1) / ($OBS * $OBS), 0, 0, (t.tweet_id % 10000) * (k + 1)
  FROM tweetkeeper.tweets t, generate_series(0, $OBS - 1) k
 WHERE t.created_at + interval '10 minutes' * power(3, k) < now();
UPDATE tweetkeeper.tweets t SET updated_at = (SELECT max(observed_at) FROM tweetkeeper.metric_history_hot h WHERE h.tweet_id = t.tweet_id);
SQL
tk_psql -c "SELECT tweetkeeper.create_partitions()" -c "SELECT tweetkeeper.compact_history(1000)" >/dev/null || exit 1
tk_psql -c "VACUUM ANALYZE tweetkeeper.tweets" -c "VACUUM ANALYZE tweetkeeper.metric_history_hot" \
  -c "VACUUM ANALYZE tweetkeeper.metric_history_compact" >/dev/null
made=$(awk "BEGIN { printf \"%.0f\", $(date +%s.%N) - $t0 }")
echo "# $(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets") posts; observations: $(tk_psql -c "SELECT count(*) FROM tweetkeeper.metric_history_hot") recent, $(tk_psql -c "SELECT count(*) FROM tweetkeeper.metric_history_compact") weeks compacted (made in $made s)"

ages="ARRAY['1 hour', '6 hours', '1 day', '7 days', '30 days']::interval[]"
t0=$(date +%s.%N)
out=$(tk_psql -F ' ' -c "SELECT count(*), count(like_interpolated), count(like_count), count(*) FILTER (WHERE like_interpolated IS NULL AND age <= interval '1 day')
                           FROM tweetkeeper.metrics_at(ARRAY(SELECT tweet_id FROM tweetkeeper.tweets), $ages)")
secs=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }")
read -r rows valued observed missing <<<"$out"
echo "# metrics_at: $rows rows in $secs s ($valued with an interpolated value, $observed with an observation at or before; past the last observation the rest)"
tk_ok "metrics_at: a row per post and age ($rows), a value at every age up to a day ($missing missing)" \
  "$([ "$rows" = $((POSTS * 5)) ] && [ "$missing" = 0 ]; echo $?)"
tk_ok "metrics_at: $POSTS posts at five ages in $secs s (target 60 s)" "$(awk -v s="$secs" 'BEGIN { exit !(s <= 60) }'; echo $?)"
t0=$(date +%s.%N)
n=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.lifespans WHERE metric = 'like_count' AND age_90 IS NOT NULL")
secs=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }")
echo "# lifespans of likes: $n posts in $secs s"
# The report of all of them (metrics_at at 13 ages, the lifespans, batches, usage): its time and size.
t0=$(date +%s.%N)
"$TK_BUILD/worker/tweetkeeper-report" --dsn "$TK_DSN" -o "$dir/report.html" 2>"$dir/report.err"
rc=$?
secs=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }")
echo "# tweetkeeper-report of $POSTS posts: $secs s, $(( $(stat -c %s "$dir/report.html" 2>/dev/null || echo 0) / 1024 )) KB"
tk_ok "tweetkeeper-report writes the report of $POSTS posts (exit $rc)" "$([ "$rc" = 0 ] && grep -q "$POSTS posts" "$dir/report.err"; echo $?)" \
  "$(cat "$dir/report.err")"
tk_summary bench-curves
