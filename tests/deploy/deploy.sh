#!/usr/bin/env bash
# What operators install beside the extension, checked with the tools that read it:
# promtool check rules and promtool test rules on deploy/prometheus/alerts.yml, and
# systemd-analyze verify (no warnings either: a misspelt setting is only a warning) on the
# worker's unit, pointed at the worker we built. Prints "deploy: N passed, M failed".
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
for setting in 'NoNewPrivileges=yes' 'ProtectSystem=strict' 'DynamicUser=yes' 'LoadCredential=tokens:' 'LoadCredential=pgpass:'; do
  grep -q "^$setting" "$TK_ROOT/deploy/systemd/$unit"
  tk_ok "the unit has $setting" $?
done
! grep -qiE '^Environment=.*(token|password)' "$TK_ROOT/deploy/systemd/$unit"
tk_ok "no secret in its environment" $?
tk_summary deploy
