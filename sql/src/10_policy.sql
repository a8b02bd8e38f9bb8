-- The age policy: tweetkeeper.age_policy (how often a tweet of each age is refreshed), its default
-- buckets, and the triggers that keep every session's cached copy current and let pg_dump keep
-- the policy exactly when it is the user's.

CREATE TABLE age_policy (
  max_age interval NOT NULL,
  delay interval NOT NULL,
  source text NOT NULL,          -- 'extension': inserted by CREATE EXTENSION, never edited; 'user'
  CONSTRAINT age_policy_one_row_per_max_age PRIMARY KEY (max_age),
  CONSTRAINT age_policy_max_age_positive CHECK (max_age > interval '0'),
  CONSTRAINT age_policy_max_age_at_most_100_years CHECK (max_age <= interval '100 years'),
  CONSTRAINT age_policy_delay_positive CHECK (delay > interval '0'),
  CONSTRAINT age_policy_delay_at_most_1_year CHECK (delay <= interval '1 year'),
  CONSTRAINT age_policy_source_known CHECK (source IN ('extension', 'user'))
);
COMMENT ON TABLE age_policy IS
  'Tweets younger than max_age are refreshed every delay (the smallest max_age that is larger '
  'than the tweet''s age wins); tweets older than the largest max_age are no longer refreshed.';

-- The original specification's buckets. Young tweets change fast (a tweet's "prime" is about
-- 18 minutes, most retweets come in the first hour); after 30 days we stop.
INSERT INTO age_policy (max_age, delay, source) VALUES
  (interval '18 minutes', interval '2 minutes',  'extension'),
  (interval '60 minutes', interval '5 minutes',  'extension'),
  (interval '1 day',      interval '30 minutes', 'extension'),
  (interval '7 days',     interval '6 hours',    'extension'),
  (interval '30 days',    interval '1 day',      'extension');

CREATE TRIGGER age_policy_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON age_policy
  FOR EACH STATEMENT EXECUTE FUNCTION age_policy_changed();

-- Backups. pg_dump keeps the policy only where it is the user's: the rows CREATE EXTENSION
-- inserts are not dumped while untouched, so a restore does not insert them twice. Once anything
-- in the policy changes, every row becomes the user's (age_policy_adopt), so a dump holds the
-- whole policy; on restore, its first row (the only kind of insert that arrives with source
-- 'user' already set) replaces the rows CREATE EXTENSION inserted (age_policy_before_insert).
CREATE FUNCTION age_policy_before_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.source IS NULL THEN
    NEW.source := 'user';
  ELSIF NEW.source = 'user' THEN
    DELETE FROM tweetkeeper.age_policy p WHERE p.source = 'extension';
  END IF;
  RETURN NEW;
END $$;
COMMENT ON FUNCTION age_policy_before_insert() IS
  'Trigger: a new row is the user''s; a row that arrives marked as the user''s (from a pg_dump '
  'restore) replaces the rows CREATE EXTENSION inserted.';

CREATE FUNCTION age_policy_adopt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM tweetkeeper.age_policy p WHERE p.source = 'extension') THEN
    UPDATE tweetkeeper.age_policy p SET source = 'user' WHERE p.source = 'extension';
  END IF;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION age_policy_adopt() IS
  'Trigger: once the policy is edited, all of it is the user''s, and pg_dump keeps all of it.';

CREATE TRIGGER age_policy_before_insert
  BEFORE INSERT ON age_policy FOR EACH ROW EXECUTE FUNCTION age_policy_before_insert();
CREATE TRIGGER age_policy_adopt
  AFTER INSERT OR UPDATE OR DELETE ON age_policy
  FOR EACH STATEMENT EXECUTE FUNCTION age_policy_adopt();

SELECT pg_catalog.pg_extension_config_dump('age_policy', 'WHERE source = ''user''');
