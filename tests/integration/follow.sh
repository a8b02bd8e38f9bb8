#!/usr/bin/env bash
# Following accounts on all three networks against the mock's posting accounts
# (tweetkeeper-worker --follow): accounts followed by the URLs people paste, resolved (a missing
# one and a protected one marked, two spellings of one account followed once), and every post the
# mock says a followed account made from the moment it was followed up to the moment its follower
# last read it is tracked exactly once, with its creation time to the millisecond and its first
# refresh due at that time plus the first delay; no post from before the follow, none of anyone
# else. Meanwhile the Mastodon follower is SIGKILLed and another takes its accounts over within
# its lease, and PostgreSQL restarts under the X follower, which reconnects. Two Bluesky followers
# share the accounts, one reading Jetstream uncompressed, the other zstd-compressed with the
# dictionary the mock serves (--jetstream-dictionary): the same check holds for the posts of both.
# The mock answered no request 429, and a quiet account was read less often than the busiest.
# Prints "ok"/"not ok" lines and "follow: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/follow_verify.sh"
RUN_SECONDS=${RUN_SECONDS:-16}
LEASE_S=3

tk_workdir follow
tk_pg_start "$dir" || exit 1
# One Bluesky post in 5 is deleted 5 s after it was made: Jetstream says so.
tk_mock_start "$dir/mock.log" --follow-accounts 4 --follow-rate 4 --answer-log "$dir/answers" --jetstream-port 0 \
  --follow-delete-every 5 || exit 1
jetstream=$(sed -n 's/.*jetstream listening on \(ws[^ ]*\).*/\1/p' "$dir/mock.log.out")
accounts() { # accounts NETWORK [HOST]: the mock's posting accounts' profile URLs, busiest first
  curl -sf "$TK_MOCK_URL/mock/follow/accounts?network=$1${2:+&host=$2}" |
    python3 -c 'import json,sys; print("\n".join(a["url"] for a in json.load(sys.stdin)["accounts"]))'
}
mapfile -t x_urls < <(accounts x)
mapfile -t b_urls < <(accounts bluesky)
mapfile -t m_urls < <(accounts mastodon a.social)
[ "${#x_urls[@]}" = 4 ] && [ "${#b_urls[@]}" = 4 ] && [ "${#m_urls[@]}" = 4 ] || {
  tk_fail "the mock lists its posting accounts" "x: ${#x_urls[@]}, bluesky: ${#b_urls[@]}, mastodon: ${#m_urls[@]}"
  tk_summary follow
  exit 1
}
m_user=${m_urls[1]##*/@}
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
CREATE ROLE tk_follower LOGIN IN ROLE tweetkeeper_worker;
SELECT tweetkeeper.follow_accounts(ARRAY['${x_urls[0]}', '${x_urls[1]}', 'twitter.com/${x_urls[2]##*/}',
  '${b_urls[0]}', '${b_urls[1]}', 'at://${b_urls[2]##*/}',
  '${m_urls[0]}', '@${m_user}@a.social', '${m_urls[2]}',
  -- a user who never posts, one who does not exist, one whose posts are protected
  'https://x.com/someone_quiet', 'https://x.com/gone_for_good', 'https://x.com/locked_away',
  'https://bsky.app/profile/gone.bsky.social', 'https://a.social/@nobody']);
-- The same Mastodon account by another spelling: followed once.
SELECT tweetkeeper.follow('https://a.social/users/${m_user}');
SQL
n_followed=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.follows")
tk_ok "14 accounts followed, the second spelling of one not again" "$([ "$n_followed" = 14 ]; echo $?)" "$n_followed"

export TWEETKEEPER_BEARER_TOKEN=follow-test-token
common=(--follow --follow-lease $LEASE_S --follow-share 1 --follow-min-poll 1 --follow-max-poll 8 --log-level debug)
follower() { # follower NAME PROVIDER ARGS...: a follower in the background; its pid in $!
  local name=$1 provider=$2
  shift 2
  "$TK_WORKER" --dsn "$TK_DSN user=tk_follower" --name "$name" --provider "$provider" "${common[@]}" "$@" \
    >"$dir/$name.log" 2>&1 &
  TK_PIDS+=($!)
}
follower x-1 x-v2 --api-url "$TK_MOCK_URL"
x_pid=$!
# Two Bluesky followers of 2 accounts each: one reads the stream compressed.
curl -sf -o "$dir/zstd_dictionary" "$TK_MOCK_URL/mock/jetstream/dictionary" || tk_fail "the mock serves its dictionary" ""
follower bluesky-1 bluesky --api-url "$TK_MOCK_URL" --jetstream-url "$jetstream" --follow-max-accounts 2
b_pid=$!
follower bluesky-z bluesky --api-url "$TK_MOCK_URL" --jetstream-url "$jetstream" --follow-max-accounts 2 \
  --jetstream-dictionary "$dir/zstd_dictionary"
bz_pid=$!
follower mastodon-1 mastodon --instance "a.social=$TK_MOCK_URL/mastodon/a.social"
m1_pid=$!
# A second Mastodon follower stands by: the first holds every account.
follower mastodon-2 mastodon --instance "a.social=$TK_MOCK_URL/mastodon/a.social"
m2_pid=$!

tk_wait_for 20 "SELECT count(*) FILTER (WHERE status = 'resolving') = 0 AND count(*) FILTER (WHERE posts_found > 0) >= 9
                  FROM tweetkeeper.follows" ||
  tk_fail "every account resolved and the posting ones' posts found within 20 s" "$(tk_psql -c 'TABLE tweetkeeper.follows')"
holder=$(tk_psql -c "SELECT string_agg(DISTINCT follower, ',') FROM tweetkeeper.follows WHERE network = 'mastodon' AND status = 'following'")
[ "$holder" = mastodon-2 ] && { t=$m1_pid; m1_pid=$m2_pid; m2_pid=$t; }
kill -KILL "$m1_pid"
killed_at=$(date +%s.%N)
tk_wait_for 15 "SELECT bool_and(follower IS NOT NULL AND follower <> '$holder')
                  FROM tweetkeeper.follows WHERE network = 'mastodon' AND status = 'following'"
took=$(awk -v a="$killed_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
moved=$(tk_psql -c "SELECT string_agg(DISTINCT coalesce(follower, '-'), ',') FROM tweetkeeper.follows WHERE network = 'mastodon' AND status = 'following'")
tk_ok "the killed Mastodon follower's accounts went to the other within its lease ($LEASE_S s) and a renewal: ${took} s" \
  "$([ "$moved" != "$holder" ] && [ "$moved" != - ] && awk -v t="$took" -v l=$LEASE_S 'BEGIN { exit !(t <= l + 3) }'; echo $?)" "$moved after $took s"
# The stream drops (no close frame): the Bluesky follower reconnects from its position.
curl -sf -X POST "$TK_MOCK_URL/mock/jetstream/drop" >/dev/null
tk_pg_stop "$dir" fast >/dev/null
sleep 1 # sleep-ok: the outage's length is the fault injected (PostgreSQL down for a moment: the followers' reads fail or wait, none is lost)
tk_pg_start "$dir" >/dev/null || { tk_fail "PostgreSQL restarts" ""; tk_summary follow; exit 1; }
sleep "$RUN_SECONDS" # sleep-ok: the run: the mock's accounts post over it, and what they made is verified after
# The compressed follower's accounts' posts are among those checked below: it holds accounts
# that post (checked while it holds them), and the mock served it compressed events (on each of
# its connections: the first and the drop's reconnection).
zstd_found=$(tk_psql -c "SELECT coalesce(sum(posts_found), 0) FROM tweetkeeper.follows
                           WHERE network = 'bluesky' AND follower = 'bluesky-z' AND status = 'following'")
for p in "$x_pid" "$b_pid" "$bz_pid" "$m2_pid"; do kill -TERM "$p" 2>/dev/null; done
for p in "$x_pid" "$b_pid" "$bz_pid" "$m2_pid"; do
  tk_wait_exit "$p" 20
  tk_ok "follower $p stopped with exit 0" "$([ "$TK_RC" = 0 ]; echo $?)" "exit $TK_RC"
done
tk_ok "the X follower reconnected after the restart" "$(grep -q 'database connection' "$dir/x-1.log"; echo $?)" "$(tail -5 "$dir/x-1.log")"

# The statuses: quiet and posting accounts following, the missing and the protected marked.
states=$(tk_psql -c "SELECT string_agg(coalesce(handle, account) || '=' || status, ' ' ORDER BY network, handle)
                       FROM tweetkeeper.follows WHERE status <> 'following' OR handle = 'someone_quiet'")
tk_ok "missing and private accounts marked, the quiet one followed" \
  "$([ "$states" = "gone.bsky.social=missing nobody=missing gone_for_good=missing locked_away=private someone_quiet=following" ]; echo $?)" "$states"

# Every post made while followed tracked once, as made (tests/lib/follow_verify.sh).
tk_follow_verify 30
wrongly=$(tk_psql -c "SELECT count(*) FROM public.made_keys m JOIN tweetkeeper.tweets t USING (tweet_id)
  WHERE m.deleted_ms = 0 AND t.state = 'deleted'")
tk_ok "no post that stands is marked deleted" "$([ "$wrongly" = 0 ]; echo $?)" "$wrongly"
for b in bluesky-1 bluesky-z; do
  reconnected=$(grep -c "Jetstream: reconnected" "$dir/$b.log")
  tk_ok "the Bluesky follower $b reconnected to the dropped stream" "$([ "$reconnected" -ge 1 ]; echo $?)" "$(tail -3 "$dir/$b.log")"
done
zstd_subscriptions=$(grep -c "jetstream: a zstd-compressed subscription" "$dir/mock.log")
tk_ok "the compressed Bluesky follower found posts ($zstd_found) on $zstd_subscriptions compressed subscriptions" \
  "$([ "$zstd_found" -gt 0 ] && [ "$zstd_subscriptions" -ge 2 ]; echo $?)" "$(grep -i 'jetstream' "$dir/bluesky-z.log" | tail -3)"
b_polls=$(grep -c "getAuthorFeed" "$dir/answers")
b_accounts=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.followed_accounts WHERE network = 'bluesky' AND status = 'following'")
tk_ok "Bluesky's posts came from the stream: one feed read per account, to fill its gap ($b_polls for $b_accounts)" \
  "$([ "$b_polls" -le "$b_accounts" ]; echo $?)"
lookups=$(grep -c "app.bsky.actor.getProfile" "$dir/answers")
batched=$(grep -c "app.bsky.actor.getProfiles?actors=.*&actors=" "$dir/answers")
tk_ok "Bluesky's 4 accounts (one missing) resolved by one getProfiles request per follower ($batched of $lookups lookups)" \
  "$([ "$lookups" = 2 ] && [ "$batched" = 2 ]; echo $?)" "$(grep "app.bsky.actor.getProfile" "$dir/answers")"

# X bills each post a timeline returns: the database counted what the mock billed, no more, no less.
mock_billed=$(curl -sf "$TK_MOCK_URL/mock/stats" | python3 -c '
import hashlib, json, sys
print(json.load(sys.stdin)["billed"].get(hashlib.sha256(b"follow-test-token").hexdigest()[:12], 0))')
db_billed=$(tk_psql -c "SELECT coalesce(sum(billed_reads), 0) FROM tweetkeeper.daily_usage WHERE provider = 'x-v2'")
tk_ok "the X follower's billed reads in daily_usage are the mock's ($db_billed, $mock_billed)" \
  "$([ "$db_billed" = "$mock_billed" ] && [ "$db_billed" -gt 0 ]; echo $?)"

# Requests: no 429, and the quiet account read less often than the busiest.
n429=$(awk '$2 == 429' "$dir/answers" | wc -l)
tk_ok "the mock answered no request 429" "$([ "$n429" = 0 ]; echo $?)" "$n429"
busy=$(tk_psql -c "SELECT account FROM tweetkeeper.follows WHERE network = 'mastodon' AND status = 'following' ORDER BY posts_found DESC LIMIT 1")
quiet=$(tk_psql -c "SELECT account FROM tweetkeeper.follows WHERE network = 'mastodon' AND status = 'following' ORDER BY posts_found LIMIT 1")
n_busy=$(grep -c "/api/v1/accounts/$busy/statuses" "$dir/answers")
n_quiet=$(grep -c "/api/v1/accounts/$quiet/statuses" "$dir/answers")
tk_ok "the quietest Mastodon account was read less often than the busiest ($n_quiet against $n_busy reads)" \
  "$([ "$n_quiet" -lt "$n_busy" ]; echo $?)"
tk_summary follow
