-- The schema tweetkeeper holds only what docs/sql-reference.md documents (issue 49): every
-- function, table, view, sequence and type of it is named there, as code (`name(` for a function,
-- `name` for the others; tweetkeeper.name too), read from the file at test time (tests/pgtap/run.sh
-- exports its path). The internals live in tweetkeeper_internal, which no role may use: no USAGE
-- on the schema but its owner's, no EXECUTE of its functions for PUBLIC or a tweetkeeper_* role.
\set doc `cat "$TK_SQL_REFERENCE"`
\ir lib/begin.sql
SELECT plan(9);
SET LOCAL search_path = public, pg_catalog;
CREATE TEMP TABLE reference AS SELECT :'doc'::text AS doc;

SELECT ok((SELECT doc LIKE '# SQL reference%' AND length(doc) > 10000 FROM reference),
          'docs/sql-reference.md was read (TK_SQL_REFERENCE names it)');

-- Each object of the schema, and whether the reference names it.
CREATE TEMP VIEW in_schema AS
  SELECT 'function' AS kind, p.oid::regprocedure::text AS object, p.proname::text AS name
    FROM pg_proc p WHERE p.pronamespace = 'tweetkeeper'::regnamespace
  UNION ALL
  SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'S' THEN 'sequence' ELSE 'table' END,
         c.oid::regclass::text, c.relname::text
    FROM pg_class c
   WHERE c.relnamespace = 'tweetkeeper'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
     AND NOT c.relispartition  -- metric_history_hot's partitions: made by create_partitions(), as documented
  UNION ALL
  SELECT 'type', t.oid::regtype::text, t.typname::text
    FROM pg_type t
   WHERE t.typnamespace = 'tweetkeeper'::regnamespace AND t.typtype IN ('e', 'd', 'c', 'r', 'm')
     AND (t.typrelid = 0 OR (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c');
CREATE TEMP VIEW undocumented AS
  SELECT s.kind, s.object FROM in_schema s, reference r
   WHERE r.doc !~ ('[`.]' || s.name || CASE s.kind WHEN 'function' THEN '\(' ELSE '[`(]' END);

SELECT cmp_ok((SELECT count(*) FROM in_schema WHERE kind = 'function'), '>', 40::bigint,
              'the schema tweetkeeper''s functions are looked at (more than 40)');
SELECT is_empty($$SELECT object FROM undocumented WHERE kind = 'function' ORDER BY 1$$,
                'every function of the schema tweetkeeper is in docs/sql-reference.md (else: those listed)');
SELECT is_empty($$SELECT kind || ' ' || object FROM undocumented WHERE kind <> 'function' ORDER BY 1$$,
                'every table, view, sequence and type of the schema tweetkeeper is in docs/sql-reference.md');

-- The internals: the extension's own schema, used by no role but its owner.
SELECT ok(EXISTS (SELECT FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'tweetkeeper'
                   WHERE d.classid = 'pg_namespace'::regclass AND d.deptype = 'e'
                     AND d.objid = 'tweetkeeper_internal'::regnamespace)
          AND (SELECT count(*) FROM pg_proc WHERE pronamespace = 'tweetkeeper_internal'::regnamespace) > 50,
          'tweetkeeper_internal is a member of the extension and holds the internals (more than 50 functions)');
SELECT is_empty($$SELECT r.rolname FROM pg_roles r, pg_namespace n
                   WHERE n.nspname = 'tweetkeeper_internal' AND r.oid <> n.nspowner
                     AND (has_schema_privilege(r.oid, n.oid, 'USAGE') OR has_schema_privilege(r.oid, n.oid, 'CREATE'))
                     AND NOT r.rolsuper AND r.rolname !~ '^pg_'  -- (pg_read_all_data: a superuser's grant)
                  UNION ALL
                  SELECT 'PUBLIC' FROM pg_namespace n, aclexplode(n.nspacl) a
                   WHERE n.nspname = 'tweetkeeper_internal' AND a.grantee = 0$$,
                'no role but the owner may use the schema tweetkeeper_internal (nor PUBLIC)');
SELECT is_empty($$SELECT p.oid::regprocedure::text || ' to ' || coalesce(r.rolname, 'PUBLIC')
                    FROM pg_proc p CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                    LEFT JOIN pg_roles r ON r.oid = a.grantee
                   WHERE p.pronamespace = 'tweetkeeper_internal'::regnamespace AND a.grantee <> p.proowner
                     AND (a.grantee = 0 OR r.rolname LIKE 'tweetkeeper\_%')$$,
                'no function of tweetkeeper_internal is granted to PUBLIC or a tweetkeeper_* role');

-- As the worker would try it: an internal step called directly is refused.
CREATE ROLE tk_test_worker_login NOLOGIN IN ROLE tweetkeeper_worker;
SET LOCAL ROLE tk_test_worker_login;
SELECT throws_ok($$SELECT tweetkeeper_internal.record_quota('any', '{}', 'rejected', NULL)$$, '42501', NULL,
                 'a worker calling an internal step (record_quota) is refused (42501)');
SELECT throws_ok($$SELECT tweetkeeper.record_quota('any', '{}', 'rejected', NULL)$$, '42883', NULL,
                 'and the schema tweetkeeper has no such function any more (42883)');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
