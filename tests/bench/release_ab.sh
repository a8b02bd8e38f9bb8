#!/usr/bin/env bash
# make bench: X's path beside the releases, in one run on the same machine. Each release
# (RELEASES: 0.1.0's and 0.2.0's commits) is built from git: its extension into a copy of
# PostgreSQL's tree under the work directory (the same server binaries, which find their
# extension directory relative to themselves, so the system's keeps this tree's), its worker with
# CMake. run.sh (floor and end to end, TWEETS X tweets, the same mock API for all) then runs
# ROUNDS times for each, alternating. Prints a table of each version's floor and end to end
# (means of the rounds; the machine's speed varies from day to day by a factor of two, so only
# same-run ratios say anything), its CPU per refresh beside them (run.sh: PostgreSQL's for the
# floor; PostgreSQL's and the workers' end to end), and this tree's ratios to each release. A
# version whose floor drains its queue is run again by run.sh on twice the posts, and said so. Target (issue 19): this
# tree's floor and end to end each at least 0.95 of 0.2.0's. Each round also runs graphile-worker
# 0.18 with its own performance setup (graphile.sh; GRAPHILE=0 to leave it out) as a yardstick:
# issue 20 asks for this tree's end to end at least twice its no-op jobs/s, at least 0.8 of this
# tree's floor, and a floor at least 0.1.0's.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/releases.sh"
tk_defaults "RELEASES=3c271d8:0.1.0 c8a3633:0.2.0" TARGET_RELEASE=0.2.0 ROUNDS=2

tk_workdir release-ab
declare -A path worker
versions=()
for rel in $RELEASES; do
  commit=${rel%%:*}
  v=${rel#*:}
  versions+=("$v")
  tk_build_release "$commit" "$v" || exit 1
  path[$v]=$TK_RELEASE_PATH
  worker[$v]=$TK_RELEASE_WORKER
done
current=$TK_VERSION

declare -A floor e2e floor_cpu e2e_cpu
for r in $(seq 1 "$ROUNDS"); do
  for v in current "${versions[@]}"; do
    if [ $v = current ]; then
      out=$("$TK_ROOT/tests/bench/run.sh" 2>&1)
    else
      out=$(PATH=${path[$v]} TK_WORKER="${worker[$v]}" "$TK_ROOT/tests/bench/run.sh" 2>&1)
    fi
    [ "$r-$v" = 1-current ] && echo "$out"  # run.sh's details, once
    line=$(echo "$out" | grep '^x: floor .* end-to-end')
    [ -n "$line" ] || { echo "$out" | tail -n 20; exit 1; }
    f=$(echo "$line" | sed -n 's/.*floor \([0-9]*\) .*/\1/p')
    e=$(echo "$line" | sed -n 's/.*end-to-end \([0-9]*\) .*/\1/p')
    # CPU per refresh (us; PostgreSQL's for the floor, PostgreSQL's and the workers' end to end)
    cpu=$(echo "$out" | grep '^x: CPU per refresh:')
    fc=$(echo "$cpu" | sed -n 's/.*floor \([0-9]*\) us.*/\1/p')
    ec=$(echo "$cpu" | sed -n 's/.*end-to-end \([0-9]*\) us.*/\1/p')
    [ -n "$fc" ] && [ -n "$ec" ] || { echo "$out" | tail -n 20; exit 1; }
    # A floor that drained its queue ran again on more posts (run.sh says so): say it here too.
    echo "$out" | grep '^floor: every one of' | sed "s/^/round $r $v: /"
    echo "round $r $v: floor $f, end to end $e tweet-updates/s; CPU per refresh $fc us, $ec us"
    floor[$v]=$(( ${floor[$v]:-0} + f ))
    e2e[$v]=$(( ${e2e[$v]:-0} + e ))
    floor_cpu[$v]=$(( ${floor_cpu[$v]:-0} + fc ))
    e2e_cpu[$v]=$(( ${e2e_cpu[$v]:-0} + ec ))
  done
  # The yardstick, in the same round: graphile-worker's no-op jobs/s (graphile.sh).
  if [ "${GRAPHILE:-1}" = 1 ]; then
    out=$("$TK_ROOT/tests/bench/graphile.sh" 2>&1)
    g=$(echo "$out" | sed -n 's/^graphile-worker: \([0-9]*\) jobs\/s$/\1/p')
    [ -n "$g" ] || { echo "$out" | tail -n 20; exit 1; }
    echo "round $r graphile-worker: $g no-op jobs/s"
    graphile=$(( ${graphile:-0} + g ))
  fi
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "== result: X, tweet-updates/s, mean of $ROUNDS alternating rounds"
printf '%-22s %10s %12s %16s %18s %14s %14s\n' version floor "end to end" "floor vs this" "end to end vs this" \
  "floor CPU/ref" "e2e CPU/ref"
printf '%-22s %10d %12d %16s %18s %11d us %11d us\n' "this tree ($current)" $((floor[current] / ROUNDS)) \
  $((e2e[current] / ROUNDS)) - - $((floor_cpu[current] / ROUNDS)) $((e2e_cpu[current] / ROUNDS))
for v in "${versions[@]}"; do
  printf '%-22s %10d %12d %16s %18s %11d us %11d us\n' "$v" $((floor[$v] / ROUNDS)) $((e2e[$v] / ROUNDS)) \
    "$(ratio "${floor[current]}" "${floor[$v]}")" "$(ratio "${e2e[current]}" "${e2e[$v]}")" \
    $((floor_cpu[$v] / ROUNDS)) $((e2e_cpu[$v] / ROUNDS))
done
echo "this tree: CPU per refresh end to end / floor $(ratio "${e2e_cpu[current]}" "${floor_cpu[current]}") (target <= 1.25)"
if [ -n "${graphile:-}" ]; then
  printf '%-22s %10s %12d %16s %18s\n' "graphile-worker 0.18" - $((graphile / ROUNDS)) - "$(ratio "${e2e[current]}" "$graphile")"
  echo "this tree: end to end / floor $(ratio "${e2e[current]}" "${floor[current]}") (target >= 0.8), end to end / graphile-worker's jobs/s $(ratio "${e2e[current]}" "$graphile") (target >= 1, issue 37)"
fi
if [ -z "${floor[$TARGET_RELEASE]:-}" ]; then
  # (RELEASES without it, e.g. only 0.1.0 for issue 37's floor target: nothing to hold it to.)
  echo "X against $TARGET_RELEASE: not measured (RELEASES: $RELEASES)"
  exit 0
fi
fr=$(ratio "${floor[current]}" "${floor[$TARGET_RELEASE]}")
er=$(ratio "${e2e[current]}" "${e2e[$TARGET_RELEASE]}")
echo "X against $TARGET_RELEASE: floor ratio $fr, end to end ratio $er; target >= 0.95 each"
awk -v a="$fr" -v b="$er" 'BEGIN { exit !(a >= 0.95 && b >= 0.95) }'
