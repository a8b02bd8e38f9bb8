#!/usr/bin/env bash
# No include runs up: a file under worker/ includes only headers of its own folder and of folders
# in a lower layer. The layers are the table "Folder map and layering" in worker/README.md (rows
# "| <layer> | `<folder>/` | ..." and "| <layer> | `main.cpp` | ..." for the files at the top).
# Prints one line per include that runs up or sideways, or per folder the table does not list, and
# "include_layers: N passed, M failed"; exits 1 when M > 0. Usage: include_layers.sh [WORKER_DIR]
set -uo pipefail
WORKER=${1:-$(cd "$(dirname "$0")/../../worker" && pwd)}
README=$WORKER/README.md

declare -A layer=()
while IFS=$'\t' read -r n name; do layer[$name]=$n; done < <(
  sed -nE 's/^\| *([0-9]+) *\| *`([A-Za-z0-9_]+)\/` *\|.*/\1\t\2/p; s/^\| *([0-9]+) *\| *`([A-Za-z0-9_.]+\.cpp)` *\|.*/\1\t.\/\2/p' "$README")
if [ ${#layer[@]} -eq 0 ]; then
  echo "not ok - no layer table in $README"
  echo "include_layers: 0 passed, 1 failed"
  exit 1
fi

passed=0 failed=0
fail() { echo "not ok - $1"; failed=$((failed + 1)); }

# Every folder (and top-level source file) of worker/ has a layer.
for d in "$WORKER"/*/; do
  d=$(basename "$d")
  [ -n "${layer[$d]:-}" ] || fail "worker/$d/ has no layer in worker/README.md's folder map"
done

while IFS= read -r file; do
  rel=${file#"$WORKER"/}
  if [[ $rel == */* ]]; then from=${rel%%/*}; own=${layer[$from]:-}; else from=.; own=${layer[./$rel]:-}; fi
  if [ -z "$own" ]; then
    [[ $rel == */* ]] || fail "worker/$rel has no layer in worker/README.md's folder map"
    continue
  fi
  while IFS= read -r line; do
    [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]] || continue
    target=${BASH_REMATCH[1]}
    [[ $target == */* ]] || continue  # no folder: not a worker header (the extension's post_url.hpp)
    to=${target%%/*}
    [ -d "$WORKER/$to" ] || continue  # not a worker folder: a library's or the extension's
    [ "$to" = "$from" ] && continue
    theirs=${layer[$to]:-}
    if [ -z "$theirs" ]; then
      fail "worker/$rel includes \"$target\": $to/ has no layer in worker/README.md"
    elif [ "$theirs" -ge "$own" ]; then
      way=$([ "$theirs" -gt "$own" ] && echo up || echo sideways)
      fail "worker/$rel (layer $own) includes \"$target\" (layer $theirs): runs $way"
    else
      passed=$((passed + 1))
    fi
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file")
done < <(find "$WORKER" -name '*.cpp' -o -name '*.hpp' -o -name '*.h' | sort)

echo "include_layers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
