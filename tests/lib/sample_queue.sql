-- A queue in every state, made only through the SQL API of tweetkeeper 0.1.0 (so that the
-- upgrade test can fill an 0.1.0 database with it) and deterministic but for timestamps:
--   tweets: done (45 days old), deleted, unavailable, scheduled with history (2 hours old), due
--           again after a released batch and held by a batch in flight (3 hours old), not yet
--           due (created a minute ago);
--   batches: completed, released, in flight; history rows; two credentials, one rejected;
--   an edited age policy (a changed delay and a new bucket).
-- Run with psql -v ON_ERROR_STOP=1 as a superuser, in a database with the extension.
\set QUIET on
-- The claims below follow one another at once, oldest due first, as under 0.1.0 (where these
-- settings do nothing): without 0.2.0's even pace they need not wait for the credential.
SET tweetkeeper.spending = burst;
SET tweetkeeper.claim_order = due;
CREATE TEMP TABLE sample_ids AS
SELECT grp, (((extract(epoch FROM now() - age) * 1000)::bigint - 1288834974657) << 22) + g AS id
  FROM (VALUES ('old', interval '45 days', 0), ('young', interval '2 hours', 1000),
               ('retry', interval '3 hours', 2000), ('new', interval '1 minute', 3000))
         AS a(grp, age, base),
       LATERAL generate_series(base + 1, base + 100) AS g;

SELECT tweetkeeper.add_credential('alpha', 450);
SELECT tweetkeeper.add_credential('beta', 15, interval '15 minutes', 10000);
UPDATE tweetkeeper.credentials SET status = 'rejected', status_reason = 'token revoked'
 WHERE name = 'beta';
SELECT tweetkeeper.schedule_tweets(ARRAY(SELECT id FROM sample_ids ORDER BY id));

-- The 45-day-old tweets (due first): 90 observed (then done), 5 deleted, 5 unavailable.
SELECT tweetkeeper.complete_batch(c.lease_id,
         (SELECT jsonb_agg(jsonb_build_object('id', x.id, 'retweet_count', x.n, 'reply_count', 1,
                           'like_count', 2 * x.n, 'quote_count', 0, 'bookmark_count', NULL,
                           'impression_count', 1000 + x.n))
            FROM unnest(c.tweet_ids) WITH ORDINALITY AS x(id, n) WHERE x.n <= 90),
         (SELECT jsonb_agg(jsonb_build_object('id', x.id,
                           'type', CASE WHEN x.n <= 95 THEN 'resource-not-found'
                                        ELSE 'not-authorized-for-resource' END,
                           'detail', 'sample problem ' || x.n))
            FROM unnest(c.tweet_ids) WITH ORDINALITY AS x(id, n) WHERE x.n > 90),
         '{"limit":450,"remaining":449,"reset":4102444800}')
  FROM tweetkeeper.claim_batch('sample') c;

-- Then the 3-hour-old ones: claimed and handed back (due again now).
SELECT tweetkeeper.release_batch(c.lease_id, 'sample: API timeout') FROM tweetkeeper.claim_batch('sample') c;
-- The 2-hour-old ones, due for longer than the released ones: observed.
SELECT tweetkeeper.complete_batch(c.lease_id,
         (SELECT jsonb_agg(jsonb_build_object('id', x.id, 'retweet_count', 3, 'reply_count', 4,
                           'like_count', 5, 'quote_count', 6, 'bookmark_count', 7,
                           'impression_count', 8))
            FROM unnest(c.tweet_ids) AS x(id)))
  FROM tweetkeeper.claim_batch('sample') c;
-- The released ones again: left in flight.
SELECT count(*) FROM tweetkeeper.claim_batch('sample');

UPDATE tweetkeeper.age_policy SET delay = interval '1 hour' WHERE max_age = interval '1 day';
INSERT INTO tweetkeeper.age_policy (max_age, delay) VALUES (interval '90 days', interval '7 days');
