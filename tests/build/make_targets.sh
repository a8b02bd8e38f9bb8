#!/usr/bin/env bash
# The Makefile's promises about packages: a plain `make`, `make install` and `make installcheck`
# never run the package installer (a user without root, or with the packages from elsewhere,
# can build); `make check`, `make demo` and the `make bench` targets do. Read from `make -n` (nothing runs).
# Each target's plan must first be there: `make -n` exits 0 and shows the target's own step (a
# Makefile that `make -n` cannot read, or a target gone, fails here rather than "installs
# nothing"). Prints "build: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
cd "$TK_ROOT"
# plan TARGET STEP: make -n TARGET's output in $out; fails, saying why in $why, unless make -n
# exits 0 and the plan has a line starting with STEP (the command the target is for).
plan() {
  local rc
  # As a user types it: not as a sub-make of make check, whose MAKELEVEL and MAKEFLAGS would have
  # make print "Entering directory" before the plan.
  out=$(env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS make --no-print-directory -n "$1" 2>&1)
  rc=$?
  why="make -n $1: exit $rc; no line starting with '$2' in its plan: $(tail -3 <<<"$out")"
  [ "$rc" = 0 ] && grep -q "^$2" <<<"$out"
}
# TARGET STEP: the step each target's plan must show.
while read -r target step; do
  if plan "$target" "$step"; then
    ! grep -q '^scripts/install-deps.sh' <<<"$out"
    tk_ok "make $target ($step ...) does not install packages" $? "$(grep -m1 -n '^scripts/install-deps.sh' <<<"$out")"
  else
    tk_fail "make $target ($step ...) does not install packages" "$why"
  fi
done <<'TARGETS'
all make TK_PGXS=1
install make TK_PGXS=1 install
installcheck tests/run-all.sh
TARGETS
while read -r target step; do
  if plan "$target" "$step"; then
    # First: before anything else of the target runs.
    [ "$(head -1 <<<"$out")" = scripts/install-deps.sh ]
    tk_ok "make $target ($step ...) installs what is missing first" $? "$(head -3 <<<"$out")"
  else
    tk_fail "make $target ($step ...) installs what is missing first" "$why"
  fi
done <<'TARGETS'
check tests/run-all.sh
demo scripts/demo.sh
bench tests/bench/release_ab.sh
bench-follow tests/bench/follow.sh
bench-shortage tests/bench/shortage.sh
bench-scale tests/bench/claim_scale.sh
bench-import IDS=1000000 tests/bench/import.sh
bench-hostile tests/bench/hostile.sh
bench-adaptive tests/bench/adaptive.sh
soak tests/bench/soak.sh
TARGETS
tk_summary build
