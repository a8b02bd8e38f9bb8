#!/usr/bin/env bash
# Writes the extension's SQL scripts from their sources (the Makefile calls it; so does the
# upgrade test, to check what was built and installed). Two kinds of source:
#   sql/schema/NN_*.sql       what runs once: types, tables, indexes, sequences, triggers (95:
#                             declared once, like an index), their comments, the rows CREATE
#                             EXTENSION inserts,
#                             pg_extension_config_dump
#   sql/replaceable/NN_*.sql  what can be run again: functions (those of triggers too) and views
#                             (CREATE OR REPLACE), their comments, roles and grants (idempotent)
#   sql/updates/A--B.sql      the hand-written delta from release A to B: what a database made
#                             with A needs before B's replaceable definitions (new tables,
#                             columns, data moves, DROP of what B no longer has or re-declares);
#                             a line "-- include sql/schema/NN_name.sql" brings in a schema part
#                             that is new in B whole
# The install script is both kinds, part by part in the order of NN (a part's schema before its
# replaceable definitions); an upgrade script is the delta followed by every replaceable part.
# So each function and view is written once, in sql/replaceable, and reaches fresh installs and
# upgrades alike. Released scripts are frozen files, never rebuilt (sql/RELEASED).
# Releasing version V (previous release P): add the scripts sql/tweetkeeper--V.sql and
# sql/tweetkeeper--P--V.sql as built to git, their lines in .gitignore go, their checksums join
# sql/RELEASED (tests/upgrade/upgrade.sh checks them); V joins upgrade.sh's released list with a
# sample of what V added; then default_version moves on and sql/updates/V--NEXT.sql starts.
# The proxy database's extension, tweetkeeper_proxy (docs/partitions.md), is sql/proxy/NN_*.sql
# after the pure part that places posts, sql/replaceable/05_placing.sql (the same URL parsers and
# hash as every node's).
#   build-sql.sh install VERSION
#   build-sql.sh upgrade FROM TO
#   build-sql.sh proxy VERSION
set -euo pipefail
sql=$(cd "$(dirname "$0")/../sql" && pwd)

# The replaceable parts must be safe to run again: every CREATE of a function, procedure, view or
# aggregate says OR REPLACE (else an upgrade fails on the first that exists), and none declares a
# trigger (sql/schema/95_triggers.sql does).
check_replaceable() {
  local bad
  bad=$(grep -HnE '^[[:space:]]*CREATE[[:space:]]+((FUNCTION|PROCEDURE|VIEW|AGGREGATE)\b|(OR[[:space:]]+REPLACE[[:space:]]+)?(CONSTRAINT[[:space:]]+)?TRIGGER\b)' \
    "$sql"/replaceable/*.sql || true)
  if [ -n "$bad" ]; then
    echo "build-sql: a replaceable definition without OR REPLACE, or a trigger (its home is sql/schema):" >&2
    echo "$bad" >&2
    exit 1
  fi
}

part_names() { ls "$sql/schema" "$sql/replaceable" | grep -E '^[0-9]{2}_.*\.sql$' | sort -u; }

case "${1:-}" in
  install)
    version=${2:?usage: build-sql.sh install VERSION}
    check_replaceable
    echo "\\echo Use \"CREATE EXTENSION tweetkeeper\" to load this file. \\quit"
    echo "-- tweetkeeper $version, built by scripts/build-sql.sh from sql/schema and sql/replaceable."
    for part in $(part_names); do
      for kind in schema replaceable; do
        if [ -f "$sql/$kind/$part" ]; then
          echo
          echo "-- ==== sql/$kind/$part"
          cat "$sql/$kind/$part"
        fi
      done
    done
    ;;
  upgrade)
    from=${2:?usage: build-sql.sh upgrade FROM TO} to=${3:?usage: build-sql.sh upgrade FROM TO}
    delta=$sql/updates/$from--$to.sql
    [ -f "$delta" ] || { echo "build-sql: no delta $delta" >&2; exit 1; }
    check_replaceable
    echo "\\echo Use \"ALTER EXTENSION tweetkeeper UPDATE TO '$to'\" to load this file. \\quit"
    echo "-- tweetkeeper $from -> $to, built by scripts/build-sql.sh: the delta, then every"
    echo "-- replaceable definition of $to."
    echo
    echo "-- ==== sql/updates/$from--$to.sql"
    # A line "-- include sql/schema/NN_name.sql" in the delta stands for that part's text: a table
    # new in TO is written once, in sql/schema, for installs and the upgrade alike.
    while IFS= read -r line || [ -n "$line" ]; do
      if [[ $line =~ ^--\ include\ sql/schema/([0-9]{2}_[a-z0-9_]+\.sql)$ ]]; then
        inc=$sql/schema/${BASH_REMATCH[1]}
        [ -f "$inc" ] || { echo "build-sql: $delta includes $inc, which does not exist" >&2; exit 1; }
        echo "-- ==== sql/schema/${BASH_REMATCH[1]} (included)"
        cat "$inc"
      elif [[ $line =~ ^--[[:space:]]*include ]]; then
        echo "build-sql: $delta: an include line not of the form \"-- include sql/schema/NN_name.sql\": $line" >&2
        exit 1
      else
        printf '%s\n' "$line"
      fi
    done <"$delta"
    for part in $(ls "$sql/replaceable" | sort); do
      echo
      echo "-- ==== sql/replaceable/$part"
      cat "$sql/replaceable/$part"
    done
    ;;
  proxy)
    version=${2:?usage: build-sql.sh proxy VERSION}
    echo "\\echo Use \"CREATE EXTENSION tweetkeeper_proxy\" to load this file. \\quit"
    echo "-- tweetkeeper_proxy $version, built by scripts/build-sql.sh from sql/replaceable/05_placing.sql and sql/proxy."
    for part in "$sql/replaceable/05_placing.sql" $(ls "$sql"/proxy/[0-9][0-9]_*.sql | sort); do
      echo
      echo "-- ==== sql/${part#"$sql/"}"
      cat "$part"
    done
    ;;
  *)
    echo "usage: build-sql.sh install VERSION | upgrade FROM TO | proxy VERSION" >&2
    exit 2
    ;;
esac
