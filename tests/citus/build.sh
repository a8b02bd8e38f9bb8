#!/usr/bin/env bash
# Builds Citus from a source tarball and installs it into the local PostgreSQL 15 (Debian has no
# Citus package). CITUS_SRC: the tarball, by default ../shared/citus/citus-12.1.12.tar.gz beside
# this clone. Cached: an install from the same tarball (its sha256, kept beside citus.control) is
# not built again, so only the first make check-citus on a machine pays the ~2.5 minutes.
# Exit 0: installed (or was); 3: no source (the caller skips); anything else: a failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
src=${CITUS_SRC:-$root/../shared/citus/citus-12.1.12.tar.gz}
if [ ! -f "$src" ]; then
  echo "citus: no Citus source at $src (set CITUS_SRC to a citus-12.1.x tarball)" >&2
  exit 3
fi
sharedir=$(pg_config --sharedir)/extension
stamp=$sharedir/citus.tweetkeeper-build
sum=$(sha256sum "$src" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] && [ -f "$(pg_config --pkglibdir)/citus.so" ]; then
  echo "citus: installed from $(basename "$src") already (sha256 ${sum:0:12})"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "citus: building Citus installs it into $(pg_config --pkglibdir): run as root" >&2
  exit 1
fi
"$root/scripts/install-deps.sh" citus
work=$(mktemp -d /tmp/tweetkeeper-citus-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
start=$SECONDS
tar -xzf "$src" -C "$work"
cd "$work"/citus-*
# libcurl only sends Citus's anonymous usage statistics: not wanted on a test cluster.
./configure --without-libcurl PG_CONFIG="$(command -v pg_config)" >"$work/configure.log" 2>&1 \
  || { tail -30 "$work/configure.log" >&2; exit 1; }
make -j"${JOBS:-2}" >"$work/make.log" 2>&1 || { grep -m5 -B2 -A5 'error' "$work/make.log" >&2; exit 1; }
make install >"$work/install.log" 2>&1 || { tail -30 "$work/install.log" >&2; exit 1; }
echo "$sum" >"$stamp"
echo "citus: built and installed $(basename "$src") in $((SECONDS - start)) s"
