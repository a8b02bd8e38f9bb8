#!/usr/bin/env bash
# Payloads end to end (issue 22): with tweetkeeper.payloads = changed set on the database, X,
# Bluesky and Mastodon workers against the mock keep each post's object as the API gave it (X: the tweet and
# its author from includes, asked for only then: the WARC files show the requests), erase
# nothing of the posts found, leave tombstones for the deleted and protected ones, follow edits
# to the newest version, and store no second payload when only the counts changed. With the
# setting back to none, the workers ask for the counts only.
# Prints "payloads: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir payloads
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s || exit 1
tk_mock_start "$dir/mock.log" --edited-every 29 || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
ALTER DATABASE tweetkeeper SET tweetkeeper.payloads = 'changed';
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' 240));
$(tk_tid_sql)
$(tk_bluesky_posts_sql '2 hours' 40 '1 ms')
-- Mastodon statuses made two hours ago on a.social (ids: ms << 16).
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://a.social/@u/%s', ((extract(epoch FROM now() - interval '2 hours') * 1000)::bigint << 16) + g)
    FROM generate_series(1, 30) g));
SQL
export TWEETKEEPER_BEARER_TOKEN=payloads-token
# run_workers NAME: an X and a Bluesky worker until both are idle, recording into $dir/NAME.
run_workers() {
  mkdir -p "$dir/$1"
  "$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --exit-when-idle 3 --poll-interval 300 --name "x-$1" \
    --warc-dir "$dir/$1" >"$dir/x-$1.log" 2>&1 &
  local x=$!
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" \
    --exit-when-idle 3 --poll-interval 300 --name "b-$1" >"$dir/b-$1.log" 2>&1 &
  local b=$!
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider mastodon --instance "a.social=$TK_MOCK_URL/mastodon/a.social" \
    --dsn "$TK_DSN" --exit-when-idle 3 --poll-interval 300 --name "m-$1" >"$dir/m-$1.log" 2>&1 &
  local m=$!
  TK_PIDS+=($x $b $m)
  tk_wait_exit "$x" 90
  x_rc=$TK_RC
  tk_wait_exit "$b" 90
  b_rc=$TK_RC
  tk_wait_exit "$m" 90
  m_rc=$TK_RC
}
# requests NAME: the request lines the X worker recorded
requests() { zcat "$dir/$1"/*.warc.gz | tr -d '\r' | grep -a '^GET /2/tweets' || true; }

run_workers first
tk_sql_ok "the three workers exit 0 once idle (x $x_rc, bluesky $b_rc, mastodon $m_rc)" "SELECT '$x_rc $b_rc $m_rc' = '0 0 0'"
expansion=$(requests first | grep -c 'expansions=author_id&user.fields=' || true)
all=$(requests first | wc -l)
tk_sql_ok "with payloads on, every X request asks for the payload's fields and the author ($expansion of $all)" \
  "SELECT $all > 0 AND $expansion = $all"
# What the mock says those tweets say (up to 100 of them, asked for once more), to compare with what was kept.
ids=$(tk_psql -c "SELECT string_agg(tweet_id::text, ',') FROM (SELECT tweet_id FROM tweetkeeper.payloads
                                                             WHERE tweet_id > 0 ORDER BY tweet_id LIMIT 100) x")
curl -sf -H "Authorization: Bearer $TWEETKEEPER_BEARER_TOKEN" "$TK_MOCK_URL/2/tweets?ids=$ids" |
  jq -c '.data[] | {id, text}' >"$dir/texts.jsonl"
tk_psql -c "CREATE TABLE public.mock_texts (t jsonb)" -c "\\copy public.mock_texts FROM '$dir/texts.jsonl'" >/dev/null
tk_sql_ok "every X tweet found has one payload: the tweet as the mock gave it, its author beside it" \
  "SELECT count(*) = (SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id > 0 AND update_count > 0)
          AND (SELECT count(*) FROM public.mock_texts) > 0
          AND bool_and(p.payload->>'id' = p.tweet_id::text
                       AND p.payload->>'text' IS NOT DISTINCT FROM
                           coalesce((SELECT t->>'text' FROM public.mock_texts WHERE t->>'id' = p.tweet_id::text),
                                    p.payload->>'text')
                       AND p.payload ? 'created_at' AND p.payload ? 'lang' AND p.payload ? 'public_metrics'
                       AND p.author->>'id' = p.payload->>'author_id' AND p.author ? 'username')
     FROM tweetkeeper.payloads p WHERE p.tweet_id > 0" \
  "SELECT tweet_id, payload, author FROM tweetkeeper.payloads WHERE tweet_id > 0 LIMIT 2"
tk_sql_ok "every Bluesky post found has its postView as payload" \
  "SELECT count(*) = (SELECT count(*) FROM tweetkeeper.posts WHERE network = 'bluesky' AND update_count > 0) AND count(*) > 0
          AND bool_and(p.payload->>'uri' = format('at://%s/app.bsky.feed.post/%s', r.author, r.post_key)
                       AND p.payload ? 'record' AND p.payload ? 'author' AND p.author IS NULL)
     FROM tweetkeeper.payloads p JOIN tweetkeeper.post_refs r ON r.tweet_id = p.tweet_id
    WHERE r.network = 'bluesky'" \
  "SELECT p.payload, r.post_key FROM tweetkeeper.payloads p JOIN tweetkeeper.post_refs r ON r.tweet_id = p.tweet_id
    WHERE r.network = 'bluesky' LIMIT 1"
tk_sql_ok "every Mastodon status found has its Status as payload" \
  "SELECT count(*) = (SELECT count(*) FROM tweetkeeper.posts WHERE network = 'mastodon' AND update_count > 0) AND count(*) > 0
          AND bool_and(p.payload->>'id' = r.post_key AND p.payload ? 'content' AND p.payload ? 'account'
                       AND p.author IS NULL)
     FROM tweetkeeper.payloads p JOIN tweetkeeper.post_refs r ON r.tweet_id = p.tweet_id
    WHERE r.network = 'mastodon'" \
  "SELECT p.payload, r.post_key FROM tweetkeeper.payloads p JOIN tweetkeeper.post_refs r ON r.tweet_id = p.tweet_id
    WHERE r.network = 'mastodon' LIMIT 1;
   SELECT network, update_count, state, problem_type FROM tweetkeeper.posts WHERE network = 'mastodon' LIMIT 3"
tk_sql_ok "each payload's hash, computed by the worker, is PostgreSQL's md5(payload_content(payload, author)::text)" \
  "SELECT count(*) > 0 AND bool_and(content_hash = decode(md5(tweetkeeper.payload_content(payload, author)::text), 'hex'))
     FROM tweetkeeper.payloads"
tk_sql_ok "deleted and protected tweets: no payload, a tombstone with the API's reason" \
  "SELECT count(*) > 0 AND bool_and(x.reason = CASE WHEN t.tweet_id % 53 = 7 THEN 'resource-not-found'
                                                    ELSE 'not-authorized-for-resource' END)
          AND NOT bool_or(EXISTS (SELECT FROM tweetkeeper.payloads p WHERE p.tweet_id = t.tweet_id))
          AND count(*) = (SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id > 0 AND (tweet_id % 53 = 7 OR tweet_id % 61 = 11))
     FROM tweetkeeper.tweets t JOIN tweetkeeper.tombstones x USING (tweet_id)"
tk_sql_ok "edited tweets link to their newest version, which was refreshed and kept too (or is gone itself)" \
  "SELECT count(*) > 0 AND bool_and(e.newest_id = e.tweet_id + (1000::bigint << 22) AND t.problem_type = 'edited'
                                    AND t.state = 'done'
                                    AND ((n.update_count > 0 AND EXISTS (SELECT FROM tweetkeeper.payloads p WHERE p.tweet_id = e.newest_id))
                                         OR EXISTS (SELECT FROM tweetkeeper.tombstones x WHERE x.tweet_id = e.newest_id)))
          AND count(*) = (SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id > 0
                            AND tweet_id % 29 = 5 AND tweet_id % 53 <> 7 AND tweet_id % 61 <> 11
                            AND NOT EXISTS (SELECT FROM tweetkeeper.edits x WHERE x.newest_id = tweet_id))
     FROM tweetkeeper.edits e JOIN tweetkeeper.tweets t USING (tweet_id) JOIN tweetkeeper.tweets n ON n.tweet_id = e.newest_id" \
  "SELECT e.tweet_id, e.newest_id, t.state, t.problem_type, n.state, n.update_count, n.problem_type,
          (SELECT count(*) FROM tweetkeeper.payloads p WHERE p.tweet_id = e.newest_id)
     FROM tweetkeeper.edits e JOIN tweetkeeper.tweets t USING (tweet_id) LEFT JOIN tweetkeeper.tweets n ON n.tweet_id = e.newest_id;
   SELECT tweet_id, state, problem_type FROM tweetkeeper.tweets WHERE tweet_id > 0 AND tweet_id % 29 = 5"

# Again: the counts grew, the content did not.
payloads_before=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.payloads")
history_before=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.metric_history")
tk_psql -c "UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE due_at IS NOT NULL" >/dev/null
# The workers' statements of this round logged with their parameters: what they sent.
tk_psql -c "ALTER DATABASE tweetkeeper SET log_min_duration_statement = 0" >/dev/null
log_from=$(wc -l <"$dir/pg/server.log")
run_workers second
tk_psql -c "ALTER DATABASE tweetkeeper RESET log_min_duration_statement" >/dev/null
tk_sql_ok "a second round with new counts and the same content stores no payload ($payloads_before before)" \
  "SELECT count(*) = $payloads_before AND (SELECT count(*) FROM tweetkeeper.metric_history) > $history_before
     FROM tweetkeeper.payloads"
# (Each completion's parameters follow its statement line; $2 is the observations.)
completions=$(tail -n +"$log_from" "$dir/pg/server.log" | grep -c 'parameters: $1 = .*"like_count"' || true)
with_payload=$(tail -n +"$log_from" "$dir/pg/server.log" | grep 'parameters: $1 = .*"like_count"' | grep -c '"payload"' || true)
hash_lookups=$(tail -n +"$log_from" "$dir/pg/server.log" | grep -c 'unnest(c.tweet_ids, c.payload_hashes)' || true)
tk_sql_ok "and the workers sent no payload for it, only the counts ($with_payload of $completions completions carried one; $hash_lookups claims took the kept hashes)" \
  "SELECT $completions > 0 AND $with_payload = 0 AND $hash_lookups > 0"

# Off again: counts only.
tk_psql -c "ALTER DATABASE tweetkeeper SET tweetkeeper.payloads = 'none'" >/dev/null
tk_psql -c "UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE due_at IS NOT NULL" >/dev/null
run_workers third
expansion=$(requests third | grep -c 'expansions=' || true)
all=$(requests third | wc -l)
tk_sql_ok "with payloads none, the X requests ask for the counts only ($expansion of $all ask for more)" \
  "SELECT $all > 0 AND $expansion = 0"

# tweetkeeper-export (issue 22, point 3): twarc2 pages checked field by field against twarc2's
# shape (FACTS.md section 1), CSV per post and per observation, --ids, and bad usage.
EXPORT=$TK_BUILD/worker/tweetkeeper-export
"$EXPORT" --dsn "$TK_DSN" --format twarc2 -o "$dir/x.jsonl" 2>"$dir/export.err"
rc=$?
tk_sql_ok "export --format twarc2 exits 0 and says what it wrote ($rc: $(tr -d "'" <"$dir/export.err" | tail -1))" \
  "SELECT $rc = 0 AND '$(grep -c 'posts in .* pages written to' "$dir/export.err")' = '1'"
report=$(python3 - "$dir/x.jsonl" <<'PY'
import json, re, sys
TWEET = set("attachments author_id context_annotations conversation_id created_at entities geo id in_reply_to_user_id lang "
            "public_metrics text possibly_sensitive referenced_tweets reply_settings source withheld edit_controls "
            "edit_history_tweet_ids".split())
USER = set("created_at description entities id location name pinned_tweet_id profile_image_url protected public_metrics url "
           "username verified verified_type withheld".split())
bad, ids, pages = [], [], 0
for n, line in enumerate(open(sys.argv[1], encoding="ascii"), 1):
    page = json.loads(line); pages += 1
    if set(page) - {"data", "includes", "errors", "__twarc", "__tweetkeeper"} or "data" not in page: bad.append(f"{n}: keys {sorted(page)}")
    if set(page["__twarc"]) != {"url", "version", "retrieved_at"}: bad.append(f"{n}: __twarc {page['__twarc']}")
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", page["__twarc"]["retrieved_at"]): bad.append(f"{n}: retrieved_at")
    if not page["__twarc"]["url"].startswith("https://api.x.com/2/tweets?ids="): bad.append(f"{n}: url")
    if not 1 <= len(page["data"]) <= 100: bad.append(f"{n}: {len(page['data'])} tweets")
    users = {u["id"]: u for u in page.get("includes", {}).get("users", [])}
    for u in users.values():
        if set(u) - USER: bad.append(f"{n}: user keys {sorted(set(u) - USER)}")
    for t in page["data"]:
        ids.append(t["id"])
        if set(t) - TWEET: bad.append(f"{n}: tweet keys {sorted(set(t) - TWEET)}")
        if t["author_id"] not in users: bad.append(f"{n}: author {t['author_id']} not in includes")
        if not t["edit_history_tweet_ids"] or t["edit_history_tweet_ids"][0] != t["id"]: bad.append(f"{n}: edit history")
    if page["__tweetkeeper"]["ids"] != [t["id"] for t in page["data"]]: bad.append(f"{n}: provenance ids")
print(pages, len(ids), len(set(ids)), "; ".join(bad[:3]) or "ok")
open(sys.argv[1] + ".ids", "w").write("\n".join(ids) + "\n")
PY
)
read -r pages exported distinct verdict <<<"$report"
tk_sql_ok "twarc2: every page has twarc2's keys only, each tweet its author in includes, no key twarc-csv does not know ($report)" \
  "SELECT '$verdict' = 'ok' AND $exported = $distinct AND $pages > 0"
tk_psql -c "CREATE TABLE public.exported (id bigint)" >/dev/null
tk_psql -c "\copy public.exported FROM '$dir/x.jsonl.ids'" >/dev/null
tk_sql_ok "twarc2: exactly the X posts with a payload and no tombstone, each once ($exported)" \
  "SELECT (SELECT array_agg(id ORDER BY id) FROM public.exported)
          = (SELECT array_agg(DISTINCT p.tweet_id ORDER BY p.tweet_id) FROM tweetkeeper.payloads p
              WHERE p.tweet_id > 0 AND NOT EXISTS (SELECT FROM tweetkeeper.tombstones x WHERE x.tweet_id = p.tweet_id))
     AND NOT EXISTS (SELECT FROM public.exported e JOIN tweetkeeper.tombstones x ON x.tweet_id = e.id)"

"$EXPORT" --dsn "$TK_DSN" --format csv -o "$dir/posts.csv" 2>"$dir/export.err"
rc=$?
tk_psql -c "CREATE TABLE public.csv (post_id bigint, network text, url text, created_at timestamptz, author text, text text,
  like_count bigint, retweet_count bigint, reply_count bigint, quote_count bigint, bookmark_count bigint,
  impression_count bigint, updated_at timestamptz, state text)" >/dev/null
tk_psql -c "\copy public.csv FROM '$dir/posts.csv' WITH (FORMAT csv, HEADER true)" >/dev/null
tk_sql_ok "csv: one row per post without a tombstone, with its URL, author, text and latest counts (exit $rc)" \
  "SELECT $rc = 0 AND count(*) = (SELECT count(*) FROM tweetkeeper.posts p
                                   WHERE NOT EXISTS (SELECT FROM tweetkeeper.tombstones x WHERE x.tweet_id = p.post_id))
          AND bool_and(c.url = p.url AND c.like_count IS NOT DISTINCT FROM p.like_count AND c.state = p.state::text
                       AND (p.update_count = 0 OR p.state <> 'scheduled'
                            OR (c.author IS NOT NULL AND c.text <> ''
                                AND c.text IS NOT DISTINCT FROM coalesce((SELECT CASE WHEN t->>'text' ~ '^[-=+@\t\r]'
                                                                                 THEN '''' || (t->>'text') ELSE t->>'text' END
                                                                           FROM public.mock_texts
                                                                           WHERE c.network = 'x' AND t->>'id' = c.post_id::text),
                                                                          c.text))))
          AND count(*) FILTER (WHERE c.text ~ '^[-=+@\t\r]') = 0
     FROM public.csv c JOIN tweetkeeper.posts p USING (post_id)" \
  "SELECT * FROM public.csv LIMIT 2"
"$EXPORT" --dsn "$TK_DSN" --format csv --history --network bluesky -o "$dir/history.csv" 2>"$dir/export.err"
rc=$?
tk_sql_ok "csv --history --network bluesky: one row per observation of those posts (exit $rc)" \
  "SELECT $rc = 0 AND $(($(wc -l <"$dir/history.csv") - 1)) = (SELECT count(*) FROM tweetkeeper.metric_history h
      JOIN tweetkeeper.posts p ON p.post_id = h.tweet_id WHERE p.network = 'bluesky') AND $(wc -l <"$dir/history.csv") > 1"

# twarc2 tells today's truth (issue 39): each tweet's public_metrics are its latest counts, the
# answer's own kept in the page's provenance.
tk_psql -F ',' -c "SELECT tweet_id, like_count, retweet_count, reply_count, quote_count, impression_count
                     FROM tweetkeeper.tweets WHERE tweet_id > 0" >"$dir/latest.csv"
latest_report=$(python3 - "$dir/x.jsonl" "$dir/latest.csv" <<'PY'
import csv, json, sys
latest = {r[0]: r[1:] for r in csv.reader(open(sys.argv[2]))}
keys = ["like_count", "retweet_count", "reply_count", "quote_count", "impression_count"]
n = bad = kept = 0
for line in open(sys.argv[1]):
    page = json.loads(line)
    for t in page["data"]:
        n += 1
        want = [int(v) if v else None for v in latest[t["id"]]]
        if [t["public_metrics"].get(k) for k in keys] != want: bad += 1
        kept += t["id"] in page["__tweetkeeper"].get("answer_public_metrics", {})
print(n, bad, kept)
PY
)
read -r n_tweets n_bad n_kept <<<"$latest_report"
tk_ok "twarc2: every tweet's public_metrics are the database's latest counts, the answer's kept beside ($n_tweets tweets, $n_bad differ, $n_kept kept)" \
  "$([ "${n_tweets:-0}" -gt 0 ] && [ "$n_bad" = 0 ] && [ "$n_kept" = "$n_tweets" ]; echo $?)"

# Curves and lifespans (issue 39), against what the observations themselves say: at each age, the
# last observation at or before it, and the line from it to the next (from 0 at the creation);
# nothing past the last observation.
"$EXPORT" --dsn "$TK_DSN" --format curves --ages 30s,2m,1h -o "$dir/curves.csv" 2>"$dir/export.err"
rc=$?
tk_psql -F ',' -c "SELECT t.tweet_id, extract(epoch FROM t.created_at), extract(epoch FROM t.updated_at),
                          extract(epoch FROM h.observed_at), h.like_count
                     FROM tweetkeeper.tweets t JOIN tweetkeeper.metric_history h USING (tweet_id)
                    WHERE NOT EXISTS (SELECT FROM tweetkeeper.tombstones x WHERE x.tweet_id = t.tweet_id)
                    ORDER BY 1, 4" >"$dir/observations.csv"
curves_report=$(python3 - "$dir/curves.csv" "$dir/observations.csv" <<'PY'
import csv, sys
obs = {}
for pid, created, updated, at, like in csv.reader(open(sys.argv[2])):
    obs.setdefault(pid, (float(created), float(updated) if updated else None, []))[2].append((float(at), int(like) if like else None))
rows = list(csv.DictReader(open(sys.argv[1])))
bad, checked, between = [], 0, 0
for r in rows:
    created, updated, seen = obs.get(r["post_id"], (None, None, []))
    for label, age in (("30s", 30), ("2m", 120), ("1h", 3600)):
        got_o, got_i = r[f"like_count_{label}_observed"], r[f"like_count_{label}"]
        if created is None or updated is None or created + age > updated + 1e-6:
            want_o = want_i = None
        else:
            t = created + age
            before = [o for o in seen if o[0] <= t]
            after = [o for o in seen if o[0] > t]
            want_o = before[-1][1] if before else None
            b = before[-1] if before else (created, 0)
            if after and b[1] is not None and after[0][1] is not None:
                want_i = b[1] + (after[0][1] - b[1]) * (t - b[0]) / (after[0][0] - b[0]); between += 0 < t - b[0]
            else:
                want_i = b[1] if not after else None
        checked += 1
        ok_o = (got_o == "" and want_o is None) or (want_o is not None and got_o != "" and int(got_o) == want_o)
        ok_i = (got_i == "" and want_i is None) or (want_i is not None and got_i != "" and abs(float(got_i) - want_i) < 1e-6)
        if not (ok_o and ok_i): bad.append(f"{r['post_id']}@{label}: {got_o}/{got_i} against {want_o}/{want_i}")
print(len(rows), checked, between, len(bad), "; ".join(bad[:3]) or "-")
PY
)
read -r c_rows c_checked c_between c_bad c_why <<<"$curves_report"
c_posts=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.posts p WHERE NOT EXISTS (SELECT FROM tweetkeeper.tombstones x WHERE x.tweet_id = p.post_id)")
tk_ok "curves: a row per post ($c_rows of $c_posts), each like count at 30 s, 2 min and 1 h as its observations say ($c_checked checked, $c_between between two observations, $c_bad differ; exit $rc)" \
  "$([ "$rc" = 0 ] && [ "$c_rows" = "$c_posts" ] && [ "$c_bad" = 0 ] && [ "${c_between:-0}" -gt 0 ]; echo $?)" "$c_why"
"$EXPORT" --dsn "$TK_DSN" --format lifespans --network x -o "$dir/lifespans.csv" 2>"$dir/export.err"
rc=$?
tk_psql -c "CREATE TABLE public.lifespans_csv (post_id bigint, network text, url text, metric text, latest bigint,
  latest_at timestamptz, age_50_seconds numeric, age_90_seconds numeric, still_changing boolean)" >/dev/null
tk_psql -c "\copy public.lifespans_csv FROM '$dir/lifespans.csv' WITH (FORMAT csv, HEADER true)" >/dev/null
tk_sql_ok "lifespans --network x: a row per X post and count it has, its latest value the post's own (exit $rc)" \
  "SELECT $rc = 0 AND count(*) > 0 AND bool_and(l.network = 'x')
          AND bool_and(l.latest IS NOT DISTINCT FROM CASE l.metric WHEN 'like_count' THEN p.like_count
                                                                    WHEN 'retweet_count' THEN p.retweet_count
                                                                    WHEN 'reply_count' THEN p.reply_count
                                                                    WHEN 'quote_count' THEN p.quote_count
                                                                    WHEN 'bookmark_count' THEN p.bookmark_count
                                                                    ELSE p.impression_count END)
          AND count(*) = (SELECT count(*) FROM tweetkeeper.lifespans x JOIN tweetkeeper.posts q ON q.post_id = x.post_id
                           WHERE x.network = 'x' AND NOT EXISTS (SELECT FROM tweetkeeper.tombstones t WHERE t.tweet_id = x.post_id))
     FROM public.lifespans_csv l JOIN tweetkeeper.posts p USING (post_id)" "SELECT * FROM public.lifespans_csv LIMIT 3"

gone=$(tk_psql -c "SELECT min(tweet_id) FROM tweetkeeper.tombstones WHERE tweet_id > 0")
kept=$(tk_psql -c "SELECT min(tweet_id) FROM tweetkeeper.payloads WHERE tweet_id > 0 AND NOT EXISTS (SELECT FROM tweetkeeper.tombstones x WHERE x.tweet_id = payloads.tweet_id)")
bsky=$(tk_psql -c "SELECT url FROM tweetkeeper.posts WHERE network = 'bluesky' AND update_count > 0 LIMIT 1")
printf '%s\nnot-an-id\n%s\n%s\n%s\n' "$kept" "$gone" "$bsky" "$((kept + 1000000))" >"$dir/ids.txt"
"$EXPORT" --dsn "$TK_DSN" --format csv --ids "$dir/ids.txt" -o "$dir/some.csv" 2>"$dir/export.err"
rc=$?
tk_sql_ok "--ids: exit 3 for the bad line (named with its number), the tracked posts exported, the deleted one left out ($rc)" \
  "SELECT $rc = 3 AND '$(grep -c 'ids.txt:2:' "$dir/export.err")' = '1' AND $(wc -l <"$dir/some.csv") = 3 AND '$(grep -c "^-" "$dir/some.csv")' = '1'
          AND '$(grep -c "^$kept," "$dir/some.csv")' = '1' AND '$(grep -c "^$gone," "$dir/some.csv")' = '0'
          AND '$(grep -c '1 of --ids not tracked' "$dir/export.err")' = '1'"
usage=""
"$EXPORT" --dsn "$TK_DSN" --format twarc2 --network bluesky >/dev/null 2>&1; usage+="$? "
"$EXPORT" --dsn "$TK_DSN" --format csv --since yesterday-ish >/dev/null 2>&1; usage+="$? "
"$EXPORT" --dsn "$TK_DSN" --format twarc2 --history >/dev/null 2>&1; usage+="$? "
"$EXPORT" --dsn "$TK_DSN" --format csv --ids "$dir/no-such-file" >/dev/null 2>&1; usage+="$? "
"$EXPORT" --dsn "$TK_DSN" --format xml >/dev/null 2>&1; usage+="$? "
"$EXPORT" --dsn "$TK_DSN" --format curves >/dev/null 2>&1; usage+="$? "
"$EXPORT" --dsn "$TK_DSN" --format curves --ages 1h,1x >/dev/null 2>&1; usage+="$? "
"$EXPORT" --dsn "$TK_DSN" --format csv --ages 1h >/dev/null 2>&1; usage+="$?"
"$EXPORT" --dsn "host=/nonexistent" --format csv -o "$dir/none.csv" >/dev/null 2>&1; dbrc=$?
tk_sql_ok "bad usage exits 2 (twarc2 of Bluesky, a bad time, --history with twarc2, no --ids file, a bad format, curves without --ages or with a bad one, --ages without curves: $usage); no database exits 1 ($dbrc) and leaves no file" \
  "SELECT '$usage' = '2 2 2 2 2 2 2 2' AND $dbrc = 1 AND '$(ls "$dir"/none.csv* 2>/dev/null | wc -l)' = '0'"
tk_summary payloads
