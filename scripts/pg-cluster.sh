#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster with tweetkeeper preloaded, for tests, the demo and the
# benchmark. PostgreSQL refuses to run as root, so as root the cluster belongs to 'postgres'.
#   pg-cluster.sh start DIR PORT [postgres -c options...]   initdb (if needed) + start + createdb
#   pg-cluster.sh stop DIR [mode]                             stop (mode: fast, immediate)
# Connect with: psql -h DIR -p PORT -U postgres -d tweetkeeper
set -euo pipefail
PGBIN=$(pg_config --bindir)
cmd=${1:?usage: pg-cluster.sh start|stop DIR [PORT]}
dir=$(realpath -m -- "${2:?data directory}")

# As root, run as postgres from /: the caller's directory may be one postgres cannot enter (a
# clone in a private directory), and initdb and pg_ctl would say so on every start.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

case "$cmd" in
  start)
    port=${3:?port}
    shift 3
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_owner "$PGBIN/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
      cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
port = $port
shared_preload_libraries = 'tweetkeeper'
tweetkeeper.database = 'tweetkeeper'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
shared_buffers = 256MB
log_line_prefix = '%m [%p] %q%a '
CONF
    fi
    opts=""
    for o in "$@"; do opts+=" $o"; done
    # TK_SERVER_PRELOAD: a library preloaded into the server alone (pg_ctl and what it starts, as the
    # cluster's owner), not into this script or runuser. (libfaketime in the pgTAP suite: loaded by
    # root processes too, it left root-owned semaphores named by pid that a later server process of
    # that pid could not open: "sem_open failed ... Permission denied", and the server did not start.)
    as_owner env ${TK_SERVER_PRELOAD:+LD_PRELOAD="$TK_SERVER_PRELOAD"} "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$opts" start >/dev/null \
      || { tail -20 "$dir/server.log" >&2; exit 1; }
    if ! psql -h "$dir" -p "$port" -U postgres -At -c "SELECT 1 FROM pg_database WHERE datname='tweetkeeper'" postgres | grep -q 1; then
      psql -h "$dir" -p "$port" -U postgres -q -c "CREATE DATABASE tweetkeeper" postgres
    fi
    ;;
  stop)
    mode=${3:-fast}
    [ -f "$dir/data/postmaster.pid" ] || exit 0
    as_owner "$PGBIN/pg_ctl" -D "$dir/data" -m "$mode" -w stop >/dev/null 2>&1 || true
    ;;
  *)
    echo "pg-cluster.sh: unknown command '$cmd' (start or stop)" >&2
    exit 2
    ;;
esac
