#!/usr/bin/env bash
# Every `sleep` left in the test scripts says why it is not a wait on the thing itself: a
# comment "# sleep-ok: <why>" on its own line or the line before (a measuring window, an outage
# of a set length, a poll interval inside a wait on a condition, ...). A test that sleeps to
# guess when something has happened fails when the machine is slower than the guess; one that
# waits on a log line, a row, a socket or a pid (tk_wait_until, tk_wait_for in tests/lib/common.sh)
# does not. Reads every shell script under tests/ that git tracks (by .sh or a shell #! line);
# prints each sleep with its reason, and fails for each without one.
# Prints "sleeps: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
cd "$TK_ROOT"
scripts=()
while IFS= read -r f; do
  case $f in
    *.sh) scripts+=("$f") ;;
    *) head -1 "$f" 2>/dev/null | grep -qE '^#!.*\b(ba|da|z)?sh\b' && scripts+=("$f") ;;
  esac
done < <(git ls-files tests)
# One line per sleep command: FILE:LINE:TEXT (comments left out: a line's code ends at the first
# '#' that starts a word; pg_sleep and the like are other words).
found=$(awk '
  FNR == 1 { prev = "" }
  {
    code = $0
    sub(/(^|[ \t])#.*$/, "", code)
    if (code ~ /(^|[^[:alnum:]_.-])sleep([ \t]|$)/) {
      why = ""
      if (match($0, /# sleep-ok: .*/)) why = substr($0, RSTART + 12)
      else if (match(prev, /^[ \t]*# sleep-ok: .*/)) { why = prev; sub(/^[ \t]*# sleep-ok: /, "", why) }
      printf "%s:%d\037%s\037%s\n", FILENAME, FNR, why, code
    }
    prev = $0
  }' "${scripts[@]}")
[ -n "$found" ] || tk_fail "the scripts were read" "nothing found in ${#scripts[@]} scripts: is the pattern broken?"
while IFS=$'\037' read -r where why code; do
  code=$(sed 's/^[ \t]*//' <<<"$code")
  if [ -n "$why" ]; then
    tk_pass "$where: $code  # sleep-ok: $why"
  else
    tk_fail "$where: $code -- no '# sleep-ok: <why>' on its line or the one before: wait on the thing itself (tk_wait_until, tk_wait_for), or say why not"
  fi
done <<<"$found"
echo "# $(grep -c . <<<"$found") sleeps in ${#scripts[@]} shell scripts under tests/"
tk_summary sleeps
