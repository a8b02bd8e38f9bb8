-- The C++/PostgreSQL bridge (extension/pg_bridge.*): a C++ exception that leaves a guarded
-- region with PostgreSQL's error state changed (an error context callback of a dead frame, a
-- PG_TRY's jump buffer) must still become a clean ERROR, and the session must go on. The
-- self-test symbol is in the library but not in the extension's SQL: declared here for the test.
\ir lib/begin.sql
SELECT plan(5);

CREATE FUNCTION pg_temp.bridge_selftest(integer) RETURNS void
  AS '$libdir/tweetkeeper', 'tk_bridge_selftest' LANGUAGE C STRICT;
CREATE FUNCTION pg_temp.error_context(mode integer) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  ctx text;
BEGIN
  PERFORM pg_temp.bridge_selftest(mode);
  RETURN 'no error';
EXCEPTION WHEN internal_error THEN
  GET STACKED DIAGNOSTICS ctx = PG_EXCEPTION_CONTEXT;
  RETURN ctx;
END $$;

SELECT throws_ok($$SELECT pg_temp.bridge_selftest(1)$$, 'XX000',
  'bridge selftest: exception with a context pushed', 'a C++ exception becomes an ERROR with its message');
SELECT unalike(pg_temp.error_context(1), '%bridge selftest frame%',
  'the error context callback of the dead frame is gone before the ERROR is raised');
SELECT throws_ok($$SELECT pg_temp.bridge_selftest(2)$$, 'XX000',
  'bridge selftest: exception inside PgCall', 'an exception thrown inside PgCall becomes an ERROR');
SELECT is(pg_temp.error_context(2) NOT LIKE '%bridge selftest frame%', true,
  'and PostgreSQL''s error handling still works afterwards (no jump into a dead frame)');
SELECT is(tweetkeeper.next_delay(now() - interval '1 hour'), interval '30 minutes',
  'the session goes on: the extension still answers');

SELECT * FROM finish();
ROLLBACK;
