#!/usr/bin/env bash
# A shortage's windows used while posts are due (issue 49). Our window of a credential starts at
# our first claim of it, the API's at the first request it receives, so the two are offset, and a
# request sent at our window's end can reach the API after its window turned: the answer then
# speaks of the API's next window, which is the one our requests now go to. Here, as workers
# would, in one session: a credential's 25 requests of its window claimed (burst), our window
# with 10 of its 60 minutes left; 21 of them answered in the API's window, 3 still in flight, and
# the last answered by the API's next window (begun 10 minutes ago, 24 left). Posts are due: the
# next claim must get the credential now (before: "window used up" for 50 minutes, the API's
# window open and unused), with the API's count less our 3 requests in flight left, and the pace
# counted from no later than the API's window began. Each step waits for the one before (one
# statement after another), and no check depends on the clock's pace.
# Prints "windows: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
# rate WINDOW_END REMAINING: an answer's x-rate-limit-* headers, as complete_batch() takes them.
rate() { echo "jsonb_build_object('limit', 25, 'remaining', $2, 'reset', floor(extract(epoch FROM $1)))"; }
tk_workdir windows
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=0 || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
ALTER DATABASE tweetkeeper SET tweetkeeper.spending = burst;
SELECT tweetkeeper.add_credential('c', 25, interval '1 hour');
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' 3000));
SQL

old_end="(SELECT window_reset_at FROM tweetkeeper.credentials WHERE name = 'c')"
new_end="now() + interval '50 minutes'"
{
  echo "CREATE TEMP TABLE l (n serial, lease bigint, credential text);"
  for _ in $(seq 1 25); do echo "INSERT INTO l (lease, credential) SELECT lease_id, credential FROM tweetkeeper.claim_batch('windows', 100);"; done
  # Our window: 50 of its 60 minutes gone (its requests all claimed).
  echo "UPDATE tweetkeeper.credentials SET window_started_at = now() - interval '50 minutes', window_reset_at = now() + interval '10 minutes';"
  echo "SELECT 'claimed', count(*) FILTER (WHERE credential = 'c'), (SELECT remaining FROM tweetkeeper.credentials) FROM l;"
  echo "SELECT 'used-up', wait_reason FROM tweetkeeper.claim_batch('windows', 100);"
  # 21 answered in the API's window (the last of them: none left), 3 in flight.
  for n in $(seq 1 21); do echo "SELECT tweetkeeper.complete_batch(lease, '[]', '[]', $(rate "$old_end" $((25 - n)))) FROM l WHERE n = $n;"; done
  # The 25th reached the API after its window turned.
  echo "SELECT tweetkeeper.complete_batch(lease, '[]', '[]', $(rate "$new_end" 24)) FROM l WHERE n = 25;"
  echo "SELECT 'window', remaining, window_reset_at = to_timestamp(floor(extract(epoch FROM $new_end))),
               window_started_at <= to_timestamp(floor(extract(epoch FROM $new_end))) - interval '1 hour'
                 AND window_started_at > now() - interval '40 minutes'
          FROM tweetkeeper.credentials;"
  echo "SELECT 'next', lease_id IS NOT NULL, credential, coalesce(wait_reason, '') FROM tweetkeeper.claim_batch('windows', 100);"
} >"$dir/steps.sql"
tk_psql -F ' | ' -f "$dir/steps.sql" >"$dir/out" 2>&1 || { cat "$dir/out"; tk_fail "the steps ran"; }
sed 's/^/# /' "$dir/out" | grep -E '^# (claimed|used-up|window|next)'
line() { grep "^$1 | " "$dir/out" | head -1; }
[ "$(line claimed)" = "claimed | 25 | 0" ]
tk_ok "25 batches claimed with the credential, its window used up" $?
case "$(line used-up)" in *"window used up"*) true ;; *) false ;; esac
tk_ok "a 26th claim waits: the window is used up (the premise)" $?
[ "$(line window)" = "window | 21 | t | t" ]
tk_ok "the API's next window taken as ours: its 24 left less our 3 in flight, its reset, the pace from its start" $? \
  "$(line window)"
[ "$(line next | cut -d'|' -f2-3 | tr -d ' ')" = "t|c" ]
tk_ok "posts due and the API's window open: the next claim goes now, not when its window ends" $? "$(line next)"
tk_summary windows
