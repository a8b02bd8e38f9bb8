#!/usr/bin/env bash
# A dataset to share, end to end (issue 53): posts of X, Bluesky and Mastodon read a few times from
# the mock, some gone (--deleted-every 10), in a collection; tweetkeeper-export --format dataset
# --collection writes references only (X ids, at:// URIs, status URLs), the observations and
# curves, a datasheet whose numbers are checked against the test's own rows, and SHA256SUMS that
# sha256sum -c accepts, with no gone post, no text and no token anywhere. More X ids than X allows
# are refused (nothing written). tweetkeeper-import --dataset rehydrates it into a fresh database
# (refusing a checksum mismatch, a missing file and bad lines, nothing imported), workers read
# the posts again from a mock that now deletes others (--deleted-every 9), and the fresh
# database's curves equal the dataset's for the posts that still exist, the others reported gone.
# Prints "ok"/"not ok" lines and "dataset: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
EXPORT=$TK_BUILD/worker/tweetkeeper-export
IMPORT=$TK_BUILD/worker/tweetkeeper-import
TOKEN=dataset-test-secret-token

tk_workdir dataset
# (missing_after 1: a Bluesky or Mastodon post left out of one answer is gone at once.)
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.missing_after=1 -c tweetkeeper.payloads=first || exit 1
tk_mock_start "$dir/mock.log" --deleted-every 10 --protected-every 0 || exit 1

# The posts, made a minute ago, each network's in the collection "study" (public.sched: the test's
# own list, with what the mock's rule says of each: id % 10 = 7 gone now, id % 9 = 7 gone later;
# Bluesky's rule reads the record key's clock id, Mastodon's the status id). Five X posts more
# stay out of the collection. (Bluesky clock ids % 17 = 3 are skipped: the mock backdates them.)
setup_db() { # DB
  tk_psql -d "$1" >/dev/null <<SQL
CREATE EXTENSION tweetkeeper;
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tk_worker_login') THEN
    CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker;
    CREATE ROLE tk_admin LOGIN IN ROLE tweetkeeper_admin;
    CREATE ROLE tk_reader LOGIN IN ROLE tweetkeeper_reader;
  END IF;
END \$\$;
$(tk_fast_policy_sql)
SQL
}
tk_psql -c "CREATE DATABASE fresh" >/dev/null || exit 1
setup_db tweetkeeper && setup_db fresh || exit 1
tk_psql >/dev/null <<SQL || exit 1
$(tk_tid_sql)
CREATE TABLE public.sched (network text, ref text, rule_id bigint);
INSERT INTO public.sched SELECT 'x', i::text, i FROM unnest($(tk_snowflake_sql '1 minute' 30 0)) i;
INSERT INTO public.sched
SELECT 'bluesky', format('at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/%s',
                         public.tid(now() - interval '1 minute' + g * interval '1 ms', g)), g
  FROM generate_series(1, 24) g WHERE g % 17 <> 3;
INSERT INTO public.sched
SELECT 'mastodon', format('https://a.social/@u/%s', i), i
  FROM (SELECT ((extract(epoch FROM now() - interval '1 minute') * 1000)::bigint << 16) + g AS i
          FROM generate_series(1, 20) g) x;
ALTER TABLE public.sched ADD COLUMN gone boolean, ADD COLUMN gone_later boolean;
UPDATE public.sched SET gone = rule_id % 10 = 7, gone_later = rule_id % 10 <> 7 AND rule_id % 9 = 7;
SELECT tweetkeeper.collect('study', ARRAY(SELECT rule_id FROM public.sched WHERE network = 'x'));
SELECT tweetkeeper.collect_posts('study', ARRAY(SELECT ref FROM public.sched WHERE network <> 'x'));
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 minute' 5 100));
SQL
n_sched=$(tk_psql -c "SELECT count(*) FROM public.sched")
n_kept=$(tk_psql -c "SELECT count(*) FROM public.sched WHERE NOT gone")
n_gone=$(tk_psql -c "SELECT count(*) FROM public.sched WHERE gone")
echo "# $n_sched posts in the collection ($n_gone gone by the mock's rule), 5 more outside it"

# Workers of the three networks, until every post of the collection was read 4 times or found gone.
export TWEETKEEPER_BEARER_TOKEN=$TOKEN
start_workers() { # DB MOCK_URL
  local d="$TK_DSN dbname=$1 user=tk_worker_login"
  "$TK_WORKER" --dsn "$d" --api-url "$2" --name "x-$1" --poll-interval 200 >"$dir/x-$1.log" 2>&1 &
  TK_WORKERS=($!)
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky --dsn "$d" --api-url "$2" --name "b-$1" \
    --poll-interval 200 >"$dir/b-$1.log" 2>&1 &
  TK_WORKERS+=($!)
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider mastodon --instance "a.social=$2/mastodon/a.social" \
    --dsn "$d" --name "m-$1" --poll-interval 200 >"$dir/m-$1.log" 2>&1 &
  TK_WORKERS+=($!)
  TK_PIDS+=("${TK_WORKERS[@]}")
}
start_workers tweetkeeper "$TK_MOCK_URL"
tk_wait_for 90 "SELECT bool_and(t.update_count >= 4 OR t.state NOT IN ('scheduled', 'done'))
                  FROM tweetkeeper.collection_posts c JOIN tweetkeeper.tweets t ON t.tweet_id = c.tweet_id" ||
  echo "# not every post was read 4 times within 90 s"
tk_stop_workers
# (Bluesky's posts are named by bsky.app URLs in the posts view: the map from the test's at:// URIs.)
tk_psql >/dev/null <<'SQL'
CREATE TABLE public.ids AS
SELECT s.*, p.post_id, p.url FROM public.sched s JOIN tweetkeeper.posts p
    ON (s.network = 'x' AND p.post_id = s.rule_id)
    OR (s.network = 'bluesky' AND p.url = replace(replace(s.ref, 'at://', 'https://bsky.app/profile/'), '/app.bsky.feed.post/', '/post/'))
    OR (s.network = 'mastodon' AND p.url = s.ref);
SQL
tk_sql_ok "every post of the test maps to one tracked post" "SELECT count(*) = $n_sched FROM public.ids"
tk_sql_ok "the mock's rule holds on the source database: the posts it deletes are gone (with a tombstone), the others read 4 times" \
  "SELECT bool_and(CASE WHEN i.gone THEN t.state IN ('deleted', 'missing') AND x.tweet_id IS NOT NULL
                        ELSE t.state = 'scheduled' AND t.update_count >= 4 AND x.tweet_id IS NULL END)
     FROM public.ids i JOIN tweetkeeper.tweets t ON t.tweet_id = i.post_id LEFT JOIN tweetkeeper.tombstones x ON x.tweet_id = i.post_id" \
  "SELECT i.network, i.ref, i.gone, t.state, t.update_count FROM public.ids i JOIN tweetkeeper.tweets t ON t.tweet_id = i.post_id"

# The ages of the curves: three whole seconds at which every post kept was observed before and after.
read -r a b <<<"$(tk_psql -F ' ' -c "SELECT ceil(max(f)), floor(min(l)) FROM (
  SELECT extract(epoch FROM min(h.observed_at) - t.created_at) AS f, extract(epoch FROM t.updated_at - t.created_at) AS l
    FROM public.ids i JOIN tweetkeeper.tweets t ON t.tweet_id = i.post_id
    JOIN tweetkeeper.metric_history h ON h.tweet_id = t.tweet_id WHERE NOT i.gone GROUP BY t.tweet_id, t.created_at, t.updated_at) x")"
ages="${a}s,$(((a + b) / 2))s,${b}s"
tk_ok_if "the posts were observed over a span of ages to compare curves at ($ages)" "[ $((b - a)) -ge 2 ]"

reader="$TK_DSN dbname=tweetkeeper user=tk_reader"
ds=$dir/study
"$EXPORT" --dsn "$reader" --format dataset --collection study --ages "$ages" "$ds" 2>"$dir/export.err"
rc=$?
files=$(cd "$ds" 2>/dev/null && ls | tr '\n' ' ')
[ $rc = 0 ] && [ "$files" = "SHA256SUMS bluesky_uris.txt curves.csv datasheet.json datasheet.md history.csv mastodon_urls.txt x_ids.txt " ] &&
  [ ! -e "$ds.partial" ]
tk_ok "export --format dataset: exit 0, the eight files in the directory, no partial one left (rc $rc: $files)" $? "$(cat "$dir/export.err")"
out=$(cd "$ds" && sha256sum -c SHA256SUMS 2>&1)
tk_ok "sha256sum -c SHA256SUMS accepts every file" $? "$out"
tk_ok_if "and it lists all seven others" "[ $(wc -l <"$ds/SHA256SUMS") = 7 ]"

expect() { tk_psql -c "SELECT $2 FROM public.ids WHERE network = '$1' AND NOT gone ORDER BY 1"; }
[ "$(cat "$ds/x_ids.txt")" = "$(expect x post_id)" ]
tk_ok "x_ids.txt: the X posts of the collection not gone, ids only, one a line" $? "$(diff <(expect x post_id) "$ds/x_ids.txt")"
[ "$(cat "$ds/bluesky_uris.txt")" = "$(expect bluesky ref)" ]
tk_ok "bluesky_uris.txt: the Bluesky posts not gone, at:// URIs" $? "$(diff <(expect bluesky ref) "$ds/bluesky_uris.txt")"
[ "$(cat "$ds/mastodon_urls.txt")" = "$(expect mastodon ref)" ]
tk_ok "mastodon_urls.txt: the Mastodon statuses not gone, their URLs" $? "$(diff <(expect mastodon ref) "$ds/mastodon_urls.txt")"
gone_keys=$(tk_psql -c "SELECT post_id::text FROM public.ids WHERE gone UNION ALL SELECT url FROM public.ids WHERE gone
                        UNION ALL SELECT ref FROM public.ids WHERE gone")
outside=$(tk_psql -c "SELECT tweet_id FROM tweetkeeper.tweets WHERE tweet_id > 0 AND tweet_id NOT IN (SELECT post_id FROM public.ids)")
found=$(grep -rlwF -f <(printf '%s\n' "$gone_keys" "$outside") "$ds")
tk_ok_if "no gone post ($n_gone) and no post outside the collection is named in any file" "[ -z '$found' ] && [ -n '$gone_keys' ]"
texts=$(tk_psql -c "SELECT DISTINCT coalesce(payload->>'text', payload->'record'->>'text', payload->>'content')
                      FROM tweetkeeper.payloads WHERE tweet_id IN (SELECT post_id FROM public.ids)" | grep -v '^$')
n_texts=$(printf '%s\n' "$texts" | grep -c .)
found=$(grep -rlF -f <(printf '%s\n' "$texts" "$TOKEN") "$ds")
tk_ok_if "no post's text ($n_texts kept in the database) and no token in any file" "[ -z '$found' ] && [ $n_texts -gt 0 ]"

# The datasheet's numbers, against the test's own rows.
js() { python3 -c "import json,sys; d=json.load(open('$ds/datasheet.json')); print($1)"; }
got=$(js "d['name'], d['composition']['posts'], d['composition']['by_network']")
want="study $n_kept {'x': $(expect x post_id | wc -l), 'bluesky': $(expect bluesky ref | wc -l), 'mastodon': $(expect mastodon ref | wc -l)}"
tk_ok_if "datasheet: the collection's name, $n_kept posts by network as the rule says ($want)" '[ "$got" = "$want" ]'

by_reason=$(tk_psql -c "SELECT string_agg(network || ' ' || CASE network WHEN 'x' THEN 'deleted' ELSE 'missing' END || ' ' || n, '; ' ORDER BY network)
                          FROM (SELECT network, count(*) AS n FROM public.ids WHERE gone GROUP BY 1) x")
got=$(js "'; '.join('%s %s %s' % (r['network'], r['reason'], r['posts']) for r in d['survival']['gone_by_reason'])")
tk_ok_if "datasheet: $n_sched selected, $n_kept available, $n_gone gone, by network and reason ($by_reason)" \
  "[ '$(js "d['survival']['selected'], d['survival']['available'], d['survival']['gone']")' = '$n_sched $n_kept $n_gone' ] && [ '$got' = '$by_reason' ]"
span=$(tk_psql -c "SELECT to_char(min(h.observed_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') || ' ' ||
                          to_char(max(t.updated_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')
                     FROM public.ids i JOIN tweetkeeper.tweets t ON t.tweet_id = i.post_id
                     JOIN tweetkeeper.metric_history h ON h.tweet_id = i.post_id WHERE NOT i.gone")
tk_ok_if "datasheet: first and last observation of the posts kept ($span)" \
  "[ '$(js "d['collection_process']['first_observation'], d['collection_process']['last_observation']")' = '$span' ]"
policy=$(tk_psql -c "SELECT string_agg(max_age || '/' || delay, ' ' ORDER BY max_age) FROM tweetkeeper.age_policy")
tk_ok_if "datasheet: the age policy the posts were read by ($policy) and the refresh policy" \
  "[ '$(js "' '.join(r['max_age'] + '/' + r['delay'] for r in d['collection_process']['age_policy']), d['collection_process']['refresh_policy']")' = '$policy age' ]"
got=$(js "[(c['name'], c['posts']) for c in d['collections']], d['distribution']['x_ids'], '1,500,000' in d['terms']['x']")
want="[('study', $n_kept)] $(expect x post_id | wc -l) True"
tk_ok_if "datasheet: the collection study holds the $n_kept posts, and X's terms with the ids' count ($want)" '[ "$got" = "$want" ]'
md_ok=t
for h in "# Datasheet: study" "## Motivation" "## Composition" "## Collection process" "## Preprocessing, cleaning, removals" \
  "## Uses" "## Distribution" "## Maintenance" "| x | deleted |"; do
  grep -qF -- "$h" "$ds/datasheet.md" || { md_ok=f; echo "# datasheet.md lacks: $h"; }
done
grep -q "Of the $n_sched posts selected, $n_kept are in it and $n_gone were left out" "$ds/datasheet.md" || md_ok=f
tk_ok_if "datasheet.md: Gebru et al.'s sections, the survival numbers and the reasons table" "[ $md_ok = t ]"
n_hist=$(tk_psql -c "SELECT (SELECT count(*) FROM tweetkeeper.metric_history h JOIN public.ids i ON i.post_id = h.tweet_id WHERE NOT i.gone)
                          + (SELECT count(*) FROM public.ids i JOIN tweetkeeper.tweets t ON t.tweet_id = i.post_id
                              WHERE NOT i.gone AND t.updated_at > (SELECT max(h.observed_at) FROM tweetkeeper.metric_history h WHERE h.tweet_id = i.post_id))")
tk_ok_if "history.csv: every observation of the posts kept, and their last reads that changed nothing ($n_hist rows)" \
  "[ $(($(wc -l <"$ds/history.csv") - 1)) = $n_hist ]"
tk_ok_if "curves.csv: one row per post kept ($n_kept) at the three ages" \
  "[ $(($(wc -l <"$ds/curves.csv") - 1)) = $n_kept ] && head -1 '$ds/curves.csv' | grep -q 'like_count_${a}s,'"

# tweetkeeper-report reads the same selection.
"$TK_BUILD/worker/tweetkeeper-report" --dsn "$reader" --collection study -o "$dir/report.html" 2>"$dir/report.err"
rc=$?
[ $rc = 0 ] && grep -q "$n_kept posts (all networks, collection study); deleted and unavailable ones left out" "$dir/report.err" &&
  grep -q "Posts: $n_kept posts (all networks, collection study)" "$dir/report.html"
tk_ok "tweetkeeper-report --collection study: the report of the $n_kept posts kept (rc $rc)" $? "$(cat "$dir/report.err")"

# More X ids than X's terms allow to one recipient in 30 days: refused, nothing written.
n_x=$(expect x post_id | wc -l)
out=$("$EXPORT" --dsn "$reader" --format dataset --collection study --x-ids-shared $((1500000 - n_x + 1)) "$dir/too-many" 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *"refusing $n_x X post ids"*"at most 1,500,000"*"--x-written-permission"* ]] &&
  [ ! -e "$dir/too-many" ] && [ ! -e "$dir/too-many.partial" ]
tk_ok "more than 1,500,000 X ids in 30 days (--x-ids-shared): refused, exit 2, nothing written (rc $rc)" $? "$out"
"$EXPORT" --dsn "$reader" --format dataset --collection study --x-ids-shared $((1500000 - n_x + 1)) \
  --x-written-permission "$dir/allowed" 2>/dev/null && [ -s "$dir/allowed/x_ids.txt" ]
tk_ok "with --x-written-permission it is written" $?
out=$("$EXPORT" --dsn "$reader" --format dataset --collection study "$ds" 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *"exists"* ]] && (cd "$ds" && sha256sum -c --quiet SHA256SUMS)
tk_ok "a dataset is never written over an existing directory (rc $rc)" $? "$out"
mkdir "$dir/half.partial"
out=$("$EXPORT" --dsn "$reader" --format dataset --collection study "$dir/half" 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *"half.partial exists: an export into"*"failed or is running"* ]] && [ ! -e "$dir/half" ]
tk_ok "a partial directory left by a failed export is recognised, not taken for a dataset (rc $rc)" $? "$out"
# An export that fails after writing most files (a role that may read all but mortality_by_age,
# which the datasheet reads last): exit 1, nothing left, neither the directory nor a partial one.
tk_psql >/dev/null <<'SQL'
CREATE ROLE tk_partial LOGIN;
GRANT USAGE ON SCHEMA tweetkeeper TO tk_partial;
GRANT SELECT ON ALL TABLES IN SCHEMA tweetkeeper TO tk_partial;
REVOKE SELECT ON tweetkeeper.mortality_by_age FROM tk_partial;
GRANT EXECUTE ON FUNCTION tweetkeeper.metrics_at(bigint[], interval[]), tweetkeeper.unpack_history(bytea),
  tweetkeeper.settings() TO tk_partial;
SQL
out=$("$EXPORT" --dsn "$TK_DSN dbname=tweetkeeper user=tk_partial" --format dataset --collection study "$dir/failed" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $out == *"permission denied for view mortality_by_age"* ]] && [ ! -e "$dir/failed" ] && [ ! -e "$dir/failed.partial" ]
tk_ok "an export failing at its last query (the datasheet's): exit 1, no directory, no partial one left (rc $rc)" $? "$out"
out=$("$EXPORT" --dsn "$reader" --format dataset --collection nosuch "$dir/nosuch" 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *"no collection 'nosuch'"* ]] && [ ! -e "$dir/nosuch" ]
tk_ok "--collection of no collection: exit 2, saying so (rc $rc)" $? "$out"

# Bad datasets: refused with exit 2, saying why, nothing imported.
admin="$TK_DSN dbname=fresh user=tk_admin"
fresh_empty() { [ "$(tk_psql -d fresh -c "SELECT (SELECT count(*) FROM tweetkeeper.tweets) + (SELECT count(*) FROM tweetkeeper.collections)")" = 0 ]; }
bad() { # NAME EXPECTED-MESSAGE: import $dir/NAME, refused
  local out rc
  out=$("$IMPORT" --dsn "$admin" --dataset "$dir/$1" 2>&1)
  rc=$?
  [ $rc = 2 ] && [[ $out == *"$2"* ]] && [[ $out == *"nothing imported"* ]] && fresh_empty
  tk_ok "import of a dataset with $3: exit 2, saying why, nothing imported (rc $rc)" $? "$out"
}
cp -a "$ds" "$dir/tampered"
printf '1\n' >>"$dir/tampered/x_ids.txt"
bad tampered "x_ids.txt: checksum mismatch" "a changed file (checksum mismatch)"
cp -a "$ds" "$dir/missing" && rm "$dir/missing/history.csv"
bad missing "history.csv: missing or unreadable" "a missing file"
cp -a "$ds" "$dir/nosums" && rm "$dir/nosums/SHA256SUMS"
bad nosums "no SHA256SUMS" "no SHA256SUMS"
# Bad lines, checksums made again (as a careless publisher would): each named with file and line.
cp -a "$ds" "$dir/badlines"
printf 'not-an-id\n' >>"$dir/badlines/x_ids.txt"
printf 'https://a.social/@u/123\n' >>"$dir/badlines/bluesky_uris.txt"
printf '1,x,https://x.com/i/web/status/1,yesterday,1,2,3,4,5,6\r\n' >>"$dir/badlines/history.csv"
(cd "$dir/badlines" && sha256sum bluesky_uris.txt curves.csv datasheet.json datasheet.md history.csv mastodon_urls.txt x_ids.txt >SHA256SUMS)
out=$("$IMPORT" --dsn "$admin" --dataset "$dir/badlines" 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *"x_ids.txt:$((n_x + 1)): not a tweet id or post URL"* ]] &&
  [[ $out == *"bluesky_uris.txt:$(($(expect bluesky ref | wc -l) + 1)): not a post reference starting at://"* ]] &&
  [[ $out == *"history.csv:$((n_hist + 2)): not an observation"* ]] && fresh_empty
tk_ok "import of a dataset with bad lines: each named with file and line, exit 2, nothing imported (rc $rc)" $? "$out"

# Into the fresh database: scheduled, in the collection, the observations as history.
"$IMPORT" --dsn "$admin" --dataset "$ds" 2>"$dir/import.err"
rc=$?
[ $rc = 0 ] && grep -q "dataset $ds: $n_kept posts ($n_x X, .*): $n_kept new, 0 already tracked, in collection 'study'; $n_hist of $n_hist observations stored" "$dir/import.err"
tk_ok "import --dataset: $n_kept posts scheduled, into the collection study, $n_hist observations as history (rc $rc)" $? "$(cat "$dir/import.err")"
tk_ok_if "the fresh database holds them: the collection's posts, the history (lease 0: imported), nothing else" \
  "[ '$(tk_psql -d fresh -c "SELECT (SELECT count(*) FROM tweetkeeper.collection_posts WHERE collection = 'study') = $n_kept
      AND (SELECT count(*) FROM tweetkeeper.tweets) = $n_kept
      AND (SELECT count(*) FILTER (WHERE lease_id = 0) = $n_hist AND count(*) = $n_hist FROM tweetkeeper.metric_history)")' = t ]"

# Read again from a mock that has deleted others since (--deleted-every 9); the import run again
# adds nothing and waits until every post was read again or found gone.
tk_mock_start "$dir/mock2.log" --deleted-every 9 --protected-every 0 || exit 1
start_workers fresh "$TK_MOCK_URL"
n_later=$(tk_psql -c "SELECT count(*) FROM public.ids WHERE gone_later")
later=$(tk_psql -c "SELECT string_agg(reason || ' ' || n, ', ' ORDER BY reason)
                      FROM (SELECT CASE network WHEN 'x' THEN 'deleted' ELSE 'missing' END AS reason, count(*) AS n
                              FROM public.ids WHERE gone_later GROUP BY 1) x")
"$IMPORT" --dsn "$admin" --dataset "$ds" --wait-read 90 --progress-interval 30 2>"$dir/import2.err"
rc=$?
tk_stop_workers
[ $rc = 0 ] && grep -q ": 0 new, $n_kept already tracked, in collection 'study'; 0 of $n_hist observations stored" "$dir/import2.err" &&
  tail -1 "$dir/import2.err" | grep -qx "tweetkeeper-import: $((n_kept - n_later)) of $n_kept read again, $n_later gone ($later)"
tk_ok "imported again: nothing new; then $((n_kept - n_later)) of $n_kept read again, $n_later gone since ($later) (rc $rc)" $? "$(cat "$dir/import2.err")"

# The curves, read again: the fresh database's equal the dataset's for every post still there.
"$EXPORT" --dsn "$TK_DSN dbname=fresh user=tk_reader" --format curves --collection study --ages "$ages" -o "$dir/curves-again.csv" 2>/dev/null
gone_later=$(tk_psql -c "SELECT post_id FROM public.ids WHERE gone_later")
grep -vwF -f <(printf '%s\n' "$gone_later") "$ds/curves.csv" >"$dir/curves-expected.csv"
tk_ok_if "the dataset's curves of the posts still there: $((n_kept - n_later)) rows" \
  "[ $(($(wc -l <"$dir/curves-expected.csv") - 1)) = $((n_kept - n_later)) ] && [ $n_later -gt 0 ]"
diff "$dir/curves-expected.csv" "$dir/curves-again.csv" >"$dir/curves.diff"
tk_ok "read again from the mock, the fresh database gives the same curves where the posts still exist" $? "$(cat "$dir/curves.diff")"
tk_ok_if "(and its curves have values: $(grep -c ',[0-9]' "$dir/curves-again.csv") rows with counts)" \
  "[ $(cut -d, -f5 "$dir/curves-again.csv" | grep -c '^[0-9]') -gt 0 ]"
tk_summary dataset
