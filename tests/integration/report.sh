#!/usr/bin/env bash
# tweetkeeper-report as a person sees it (issue 39): a database with posts of all three networks
# whose observations this test writes (some compacted), refresh batches and daily usage; the
# report opened in Debian's chromium (tests/report/check_report.mjs: no console error, no request
# leaving the file, readable on a phone, it prints), and every number of its tables compared with
# what the observations themselves say (worked out here in Python, not by the code under test),
# and with forecast() for the days ahead. Then bad usage. Prints "report: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
here=$TK_ROOT/tests/report
REPORT=$TK_BUILD/worker/tweetkeeper-report
tk_workdir report
# The refresh batches below finished 1 to 10 days ago: maintenance() (the background worker's,
# at any tick) deletes finished batches older than tweetkeeper.batch_retention (1 h by default),
# and the timeliness table is made of them. Kept for 30 days here, and the upkeep is run once
# on purpose before the report (below), so that a retention that dropped them fails every run,
# not one in a few.
tk_pg_start "$dir" -c tweetkeeper.batch_retention=30d || exit 1

# Posts made ten days ago (50 days for the compacted ones), observed at 10 min, 1 h, 6 h, 1 d and
# 3 d, last observed at 3 d: six X posts, four Bluesky, three Mastodon; likes growing to a
# per-post ceiling. 40 X posts made an hour ago, not observed yet (what the forecast counts).
tk_psql >/dev/null <<'SQL' || exit 1
CREATE EXTENSION tweetkeeper;
SELECT tweetkeeper.add_credential('alpha', 10000, '15 minutes', NULL, 'x-v2', 0.005);
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT 'https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2' || c FROM unnest(ARRAY['a', 'b', 'c', 'd']) c
  UNION ALL SELECT 'https://a.social/@alice/11000000000000000' || k FROM generate_series(1, 3) k));
INSERT INTO tweetkeeper.tweets (tweet_id, created_at, state, due_at, delay, update_count)
SELECT g, now(), 'scheduled', now(), '1 minute', 0 FROM generate_series(101, 106) g;
UPDATE tweetkeeper.tweets
   SET created_at = date_trunc('minute', now()) - CASE WHEN tweet_id IN (105, 106) THEN interval '50 days' ELSE interval '10 days' END,
       state = 'done', due_at = NULL, delay = NULL, update_count = 5;
UPDATE tweetkeeper.tweets SET updated_at = created_at + interval '3 days';
CREATE TABLE public.obs AS
SELECT t.tweet_id, t.created_at + o.age AS observed_at, extract(epoch FROM o.age)::bigint AS age_s,
       (round((10 + abs(t.tweet_id) % 17 * 7) * o.share))::bigint AS likes
  FROM tweetkeeper.tweets t,
       (VALUES (interval '10 minutes', 0.1), (interval '1 hour', 0.35), (interval '6 hours', 0.7),
               (interval '1 day', 0.9), (interval '3 days', 1.0)) o(age, share);
INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, retweet_count, reply_count, like_count,
                                        quote_count, bookmark_count, impression_count)
SELECT tweet_id, age_s, observed_at, likes / 5, 0, likes, 0, NULL, likes * 20 FROM public.obs;
UPDATE tweetkeeper.tweets t SET like_count = o.likes, retweet_count = o.likes / 5
  FROM public.obs o WHERE o.tweet_id = t.tweet_id AND o.age_s = 259200;
SELECT tweetkeeper.create_partitions();
SELECT tweetkeeper.compact_history(1000);
INSERT INTO tweetkeeper.tweets (tweet_id, created_at, state, due_at, delay)
SELECT g, date_trunc('minute', now()) - interval '1 hour', 'scheduled',
       date_trunc('minute', now()) - interval '1 hour' + tweetkeeper.first_delay(), tweetkeeper.first_delay()
  FROM generate_series(1000, 1039) g;
-- Refreshes of the observed posts: batches claimed 0 s to 70 s after their oldest post was due.
INSERT INTO tweetkeeper.batches (lease_id, worker, tweet_ids, size, oldest_due_at, claimed_at, expires_at, finished_at,
                                 outcome, stored, provider)
SELECT 1000 + k, 'w', ARRAY(SELECT tweet_id FROM tweetkeeper.tweets WHERE tweet_id < 1000 ORDER BY tweet_id),
       13, c.at - k * interval '10 seconds', c.at, c.at + interval '1 minute', c.at, 'completed', 13, 'x-v2'
  FROM generate_series(0, 7) k
 CROSS JOIN LATERAL (SELECT min(created_at) + (ARRAY[interval '30 minutes', interval '2 hours', interval '12 hours',
                                                      interval '2 days', interval '9 days', interval '9 days 1 hour',
                                                      interval '20 minutes', interval '3 hours'])[k + 1] AS at
                       FROM tweetkeeper.tweets WHERE tweet_id < 1000 AND created_at > now() - interval '20 days') c;
-- Survival: three X posts observed above and three gone ones (no observations) in a collection:
-- found deleted a day after it was made (last seen at 2 h), hidden at 5 min (never seen), and
-- missing at 20 days (seen at 1 day, made 40 days ago).
INSERT INTO tweetkeeper.tweets (tweet_id, created_at, state, due_at, delay, updated_at, problem_type, problem_at)
SELECT g.id, c.at, g.state::tweetkeeper.tweet_state, CASE WHEN g.state <> 'deleted' THEN now() + interval '1 day' END,
       CASE WHEN g.state <> 'deleted' THEN interval '1 day' END, c.at + g.seen, g.reason, c.at + g.gone
  FROM (VALUES (2001, 'deleted', interval '2 hours', 'resource-not-found', interval '1 day', interval '10 days'),
               (2002, 'unavailable', NULL, 'not-authorized-for-resource', interval '5 minutes', interval '10 days'),
               (2003, 'missing', interval '1 day', 'omitted', interval '20 days', interval '40 days')) g(id, state, seen, reason, gone, age)
 CROSS JOIN LATERAL (SELECT date_trunc('minute', now()) - g.age AS at) c;
INSERT INTO tweetkeeper.tombstones (tweet_id, reason, observed_at, gone_since)
SELECT tweet_id, problem_type, now(), problem_at FROM tweetkeeper.tweets WHERE tweet_id > 2000;
SELECT tweetkeeper.collect('sample', ARRAY[101, 102, 103, 2001, 2002, 2003]::bigint[]);
-- Usage on the last three days.
INSERT INTO tweetkeeper.daily_usage (day, provider, credential, requests, tweets_read, billed_reads)
SELECT (now() AT TIME ZONE 'UTC')::date - k, 'x-v2', 'alpha', 100 * k + 7, 1000 * k, 900 * k + 3 FROM generate_series(1, 3) k;
SQL
# What the background worker's maintenance may do at any moment, done now.
tk_psql -c "SELECT tweetkeeper.maintenance()" >/dev/null
ok_data=$(tk_psql -c "SELECT (SELECT count(*) FROM tweetkeeper.metric_history_compact) > 0
                         AND (SELECT count(*) FROM tweetkeeper.posts WHERE network = 'bluesky') = 4
                         AND (SELECT count(*) FROM tweetkeeper.batches WHERE outcome = 'completed') = 8
                         AND (SELECT count(*) FROM tweetkeeper.daily_usage) = 3")
tk_ok "the test's posts, observations (some compacted), batches and usage are in place, after maintenance() too" \
  "$([ "$ok_data" = t ]; echo $?)" "$(tk_psql -c "SELECT outcome, count(*) FROM tweetkeeper.batches GROUP BY 1")"

# forecast() counts from now: its days are read just before the report and just after, and the
# page's must lie between (a second moves a day's fractional count across a rounding).
forecast_days() {
  tk_psql -F ',' -c "SELECT ((now() AT TIME ZONE 'UTC')::date + d)::text, (f.requests - lag(f.requests, 1, 0) OVER w)::bigint,
                            (f.billed_reads - lag(f.billed_reads, 1, 0) OVER w)::bigint
                     FROM generate_series(1, 7) d CROSS JOIN LATERAL tweetkeeper.forecast(d * interval '1 day') f
                   WINDOW w AS (ORDER BY d) ORDER BY d"
}
forecast_days >"$dir/forecast-before.csv"
"$REPORT" --dsn "$TK_DSN" -o "$dir/report.html" 2>"$dir/report.err"
rc=$?
forecast_days >"$dir/forecast-after.csv"
tk_ok "tweetkeeper-report writes the page and says where (exit $rc: $(tail -1 "$dir/report.err"))" \
  "$([ "$rc" = 0 ] && [ -s "$dir/report.html" ] && grep -q "report.html written" "$dir/report.err"; echo $?)"

# What the tables must say, from the observations (public.obs) and the rows written above.
tk_psql -F ',' -c "SELECT o.tweet_id, p.network, p.url, o.age_s, o.likes, o.likes / 5
                     FROM public.obs o JOIN tweetkeeper.posts p ON p.post_id = o.tweet_id ORDER BY 1, 4" >"$dir/obs.csv"
tk_psql -F ',' -c "SELECT b.lease_id, extract(epoch FROM b.claimed_at - t.created_at), extract(epoch FROM b.claimed_at - b.oldest_due_at)
                     FROM tweetkeeper.batches b, unnest(b.tweet_ids) i(id) JOIN tweetkeeper.tweets t ON t.tweet_id = i.id" >"$dir/refreshes.csv"
tk_psql -F ',' -c "SELECT day, requests, billed_reads FROM tweetkeeper.daily_usage ORDER BY day" >"$dir/usage.csv"
tk_psql -F ',' -c "SELECT t.tweet_id, extract(epoch FROM t.created_at), coalesce(extract(epoch FROM t.updated_at)::text, ''),
                          t.state, coalesce(extract(epoch FROM x.gone_since)::text, ''), coalesce(x.reason, ''),
                          (SELECT count(*) FROM tweetkeeper.collection_posts c WHERE c.tweet_id = t.tweet_id AND c.collection = 'sample'),
                          extract(epoch FROM now())
                     FROM tweetkeeper.tweets t LEFT JOIN tweetkeeper.tombstones x USING (tweet_id)" >"$dir/fates.csv"
python3 - "$dir" >"$dir/expected.json" <<'PY'
import bisect, csv, json, sys
from collections import defaultdict
d = sys.argv[1]
AGES = [600, 1800, 3600, 7200, 14400, 28800, 57600, 86400, 172800, 345600, 604800, 1209600, 2592000]
LAST = 259200  # every observed post was last observed at 3 days
posts = defaultdict(lambda: {"obs": []})
for pid, net, url, age, likes, reposts in csv.reader(open(f"{d}/obs.csv")):
    p = posts[int(pid)]; p["net"], p["url"] = net, url; p["obs"].append((int(age), int(likes), int(reposts)))
def at(obs, age, k):  # the value at an age: interpolated between observations, from 0 at the creation
    if age > LAST: return None
    before = [o for o in obs if o[0] <= age]; after = [o for o in obs if o[0] > age]
    b = before[-1] if before else (0, 0, 0)
    if not after: return float(b[k])
    n = after[0]
    return b[k] + (n[k] - b[k]) * (age - b[0]) / (n[0] - b[0])
def pct(vals, q):  # percentile_cont
    v = sorted(vals); x = q * (len(v) - 1); i = int(x)
    return v[i] if i + 1 >= len(v) else v[i] + (v[i + 1] - v[i]) * (x - i)
out = {}
for metric, k in (("like_count", 1), ("retweet_count", 2)):
    for net in sorted({p["net"] for p in posts.values()}):
        rows = []
        for age in AGES:
            vals = [at(p["obs"], age, k) for p in posts.values() if p["net"] == net]
            vals = [v for v in vals if v is not None]
            rows.append([age] + ([pct(vals, q) for q in (0.25, 0.5, 0.75)] if vals else ["n/a"] * 3))
        out[f"table-curve-{metric.replace('_', '_')}-{net}"] = rows
# Lifespans of likes: the age at which the line through the observations reached 50% and 90%.
EDGES = [600, 1800, 3600, 10800, 21600, 43200, 86400, 259200, 604800]
for q, key in ((0.5, "age_50"), (0.9, "age_90")):
    counts = defaultdict(lambda: [0] * 10)
    for p in posts.values():
        latest = p["obs"][-1][1]
        prev = (0, 0)
        for age, likes, _ in p["obs"]:
            if likes >= q * latest:
                s = prev[0] + (age - prev[0]) * (q * latest - prev[1]) / (likes - prev[1])
                counts[p["net"]][bisect.bisect_right(EDGES, s)] += 1
                break
            prev = (age, likes)
    rows = []
    for b in range(10):
        row = [None]
        for net in sorted(counts):
            total = sum(counts[net])
            row += [counts[net][b], 100.0 * counts[net][b] / total]
        rows.append(row)
    out[f"table-lifespans-like_count-{key}"] = rows
# Timeliness: each refreshed post's age at its batch's claim, the batch's lateness.
BUCKETS = [3600, 21600, 86400, 604800, 2592000]
late = defaultdict(list)
for _, age, l in csv.reader(open(f"{d}/refreshes.csv")):
    late[bisect.bisect_right(BUCKETS, float(age))].append(max(float(l), 0))
out["table-timeliness"] = [[None, len(v), pct(v, 0.5), pct(v, 0.9), max(v)] for _, v in sorted(late.items())]
# Cost: the usage rows at the credential's price, then the forecast's days.
rows = [[day, int(r), int(b), int(b) * 0.005, "measured"] for day, r, b in csv.reader(open(f"{d}/usage.csv"))]
for (day, r1, b1), (_, r2, b2) in zip(csv.reader(open(f"{d}/forecast-before.csv")), csv.reader(open(f"{d}/forecast-after.csv"))):
    r, b = sorted((int(r1), int(r2))), sorted((int(b1), int(b2)))
    rows.append([day, r, b, [b[0] * 0.005, b[1] * 0.005], "forecast"])  # [lo, hi]: between the two readings
out["table-cost"] = rows
# Survival: every post, then the collection, at each age its posts reached: gone from the read that
# found it gone, available when seen at or after that age or seen and never found gone, else
# unknown.
AGES_S = [3600, 86400, 604800, 2592000, 7776000, 31536000]
WHY = {"resource-not-found": "deleted", "not-authorized-for-resource": "hidden", "omitted": "missing"}
COLS = ["deleted", "private", "suspended", "account gone", "hidden", "missing"]
fates = [r for r in csv.reader(open(f"{d}/fates.csv"))]
now = float(fates[0][7])
rows = []
for in_sample in (False, True):
    for age in AGES_S:
        n = {"available": 0, "unknown": 0, **{c: 0 for c in COLS}}
        posts = 0
        for pid, made, seen, state, gone, reason, member, _ in fates:
            made = float(made)
            if (in_sample and member != "1") or made + age > now: continue
            posts += 1
            at = made + age
            gone_s = float(gone) if state in ("deleted", "unavailable", "missing") and gone else None
            if gone_s is not None and gone_s <= at: n[WHY[reason]] += 1
            elif seen and (float(seen) >= at or gone_s is None): n["available"] += 1
            else: n["unknown"] += 1  # found gone later and not seen since, or never read
        if posts == 0: continue
        g = sum(n[c] for c in COLS)
        known = posts - n["unknown"]
        rows.append([None, age, posts, n["available"], g, n["unknown"],
                     100 * round(n["available"] / known, 4) if known else "n/a"] + [n[c] for c in COLS])
out["table-survival"] = rows
print(json.dumps(out))
PY
expected_rc=$?
n_tables=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$dir/expected.json" 2>&1)
tk_ok "the expected tables are worked out ($n_tables tables)" "$([ "$expected_rc" = 0 ] && [ "$n_tables" = 11 ]; echo $?)"

# The page in chromium (puppeteer-core, pinned; npm ci once per build directory).
npm_prefix=$TK_BUILD/npm-report
if ! cmp -s "$here/package-lock.json" "$npm_prefix/package-lock.json" || [ ! -d "$npm_prefix/node_modules" ]; then
  rm -rf "$npm_prefix" && mkdir -p "$npm_prefix" && cp "$here/package.json" "$here/package-lock.json" "$npm_prefix/" &&
    (cd "$npm_prefix" && npm ci --no-audit --no-fund --loglevel=error) >"$dir/npm.log" 2>&1
fi
node "$here/check_report.mjs" "$npm_prefix" "$dir/report.html" "$dir/expected.json" "$dir/report" >"$dir/browser" 2>&1
brc=$?
while IFS= read -r line; do
  case $line in
    "ok - "*) tk_pass "${line#ok - }" ;;
    "not ok - "*) tk_fail "${line#not ok - }" "" ;;
    "#   "*) echo "$line" ;;
  esac
done <"$dir/browser"
grep -q "^ok - chromium opens the report" "$dir/browser" || tk_fail "chromium runs the check (exit $brc)" "$(tail -5 "$dir/browser"; tail -3 "$dir/npm.log" 2>/dev/null)"
[ -s "$dir/report-desktop.png" ] && [ -s "$dir/report-phone.png" ]
tk_ok "screenshots of the page, on a desktop and on a phone" $?
[ -n "${TK_REPORT_SCREENSHOT:-}" ] && cp "$dir/report-desktop.png" "$TK_REPORT_SCREENSHOT"

# A selection: one network, and bad usage.
"$REPORT" --dsn "$TK_DSN" --network bluesky -o "$dir/bluesky.html" 2>"$dir/bluesky.err"
rc=$?
tk_ok "--network bluesky: only Bluesky's posts (exit $rc: $(tail -1 "$dir/bluesky.err"))" \
  "$([ "$rc" = 0 ] && grep -q ': 4 posts (bluesky' "$dir/bluesky.err" && ! grep -q 'table-curve-like_count-x' "$dir/bluesky.html"; echo $?)"
usage=""
"$REPORT" --dsn "$TK_DSN" --network myspace -o "$dir/x.html" >/dev/null 2>&1; usage+="$? "
"$REPORT" --dsn "$TK_DSN" --since not-a-time -o "$dir/x.html" >/dev/null 2>&1; usage+="$? "
"$REPORT" --dsn "$TK_DSN" >/dev/null 2>&1; usage+="$? "
"$REPORT" --dsn "$TK_DSN" --ids "$dir/no-such-file" -o "$dir/x.html" >/dev/null 2>&1; usage+="$?"
"$REPORT" --dsn "host=/nonexistent" -o "$dir/none.html" >/dev/null 2>&1; dbrc=$?
tk_ok "bad usage exits 2 (a bad network, a bad time, no -o, no --ids file: $usage); no database exits 1 ($dbrc), no file left" \
  "$([ "$usage" = "2 2 2 2" ] && [ "$dbrc" = 1 ] && [ ! -e "$dir/none.html" ] && [ ! -e "$dir/x.html" ]; echo $?)"
tk_summary report
