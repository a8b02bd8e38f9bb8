#!/usr/bin/env bash
# make bench-import (and the end of make bench): IDS tweet ids (10,000,000) in a file, one per
# line, imported by tweetkeeper-import into an empty queue; then the same file again (all
# already tracked). Target: at least 150,000 ids per second end to end. JOBS: --jobs (2).
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
IDS=${IDS:-10000000}
tk_workdir import-bench
tk_pg_start "$dir" -c shared_buffers=1GB -c max_wal_size=8GB -c checkpoint_timeout=30min || exit 1
tk_psql -c "CREATE EXTENSION tweetkeeper" >/dev/null || exit 1
# Tweets of the last 20 days, a few per millisecond, as a research archive would have them.
python3 - "$IDS" >"$dir/ids.txt" <<'PY'
import sys, time
n = int(sys.argv[1]); now = int(time.time() * 1000); span = 20 * 86400 * 1000
out = sys.stdout
step = span / n
for i in range(n):
    out.write(f"{((now - span + int(i * step) - 1288834974657) << 22) + (i % 4096)}\n")
PY
echo "# $(wc -l <"$dir/ids.txt") ids, $(du -h "$dir/ids.txt" | cut -f1)"
for run in new again; do
  start=$(date +%s.%N)
  "$TK_BUILD/worker/tweetkeeper-import" --dsn "$TK_DSN" --jobs "${JOBS:-2}" --progress-interval 10 "$dir/ids.txt" 2>"$dir/$run.log"
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  tail -1 "$dir/$run.log"
  [ $rc -eq 0 ] || { cat "$dir/$run.log"; exit 1; }
  echo "import ($run): $IDS ids in $secs s: $(awk -v n="$IDS" -v s="$secs" 'BEGIN { printf "%.0f", n / s }') ids/s (target >= 150000)"
done
tk_psql -c "SELECT format('tracked: %s tweets', count(*)) FROM tweetkeeper.tweets"
