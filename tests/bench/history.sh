#!/usr/bin/env bash
# make bench: what history costs on disk, 0.1.0 against this version.
#  - Bytes per observation: TWEETS tweets refreshed ROUNDS times through claim_batch and
#    complete_batch (every count different each time), then the history's tables and indexes
#    (all partitions) divided by its rows, in a database made with each version.
#  - Per tweet over its life: the default policy's refresh ages replayed on the mock's metrics
#    (tweetkeeper-history-life), 0.1.0 storing every refresh, this version only those that
#    changed a count; times the bytes per observation.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
TWEETS=${TWEETS:-100000}
ROUNDS=${ROUNDS:-3}
LIFE_TWEETS=${LIFE_TWEETS:-20000}
released=0.1.0
current=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$TK_ROOT/tweetkeeper.control")

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
for v in "$released" "$current"; do
  db="v${v//./_}"
  tk_psql -d postgres -c "CREATE DATABASE $db" || exit 1
  tk_psql -d "$db" -c "CREATE EXTENSION tweetkeeper VERSION '$v'" 2>/dev/null || exit 1
  [ "$v" = "$current" ] && tk_psql -d "$db" -c "SELECT tweetkeeper.create_partitions()" >/dev/null
  tk_psql -d "$db" -c "SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' "$TWEETS"))" >/dev/null || exit 1
  for ((r = 1; r <= ROUNDS; r++)); do tk_psql -d "$db" -c "$refresh_all" || exit 1; done
  tk_psql -d "$db" -c "VACUUM ANALYZE tweetkeeper.metric_history" >/dev/null
  read -r rows size < <(tk_psql -d "$db" -F ' ' -c "
    SELECT (SELECT count(*) FROM tweetkeeper.metric_history),
           coalesce((SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits
                      WHERE inhparent = 'tweetkeeper.metric_history'::regclass), 0)
           + pg_total_relation_size('tweetkeeper.metric_history')")
  bytes[$v]=$(awk "BEGIN { printf \"%.1f\", $size / $rows }")
  echo "$v: $rows observations in $size bytes (heap and indexes): ${bytes[$v]} bytes per observation"
done

ages=$(tk_psql -d "v${current//./_}" -c "
  WITH RECURSIVE life(age) AS (
    SELECT tweetkeeper.first_delay()
    UNION ALL
    SELECT l.age + p.delay FROM life l
      CROSS JOIN LATERAL (SELECT delay FROM tweetkeeper.age_policy WHERE max_age > l.age ORDER BY max_age LIMIT 1) p)
  SELECT extract(epoch FROM age)::bigint FROM life")
read -r _ refreshes _ stored < <(echo "$ages" | "$TK_BUILD/tests/mock_api/tweetkeeper-history-life" --tweets "$LIFE_TWEETS") || exit 1
echo "a tweet's life under the default policy: $refreshes refreshes; of the mock's metrics, $stored observations change a count ($LIFE_TWEETS tweets)"
awk -v r="$refreshes" -v s="$stored" -v b0="${bytes[$released]}" -v b1="${bytes[$current]}" -v v0="$released" -v v1="$current" 'BEGIN {
  before = r * b0; after = s * b1
  printf "history per tweet over its life: %s %.1f kB (%d x %.1f B), %s %.1f kB (%.1f x %.1f B): %.0f%% of before\n",
         v0, before / 1024, r, b0, v1, after / 1024, s, b1, 100 * after / before
  printf "a million tweets a month: %s %.1f GB, %s %.1f GB of history a month\n", v0, before * 1e6 / 2^30, v1, after * 1e6 / 2^30
}'
