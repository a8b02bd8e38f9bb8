# A Citus cluster on this machine for the suites and benchmarks that need one (source after
# tests/lib/common.sh and tk_workdir): nodes named as the caller likes (c: the coordinator), each
# its own cluster under $dir/NAME on a free TCP port of localhost (Citus nodes reach each other by
# host and port), Citus first in shared_preload_libraries.
#   tk_citus_ports NAME...     sets port[NAME] (a free port each) and nodes=(NAME...)
#   tk_citus_start NAME [-c SETTING=VALUE...]   starts that node, CREATE EXTENSION citus in its
#                              tweetkeeper database
#   tk_citus_stop              stops every node (fast)
#   on NAME [psql args]        psql on that node's tweetkeeper database
declare -A port=()
nodes=()
tk_citus_ports() {
  local names=("$@") ports
  read -r -a ports < <(python3 -c '
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])' "${#names[@]}")
  local i
  for i in "${!names[@]}"; do port[${names[$i]}]=${ports[$i]}; done
  nodes=("${names[@]}")
}
tk_citus_start() {
  local n=$1
  shift
  "$TK_ROOT/scripts/pg-cluster.sh" start "$dir/$n" "${port[$n]}" -c listen_addresses=localhost \
    -c shared_preload_libraries=citus,tweetkeeper -c max_prepared_transactions=50 "$@" || return 1
  on "$n" -c "CREATE EXTENSION citus"
}
tk_citus_stop() {
  local n
  for n in "${nodes[@]}"; do "$TK_ROOT/scripts/pg-cluster.sh" stop "$dir/$n" fast; done
}
on() {
  local n=$1
  shift
  psql -X -q -v ON_ERROR_STOP=1 -At -h localhost -p "${port[$n]}" -U postgres -d tweetkeeper "$@"
}
# tk_citus_bench NAME NODE...: a benchmark's start: Citus built (tests/citus/build.sh; exits
# saying why when it cannot be, its line in TK_CITUS_BUILD), a work directory (tk_workdir NAME),
# a port for each NODE, and an EXIT trap that stops every node and removes the directory (KEEP=1
# keeps it).
tk_citus_bench() {
  local name=$1
  shift
  TK_CITUS_BUILD=$("$TK_ROOT/tests/citus/build.sh" 2>&1) ||
    { echo "$TK_CITUS_BUILD"; echo "Citus did not build (CITUS_SRC)"; exit 1; }
  tk_workdir "$name"
  tk_citus_ports "$@"
  trap 'tk_cleanup; tk_citus_stop; [ -n "${KEEP:-}" ] && echo "# kept $dir" || rm -rf "$dir"' EXIT
}
# postmaster_of NODE: the node's postmaster pid (for tk_pg_cpu).
postmaster_of() { head -1 "$dir/$1/data/postmaster.pid"; }
