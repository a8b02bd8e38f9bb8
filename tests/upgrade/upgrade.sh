#!/usr/bin/env bash
# Releases that upgrade. For every released version (a frozen sql/tweetkeeper--<version>.sql), a
# database made with it and filled through its own SQL API with a queue in every state, and one
# left empty, are updated with ALTER EXTENSION tweetkeeper UPDATE along the chain to the current
# version: 0.1.0 -> 0.2.0 -> 0.3.0 -> 0.4.0 -> current step by step and in one command, 0.2.0,
# 0.3.0 and 0.4.0 -> current. Nothing
# may be lost (every row of every table the old version had, its sequence), the new columns must
# say the right thing, every updated schema must equal a fresh install's (tests/upgrade/schema.sql,
# diffed), and the queue must go on working. Also how the scripts are made: released scripts are
# frozen (their checksums in sql/RELEASED), the current install and upgrade scripts are what
# scripts/build-sql.sh makes of sql/schema, sql/replaceable and sql/updates, as built and as
# installed (no stale build), and each function, view or trigger has one home. Prints
# "upgrade: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir upgrade
tk_pg_start "$dir" || exit 1
current=$TK_VERSION
sharedir=$(pg_config --sharedir)/extension

# The released versions and how each is filled: its own sample, through its own SQL.
released=(0.1.0 0.2.0 0.3.0 0.4.0)
declare -A fill=([0.1.0]="sample_queue.sql" [0.2.0]="sample_queue.sql sample_queue_0_2_0.sql"
                 [0.3.0]="sample_queue.sql sample_queue_0_2_0.sql sample_queue_0_3_0.sql"
                 [0.4.0]="sample_queue.sql sample_queue_0_2_0.sql sample_queue_0_3_0.sql sample_queue_0_4_0.sql")
frozen=$(cd "$TK_ROOT/sql" && ls tweetkeeper--*.sql | sed -n 's/^tweetkeeper--\([0-9.]*\)\.sql$/\1/p' |
  grep -vx "$current" | sort -V | tr '\n' ' ')
[ "$frozen" = "${released[*]} " ]
tk_ok "every frozen install script is a release tested here (${frozen% })" $?

# Released scripts are frozen: each one as released, byte for byte. A fix to a function goes into
# its source (sql/replaceable), never into a released script.
out=$(cd "$TK_ROOT/sql" && grep -v '^#' RELEASED | sha256sum -c --quiet 2>&1)
tk_ok "every released script is as released (sql/RELEASED's checksums)" $? "$out"
unlisted=$(cd "$TK_ROOT/sql" && for f in tweetkeeper--*.sql; do
  grep -q "  $f\$" RELEASED || git -C "$TK_ROOT" check-ignore -q "sql/$f" || echo "$f"; done)
[ -z "$unlisted" ]
tk_ok "every tracked script in sql/ is a released one in sql/RELEASED (the built ones are ignored)" $? "$unlisted"

# The current version's scripts are built from the sources, as built and as installed.
built=$TK_ROOT/sql/tweetkeeper--$current.sql
"$TK_ROOT/scripts/build-sql.sh" install "$current" | cmp -s - "$built"
tk_ok "sql/tweetkeeper--$current.sql is what scripts/build-sql.sh makes of the sources (make rebuilds it)" $?
cmp -s "$built" "$sharedir/tweetkeeper--$current.sql"
tk_ok "the installed tweetkeeper--$current.sql is the one built from the sources (make install)" $?
previous=${released[-1]}
"$TK_ROOT/scripts/build-sql.sh" upgrade "$previous" "$current" >"$dir/upgrade.sql" &&
  cmp -s "$dir/upgrade.sql" "$TK_ROOT/sql/tweetkeeper--$previous--$current.sql" &&
  cmp -s "$dir/upgrade.sql" "$sharedir/tweetkeeper--$previous--$current.sql"
tk_ok "tweetkeeper--$previous--$current.sql is sql/updates' delta and the replaceable definitions, as built and installed" $?
# Every update script from 0.2.0 on first takes the update lock that the background worker takes
# shared in each transaction (extension/bgworker.cpp's kUpdateLockKey), so the two never lock
# tables in opposite orders (a deadlock, seen when 0.3.0--0.4.0 lacked it).
key=$(sed -n 's/^constexpr int64 kUpdateLockKey = \([0-9]*\);.*/\1/p' "$TK_ROOT/extension/bgworker.cpp")
lockless=$(for f in "$TK_ROOT"/sql/tweetkeeper--*--*.sql; do
  case "$f" in *--0.1.0--0.2.0.sql) continue ;; esac
  # (past the comments, blank lines and psql's \echo guard)
  first=$(grep -v -e '^--' -e '^[[:space:]]*$' -e '^\\echo ' "$f" | head -1)
  [ -n "$key" ] && [ "$first" = "SELECT pg_catalog.pg_advisory_xact_lock($key);" ] || basename "$f"
done)
[ -n "$key" ] && [ -z "$lockless" ]
tk_ok "every update script from 0.2.0 on takes the background worker's update lock first (key ${key:-not found})" $? "$lockless"
untitled=$(for f in "$TK_ROOT"/sql/schema/*.sql "$TK_ROOT"/sql/replaceable/*.sql "$TK_ROOT"/sql/updates/*.sql; do
  awk 'NF { exit !/^-- / }' "$f" || echo "${f#"$TK_ROOT"/}"
done)
[ -z "$untitled" ] && [ "$(ls "$TK_ROOT"/sql/replaceable/*.sql | wc -l)" -ge 8 ]
tk_ok "each source in sql/ opens with a comment that says what it owns" $? "$untitled"
# One home each: a function or view is defined in sql/replaceable only, once; what runs once
# holds none (a delta drops or renames, the replaceable part re-declares).
defs=$(cat "$TK_ROOT"/sql/replaceable/*.sql | grep -oiE '^CREATE OR REPLACE (FUNCTION|PROCEDURE|VIEW|AGGREGATE) [a-z_0-9.]+' |
  tr 'A-Z' 'a-z' | sort | uniq -d)
[ -z "$defs" ]
tk_ok "each function and view is defined once in sql/replaceable" $? "$defs"
stray=$(grep -HinE '^[[:space:]]*CREATE[[:space:]]+(OR[[:space:]]+REPLACE[[:space:]]+)?(FUNCTION|PROCEDURE|VIEW|AGGREGATE)\b' \
  "$TK_ROOT"/sql/schema/*.sql "$TK_ROOT"/sql/updates/*.sql)
[ -z "$stray" ]
tk_ok "sql/schema and sql/updates define no function or view (their home is sql/replaceable)" $? "$stray"
# (Statements start at the line's start here; the bodies of functions are indented.)
kinds=$(grep -HinE '^(CREATE|ALTER|DROP)[[:space:]]+(TABLE|TYPE|INDEX|UNIQUE|SEQUENCE|SCHEMA|TRIGGER|OR REPLACE TRIGGER)\b|^(INSERT|UPDATE|DELETE|TRUNCATE)[[:space:]]' \
  "$TK_ROOT"/sql/replaceable/*.sql)
[ -z "$kinds" ]
tk_ok "sql/replaceable holds nothing that may run only once (tables, types, indexes, triggers, rows)" $? "$kinds"
for v in "${released[@]}"; do
  ls "$TK_ROOT"/sql/tweetkeeper--"$v"--*.sql >/dev/null 2>&1
  tk_ok "an upgrade script leads on from $v (sql/tweetkeeper--$v--*.sql)" $?
done

# Each released version: a filled and an untouched database, and a snapshot of what the filled
# one holds, in the columns its version had. What 0.5.0 retired with Citus (the bucket columns
# and shard_buckets) is left out of the snapshot, once checked to hold nothing on one node: the
# update loses no value.
declare -A rows tables sequences
retired_tables=" shard_buckets "
for v in "${released[@]}"; do
  db=filled_${v//./_}
  tk_psql -d postgres -c "CREATE DATABASE $db" -c "CREATE DATABASE untouched_${v//./_}"
  tk_psql -d "$db" -c "CREATE EXTENSION tweetkeeper VERSION '$v'"
  tk_psql -d "untouched_${v//./_}" -c "CREATE EXTENSION tweetkeeper VERSION '$v'" 2>/dev/null
  out=$(for f in ${fill[$v]}; do cat "$TK_ROOT/tests/lib/$f"; done | tk_psql -d "$db" 2>&1 >/dev/null)
  tk_ok "a $v database filled through $v's SQL (${fill[$v]})" $? "$out"
  TK_COLUMNS=()
  kept=() held=()
  for t in $(tk_tables "$db" r); do
    if [[ $retired_tables == *" $t "* ]]; then
      [ "$(tk_psql -d "$db" -c "SELECT count(*) FROM tweetkeeper.$t")" = 0 ] || held+=("$t")
      continue
    fi
    kept+=("$t")
    TK_COLUMNS[$t]=$(tk_psql -d "$db" -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)
      FROM pg_attribute WHERE attrelid = 'tweetkeeper.$t'::regclass AND attnum > 0 AND NOT attisdropped
                          AND attname <> 'bucket'")
    if tk_psql -d "$db" -c "SELECT 1 FROM pg_attribute WHERE attrelid = 'tweetkeeper.$t'::regclass
                             AND attname = 'bucket' AND NOT attisdropped" | grep -q 1; then
      [ "$(tk_psql -d "$db" -c "SELECT count(bucket) FROM tweetkeeper.$t")" = 0 ] || held+=("$t.bucket")
    fi
  done
  [ ${#held[@]} -eq 0 ]
  tk_ok "the $v database's Citus columns and tables (retired in 0.5.0) hold nothing on one node" $? "${held[*]}"
  declare -p TK_COLUMNS >"$dir/columns-$v.sh"
  tables[$v]=${kept[*]}
  sequences[$v]=$(tk_tables "$db" S)
  TK_SEQUENCES=${sequences[$v]} tk_snapshot "$db" "$dir/before-$v.txt" ${tables[$v]}
  rows[$v]=$(grep -vc '^--' "$dir/before-$v.txt")
  echo "# $v database filled: ${rows[$v]} rows in ${tables[$v]}"
done
PGDATABASE=filled_0_2_0 tk_sql_ok "the 0.2.0 database holds what 0.2.0 added: a watch, daily rollups, a day of usage, housekeeping runs" "
  SELECT (SELECT count(*) = 10 FROM tweetkeeper.watches)
     AND (SELECT count(*) = 100 FROM tweetkeeper.metric_daily)
     AND (SELECT count(*) >= 1 FROM tweetkeeper.daily_usage)
     AND (SELECT count(*) = 2 FROM tweetkeeper.housekeeping_runs)"
PGDATABASE=filled_0_3_0 tk_sql_ok "the 0.3.0 database holds what 0.3.0 added: posts of Bluesky and Mastodon, a resolved handle, endpoints, payloads, a tombstone, an edit, compacted history" "
  SELECT (SELECT count(*) = 7 FROM tweetkeeper.post_refs)
     AND (SELECT count(*) = 1 FROM tweetkeeper.bluesky_handles)
     AND (SELECT count(*) >= 2 FROM tweetkeeper.endpoints)
     AND (SELECT count(*) >= 10 FROM tweetkeeper.payloads)
     AND (SELECT count(*) = 11 FROM tweetkeeper.tombstones)
     AND (SELECT count(*) = 1 FROM tweetkeeper.edits)
     AND (SELECT count(*) > 0 FROM tweetkeeper.metric_history_compact)
     AND (SELECT count(*) = 7 FROM tweetkeeper.tweets WHERE tweet_id < 0 AND update_count = 1)" "
  SELECT (SELECT count(*) FROM tweetkeeper.post_refs), (SELECT count(*) FROM tweetkeeper.bluesky_handles),
         (SELECT count(*) FROM tweetkeeper.payloads), (SELECT count(*) FROM tweetkeeper.edits),
         (SELECT count(*) FROM tweetkeeper.metric_history_compact)"

PGDATABASE=filled_0_4_0 tk_sql_ok "the 0.4.0 database holds what 0.4.0 added: followed accounts of every network, one resolved with a post found, one missing" "
  SELECT (SELECT count(*) = 4 FROM tweetkeeper.followed_accounts)
     AND (SELECT count(*) = 1 FROM tweetkeeper.followed_accounts WHERE status = 'following' AND posts_found = 1)
     AND (SELECT count(*) = 1 FROM tweetkeeper.followed_accounts WHERE status = 'missing')
     AND (SELECT count(*) = 0 FROM tweetkeeper.followed_accounts WHERE lease_pid IS NOT NULL)
     AND (SELECT count(*) = 1 FROM tweetkeeper.post_refs WHERE url LIKE '%/@carol/113000000000000010')" "
  SELECT network, handle, status, posts_found, lease_pid FROM tweetkeeper.followed_accounts ORDER BY follow_id"

# Until ALTER EXTENSION UPDATE, an old database runs its own SQL on the new library (every C
# symbol it names, lease_settings() included, must still be there and answer the same).
for v in "${released[@]}"; do
  PGDATABASE=untouched_${v//./_} tk_sql_ok "before the update, $v's SQL works on the new library" "
    SET tweetkeeper.buffer_ttl = 0;
    DO \$\$ BEGIN PERFORM tweetkeeper.schedule_tweet(1234567890123456789); END \$\$;
    UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute';
    SELECT (SELECT buffer_ttl = interval '0' FROM tweetkeeper.lease_settings())
           AND tweetkeeper.complete_batch(c.lease_id, jsonb_build_array(jsonb_build_object('id', 1234567890123456789))) = 1
      FROM tweetkeeper.claim_batch('before-update') c"
done

# This version's worker on a database still on 0.2.0 (to be updated later): it claims as 0.2.0's
# worker did, without the kept payload hashes 0.2.0's claim_batch() cannot return, even with
# tweetkeeper.payloads set.
tk_mock_start "$dir/mock.log" || exit 1
tk_psql -d postgres -c "CREATE DATABASE worker_0_2_0" -c "ALTER DATABASE worker_0_2_0 SET tweetkeeper.payloads = 'changed'" \
  -c "ALTER DATABASE worker_0_2_0 SET tweetkeeper.buffer_ttl = '1s'" >/dev/null
tk_psql -d worker_0_2_0 -c "CREATE EXTENSION tweetkeeper VERSION '0.2.0'" \
  -c "SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' 150))" >/dev/null
TWEETKEEPER_BEARER_TOKEN=x "$TK_WORKER" --dsn "${TK_DSN/dbname=tweetkeeper/dbname=worker_0_2_0}" --api-url "$TK_MOCK_URL" \
  --exit-when-idle 2 --name on-0.2.0 >"$dir/worker-0.2.0.log" 2>&1
rc=$?
PGDATABASE=worker_0_2_0 tk_sql_ok "this version's worker on a 0.2.0 database, payloads on, refreshes every tweet (exit $rc: $(tail -1 "$dir/worker-0.2.0.log" | cut -c 25-))" "
  SELECT $rc = 0 AND count(*) = 150 AND count(*) FILTER (WHERE update_count > 0) > 100
     AND (SELECT extversion = '0.2.0' FROM pg_extension WHERE extname = 'tweetkeeper')
    FROM tweetkeeper.tweets WHERE update_count > 0 OR problem_type IS NOT NULL"

# update DB [TO]: ALTER EXTENSION tweetkeeper UPDATE [TO 'TO'], checked to arrive there.
update() {
  local db=$1 to=${2:-$current} out version
  out=$(tk_psql -d "$db" -c "ALTER EXTENSION tweetkeeper UPDATE${2:+ TO '$2'}" 2>&1)
  tk_ok "ALTER EXTENSION tweetkeeper UPDATE${2:+ TO '$2'} in $db" $? "$out"
  version=$(tk_psql -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'tweetkeeper'")
  [ "$version" = "$to" ]
  tk_ok "$db is on $to (is on $version)" $?
}

# A database 0.4.0 distributed over Citus (distribute() mapped its shards in shard_buckets) is
# refused by the update to 0.5.0, which runs on one node only, with the way back; and it stays on
# 0.4.0, whole. (No Citus here: the map is what the update reads, and what undistribute() empties.)
tk_psql -d postgres -c "CREATE DATABASE distributed_0_4_0" >/dev/null
tk_psql -d distributed_0_4_0 -c "CREATE EXTENSION tweetkeeper VERSION '0.4.0'" \
  -c "INSERT INTO tweetkeeper.shard_buckets (shard, buckets) VALUES (1, '{0,1}'), (2, '{2,3}')" >/dev/null
out=$(tk_psql -d distributed_0_4_0 -v VERBOSITY=verbose -c "ALTER EXTENSION tweetkeeper UPDATE" 2>&1)
[ $? -ne 0 ] && grep -q '0A000' <<<"$out" && grep -q 'distributed with Citus' <<<"$out" &&
  grep -q 'undistribute()' <<<"$out"
tk_ok "the update of a 0.4.0 database distributed over Citus is refused (0A000), saying how to go back to one node" $? "$out"
PGDATABASE=distributed_0_4_0 tk_sql_ok "the refused database is still on 0.4.0, its shard map kept" \
  "SELECT (SELECT extversion = '0.4.0' FROM pg_extension WHERE extname = 'tweetkeeper')
      AND (SELECT count(*) = 2 FROM tweetkeeper.shard_buckets)"
tk_psql -d distributed_0_4_0 -c "SELECT tweetkeeper.undistribute()" >/dev/null
update distributed_0_4_0

# A schema tweetkeeper_internal made before the update by a role that is no superuser, with a
# function of an internal's name in it: the update refuses it (42501), changing nothing; with the
# schema gone, the update makes its own and moves the internals there.
tk_psql -d postgres -c "CREATE ROLE planter LOGIN" -c "CREATE DATABASE planted_0_4_0 OWNER planter" >/dev/null
tk_psql -d planted_0_4_0 -c "CREATE EXTENSION tweetkeeper VERSION '0.4.0'" >/dev/null
PGUSER=planter tk_psql -d planted_0_4_0 -c "CREATE SCHEMA tweetkeeper_internal" \
  -c "CREATE FUNCTION tweetkeeper_internal.stop_watching(bigint[]) RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'" >/dev/null
out=$(tk_psql -d planted_0_4_0 -v VERBOSITY=verbose -c "ALTER EXTENSION tweetkeeper UPDATE" 2>&1)
[ $? -ne 0 ] && grep -q '42501: the schema tweetkeeper_internal exists already' <<<"$out"
tk_ok "the update refuses a schema tweetkeeper_internal someone else made (42501)" $? "$out"
PGDATABASE=planted_0_4_0 tk_sql_ok "the refused database is still on 0.4.0, its internals in tweetkeeper" \
  "SELECT (SELECT extversion = '0.4.0' FROM pg_extension WHERE extname = 'tweetkeeper')
      AND to_regprocedure('tweetkeeper.stop_watching(bigint[])') IS NOT NULL"
PGUSER=planter tk_psql -d planted_0_4_0 -c "DROP SCHEMA tweetkeeper_internal CASCADE" >/dev/null 2>&1
update planted_0_4_0
PGDATABASE=planted_0_4_0 tk_sql_ok "then the update makes tweetkeeper_internal, the extension's, moves the internals into it and takes back 0.4.0's grants" \
  "SELECT n.nspowner = 'postgres'::regrole AND to_regprocedure('tweetkeeper.stop_watching(bigint[])') IS NULL
      AND NOT has_function_privilege('tweetkeeper_admin', 'tweetkeeper_internal.stop_watching(bigint[])', 'EXECUTE')
      AND EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_namespace'::regclass AND d.objid = n.oid AND d.deptype = 'e')
     FROM pg_namespace n WHERE n.nspname = 'tweetkeeper_internal'"

# 0.1.0 -> 0.2.0, and what that step does.
update filled_0_1_0 0.2.0
PGDATABASE=filled_0_1_0 tk_sql_ok "an edited policy is the user's after the update (pg_dump keeps all of it)" \
  "SELECT bool_and(source = 'user') AND count(*) = 6 FROM tweetkeeper.age_policy"
PGDATABASE=filled_0_1_0 tk_sql_ok "batches claimed by 0.1.0 name no session, so they are never called abandoned" \
  "SELECT count(*) = 4 AND bool_and(claimer_pid IS NULL) FROM tweetkeeper.batches"
PGDATABASE=filled_0_1_0 tk_sql_ok "0.1.0's history is metric_history's first partition, everything before the update" \
  "SELECT starts = '-infinity' AND ends > now() AND rows_estimate >= 0
     FROM tweetkeeper.history_partitions WHERE partition = 'tweetkeeper.metric_history_before_0_2_0'::regclass"
PGDATABASE=filled_0_1_0 tk_sql_ok "it is no member of the extension (retention may drop it) and no longer in extconfig" \
  "SELECT NOT EXISTS (SELECT FROM pg_depend WHERE objid = 'tweetkeeper.metric_history_before_0_2_0'::regclass AND deptype = 'e')
      AND NOT 'tweetkeeper.metric_history_before_0_2_0'::regclass = ANY (extconfig)
      AND 'tweetkeeper.metric_history'::regclass = ANY (extconfig)
     FROM pg_extension WHERE extname = 'tweetkeeper'"
PGDATABASE=filled_0_1_0 tk_sql_ok "housekeeping creates partitions after it" "SELECT tweetkeeper.create_partitions() >= 1"
PGDATABASE=filled_0_1_0 tk_sql_ok "the first of them starts where it ends" \
  "SELECT (SELECT min(starts) FILTER (WHERE starts > '-infinity') FROM tweetkeeper.history_partitions)
          = (SELECT ends FROM tweetkeeper.history_partitions WHERE starts = '-infinity')"

# On to the current version: the 0.1.0 database step by step, the untouched 0.1.0 one in one
# command (PostgreSQL follows the chain of scripts), the filled 0.2.0 one through 0.3.0, the
# filled 0.3.0 one through 0.4.0, the others in one command.
update filled_0_1_0 0.3.0
update filled_0_1_0 0.4.0
update filled_0_1_0
update untouched_0_1_0
update filled_0_2_0 0.3.0
update filled_0_2_0
update untouched_0_2_0
update filled_0_3_0 0.4.0
update filled_0_3_0
update untouched_0_3_0
update filled_0_4_0
update untouched_0_4_0
PGDATABASE=untouched_0_2_0 tk_sql_ok "an untouched policy is still the extension's (pg_dump leaves it out)" \
  "SELECT bool_and(source = 'extension') AND count(*) = 5 FROM tweetkeeper.age_policy"
for v in "${released[@]}"; do
  source "$dir/columns-$v.sh"
  TK_SEQUENCES=${sequences[$v]} tk_snapshot "filled_${v//./_}" "$dir/after-$v.txt" ${tables[$v]}
  diff -u "$dir/before-$v.txt" "$dir/after-$v.txt" >"$dir/data-$v.diff"
  tk_ok "from $v nothing was lost or changed: all ${rows[$v]} rows and the sequence are identical" $? \
    "$(head -20 "$dir/data-$v.diff")"
done

# History kept before the update compacts like a fresh install's: observations of ten days ago
# (in a partition of their own, of a week past) packed into metric_history_compact, every row read back the same.
PGDATABASE=filled_0_2_0 tk_sql_ok "an updated database compacts its history and reads every observation back the same" "
  INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, like_count)
  SELECT tweet_id, 3, now() - interval '10 days', 7 FROM tweetkeeper.tweets;
  CREATE TEMP TABLE created AS SELECT tweetkeeper.create_partitions();
  CREATE TEMP TABLE before AS SELECT * FROM tweetkeeper.metric_history;
  CREATE TEMP TABLE compacted AS SELECT tweetkeeper.compact_history() AS n;
  SELECT (SELECT n > 0 FROM compacted)
     AND (SELECT count(*) > 0 FROM tweetkeeper.metric_history_compact)
     AND NOT EXISTS ((SELECT * FROM before EXCEPT ALL SELECT * FROM tweetkeeper.metric_history)
                     UNION ALL (SELECT * FROM tweetkeeper.metric_history EXCEPT ALL SELECT * FROM before))" \
  "SELECT (SELECT count(*) FROM tweetkeeper.metric_history_compact), (SELECT count(*) FROM tweetkeeper.metric_history)"

# The same schema as a fresh install, to the letter.
tk_psql -d postgres -c "CREATE DATABASE fresh"
tk_psql -d fresh -c "CREATE EXTENSION tweetkeeper" 2>/dev/null
tk_psql -d fresh -f "$TK_ROOT/tests/upgrade/schema.sql" >"$dir/schema-fresh.txt"
facts=$(wc -l <"$dir/schema-fresh.txt")
for db in filled_0_1_0 untouched_0_1_0 filled_0_2_0 untouched_0_2_0 filled_0_3_0 untouched_0_3_0 filled_0_4_0 untouched_0_4_0; do
  tk_psql -d "$db" -f "$TK_ROOT/tests/upgrade/schema.sql" >"$dir/schema-$db.txt"
  diff -u "$dir/schema-fresh.txt" "$dir/schema-$db.txt" >"$dir/schema-$db.diff"
  tk_ok "the schema of $db, updated, equals a fresh $current install ($facts facts compared)" $? \
    "$(head -40 "$dir/schema-$db.diff")"
done
[ "$facts" -gt 150 ] && grep -q "^column: batches #14 claimer_started" "$dir/schema-fresh.txt" &&
  grep -q "^extension: version $current," "$dir/schema-fresh.txt"
tk_ok "the schema description covers the version, columns, functions and the rest ($facts facts)" $?
# Functions a reader can hold in mind: none of the extension's bodies is longer than 80 lines
# (issue 49's bound; the claims, the completion, maintenance and forecast are cut into named
# steps; a new one that grows past that is cut too).
extension_functions="SELECT p.proname, array_length(string_to_array(p.prosrc, E'\n'), 1) AS lines FROM pg_proc p
    JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
    JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'tweetkeeper'"
PGDATABASE=fresh tk_sql_ok "no function of the extension is longer than 80 lines (and there are some to measure)" \
  "SELECT count(*) FILTER (WHERE lines > 80) = 0 AND count(*) > 50 AND max(lines) > 60 FROM ($extension_functions) f" \
  "SELECT format('%s functions, the longest %s lines; over 80: %s', count(*), max(lines),
                coalesce(string_agg(format('%s (%s)', proname, lines), ', ') FILTER (WHERE lines > 80), 'none'))
     FROM ($extension_functions) f"

# The updated queues work: the batch left in flight is handed out once its lease ends, new lease
# ids continue the sequence, a claim names its session. (At once: the credential's requests are
# not spread over its window here, as in the samples.)
for v in "${released[@]}"; do
  PGDATABASE=filled_${v//./_} tk_sql_ok "the queue updated from $v claims and completes" "
    SET tweetkeeper.spending = burst;
    UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE lease_id IS NOT NULL;
    SELECT tweetkeeper.complete_batch(c.lease_id,
             (SELECT jsonb_agg(jsonb_build_object('id', x, 'like_count', 1)) FROM unnest(c.tweet_ids) x)) = 100
           AND c.lease_id > (SELECT max(lease_id) FROM tweetkeeper.batches WHERE lease_id <> c.lease_id)
      FROM tweetkeeper.claim_batch('after-update') c"
  PGDATABASE=filled_${v//./_} tk_sql_ok "the new batch names the session that claimed it" \
    "SELECT claimer_pid IS NOT NULL AND claimer_started IS NOT NULL FROM tweetkeeper.batches WHERE worker = 'after-update'"
done

# A single node updated to this version, then split into partitions (docs/partitions.md): the
# database filled with 0.4.0 becomes the partition p0 of a proxy (a database of its own here, with
# tweetkeeper_proxy and Debian's PL/Proxy), holding all 64 slots; a second node joins and
# rebalance() moves half the slots to it. Every post's row and every observation, read through the
# proxy, is what the single node held; each post is on the node of its slot. (Batches still in
# flight end first: their leases run out, as they would with time.)
PGDATABASE=filled_0_4_0 tk_psql -q -c "UPDATE tweetkeeper.batches SET expires_at = now() WHERE outcome IS NULL" \
  -c "SELECT tweetkeeper.maintenance()" >/dev/null
split_digest="SELECT (SELECT md5(string_agg(t::text, ',' ORDER BY t.tweet_id)) || count(*) FROM tweetkeeper.tweets t)
                  || (SELECT md5(string_agg(h::text, ',' ORDER BY h.tweet_id, h.observed_at, h.lease_id)) || count(*)
                        FROM tweetkeeper.metric_history h)"
single=$(PGDATABASE=filled_0_4_0 tk_psql -c "$split_digest")
tk_psql -d postgres -c "CREATE DATABASE split_proxy" -c "CREATE DATABASE split_p1" >/dev/null
PGDATABASE=split_p1 tk_psql -c "CREATE EXTENSION tweetkeeper" 2>/dev/null
node_dsn() { echo "host=$PGHOST port=$PGPORT dbname=$1"; }
split=$(PGDATABASE=split_proxy tk_psql 2>&1 <<SQL
CREATE EXTENSION tweetkeeper_proxy CASCADE;
SELECT count(*) FROM tweetkeeper.create_cluster(ARRAY['p0'], ARRAY['$(node_dsn filled_0_4_0)']);
SELECT tweetkeeper.add_node('p1', '$(node_dsn split_p1)');
CALL tweetkeeper.rebalance(50);
SQL
)
tk_ok "a 0.4.0 database updated, then split into two partitions (rebalance)" $? "$split"
PGDATABASE=split_proxy tk_sql_ok "every post and observation, read through the proxy, is the single node's" \
  "SELECT ($split_digest) = '$single' AND (SELECT count(*) FROM tweetkeeper.tweets) > 0
          AND (SELECT array_agg(cardinality(slots) ORDER BY node) FROM tweetkeeper.cluster) = '{32,32}'"
for db in filled_0_4_0 split_p1; do
  PGDATABASE=$db tk_sql_ok "$db holds posts of its own slots only, some" \
    "SELECT count(*) > 0 AND bool_and(get_bit(p.slots, tweetkeeper.url_partition_hash(t.url) & 63) = 1)
       FROM tweetkeeper.posts t, tweetkeeper.partition p"
done

tk_summary upgrade
