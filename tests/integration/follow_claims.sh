#!/usr/bin/env bash
# claim_follows() from two database sessions at once (pgTAP has one session): a Mastodon server's
# window is one budget, so one follower holds all of its accounts. A claim that takes a server
# holds a transaction advisory lock on it until it commits, so that a second claim made meanwhile
# (which cannot see the first one's leases yet) takes none of that server: without the lock it took
# the accounts the first had no room for, and the server was split. And followers started together
# share the servers out: a claim takes half (at least one) of the servers new to it, and locks
# only those, so that a claim made at the same moment takes others.
# Session A is a psql kept open with its transaction; each step waits for A's answer (a line on
# its output), not for a time. Prints "ok"/"not ok" lines and "follow_claims: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"

tk_workdir follow-claims
tk_pg_start "$dir" || exit 1
tk_psql >/dev/null <<'SQL' || exit 1
CREATE EXTENSION tweetkeeper;
CREATE ROLE tk_follower LOGIN IN ROLE tweetkeeper_worker;
SELECT tweetkeeper.follow_accounts(ARRAY['@a@m1.test', '@b@m1.test', '@c@m1.test']);
SQL
claim() { # claim FOLLOWER MAX_ACCOUNTS: SQL for the hosts and handles a claim takes, one line
  echo "SELECT coalesce(string_agg(host || ' ' || handle, ', ' ORDER BY host, handle), '-')
          FROM tweetkeeper.claim_follows('$1', 'mastodon', $2, '1 minute', false);"
}
# Session A, as a follower logs in; its answers come back a line each.
coproc A { psql -X -q -At -v ON_ERROR_STOP=1 -U tk_follower 2>&1; }
ask_a() { # ask_a SQL: A's one-line answer (waits for it: at most 60 s, then "no answer")
  local line
  echo "$1" >&"${A[1]}"
  if read -r -t 60 line <&"${A[0]}"; then echo "$line"; else echo "no answer"; fi
}

# A claims m1.test with room for 2 of its 3 accounts (a server larger than the room: as much as
# fits), and keeps its transaction open.
a_took=$(ask_a "BEGIN; $(claim a 2)")
tk_ok "session A, its transaction open, holds 2 of m1.test's 3 accounts" "$([ "$a_took" = "m1.test a, m1.test b" ]; echo $?)" "$a_took"
# B claims meanwhile, with room for all: A's leases are not committed, so only A's lock on the
# window keeps B from m1.test's third account.
b_took=$(tk_psql -U tk_follower -c "$(claim b 10)" 2>&1)
tk_ok "session B, claiming while A's claim is open, takes none of m1.test (not split)" "$([ "$b_took" = "-" ]; echo $?)" "$b_took"
a_done=$(ask_a "COMMIT; SELECT 'committed';")
b_after=$(tk_psql -U tk_follower -c "$(claim b 10)" 2>&1)
tk_ok "... nor after A committed: A's leases are live" "$([ "$a_done" = committed ] && [ "$b_after" = "-" ]; echo $?)" "$a_done / $b_after"

# Four more servers of one account each, followed now. A claims, its transaction open: half of
# them (and m1.test's third account, now that it has room); B, claiming at the same moment, the
# next ones (A's locks are on the two it took, not on all); A's next claim renews what it holds.
tk_psql -c "SELECT tweetkeeper.follow_accounts(ARRAY['@a@m2.test', '@a@m3.test', '@a@m4.test', '@a@m5.test'])" >/dev/null
a1=$(ask_a "BEGIN; $(claim a 10)")
b1=$(tk_psql -U tk_follower -c "$(claim b 10)" 2>&1)
a_done=$(ask_a "COMMIT; SELECT 'committed';")
a2=$(ask_a "$(claim a 10)")
tk_ok "two followers claiming at once share new servers out: A half of the four, B the others" \
  "$([ "$a1" = "m1.test a, m1.test b, m1.test c, m2.test a, m3.test a" ] && [ "$b1" = "m4.test a, m5.test a" ] &&
     [ "$a_done" = committed ] && [ "$a2" = "$a1" ]; echo $?)" "A: $a1; B: $b1; A: $a_done, $a2"
ask_a '\q' >/dev/null
tk_summary follow_claims
