#!/usr/bin/env bash
# make demo: a throwaway PostgreSQL with tweetkeeper, the mock X API (or the real one), two
# workers, a few hundred sample tweets, and a live view of them being refreshed; with the mock,
# followers of two accounts of each network whose new posts appear and are refreshed; also,
# also Bluesky posts (scheduled by URL, some by handle) and Mastodon statuses of two servers, a
# worker for each network on the same queue, and what the posts say (payloads kept, exported).
#   DEMO_SECONDS   how long to watch (default 60)
#   TWEETKEEPER_API_URL + TWEETKEEPER_BEARER_TOKEN   use a real API instead of the mock; then
#   DEMO_TWEET_IDS (comma-separated real ids) says which tweets to track.
set -uo pipefail
source "$(dirname "$0")/../tests/lib/common.sh"
DEMO_SECONDS=${DEMO_SECONDS:-60}
tk_workdir demo
trap 'exit 130' INT TERM

if [ -t 1 ]; then bold=$'\033[1m' dim=$'\033[2m' off=$'\033[0m'; else bold= dim= off=; fi
say() { printf '\n%s%s%s\n' "$bold" "$*" "$off"; }
show() { printf '%s%s%s\n' "$dim" "$1" "$off"; tk_psql -c "$1"; }

say "Starting a throwaway PostgreSQL 15 with shared_preload_libraries = 'tweetkeeper' ($dir)"
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=2s -c tweetkeeper.payloads=first || exit 1
if [ -n "${TWEETKEEPER_API_URL:-}" ]; then
  : "${TWEETKEEPER_BEARER_TOKEN:?set TWEETKEEPER_BEARER_TOKEN for the real API}"
  : "${DEMO_TWEET_IDS:?set DEMO_TWEET_IDS to real tweet ids for the real API}"
  api=$TWEETKEEPER_API_URL
  say "Using the real API at $api"
else
  # Each Mastodon server at the root of a port of its own, as a real server is at its own host.
  # Five accounts of each network post now and then (one post a second between them), and the
  # mock's Jetstream streams Bluesky's.
  tk_mock_start "$dir/mock.log" --mastodon-host mastodon.social=0 --mastodon-host fosstodon.org=0 \
    --follow-accounts 5 --follow-rate 1 --jetstream-port 0 || exit 1
  api=$TK_MOCK_URL
  export TWEETKEEPER_BEARER_TOKEN=demo-token
  say "Started the mock X API at $api (no real token given)"
fi

say "CREATE EXTENSION and a demo-speed age policy (the real default refreshes every 2 minutes at best)"
show "CREATE EXTENSION tweetkeeper"
show "DELETE FROM tweetkeeper.age_policy"
show "INSERT INTO tweetkeeper.age_policy VALUES ('10 minutes', '10 seconds'), ('1 day', '20 seconds'), ('30 days', '1 hour')"

say "Scheduling sample tweets"
if [ -n "${TWEETKEEPER_API_URL:-}" ]; then
  show "SELECT tweetkeeper.schedule_tweets('{$DEMO_TWEET_IDS}'::bigint[]) AS scheduled"
else
  # Snowflake ids made at a chosen age: (ms since Twitter's epoch) << 22, plus a sequence.
  for spec in "3 minutes:250:0" "2 hours:120:1000" "45 days:30:2000"; do
    IFS=: read -r age n from <<<"$spec"
    show "SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql "$age" "$n" "$from")) AS \"scheduled, $age old\""
  done
  say "Scheduling Bluesky posts by their URLs (3 minutes, 2 hours and 5 days old; a few by handle, resolved by the worker)"
  tk_psql -c "$(tk_tid_sql)" -c "SELECT tweetkeeper.schedule_posts(ARRAY(
      SELECT format('https://bsky.app/profile/%s/post/%s', CASE WHEN g <= 5 THEN 'alice.bsky.social'
                      -- a DID of one of seven authors (did:plc: and 24 base32 characters)
                      ELSE 'did:plc:' || translate(substr(md5((g % 7)::text), 1, 24), '0189', 'wxyz') END,
                    public.tid(now() - age + g * interval '1 ms', g))
        FROM generate_series(1, 30) g, unnest(ARRAY[interval '3 minutes', '2 hours', '5 days']) age)) AS \"Bluesky posts scheduled\"" || exit 1
  say "Scheduling Mastodon statuses of two servers by their URLs (ids carry their time: milliseconds << 16)"
  tk_psql -c "SELECT tweetkeeper.schedule_posts(ARRAY(
      SELECT format('https://%s/@demo/%s', h, ((extract(epoch FROM now() - age) * 1000)::bigint << 16) + g)
        FROM generate_series(1, 15) g, unnest(ARRAY['mastodon.social', 'fosstodon.org']) h,
             unnest(ARRAY[interval '3 minutes', '2 hours', '5 days']) age)) AS \"Mastodon statuses scheduled\"" || exit 1
fi

say "Starting two workers (tweetkeeper-worker --concurrency 2)"
for w in 1 2; do
  "$TK_WORKER" --dsn "$TK_DSN" --api-url "$api" --concurrency 2 --name "demo-worker-$w" \
    >"$dir/worker-$w.log" 2>&1 &
  TK_PIDS+=($!)
done
if [ -z "${TWEETKEEPER_API_URL:-}" ]; then
  say "Starting a Bluesky worker (tweetkeeper-worker --provider bluesky: no token; the mock answers as the AppView)"
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky --dsn "$TK_DSN" --api-url "$api" --name demo-bluesky \
    >"$dir/worker-bluesky.log" 2>&1 &
  TK_PIDS+=($!)
  say "Starting a Mastodon worker (--provider mastodon: each status from its own server; the mock plays both)"
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider mastodon --dsn "$TK_DSN" --name demo-mastodon \
    --instance "mastodon.social=$(tk_mock_mastodon_url "$dir/mock.log" mastodon.social)" \
    --instance "fosstodon.org=$(tk_mock_mastodon_url "$dir/mock.log" fosstodon.org)" \
    >"$dir/worker-mastodon.log" 2>&1 &
  TK_PIDS+=($!)
fi

if [ -z "${TWEETKEEPER_API_URL:-}" ]; then
  say "Following two accounts of each network (tweetkeeper.follow_accounts: the profile URLs people paste)"
  masto_url=$(tk_mock_mastodon_url "$dir/mock.log" mastodon.social)
  accounts=$(for q in "network=x" "network=bluesky" "network=mastodon&host=mastodon.social"; do
               curl -sf "$api/mock/follow/accounts?$q" | jq -r '.accounts[:2][].url'
             done | sed "s/.*/'&'/" | paste -sd, -)
  show "SELECT tweetkeeper.follow_accounts(ARRAY[$accounts]) AS followed"
  say "Starting a follower per network (tweetkeeper-worker --follow): Jetstream for Bluesky, polling for X and Mastodon"
  "$TK_WORKER" --follow --provider x-v2 --dsn "$TK_DSN" --api-url "$api" --name demo-follow-x --follow-share 1 \
    >"$dir/worker-follow-x.log" 2>&1 &
  TK_PIDS+=($!)
  jetstream=$(sed -n 's/.*jetstream listening on \(ws[^ ]*\).*/\1/p' "$dir/mock.log.out")
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --follow --provider bluesky --dsn "$TK_DSN" --api-url "$api" \
    --jetstream-url "$jetstream" --name demo-follow-bluesky >"$dir/worker-follow-bluesky.log" 2>&1 &
  TK_PIDS+=($!)
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --follow --provider mastodon --dsn "$TK_DSN" --name demo-follow-mastodon \
    --instance "mastodon.social=$masto_url" --follow-share 1 >"$dir/worker-follow-mastodon.log" 2>&1 &
  TK_PIDS+=($!)
fi

# The five most-liked X posts (most posts get few likes or none: the mock's engagement is drawn
# from published measurements, tests/mock_api/README.md).
sample="SELECT tweet_id, state, update_count AS updates, like_count AS likes, retweet_count AS retweets,
               impression_count AS impressions, to_char(updated_at, 'HH24:MI:SS') AS updated,
               to_char(due_at, 'HH24:MI:SS') AS next_due
          FROM tweetkeeper.tweets WHERE state = 'scheduled' ORDER BY like_count DESC NULLS LAST, tweet_id LIMIT 5"
end=$((SECONDS + DEMO_SECONDS))
while ((SECONDS < end)); do
  sleep 10
  say "t+$((DEMO_SECONDS - (end - SECONDS)))s"
  psql -X -c "SELECT network, state, tweets, due_now, in_flight, max_lateness FROM tweetkeeper.queue_stats WHERE tweets > 0"
  psql -X -c "SELECT network, window_name, batches, tweets_stored, tweets_per_second, avg_batch_size, full_batches FROM tweetkeeper.batch_stats"
  psql -X -c "$sample"
  psql -X -c "SELECT network, count(*) AS posts, sum(update_count) AS refreshes, max(updated_at)::time(0) AS last_update
                FROM tweetkeeper.posts GROUP BY network ORDER BY network"
  if [ -z "${TWEETKEEPER_API_URL:-}" ]; then
    # Followed accounts: their new posts found the moment they appear, then refreshed like any.
    psql -X -c "SELECT network, handle, posts_found, to_char(newest_post_at, 'HH24:MI:SS') AS newest_post,
                       round(extract(epoch FROM behind))::int AS behind_s, status FROM tweetkeeper.follows ORDER BY 1, 2"
    psql -X -c "SELECT p.network, count(*) AS posts_found_by_following, count(*) FILTER (WHERE p.update_count > 0) AS refreshed,
                       sum(p.update_count) AS refreshes, max(p.like_count) AS max_likes
                  FROM tweetkeeper.posts p WHERE p.created_at >= (SELECT min(since) FROM tweetkeeper.follows)
                 GROUP BY 1 ORDER BY 1"
  fi
  # How counts move: young posts gain fast, day-old ones slowly, old ones hardly at all.
  psql -X -c "SELECT p.network, CASE WHEN now() - p.created_at < interval '1 hour' THEN '1. minutes old'
                                     WHEN now() - p.created_at < interval '1 day' THEN '2. hours old'
                                     ELSE '3. days old' END AS age,
                     count(*) AS posts, round(avg(p.like_count)) AS avg_likes,
                     round(sum(h.gained) / nullif(sum(h.minutes), 0), 1) AS likes_gained_per_minute
                FROM tweetkeeper.posts p
                LEFT JOIN LATERAL (SELECT max(like_count) - min(like_count) AS gained,
                                          extract(epoch FROM max(observed_at) - min(observed_at)) / 60 AS minutes
                                     FROM tweetkeeper.metric_history m WHERE m.tweet_id = p.post_id) h ON true
               WHERE p.state = 'scheduled' GROUP BY 1, 2 ORDER BY 1, 2"
done

say "History of the tweet that moved most often (a row each time a refresh found a count changed; tweets.updated_at says when it was last checked)"
psql -X -c "SELECT observed_at, like_count, retweet_count, impression_count FROM tweetkeeper.metric_history
             WHERE tweet_id = (SELECT h.tweet_id FROM tweetkeeper.metric_history h WHERE h.tweet_id > 0
                                GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1)
             ORDER BY lease_id"
say "What the posts say: their first answers are kept (tweetkeeper.payloads = 'first'); tweetkeeper-export --format csv"
"$TK_BUILD/worker/tweetkeeper-export" --dsn "$TK_DSN" --format csv -o "$dir/posts.csv" 2>&1
psql -X -q -c "CREATE TEMP TABLE said (post_id bigint, network text, url text, created_at text, author text, text text,
                 like_count bigint, retweet_count bigint, reply_count bigint, quote_count bigint, bookmark_count bigint,
                 impression_count bigint, updated_at text, state text)" \
  -c "\\copy said FROM '$dir/posts.csv' WITH (FORMAT csv, HEADER true)" \
  -c "SELECT network, author, left(regexp_replace(text, '<[^>]+>', '', 'g'), 60) AS text, like_count AS likes
        FROM (SELECT *, row_number() OVER (PARTITION BY network ORDER BY post_id % 7, post_id) AS n
                FROM said WHERE text <> '') s WHERE n <= 4 ORDER BY network, n"
say "Why each post is due when it is (tweetkeeper.why_due(); the adaptive policy, tweetkeeper.refresh_policy, would read quiet ones less)"
psql -X -c "SELECT network, policy, reason, count(*) AS posts, min(gap) AS shortest_gap, max(gap) AS longest_gap
              FROM tweetkeeper.why_due() GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
say "What it cost: X bills a post once per UTC day, however often it is read"
psql -X -c "SELECT provider, requests_today, tweets_read_today, billed_reads_today, cost_today FROM tweetkeeper.usage_stats"
say "And what one tweet costs over its life under the default policy (tweetkeeper.tweet_cost())"
psql -X -c "BEGIN" -c "DELETE FROM tweetkeeper.age_policy" \
  -c "INSERT INTO tweetkeeper.age_policy VALUES ('18 minutes', '2 minutes'), ('1 hour', '5 minutes'), ('1 day', '30 minutes'), ('7 days', '6 hours'), ('30 days', '1 day')" \
  -c "SELECT * FROM tweetkeeper.tweet_cost()" -c "ROLLBACK" | grep -v '^BEGIN\|^DELETE\|^INSERT\|^ROLLBACK'
say "The report of what it just tracked: curves, lifespans, timeliness and cost (tweetkeeper-report)"
report=$TK_BUILD/demo-report.html
"$TK_BUILD/worker/tweetkeeper-report" --dsn "$TK_DSN" -o "$report" 2>&1
echo "Open $report in a browser: one file, charts and tables, nothing fetched from the network."
say "Stopping the workers (SIGTERM: they hand back what they hold and exit 0)"
tk_cleanup
tail -n 3 "$dir"/worker-*.log
say "Done. Everything was throwaway; run 'make demo DEMO_SECONDS=300' to watch longer."
