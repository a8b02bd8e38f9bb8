-- The schema everything of the extension lives in: its own, or refused. CREATE EXTENSION makes
-- the schema `tweetkeeper` (the control file's) when there is none, but takes one that exists
-- already, whoever made it: a role that could plant a function or type there before the install,
-- or create one later, would have its object picked by the extension's own calls (an untyped
-- NULL argument resolves to a planted overload), run as a superuser. So an existing schema is
-- taken only when it is as CREATE EXTENSION would have made it: owned by a superuser, empty, and
-- no role but superusers may create in it (pg_restore's CREATE SCHEMA of a dump passes).
DO $do$
DECLARE
  why text;
BEGIN
  SELECT CASE
           WHEN NOT r.rolsuper THEN pg_catalog.format('it is owned by %I, who is not a superuser', r.rolname)
           WHEN EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.relnamespace = n.oid)
             OR EXISTS (SELECT FROM pg_catalog.pg_proc p WHERE p.pronamespace = n.oid)
             OR EXISTS (SELECT FROM pg_catalog.pg_type t WHERE t.typnamespace = n.oid)
             OR EXISTS (SELECT FROM pg_catalog.pg_operator o WHERE o.oprnamespace = n.oid)
             OR EXISTS (SELECT FROM pg_catalog.pg_collation l WHERE l.collnamespace = n.oid)
             OR EXISTS (SELECT FROM pg_catalog.pg_conversion v WHERE v.connamespace = n.oid)
             OR EXISTS (SELECT FROM pg_catalog.pg_opfamily f WHERE f.opfnamespace = n.oid)
             OR EXISTS (SELECT FROM pg_catalog.pg_ts_config g WHERE g.cfgnamespace = n.oid)
             THEN 'it holds objects already'
           WHEN EXISTS (SELECT FROM pg_catalog.aclexplode(n.nspacl) a
                          LEFT JOIN pg_catalog.pg_roles g ON g.oid = a.grantee
                         WHERE a.privilege_type = 'CREATE' AND NOT coalesce(g.rolsuper, false))
             THEN 'a role that is not a superuser may create objects in it'
         END INTO why
    FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner
   WHERE n.nspname = 'tweetkeeper';
  IF why IS NOT NULL THEN
    RAISE EXCEPTION 'the schema tweetkeeper exists already, and CREATE EXTENSION tweetkeeper does not take it: %', why
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'Drop or rename that schema (after looking at what it holds), then CREATE EXTENSION tweetkeeper '
                   'again: it makes the schema itself.';
  END IF;
END $do$;
