#!/usr/bin/env bash
# The adaptive refresh policy live (issue 50): the real extension, a worker and the mock over the
# first minutes of young X posts' lives, under a fast age table, with
# tweetkeeper.refresh_policy = 'adaptive'. Every completion's decision (the post's next due time)
# is logged by a trigger of this test's own; tweetkeeper-adaptive-replay --decide, which calls the
# extension's decision function outside PostgreSQL as make bench-adaptive does, is given the same
# reads and must give the same due times. The counts stored are the mock's truth at that age
# (GET /mock/truth), and the policy read the posts at most as often as the age table would.
# Also: the mock's --engagement FILE (a file's curve answered; a bad file refused, exit 2).
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults POSTS=100 READS=400
tk_workdir adaptive
replay=$TK_BUILD/tests/mock_api/tweetkeeper-adaptive-replay

tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.lease_ttl=30s || exit 1
tk_mock_start "$dir/mock.log" --deleted-every 0 --protected-every 0 || exit 1
# The fast age table, as the replay is told it: max_age=delay in seconds.
table="180=5,900=15,86400=30"
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
ALTER DATABASE tweetkeeper SET tweetkeeper.refresh_policy = 'adaptive';
CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker;
DELETE FROM tweetkeeper.age_policy;
INSERT INTO tweetkeeper.age_policy (max_age, delay, source) VALUES
  ('3 minutes', '5 seconds', 'user'), ('15 minutes', '15 seconds', 'user'), ('1 day', '30 seconds', 'user');
-- Each completion's decision, as it left the row, and the batch it came in.
CREATE TABLE public.decided (tweet_id bigint, created_at timestamptz, at timestamptz, due_at timestamptz,
                             counts bigint[], state text, lease bigint);
CREATE FUNCTION public.log_decision() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  INSERT INTO public.decided VALUES (NEW.tweet_id, NEW.created_at, NEW.updated_at, NEW.due_at,
    ARRAY[NEW.retweet_count, NEW.reply_count, NEW.like_count, NEW.quote_count, NEW.bookmark_count, NEW.impression_count],
    NEW.state, OLD.lease_id);
  RETURN NULL;
END \$\$;
CREATE TRIGGER log_decision AFTER UPDATE ON tweetkeeper.tweets
  FOR EACH ROW WHEN (OLD.lease_id IS NOT NULL AND NEW.lease_id IS NULL AND NEW.updated_at IS DISTINCT FROM OLD.updated_at)
  EXECUTE FUNCTION public.log_decision();
-- Posts made in the last minute, one every half second.
SELECT tweetkeeper.schedule_tweets(ARRAY(
  SELECT (((extract(epoch FROM now() - g * interval '500 milliseconds') * 1000)::bigint - 1288834974657) << 22) + g
    FROM generate_series(1, $POSTS) g));
SQL
export TWEETKEEPER_BEARER_TOKEN=adaptive-test-token
"$TK_WORKER" --dsn "$TK_DSN user=tk_worker_login" --api-url "$TK_MOCK_URL" --concurrency 2 --name adaptive-worker \
  --poll-interval 200 >"$dir/worker.log" 2>&1 &
worker=$!
TK_PIDS+=("$worker")
# Until the posts were read READS times (about 40 s), or two minutes have passed.
tk_wait_for 120 "SELECT count(*) >= $READS FROM public.decided"
kill -TERM "$worker"
tk_wait_exit "$worker" 30
tk_sql_ok "the worker read the posts $READS times or more and exits 0 (exit $TK_RC)" \
  "SELECT count(*) >= $READS AND $TK_RC = 0 FROM public.decided"

# The replay's decisions on the same reads.
us="(extract(epoch FROM %s) * 1000000)::bigint"
tk_psql -c "COPY (SELECT tweet_id, $(printf "$us" created_at), $(printf "$us" at), coalesce(counts[1], -1),
                         coalesce(counts[2], -1), coalesce(counts[3], -1), coalesce(counts[4], -1),
                         coalesce(counts[5], -1), coalesce(counts[6], -1)
                    FROM public.decided ORDER BY tweet_id, at) TO STDOUT WITH (FORMAT text, DELIMITER ' ')" >"$dir/reads.txt"
"$replay" --decide --age-table "$table" <"$dir/reads.txt" >"$dir/replayed.txt" 2>"$dir/replay.err"
rc=$?
tk_psql -c "CREATE TABLE public.replayed (tweet_id bigint, at_us bigint, due_us bigint)" >/dev/null
sed 's/ done$/ \\N/' "$dir/replayed.txt" | tk_psql -c "COPY public.replayed FROM STDIN WITH (DELIMITER ' ')"
tk_sql_ok "the replay decided every read (exit $rc)" \
  "SELECT $rc = 0 AND (SELECT count(*) FROM public.replayed) = (SELECT count(*) FROM public.decided)" \
  "SELECT pg_read_file('$dir/replay.err')"
tk_sql_ok "the live completion's next due times are the replay's, to the microsecond (all $(tk_psql -c "SELECT count(*) FROM public.decided") reads)" \
  "SELECT count(r.tweet_id) = count(*) AND count(*) FILTER (WHERE r.due_us IS DISTINCT FROM $(printf "$us" d.due_at)) = 0
     FROM public.decided d LEFT JOIN public.replayed r ON r.tweet_id = d.tweet_id AND r.at_us = $(printf "$us" d.at)" \
  "SELECT string_agg(format('%s at %s: live %s, replay %s', x.tweet_id, x.at, x.due_at, x.replay), '; ')
     FROM (SELECT d.tweet_id, d.at, d.due_at, to_timestamp(r.due_us / 1e6) AS replay
             FROM public.decided d LEFT JOIN public.replayed r ON r.tweet_id = d.tweet_id AND r.at_us = $(printf "$us" d.at)
            WHERE r.due_us IS DISTINCT FROM $(printf "$us" d.due_at) LIMIT 5) x"
# What the policy decided varied: some posts at the age table's pace, some stretched.
tk_sql_ok "the decisions were of several kinds (the age table's pace and longer)" \
  "SELECT count(DISTINCT reason) FILTER (WHERE reason IN ('age table', 'moving slowly', 'quiet', 'revived', 'same UTC day')) >= 2
     AND count(*) FILTER (WHERE reason <> 'age table' AND policy = 'adaptive' AND state = 'scheduled') > 0
     FROM tweetkeeper.why_due()" "SELECT reason, count(*) FROM tweetkeeper.why_due() GROUP BY 1"
tk_sql_ok "no post was read more often than the age table says (each read at least its delay after the one before)" \
  "SELECT count(*) = 0 FROM (SELECT created_at, at, lag(at) OVER (PARTITION BY tweet_id ORDER BY at) AS prev_at
                               FROM public.decided) g
    WHERE g.prev_at IS NOT NULL AND g.at - g.prev_at < (SELECT p.delay FROM tweetkeeper.age_policy p
                                                        WHERE p.max_age > g.prev_at - g.created_at ORDER BY p.max_age LIMIT 1)"
# The counts stored are the mock's truth at the post's age when it answered: between its batch's
# claim and its completion (whole seconds, the mock's created_at truncated to the second). (It
# allowed the 2 s before the completion once, which a busy make check outran: 4 of 30.)
bad=0; n=0
while read -r id from to counts; do
  n=$((n + 1))
  got=$(curl -s "$TK_MOCK_URL/mock/truth?network=x&key=$id&ages=$(seq -s, "$from" "$to")" |
    python3 -c 'import json,sys; print("\n".join(" ".join(str(p[k]) for k in ("reposts","replies","likes","quotes","bookmarks","views")) for p in json.load(sys.stdin)["points"]))')
  grep -qxF "$counts" <<<"$got" || bad=$((bad + 1))
done < <(tk_psql -F ' ' -c "SELECT d.tweet_id, floor(extract(epoch FROM b.claimed_at - d.created_at))::bigint,
                                  ceil(extract(epoch FROM d.at - d.created_at))::bigint + 1, array_to_string(d.counts, ' ')
                             FROM public.decided d JOIN tweetkeeper.batches b ON b.lease_id = d.lease
                            ORDER BY random() LIMIT 30")
tk_ok "every stored observation checked is the mock's truth at the post's age ($n checked, $bad not)" $(( n == 30 && bad == 0 ? 0 : 1 ))

# The mock's --engagement FILE: its curve for the post it names, the model for the others.
id=$(tk_psql -c "SELECT min(tweet_id) FROM public.decided")
printf 'network,key,age_seconds,reposts,replies,likes,quotes,bookmarks,views\nx,%s,0,0,0,0,0,0,0\nx,%s,5,1,2,30,4,5,600\n' "$id" "$id" >"$dir/curves.csv"
# (No post deleted or protected: the id is any of the run's, and the default fates would hide one in 30.)
tk_mock_start "$dir/mock2.log" --deleted-every 0 --protected-every 0 --engagement "$dir/curves.csv" || exit 1
got=$(curl -s -H 'Authorization: Bearer t' "$TK_MOCK_URL/2/tweets?ids=$id&tweet.fields=public_metrics")
[[ "$got" == *'"retweet_count":1,"reply_count":2,"like_count":30,"quote_count":4'* ]]
tk_ok "the mock answers a post's curve from --engagement FILE" $? "$got"
printf 'x,%s,60,0,0,5,0,0,0\nx,%s,30,0,0,6,0,0,0\n' "$id" "$id" >"$dir/bad.csv"
out=$("$TK_MOCK" --port 0 --engagement "$dir/bad.csv" 2>&1 >/dev/null); rc=$?
[ "$rc" = 2 ] && [[ "$out" == *"line 2: ages of a post must increase"* ]]
tk_ok "a malformed --engagement file stops the mock with exit 2, naming the line (exit $rc)" $? "$out"
tk_summary adaptive
