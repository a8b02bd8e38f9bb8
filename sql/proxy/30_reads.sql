-- Reads through the proxy (docs/partitions.md): the nodes' relations as one. Each node's
-- relations are foreign tables (postgres_fdw, PostgreSQL's own: it streams with cursors, sends a
-- query's conditions to each node, and keeps one snapshot per node within a transaction), in a
-- schema of the node's own (tweetkeeper_node_<name>); a view tweetkeeper.<name> on the proxy is
-- their UNION ALL, exact because each post lives on one node. What is global is the node of slot
-- 0's alone (followed accounts, credentials, the policy). The stats views are the nodes' own
-- definitions (read from the node of slot 0), computed on the proxy over those relations: what one
-- node holding every post would show. build_reads() makes it all; create_cluster() calls it.

-- Per post: the union of every node's rows.
CREATE FUNCTION tweetkeeper_proxy.post_relations() RETURNS text[]
  LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
  RETURN ARRAY['tweets', 'metric_history', 'metric_daily', 'payloads', 'tombstones', 'edits', 'post_refs', 'posts',
               'lifespans', 'watches', 'batches', 'daily_usage', 'handovers', 'history_partitions', 'collection_posts',
               'post_availability'];
-- Global: the node of slot 0's.
CREATE FUNCTION tweetkeeper_proxy.global_relations() RETURNS text[]
  LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
  RETURN ARRAY['followed_accounts', 'follows', 'age_policy'];
-- Credentials: each node keeps its share of each one's window and cap (add_credential); the
-- proxy shows each credential once, the nodes' rows added up: what the credential's windows and
-- caps are, what is left of them and what was used, by every node together. How each column of
-- the node's table adds up (a column not named here is an error: the proxy must learn it first).
CREATE FUNCTION tweetkeeper_proxy.credential_column(col text) RETURNS text
  LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
  RETURN CASE WHEN col = 'name' THEN 'c.name'
              WHEN col IN ('requests_per_window', 'monthly_cap', 'remaining', 'month_used', 'requests') THEN format('sum(c.%I)', col)
              WHEN col IN ('month_start', 'window_started_at') THEN format('min(c.%I)', col)
              WHEN col IN ('provider', 'window_length', 'price_per_read', 'window_reset_at', 'status', 'status_reason',
                           'status_until', 'last_used_at', 'paced_until') THEN format('max(c.%I)', col) END;
-- Functions of posts' rows, RUN ON ALL under the node's own signature (each post is on one node).
CREATE FUNCTION tweetkeeper_proxy.post_functions() RETURNS text[]
  LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
  RETURN ARRAY['metrics_at', 'why_due'];
-- The stats views, made again on the proxy from the node's definition.
CREATE FUNCTION tweetkeeper_proxy.stats_views() RETURNS text[]
  LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
  RETURN ARRAY['queue_stats', 'batch_stats', 'usage_stats', 'credential_stats', 'mortality_by_age', 'mortality_by_date'];

-- The node of slot 0's enum types and view definitions (PL/Proxy, RUN ON 0).
CREATE FUNCTION tweetkeeper_proxy.node_enums(OUT name text, OUT labels text[]) RETURNS SETOF record
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON 0;
  SELECT t.typname::text AS name, array_agg(e.enumlabel::text ORDER BY e.enumsortorder) AS labels
    FROM pg_catalog.pg_type t JOIN pg_catalog.pg_enum e ON e.enumtypid = t.oid
   WHERE t.typnamespace = 'tweetkeeper'::pg_catalog.regnamespace GROUP BY t.typname;
$$;
CREATE FUNCTION tweetkeeper_proxy.node_viewdefs(names text[], OUT name text, OUT def text) RETURNS SETOF record
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON 0;
  SELECT c.relname::text AS name, pg_catalog.pg_get_viewdef(c.oid, true) AS def FROM pg_catalog.pg_class c
   WHERE c.relnamespace = 'tweetkeeper'::pg_catalog.regnamespace AND c.relname = ANY (names);
$$;

CREATE FUNCTION tweetkeeper_proxy.node_functions(names text[], OUT name text, OUT args text, OUT result text) RETURNS SETOF record
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON 0;
  SELECT p.proname::text AS name, pg_catalog.pg_get_function_arguments(p.oid) AS args,
         pg_catalog.pg_get_function_result(p.oid) AS result
    FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'tweetkeeper'::pg_catalog.regnamespace AND p.proname = ANY (names);
$$;

-- A libpq connection string's keywords and values (keyword=value, values quoted or not), as
-- postgres_fdw's server options take them; user and password are a user mapping's, not a server's.
CREATE FUNCTION tweetkeeper_proxy.conninfo_options(connstr text) RETURNS text
  LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
  RETURN (SELECT string_agg(format('%I %L', m[1], regexp_replace(regexp_replace(m[2], '^''(.*)''$', '\1'), '\\(.)', '\1', 'g')), ', ')
            FROM regexp_matches(connstr, '([A-Za-z_]+)\s*=\s*(''(?:[^''\\]|\\.)*''|\S+)', 'g') AS m
           WHERE m[1] NOT IN ('user', 'password'));

CREATE FUNCTION tweetkeeper_proxy.node_schema(node text) RETURNS text
  LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
  RETURN 'tweetkeeper_node_' || lower(translate(node, '.-', '__'));

CREATE FUNCTION tweetkeeper_proxy.build_reads() RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET client_min_messages = warning AS $$
DECLARE
  e record;
  n record;
  v record;
  rel text;
  home text := (SELECT s.node FROM tweetkeeper_proxy.slots s WHERE s.slot = 0);
  label text;
  unknown text;
  cols text;
BEGIN
  -- The nodes' enum types, which their tables' columns have (new labels added).
  FOR e IN SELECT * FROM tweetkeeper_proxy.node_enums() LOOP
    IF to_regtype('tweetkeeper.' || e.name) IS NULL THEN
      EXECUTE format('CREATE TYPE tweetkeeper.%I AS ENUM (%s)', e.name,
                     (SELECT string_agg(quote_literal(l), ', ') FROM unnest(e.labels) AS l));
    ELSE
      FOREACH label IN ARRAY e.labels LOOP
        EXECUTE format('ALTER TYPE tweetkeeper.%I ADD VALUE IF NOT EXISTS %L', e.name, label);
      END LOOP;
    END IF;
  END LOOP;
  -- Views first (they depend on the foreign tables), then each node's server and foreign tables.
  FOREACH rel IN ARRAY tweetkeeper_proxy.stats_views() || tweetkeeper_proxy.post_relations() || tweetkeeper_proxy.global_relations()
                       || 'credentials'::text LOOP
    EXECUTE format('DROP VIEW IF EXISTS tweetkeeper.%I', rel);
  END LOOP;
  FOR n IN SELECT * FROM tweetkeeper_proxy.nodes LOOP
    EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', tweetkeeper_proxy.node_schema(n.node));
    EXECUTE format('DROP SERVER IF EXISTS %I CASCADE', tweetkeeper_proxy.node_schema(n.node));
    EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER postgres_fdw OPTIONS (%s, async_capable %L, fetch_size %L)',
                   tweetkeeper_proxy.node_schema(n.node), tweetkeeper_proxy.conninfo_options(n.connstr), 'true', '10000');
    EXECUTE format('CREATE USER MAPPING FOR PUBLIC SERVER %I', tweetkeeper_proxy.node_schema(n.node));
    EXECUTE format('CREATE SCHEMA %I', tweetkeeper_proxy.node_schema(n.node));
    EXECUTE format('IMPORT FOREIGN SCHEMA tweetkeeper LIMIT TO (%s) FROM SERVER %I INTO %I',
                   (SELECT string_agg(quote_ident(r), ', ') FROM unnest(tweetkeeper_proxy.post_relations() || 'credentials'::text
                      || CASE WHEN n.node = home THEN tweetkeeper_proxy.global_relations() ELSE '{}' END) AS r),
                   tweetkeeper_proxy.node_schema(n.node), tweetkeeper_proxy.node_schema(n.node));
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO tweetkeeper_reader', tweetkeeper_proxy.node_schema(n.node));
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO tweetkeeper_reader', tweetkeeper_proxy.node_schema(n.node));
    EXECUTE format('GRANT USAGE ON FOREIGN SERVER %I TO tweetkeeper_reader', tweetkeeper_proxy.node_schema(n.node));
  END LOOP;
  FOREACH rel IN ARRAY tweetkeeper_proxy.post_relations() LOOP
    EXECUTE format('CREATE VIEW tweetkeeper.%I AS %s', rel,
                   (SELECT string_agg(format('SELECT * FROM %I.%I', tweetkeeper_proxy.node_schema(x.node), rel), ' UNION ALL ' ORDER BY x.node)
                      FROM tweetkeeper_proxy.nodes x));
  END LOOP;
  FOREACH rel IN ARRAY tweetkeeper_proxy.global_relations() LOOP
    EXECUTE format('CREATE VIEW tweetkeeper.%I AS SELECT * FROM %I.%I', rel, tweetkeeper_proxy.node_schema(home), rel);
  END LOOP;
  SELECT string_agg(a.attname, ', ' ORDER BY a.attnum) FILTER (WHERE tweetkeeper_proxy.credential_column(a.attname) IS NULL),
         string_agg(format('%s::%s AS %I', tweetkeeper_proxy.credential_column(a.attname), format_type(a.atttypid, a.atttypmod),
                           a.attname), ', ' ORDER BY a.attnum)
    INTO unknown, cols
    FROM pg_attribute a
   WHERE a.attrelid = format('%I.credentials', tweetkeeper_proxy.node_schema(home))::regclass AND a.attnum > 0 AND NOT a.attisdropped;
  IF unknown IS NOT NULL THEN
    RAISE EXCEPTION 'the nodes'' credentials have columns this proxy does not know how to add up: %', unknown
      USING ERRCODE = 'feature_not_supported', HINT = 'Update tweetkeeper_proxy to the nodes'' version.';
  END IF;
  EXECUTE format('CREATE VIEW tweetkeeper.credentials AS SELECT %s FROM (%s) c GROUP BY c.name', cols,
                 (SELECT string_agg(format('SELECT * FROM %I.credentials', tweetkeeper_proxy.node_schema(x.node)), ' UNION ALL ' ORDER BY x.node)
                    FROM tweetkeeper_proxy.nodes x));
  FOR v IN SELECT * FROM tweetkeeper_proxy.node_viewdefs(tweetkeeper_proxy.stats_views()) LOOP
    EXECUTE format('CREATE VIEW tweetkeeper.%I AS %s', v.name, v.def);
  END LOOP;
  FOR v IN SELECT * FROM tweetkeeper_proxy.node_functions(tweetkeeper_proxy.post_functions()) LOOP
    EXECUTE format('CREATE OR REPLACE FUNCTION tweetkeeper.%I(%s) RETURNS %s LANGUAGE plproxy '
                   'SET search_path = pg_catalog, pg_temp AS %L', v.name, v.args, v.result,
                   'CLUSTER ''tweetkeeper''; RUN ON ALL;');
    EXECUTE format('REVOKE ALL ON FUNCTION tweetkeeper.%I FROM PUBLIC', v.name);
    EXECUTE format('GRANT EXECUTE ON FUNCTION tweetkeeper.%I TO tweetkeeper_reader', v.name);
  END LOOP;
  EXECUTE format('GRANT SELECT ON %s TO tweetkeeper_reader',
                 (SELECT string_agg(format('tweetkeeper.%I', r), ', ')
                    FROM unnest(tweetkeeper_proxy.stats_views() || tweetkeeper_proxy.post_relations() || tweetkeeper_proxy.global_relations()
                                || 'credentials'::text) AS r));
END $$;

-- forecast(): each node's refreshes, requests and billed reads, summed (a batch never spans
-- nodes: the requests are each node's own).
CREATE FUNCTION tweetkeeper_proxy.forecast(span interval, OUT refreshes numeric, OUT requests numeric, OUT billed_reads numeric)
  RETURNS SETOF record
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON ALL;
  TARGET tweetkeeper.forecast;
$$;
CREATE FUNCTION forecast(span interval, OUT refreshes numeric, OUT requests numeric, OUT billed_reads numeric)
  LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
  SELECT sum(f.refreshes), sum(f.requests), sum(f.billed_reads) FROM tweetkeeper_proxy.forecast(span) AS f $$;
