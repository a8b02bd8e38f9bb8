#!/usr/bin/env bash
# Releases that upgrade: a database made with the released 0.1.0 and filled with a queue in every
# state is updated with ALTER EXTENSION tweetkeeper UPDATE. Nothing may be lost (every row of
# every table, the lease sequence), the new columns must say the right thing, the updated schema
# must equal a fresh install's (tests/upgrade/schema.sql, diffed), and the queue must go on
# working. Prints "upgrade: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir upgrade
tk_pg_start "$dir" || exit 1
current=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$TK_ROOT/tweetkeeper.control")
released=0.1.0

tk_psql -d postgres -c "CREATE DATABASE filled" -c "CREATE DATABASE untouched" -c "CREATE DATABASE fresh"
tk_psql -d filled -c "CREATE EXTENSION tweetkeeper VERSION '$released'"
tk_psql -d untouched -c "CREATE EXTENSION tweetkeeper VERSION '$released'"
tk_psql -d filled -f "$TK_ROOT/tests/lib/sample_queue.sql" >/dev/null
for t in age_policy tweets metric_history batches credentials; do
  TK_COLUMNS[$t]=$(tk_psql -d filled -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)
    FROM pg_attribute WHERE attrelid = 'tweetkeeper.$t'::regclass AND attnum > 0 AND NOT attisdropped")
done
tk_snapshot filled "$dir/before.txt"
rows=$(grep -vc '^--' "$dir/before.txt")
echo "# $released database filled: $rows rows"

# Until ALTER EXTENSION UPDATE, a 0.1.0 database runs its own SQL on the new library (every C
# symbol 0.1.0 names, lease_settings() included, must still be there and answer the same).
PGDATABASE=untouched tk_sql_ok "before the update, $released's SQL works on the new library" "
  SET tweetkeeper.buffer_ttl = 0;
  DO \$\$ BEGIN PERFORM tweetkeeper.schedule_tweet(1234567890123456789); END \$\$;
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute';
  SELECT (SELECT buffer_ttl = interval '0' FROM tweetkeeper.lease_settings())
         AND tweetkeeper.complete_batch(c.lease_id, jsonb_build_array(jsonb_build_object('id', 1234567890123456789))) = 1
    FROM tweetkeeper.claim_batch('before-update') c"

out=$(tk_psql -d filled -c "ALTER EXTENSION tweetkeeper UPDATE" 2>&1)
tk_ok "ALTER EXTENSION tweetkeeper UPDATE from $released (filled database)" $? "$out"
out=$(tk_psql -d untouched -c "ALTER EXTENSION tweetkeeper UPDATE" 2>&1)
tk_ok "ALTER EXTENSION tweetkeeper UPDATE from $released (untouched database)" $? "$out"
version=$(tk_psql -d filled -c "SELECT extversion FROM pg_extension WHERE extname = 'tweetkeeper'")
[ "$version" = "$current" ]; tk_ok "the updated version is the default version $current (was $version)" $?

tk_snapshot filled "$dir/after.txt"
diff -u "$dir/before.txt" "$dir/after.txt" >"$dir/data.diff"
tk_ok "nothing was lost or changed: all $rows rows and the lease sequence are identical" $? "$(head -20 "$dir/data.diff")"

PGDATABASE=filled tk_sql_ok "an edited policy is the user's after the update (pg_dump keeps all of it)" \
  "SELECT bool_and(source = 'user') AND count(*) = 6 FROM tweetkeeper.age_policy"
PGDATABASE=untouched tk_sql_ok "an untouched policy is still the extension's (pg_dump leaves it out)" \
  "SELECT bool_and(source = 'extension') AND count(*) = 5 FROM tweetkeeper.age_policy"
PGDATABASE=filled tk_sql_ok "batches claimed by 0.1.0 name no session, so they are never called abandoned" \
  "SELECT count(*) = 4 AND bool_and(claimer_pid IS NULL) FROM tweetkeeper.batches"

PGDATABASE=filled tk_sql_ok "0.1.0's history is metric_history's first partition, everything before the update" \
  "SELECT starts = '-infinity' AND ends > now() AND rows_estimate >= 0
     FROM tweetkeeper.history_partitions WHERE partition = 'tweetkeeper.metric_history_before_0_2_0'::regclass"
PGDATABASE=filled tk_sql_ok "it is no member of the extension (retention may drop it) and no longer in extconfig" \
  "SELECT NOT EXISTS (SELECT FROM pg_depend WHERE objid = 'tweetkeeper.metric_history_before_0_2_0'::regclass AND deptype = 'e')
      AND NOT 'tweetkeeper.metric_history_before_0_2_0'::regclass = ANY (extconfig)
      AND 'tweetkeeper.metric_history'::regclass = ANY (extconfig)
     FROM pg_extension WHERE extname = 'tweetkeeper'"
PGDATABASE=filled tk_sql_ok "housekeeping creates partitions after it" "SELECT tweetkeeper.create_partitions() >= 1"
PGDATABASE=filled tk_sql_ok "the first of them starts where it ends" \
  "SELECT (SELECT min(starts) FILTER (WHERE starts > '-infinity') FROM tweetkeeper.history_partitions)
          = (SELECT ends FROM tweetkeeper.history_partitions WHERE starts = '-infinity')"

# The same schema as a fresh install, to the letter.
tk_psql -d fresh -c "CREATE EXTENSION tweetkeeper" 2>/dev/null
tk_psql -d fresh -f "$TK_ROOT/tests/upgrade/schema.sql" >"$dir/schema-fresh.txt"
tk_psql -d filled -f "$TK_ROOT/tests/upgrade/schema.sql" >"$dir/schema-updated.txt"
tk_psql -d untouched -f "$TK_ROOT/tests/upgrade/schema.sql" >"$dir/schema-untouched.txt"
facts=$(wc -l <"$dir/schema-fresh.txt")
diff -u "$dir/schema-fresh.txt" "$dir/schema-updated.txt" >"$dir/schema.diff"
tk_ok "the updated schema equals a fresh $current install ($facts facts compared)" $? "$(head -40 "$dir/schema.diff")"
cmp -s "$dir/schema-updated.txt" "$dir/schema-untouched.txt"
tk_ok "both updated databases have the same schema" $?
[ "$facts" -gt 150 ] && grep -q "^column: batches #14 claimer_started" "$dir/schema-fresh.txt"
tk_ok "the schema description covers columns, functions and the rest ($facts facts)" $?

# The updated queue works: the batch left in flight by 0.1.0 is handed out once its lease ends,
# new lease ids continue the sequence, a claim names its session.
PGDATABASE=filled tk_sql_ok "the updated queue claims and completes" "
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE lease_id IS NOT NULL;
  SELECT tweetkeeper.complete_batch(c.lease_id,
           (SELECT jsonb_agg(jsonb_build_object('id', x, 'like_count', 1)) FROM unnest(c.tweet_ids) x)) = 100
         AND c.lease_id > (SELECT max(lease_id) FROM tweetkeeper.batches WHERE lease_id <> c.lease_id)
    FROM tweetkeeper.claim_batch('after-update') c"
PGDATABASE=filled tk_sql_ok "the new batch names the session that claimed it" \
  "SELECT claimer_pid IS NOT NULL AND claimer_started IS NOT NULL FROM tweetkeeper.batches WHERE worker = 'after-update'"

tk_summary upgrade
