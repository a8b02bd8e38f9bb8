#!/usr/bin/env bash
# What operators install beside the extension, checked with the tools that read it:
# promtool check rules and promtool test rules on deploy/prometheus/alerts.yml, and
# systemd-analyze verify (no warnings either: a misspelt setting is only a warning) on the
# worker's unit, pointed at the worker we built; its hardening as systemd's security analysis
# reads it, and its credentials as the worker receives them. Prints "deploy: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir deploy
cd "$TK_ROOT/deploy/prometheus" || exit 1
out=$(promtool check rules alerts.yml 2>&1)
tk_ok "promtool check rules deploy/prometheus/alerts.yml" $? "$out"
out=$(promtool test rules alerts_test.yml 2>&1)
tk_ok "promtool test rules: each alert fires when it should and not otherwise" $? "$out"
# A broken expectation must fail the unit test (the test can fail).
sed 's/summary: "tweetkeeper: credential gamma reached its monthly cap"/summary: "wrong"/' alerts_test.yml >"$dir/broken_test.yml"
cp alerts.yml "$dir/"
(cd "$dir" && promtool test rules broken_test.yml >/dev/null 2>&1)
[ $? -ne 0 ]
tk_ok "and a wrong expectation fails it" $?

unit=tweetkeeper-worker@.service
sed "s|/usr/local/bin/tweetkeeper-worker|$TK_WORKER|" "$TK_ROOT/deploy/systemd/$unit" >"$dir/tweetkeeper-worker@test.service"
out=$(systemd-analyze verify --man=no "$dir/tweetkeeper-worker@test.service" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ]
tk_ok "systemd-analyze verify passes on deploy/systemd/$unit, with no warning" $? "$out"
printf '[Service]\nNoNewPrivilegs=yes\n' >>"$dir/tweetkeeper-worker@test.service"
out=$(systemd-analyze verify --man=no "$dir/tweetkeeper-worker@test.service" 2>&1)
[ -n "$out" ]
tk_ok "and a misspelt setting would be caught" $?
exposure=$(systemd-analyze security --offline=true "$dir/tweetkeeper-worker@test.service" 2>/dev/null |
  sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
awk -v e="${exposure:-10}" 'BEGIN { exit !(e <= 2.0) }'
tk_ok "systemd-analyze security rates its exposure ${exposure:-unknown} (at most 2.0: hardened)" $?
# The hardening as systemd reads it (its own security analysis of the unit, not a grep of the
# file): no new privileges, the OS read-only, a transient user.
# (A fresh copy: the one above has the misspelt setting appended.)
sed "s|/usr/local/bin/tweetkeeper-worker|$TK_WORKER|" "$TK_ROOT/deploy/systemd/$unit" >"$dir/tweetkeeper-worker@analysed.service"
security=$(systemd-analyze security --offline=true --json=short "$dir/tweetkeeper-worker@analysed.service" 2>"$dir/analyse.err")
for want in 'NoNewPrivileges=|cannot acquire new privileges' 'ProtectSystem=|strict read-only access' \
            'User=/DynamicUser=|transient non-root user'; do
  name=${want%%|*} says=${want#*|}
  jq -e --arg n "$name" --arg d "$says" 'any(.[]; .name == $n and .set == true and (.description | contains($d)))' \
    <<<"$security" >/dev/null 2>&1
  tk_ok "systemd reads the unit's $name as set: \"$says\"" $? \
    "$(jq -c --arg n "$name" '.[] | select(.name == $n)' <<<"$security" 2>/dev/null || head -c 300 "$dir/analyse.err")"
done
# The secrets systemd hands over: every file of the credentials directory (%d) that ExecStart
# gives the worker is one the unit loads (LoadCredential=NAME:...), and the worker reads the
# tokens from there: its ExecStart, with %d a directory whose tokens file is open to others,
# refuses that file by its path (exit 2), as it would refuse a token file it did not read.
execstart=$(sed -n 's/^ExecStart=//p' "$TK_ROOT/deploy/systemd/$unit")
used=$(grep -o '%d/[A-Za-z0-9_-]*' <<<"$execstart" | sed 's|%d/||' | sort -u | paste -sd ' ')
loaded=$(sed -n 's/^LoadCredential=\([^:]*\):.*/\1/p' "$TK_ROOT/deploy/systemd/$unit" | sort -u | paste -sd ' ')
[ -n "$used" ] && [ "$used" = "$loaded" ]
tk_ok "ExecStart reads from the credentials directory exactly what LoadCredential loads (${used:-nothing}; loaded: ${loaded:-nothing})" $?
mkdir -p "$dir/creds"
printf 'alpha=deploy-test-token\n' >"$dir/creds/tokens"
chmod 644 "$dir/creds/tokens"
: >"$dir/creds/pgpass"
line=${execstart//%d/$dir/creds}
line=${line//%H/host}
line=${line//%i/test}
line=${line//\$\{TWEETKEEPER_DSN\}/host=/nonexistent dbname=tweetkeeper}
line=${line//\$TWEETKEEPER_ARGS/}
eval "args=($line)"
args[0]=$TK_WORKER
out=$(env -i PATH="$PATH" "${args[@]}" 2>&1 </dev/null)
rc=$?
[ "$rc" = 2 ] && grep -qF "credentials file $dir/creds/tokens has mode" <<<"$out"
tk_ok "the worker started as ExecStart says reads its tokens from %d/tokens (an open file there refused, exit $rc)" $? "$out"
! grep -qiE '^Environment=.*(token|password)' "$TK_ROOT/deploy/systemd/$unit"
tk_ok "no secret in its environment" $?
tk_summary deploy
