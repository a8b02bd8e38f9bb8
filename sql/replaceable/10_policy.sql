-- The age policy's trigger functions (its table and default buckets: sql/schema/10_policy.sql;
-- the triggers themselves: sql/schema/95_triggers.sql).

-- Backups. pg_dump keeps the policy only where it is the user's: the rows CREATE EXTENSION
-- inserts are not dumped while untouched, so a restore does not insert them twice. Once anything
-- in the policy changes, every row becomes the user's (age_policy_adopt), so a dump holds the
-- whole policy; on restore, its first row (the only kind of insert that arrives with source
-- 'user' already set) replaces the rows CREATE EXTENSION inserted (age_policy_before_insert).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.age_policy_before_insert() RETURNS trigger LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF NEW.source IS NULL THEN
    NEW.source := 'user';
  ELSIF NEW.source = 'user' THEN
    DELETE FROM tweetkeeper.age_policy p WHERE p.source = 'extension';
  END IF;
  RETURN NEW;
END $$;
COMMENT ON FUNCTION tweetkeeper_internal.age_policy_before_insert() IS
  'Trigger: a new row is the user''s; a row that arrives marked as the user''s (from a pg_dump '
  'restore) replaces the rows CREATE EXTENSION inserted.';

CREATE OR REPLACE FUNCTION tweetkeeper_internal.age_policy_adopt() RETURNS trigger LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM tweetkeeper.age_policy p WHERE p.source = 'extension') THEN
    UPDATE tweetkeeper.age_policy p SET source = 'user' WHERE p.source = 'extension';
  END IF;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION tweetkeeper_internal.age_policy_adopt() IS
  'Trigger: once the policy is edited, all of it is the user''s, and pg_dump keeps all of it.';

-- The whole policy replaced in one statement's worth: what the proxy of partitions pushes to
-- every node (docs/partitions.md), first with dry_run on all of them (each checks it as its table
-- would, and keeps nothing), then for good. Returns the policy's digest after (policy_digest()).
CREATE OR REPLACE FUNCTION replace_age_policy(max_ages interval[], delays interval[], dry_run boolean DEFAULT false)
  RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('max_ages, delays and dry_run', max_ages IS NULL OR delays IS NULL OR dry_run IS NULL);
  IF cardinality(max_ages) <> cardinality(delays) OR cardinality(max_ages) = 0 THEN
    RAISE EXCEPTION 'max_ages has % elements and delays %: one delay per age, at least one', cardinality(max_ages),
      cardinality(delays) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  BEGIN
    DELETE FROM tweetkeeper.age_policy;
    INSERT INTO tweetkeeper.age_policy (max_age, delay) SELECT * FROM unnest(max_ages, delays);
    IF dry_run THEN
      RAISE EXCEPTION 'dry run' USING ERRCODE = 'TKP02';
    END IF;
  EXCEPTION WHEN SQLSTATE 'TKP02' THEN
    NULL;  -- a dry run: checked, undone
  END;
  RETURN tweetkeeper.policy_digest();
END $$;
COMMENT ON FUNCTION replace_age_policy(interval[], interval[], boolean) IS
  'Replaces the whole age policy with these (max_age, delay) rows, as plain SQL on age_policy '
  'would (its checks, 23xxx); dry_run: checks and keeps nothing. Returns policy_digest().';

CREATE OR REPLACE FUNCTION policy_digest() RETURNS text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  RETURN (SELECT md5(coalesce(string_agg(extract(epoch FROM p.max_age) || '=' || extract(epoch FROM p.delay), ','
                                         ORDER BY p.max_age), ''))
            FROM tweetkeeper.age_policy p);
COMMENT ON FUNCTION policy_digest() IS
  'An md5 of the age policy''s rows (max_age and delay in seconds): equal on two nodes when their '
  'policies are.';
