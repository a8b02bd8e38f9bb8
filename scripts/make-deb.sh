#!/usr/bin/env bash
# make deb: the Debian packages postgresql-15-tweetkeeper and tweetkeeper-workers, built with
# Debian's own tooling (dpkg-buildpackage, debhelper, pg_buildext: debian/rules) from a copy of the
# tree in build/deb/ (the files git tracks, or all of them outside a checkout), with a
# debian/changelog written from CHANGELOG.md (scripts/deb-changelog.py), then checked by lintian
# (each tag it still reports is explained in debian/*.lintian-overrides). The packages land in
# build/deb/. Prints their names; exits non-zero when the build fails or lintian reports a tag
# that no override explains.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" tweetkeeper.control)
out=$root/build/deb
src=$out/tweetkeeper-$version
rm -rf "$out"
mkdir -p "$src"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$root" ls-files -z | (cd "$root" && xargs -0 cp --parents -t "$src")
  date=$(git -C "$root" log -1 --format=%cD)
else
  tar -C "$root" --exclude=./build --exclude='./build-*' -cf - . | tar -C "$src" -xf -
  date=$(date -R)
fi
python3 scripts/deb-changelog.py CHANGELOG.md "$version" "$date" >"$src/debian/changelog"
(cd "$src" && dpkg-buildpackage -us -uc -b -j2) >"$out/build.log" 2>&1 || {
  tail -40 "$out/build.log" >&2
  echo "make deb: dpkg-buildpackage failed (the whole log: $out/build.log)" >&2
  exit 1
}
changes=$(ls "$out"/tweetkeeper_"$version"_*.changes)
lintian --fail-on error,warning --info "$changes" >"$out/lintian.log" 2>&1 || {
  cat "$out/lintian.log" >&2
  echo "make deb: lintian reports tags no override explains (debian/*.lintian-overrides)" >&2
  exit 1
}
grep -v '^N:' "$out/lintian.log" | sed 's/^/lintian: /' || true
ls "$out"/*.deb
