#!/usr/bin/env bash
# The Makefile's promises about packages: a plain `make`, `make install` and `make installcheck`
# never run the package installer (a user without root, or with the packages from elsewhere,
# can build); `make check`, `make demo` and the `make bench` targets do. Read from `make -n` (nothing runs).
# Prints "build: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
cd "$TK_ROOT"
for target in all install installcheck; do
  out=$(make -n "$target" 2>/dev/null)
  ! grep -q '^scripts/install-deps.sh' <<<"$out"
  tk_ok "make $target does not install packages" $?
done
for target in check demo bench bench-follow bench-shortage bench-scale bench-import soak; do
  out=$(make -n "$target" 2>/dev/null)
  grep -q '^scripts/install-deps.sh' <<<"$out"
  tk_ok "make $target installs what is missing first" $?
done
tk_summary build
