#!/usr/bin/env bash
# The Debian packages (make deb: build/deb/) installed as an operator installs them, in a fresh
# Debian 12 made for the test by debootstrap from the package source this machine uses (its
# /etc/apt/sources.list.d/debian.sources), in a chroot: `apt install ./postgresql-15-tweetkeeper_*.deb
# ./tweetkeeper-workers_*.deb` pulls every dependency; CREATE EXTENSION works; a worker started as
# the installed unit starts it (its ExecStart, with the unit's specifiers, environment file and
# credentials) refreshes posts from the mock API; a database made with the previous release's
# scripts (0.4.0, which the package carries) is updated by ALTER EXTENSION UPDATE; each program's
# manual page is there; and `apt purge` leaves no file of the packages behind while the user's
# database stays. Needs root (debootstrap, chroot, mounts). Prints "deb-install: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
debs=$TK_ROOT/build/deb
tk_workdir deb-install
root=$dir/root
PGPORT_IN=55439
mounted=()
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
# (tk_finish removes $dir: the chroot's mounts go first, whatever happened.)
unmount_all() {
  local m
  # (The chroot's PostgreSQL, if it was started and is still up: it would keep the test's port.)
  [ -x "$root/usr/bin/pg_ctlcluster" ] && in_root pg_ctlcluster 15 main stop >/dev/null 2>&1
  for ((m = ${#mounted[@]} - 1; m >= 0; m--)); do umount -l "${mounted[m]}" 2>/dev/null; done
  # (Never remove a tree that still has this machine's /proc, /sys or /dev mounted in it.)
  if grep -qF " $root/" /proc/self/mounts; then
    echo "# mounts remain under $root: left in place"
    KEEP=1
  fi
}
trap 'unmount_all; tk_finish' EXIT

ls "$debs"/postgresql-15-tweetkeeper_*.deb "$debs"/tweetkeeper-workers_*.deb >/dev/null 2>&1 || {
  echo "deb-install: no packages in $debs (make deb first)" >&2
  exit 1
}
# The package source this machine uses: the main archive of its debian.sources (or sources.list).
mirror=$(awk '/^URIs:/ { u = $2 } /^Suites:/ && / bookworm( |$)/ { print u; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || { echo "deb-install: no Debian bookworm source in /etc/apt" >&2; exit 1; }

debootstrap --variant=minbase bookworm "$root" "$mirror" >"$dir/debootstrap.log" 2>&1
tk_ok "a fresh Debian 12 (debootstrap --variant=minbase bookworm from $mirror)" $? "$(tail -5 "$dir/debootstrap.log")"
[ -x "$root/bin/bash" ] || exit 1
for m in proc sys dev dev/pts; do
  mount --bind "/$m" "$root/$m" && mounted+=("$root/$m")
done
# (Its apt sources: this machine's, the security updates too, which debootstrap's sources.list lacks.)
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/" && rm -f "$root/etc/apt/sources.list"
else
  cp /etc/apt/sources.list "$root/etc/apt/"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# No service starts by itself in the chroot (there is no init): the test starts what it needs.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" && chmod +x "$root/usr/sbin/policy-rc.d"
mkdir -p "$root/tmp/debs" && cp "$debs"/postgresql-15-tweetkeeper_*.deb "$debs"/tweetkeeper-workers_*.deb "$root/tmp/debs/"
before=$(in_root find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /var/cache \) -prune -o -print | sort)

in_root apt-get update -qq >"$dir/apt.log" 2>&1
in_root env DEBIAN_FRONTEND=noninteractive sh -c 'cd /tmp/debs && apt-get install -y --no-install-recommends \
  ./postgresql-15-tweetkeeper_*.deb ./tweetkeeper-workers_*.deb' >>"$dir/apt.log" 2>&1
rc=$?
tk_ok "apt install ./postgresql-15-tweetkeeper_*.deb ./tweetkeeper-workers_*.deb pulls every dependency (rc $rc)" $rc \
  "$(grep -E '^E:|unmet|Depends' "$dir/apt.log" | head -5; tail -3 "$dir/apt.log")"
tk_ok_if "the packages are installed, with PostgreSQL 15" \
  "in_root dpkg-query -W -f='\${Status}\n' postgresql-15-tweetkeeper tweetkeeper-workers postgresql-15 2>/dev/null | grep -c 'install ok installed' | grep -qx 3"

# The cluster postgresql-15 made: on a port of the test's own (loopback, where Debian's pg_hba.conf
# takes passwords), with the library preloaded.
conf=$root/etc/postgresql/15/main/postgresql.conf
printf "port = %s\nlisten_addresses = '127.0.0.1'\nshared_preload_libraries = 'tweetkeeper'\n" $PGPORT_IN >>"$conf"
in_root pg_ctlcluster 15 main start >"$dir/pg.log" 2>&1
tk_ok "its PostgreSQL starts with tweetkeeper preloaded" $? "$(cat "$dir/pg.log")"
# sql DB: the SQL on standard input, as postgres in the chroot's cluster.
sql() { in_root su postgres -s /bin/sh -c "psql -X -q -At -v ON_ERROR_STOP=1 -p $PGPORT_IN -d $1"; }
out=$(sql postgres <<<"CREATE DATABASE tk; CREATE DATABASE old;" 2>&1 &&
      sql tk <<<"CREATE EXTENSION tweetkeeper; SELECT extversion FROM pg_extension WHERE extname = 'tweetkeeper';" 2>&1)
version=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$TK_ROOT/tweetkeeper.control")
[ "$(tail -1 <<<"$out")" = "$version" ]
tk_ok "CREATE EXTENSION tweetkeeper: $version" $? "$out"

# A worker as the installed unit runs it: its ExecStart with %H, %i and %d, the environment file
# and the credentials systemd would hand it, against the mock API (on this machine's loopback,
# which the chroot shares).
tk_mock_start "$dir/mock.log" --deleted-every 0 --protected-every 0 || exit 1
unit=$root/lib/systemd/system/tweetkeeper-worker@.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
mkdir -p "$root/etc/tweetkeeper" "$root/run/credentials/test"
sql tk <<<"CREATE ROLE tk_worker LOGIN PASSWORD 'pw' IN ROLE tweetkeeper_worker;" >/dev/null
printf 'TWEETKEEPER_DSN="host=127.0.0.1 port=%s dbname=tk user=tk_worker"\nTWEETKEEPER_ARGS="--api-url %s --poll-interval 200"\n' \
  $PGPORT_IN "$TK_MOCK_URL" >"$root/etc/tweetkeeper/test.env"
printf 'default=deb-install-token\n' >"$root/run/credentials/test/tokens"
printf '*:*:*:tk_worker:pw\n' >"$root/run/credentials/test/pgpass"
chmod 600 "$root/run/credentials/test/"*
cmd=${exec_start//%H/debtest}
cmd=${cmd//%i/test}
cmd=${cmd//%d//run/credentials/test}
sql tk <<<"SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' 20 0));" >/dev/null
chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin /bin/bash -c \
  "set -a; . /etc/tweetkeeper/test.env; set +a; exec $cmd" >"$dir/worker.log" 2>&1 &
worker=$!
TK_PIDS+=("$worker")
refreshed() { [ "$(sql tk <<<"SELECT count(*) FROM tweetkeeper.tweets WHERE update_count > 0;" 2>/dev/null)" = 20 ]; }
tk_wait_until 60 refreshed
tk_ok "a worker started as the installed unit starts it (/usr/bin/tweetkeeper-worker) refreshes the 20 posts from the mock" $? \
  "$(echo "ExecStart: $exec_start"; tail -5 "$dir/worker.log")"
kill -TERM "$worker" 2>/dev/null
tk_wait_exit "$worker" 30

# The previous release (0.4.0, which had no package of its own): a database made with its scripts,
# which this package carries, updated to this one.
out=$(sql old <<<"CREATE EXTENSION tweetkeeper VERSION '0.4.0'; SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 minute' 1 100));" 2>&1 &&
      sql old <<<"ALTER EXTENSION tweetkeeper UPDATE; SELECT extversion FROM pg_extension WHERE extname = 'tweetkeeper';" 2>&1)
[ "$(tail -1 <<<"$out")" = "$version" ] && [ "$(sql old <<<"SELECT count(*) FROM tweetkeeper.tweets;")" = 1 ]
tk_ok "ALTER EXTENSION tweetkeeper UPDATE from 0.4.0 to $version, the post kept" $? "$out"

pages=$(in_root sh -c 'ls /usr/share/man/man1/tweetkeeper-*.1.gz' 2>/dev/null | wc -l)
tk_ok_if "a manual page for each of the five programs ($pages)" "[ $pages = 5 ] && in_root sh -c 'zcat /usr/share/man/man1/tweetkeeper-worker.1.gz' | grep -qF 'api\\-url'"

# apt purge: no file of the packages stays; the user's database does.
files=$(in_root dpkg -L postgresql-15-tweetkeeper tweetkeeper-workers | sort -u)
in_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y postgresql-15-tweetkeeper tweetkeeper-workers >"$dir/purge.log" 2>&1
rc=$?
left=""
while IFS= read -r f; do
  [ -n "$f" ] && [ -f "$root$f" ] && left+=" $f"
done <<<"$files"
tk_ok "apt purge removes both packages and leaves no file of theirs (rc $rc)" \
  "$([ $rc = 0 ] && [ -z "$left" ]; echo $?)" "left:$left; $(tail -3 "$dir/purge.log")"
kept=$(sql tk <<<"SELECT count(*) FROM tweetkeeper.tweets;" 2>&1)
tk_ok_if "and the user's database stays (its 20 posts: $kept)" "[ '$kept' = 20 ]"
after=$(in_root find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /var/cache \) -prune -o -print | sort)
new=$(comm -13 <(echo "$before") <(echo "$after") | grep -E 'tweetkeeper' | grep -vE '^/var/lib/postgresql/|^/var/log/|^/etc/tweetkeeper|^/run/credentials' | head -5)
tk_ok_if "nothing named tweetkeeper is left outside the database's own files${new:+ ($new)}" "[ -z '$new' ]"
tk_summary deb-install
