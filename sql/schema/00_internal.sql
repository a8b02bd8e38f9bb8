-- The schema of the extension's internals (issue 49): the steps its documented functions are made
-- of (leases, budgets, bills, the claim's and completion's parts), its trigger functions and the
-- background worker's helpers. The schema tweetkeeper holds only what docs/sql-reference.md
-- documents. No role is granted USAGE on this schema or EXECUTE on its functions
-- (sql/replaceable/90_roles.sql): the SECURITY DEFINER functions of tweetkeeper call them, as the
-- extension's owner. The extension makes the schema itself, and so it is one of its members; one
-- that exists already was made by someone else (an object planted there would be picked by the
-- extension's own calls, as 00_guard.sql says of tweetkeeper), and is refused.
DO $do$
BEGIN
  IF EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = 'tweetkeeper_internal') THEN
    RAISE EXCEPTION 'the schema tweetkeeper_internal exists already, and tweetkeeper does not take it: the extension makes its own'
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'Drop or rename that schema (after looking at what it holds), then CREATE EXTENSION tweetkeeper '
                   '(or ALTER EXTENSION tweetkeeper UPDATE) again.';
  END IF;
END $do$;
CREATE SCHEMA tweetkeeper_internal;
REVOKE ALL ON SCHEMA tweetkeeper_internal FROM PUBLIC;
COMMENT ON SCHEMA tweetkeeper_internal IS
  'tweetkeeper''s internals: not an API, granted to no role; they change from release to release.';
