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
