-- The age policy: tweetkeeper.age_policy (how often a tweet of each age is refreshed), its default
-- buckets, and its place in pg_dump (its triggers: sql/replaceable/10_policy.sql).

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

SELECT pg_catalog.pg_extension_config_dump('age_policy', 'WHERE source = ''user''');
