#!/usr/bin/env bash
# How long `ALTER EXTENSION tweetkeeper UPDATE` from 0.3.0 takes on a large queue, what it locks
# meanwhile, and that it keeps every row. A database made with 0.3.0's own SQL (CREATE EXTENSION
# ... VERSION '0.3.0', this tree's library, as a user's database is between `make install` and
# the update) tracks POSTS posts of five ages (default 10,000,000: 60% X tweets, 30% Bluesky
# posts, 10% Mastodon statuses on 20 servers, as make bench-scale's queue), a tenth of them with
# an observation stored by 0.3.0's claim and completion. Then the update, timed; while it runs, a
# second session records which locks it holds on tweets (what a worker's claim waits for). After
# it: each table's rows (count and a hash of every row over the columns it had before), the
# version, and a claim of each network under the new SQL (X's batch completed too). Fails when a row
# differs or the update fails.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults POSTS=10000000 FROM=0.3.0
tk_defaults "OBSERVED=$((POSTS / 10))"  # after POSTS has its value

tk_workdir upgrade
tk_pg_start "$dir" -c shared_buffers=${SHARED_BUFFERS:-6GB} -c max_wal_size=8GB -c checkpoint_timeout=30min || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper VERSION '$FROM';
ALTER DATABASE tweetkeeper SET tweetkeeper.max_ids_per_call = 10000000;
$(tk_tid_sql)
SQL
t0=$(date +%s)
tk_psql >/dev/null <<SQL || exit 1
$(tk_mixed_queue_sql "$POSTS")
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 second';
SQL
# Observations: 0.3.0's own claim and completion of X batches until OBSERVED are stored.
tk_psql >/dev/null <<SQL || exit 1
DO \$\$
DECLARE
  c record;
  stored bigint := 0;
BEGIN
  WHILE stored < $OBSERVED LOOP
    SELECT * INTO c FROM tweetkeeper.claim_batch('bench', 100);
    EXIT WHEN c.lease_id IS NULL;
    PERFORM tweetkeeper.complete_batch(c.lease_id,
      (SELECT jsonb_agg(jsonb_build_object('id', id, 'retweet_count', id % 7, 'reply_count', 2, 'like_count', id % 11,
              'quote_count', 4, 'bookmark_count', 5, 'impression_count', 6)) FROM unnest(c.tweet_ids) AS id));
    stored := stored + cardinality(c.tweet_ids);
    IF stored % 100000 = 0 THEN COMMIT; END IF;
  END LOOP;
END \$\$;
VACUUM ANALYZE;
CHECKPOINT;
SQL
echo "# $POSTS posts scheduled by $FROM (60% X, 30% Bluesky, 10% Mastodon), $(tk_psql -c "SELECT count(*) FROM tweetkeeper.metric_history") observations stored, in $(( $(date +%s) - t0 )) s"
tk_psql -c "SELECT '# sizes: tweets ' || pg_size_pretty(pg_total_relation_size('tweetkeeper.tweets'))
              || ', post_refs ' || pg_size_pretty(pg_total_relation_size('tweetkeeper.post_refs'))
              || ', the database ' || pg_size_pretty(pg_database_size(current_database()))"

# rows: each table of the extension, its count and a hash of its rows over the columns it has now.
tables=$(tk_tables tweetkeeper r)
declare -A cols
for t in $tables; do
  cols[$t]=$(tk_psql -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
                         WHERE attrelid = 'tweetkeeper.$t'::regclass AND attnum > 0 AND NOT attisdropped")
done
rows() {
  local t
  for t in $tables; do
    tk_psql -c "SELECT '$t', count(*), coalesce(sum(hashtextextended(row(${cols[$t]})::text, 0)), 0)
                  FROM tweetkeeper.$t AS r" || return 1
  done
}
rows >"$dir/before" || exit 1

# The update, with a second session watching its locks on tweets.
(
  while :; do
    tk_psql -c "SELECT DISTINCT l.mode FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                 WHERE l.relation = 'tweetkeeper.tweets'::regclass AND l.granted AND a.query LIKE 'ALTER EXTENSION%'" 2>/dev/null
    sleep 0.1  # sleep-ok: a sample every 0.1 s (not a wait for readiness): the update keeps the cores
  done
) >"$dir/locks" &
watcher=$!
t0=$(date +%s.%N)
tk_psql -c "ALTER EXTENSION tweetkeeper UPDATE" || { kill $watcher; echo "FAIL: the update failed"; exit 1; }
t1=$(date +%s.%N)
kill $watcher
wait $watcher 2>/dev/null
rows >"$dir/after" || exit 1

status=0
echo "update $FROM -> $(tk_psql -c "SELECT extversion FROM pg_extension WHERE extname = 'tweetkeeper'"): $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s on $POSTS posts"
echo "locks it held on tweets, as another session saw them: $(sort -u "$dir/locks" | paste -sd ' ')"
if diff "$dir/before" "$dir/after" >"$dir/diff"; then
  echo "rows: every table's the same ($(awk -F'|' '{ n += $2 } END { print n }' "$dir/before") rows in $(wc -l <"$dir/before") tables)"
else
  echo "FAIL: rows changed:"; cat "$dir/diff"; status=1
fi
# Each network claims once under the new SQL, and the X batch is completed.
for net in x bluesky mastodon; do
  if [ $net = x ]; then
    n=$(tk_psql -c "SELECT tweetkeeper.complete_batch(c.lease_id,
                      (SELECT jsonb_agg(jsonb_build_object('id', id, 'retweet_count', 1, 'reply_count', 2, 'like_count', 3,
                              'quote_count', 4, 'bookmark_count', 5, 'impression_count', 6)) FROM unnest(c.tweet_ids) AS id))
                      FROM tweetkeeper.claim_batch('after-update', 100) c" 2>&1)
  else
    n=$(tk_psql -c "SELECT cardinality(tweet_ids) FROM tweetkeeper.claim_posts('after-update', 20, '$net') WHERE lease_id IS NOT NULL" 2>&1)
  fi
  if [ "${n:-0}" -gt 0 ] 2>/dev/null; then echo "after the update, $net: $n posts $([ $net = x ] && echo claimed and stored || echo claimed)"
  else echo "FAIL: no $net batch after the update: $n"; status=1; fi
done
exit $status
