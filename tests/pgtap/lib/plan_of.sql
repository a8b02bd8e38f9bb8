-- pg_temp.plan_of(query): the EXPLAIN output of a query as one text, for matches() and
-- doesnt_match() on the plan. Included by the files that check a plan (\ir lib/plan_of.sql).
CREATE FUNCTION pg_temp.plan_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; plan text := '';
BEGIN
  FOR r IN EXECUTE 'EXPLAIN ' || q LOOP plan := plan || r || E'\n'; END LOOP;
  RETURN plan;
END $$;
