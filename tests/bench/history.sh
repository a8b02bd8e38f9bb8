#!/usr/bin/env bash
# make bench: what history costs on disk, a release (RELEASED, default 0.1.0) against this version.
#  - Bytes per observation: TWEETS tweets refreshed ROUNDS times through claim_batch and
#    complete_batch (every count different each time), then the history's tables and indexes
#    (all partitions) divided by its rows, in a database made with each version.
#  - Per tweet over its life: the default policy's refresh ages replayed on the mock's metrics
#    (tweetkeeper-history-life), 0.1.0 storing every refresh, this version only those that
#    changed a count; times the bytes per observation.
#  - Compacted (issue 20, target at most 4 kB per tweet life): those lives' stored observations,
#    written into this version's history as a completion would (over 35 days of daily
#    partitions), compacted by compact_history(), read back and compared row by row, and the
#    compacted table (heap, TOAST, key, span index) divided by the tweets; on the mock's metrics and on a
#    profile where every refresh sees one more view (every refresh stored).
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults TWEETS=100000 ROUNDS=3 LIFE_TWEETS=20000
RELEASED=${RELEASED:-0.1.0}  # the release to compare with

tk_workdir history
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=0 || exit 1
refresh_all="DO \$\$
DECLARE c record;
BEGIN
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute';
  LOOP
    SELECT * INTO c FROM tweetkeeper.claim_batch('bench', 100);
    EXIT WHEN c.lease_id IS NULL;
    PERFORM tweetkeeper.complete_batch(c.lease_id, (SELECT jsonb_agg(jsonb_build_object('id', x,
      'retweet_count', (random() * 1e4)::int, 'reply_count', (random() * 1e3)::int, 'like_count', (random() * 1e5)::int,
      'quote_count', (random() * 1e3)::int, 'bookmark_count', (random() * 1e3)::int,
      'impression_count', (random() * 1e7)::int)) FROM unnest(c.tweet_ids) x));
  END LOOP;
END \$\$;"
declare -A bytes
for v in "$RELEASED" "$TK_VERSION"; do
  db="v${v//./_}"
  tk_psql -d postgres -c "CREATE DATABASE $db" || exit 1
  tk_psql -d "$db" -c "CREATE EXTENSION tweetkeeper VERSION '$v'" 2>/dev/null || exit 1
  [ "$v" = "$TK_VERSION" ] && tk_psql -d "$db" -c "SELECT tweetkeeper.create_partitions()" >/dev/null
  tk_psql -d "$db" -c "SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' "$TWEETS"))" >/dev/null || exit 1
  for ((r = 1; r <= ROUNDS; r++)); do tk_psql -d "$db" -c "$refresh_all" || exit 1; done
  # 0.3.0's history is the partitioned table metric_history_hot (and the compacted table, empty
  # here); before, metric_history itself.
  hot=$(tk_psql -d "$db" -c "SELECT coalesce(to_regclass('tweetkeeper.metric_history_hot'), 'tweetkeeper.metric_history')")
  tk_psql -d "$db" -c "VACUUM ANALYZE $hot" >/dev/null
  read -r rows size < <(tk_psql -d "$db" -F ' ' -c "
    SELECT (SELECT count(*) FROM tweetkeeper.metric_history),
           coalesce((SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits
                      WHERE inhparent = '$hot'::regclass), 0)
           + pg_total_relation_size('$hot')")
  bytes[$v]=$(awk "BEGIN { printf \"%.1f\", $size / $rows }")
  echo "$v: $rows observations in $size bytes (heap and indexes): ${bytes[$v]} bytes per observation"
done

ages=$(tk_psql -d "v${TK_VERSION//./_}" -c "
  WITH RECURSIVE life(age) AS (
    SELECT tweetkeeper.first_delay()
    UNION ALL
    SELECT l.age + p.delay FROM life l
      CROSS JOIN LATERAL (SELECT delay FROM tweetkeeper.age_policy WHERE max_age > l.age ORDER BY max_age LIMIT 1) p)
  SELECT extract(epoch FROM age)::bigint FROM life")
read -r _ refreshes _ stored < <(echo "$ages" | "$TK_BUILD/tests/mock_api/tweetkeeper-history-life" --tweets "$LIFE_TWEETS") || exit 1
echo "a tweet's life under the default policy: $refreshes refreshes; of the mock's metrics, $stored observations change a count ($LIFE_TWEETS tweets)"
awk -v r="$refreshes" -v s="$stored" -v b0="${bytes[$RELEASED]}" -v b1="${bytes[$TK_VERSION]}" -v v0="$RELEASED" -v v1="$TK_VERSION" 'BEGIN {
  before = r * b0; after = s * b1
  printf "history per tweet over its life: %s %.1f kB (%d x %.1f B), %s %.1f kB (%.1f x %.1f B): %.0f%% of before\n",
         v0, before / 1024, r, b0, v1, after / 1024, s, b1, 100 * after / before
  printf "a million tweets a month: %s %.1f GB, %s %.1f GB of history a month\n", v0, before * 1e6 / 2^30, v1, after * 1e6 / 2^30
}'

status=0
for profile in mock views; do
  flags=()
  [ "$profile" = views ] && flags=(--views-tick)
  read -r _ refreshes _ stored < <(echo "$ages" | "$TK_BUILD/tests/mock_api/tweetkeeper-history-life" \
    --tweets "$LIFE_TWEETS" --rows "$dir/life-$profile.csv" "${flags[@]}") || exit 1
  db=life_$profile
  tk_psql -d postgres -c "CREATE DATABASE $db" || exit 1
  tk_psql -d "$db" -c "CREATE EXTENSION tweetkeeper" 2>/dev/null || exit 1
  tk_psql -d "$db" >/dev/null <<SQL || exit 1
CREATE TABLE public.staged (tweet_id bigint, lease_id bigint, at_us bigint, retweet_count bigint, reply_count bigint,
                            like_count bigint, quote_count bigint, bookmark_count bigint, impression_count bigint);
\\copy public.staged FROM '$dir/life-$profile.csv' (FORMAT csv)
CREATE TABLE public.life AS
  SELECT tweet_id, lease_id, timestamptz 'epoch' + at_us * interval '1 microsecond' AS observed_at, retweet_count,
         reply_count, like_count, quote_count, bookmark_count, impression_count FROM public.staged;
INSERT INTO tweetkeeper.metric_history_hot SELECT * FROM public.life ORDER BY observed_at;
SELECT tweetkeeper.create_partitions();
VACUUM ANALYZE tweetkeeper.metric_history_hot;
SQL
  read -r hot_bytes < <(tk_psql -d "$db" -c "SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits
                                              WHERE inhparent = 'tweetkeeper.metric_history_hot'::regclass")
  t0=$(date +%s.%N)
  tk_psql -d "$db" -c "SELECT tweetkeeper.compact_history(100000)" >/dev/null || exit 1
  t1=$(date +%s.%N)
  tk_psql -d "$db" -c "VACUUM ANALYZE tweetkeeper.metric_history_compact" >/dev/null
  read -r rows compact_rows compact_bytes same < <(tk_psql -d "$db" -F ' ' -c "
    SELECT (SELECT count(*) FROM public.life), (SELECT count(*) FROM tweetkeeper.metric_history_compact),
           pg_total_relation_size('tweetkeeper.metric_history_compact'),
           NOT EXISTS ((SELECT * FROM public.life EXCEPT ALL SELECT * FROM tweetkeeper.metric_history)
                       UNION ALL (SELECT * FROM tweetkeeper.metric_history EXCEPT ALL SELECT * FROM public.life))")
  awk -v p="$profile" -v n="$LIFE_TWEETS" -v r="$refreshes" -v s="$stored" -v rows="$rows" -v h="$hot_bytes" \
      -v c="$compact_bytes" -v cr="$compact_rows" -v secs="$(awk "BEGIN { print $t1 - $t0 }")" 'BEGIN {
    printf "compacted, %s profile: %.1f of %d refreshes stored per tweet; %d observations: uncompacted %.1f kB, compacted %.2f kB per tweet life (%d rows, %.1f B per observation; compaction %.1f s, %.0f observations/s)\n",
           p, s, r, rows, h / n / 1024, c / n / 1024, cr, c / rows, secs, rows / secs
  }'
  [ "$same" = t ]
  ok=$?
  tk_ok "$profile profile: every observation reads back the same after compaction" $ok
  [ $ok = 0 ] || status=1
  awk -v c="$compact_bytes" -v n="$LIFE_TWEETS" 'BEGIN { exit !(c / n <= 4096) }'
  ok=$?
  tk_ok "$profile profile: at most 4 kB of history per tweet life" $ok
  [ $ok = 0 ] || status=1
done
exit $status
