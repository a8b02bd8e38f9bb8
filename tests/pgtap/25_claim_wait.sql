-- claim_wait(): when a claim that found nothing may next find something, which the worker's claim
-- asks in the same statement and sleeps until (and maintenance() notifies Bluesky's and
-- Mastodon's workers by): NULL with nothing scheduled; now() with a batch claimable; a partial
-- batch's buffer TTL; the next due time; a waiting endpoint's end of wait; a server that wants a
-- token left out.
\ir lib/begin.sql
SELECT plan(14);
SET LOCAL tweetkeeper.buffer_ttl = '5s';

SELECT is(tweetkeeper.claim_wait('x-v2'), NULL, 'nothing scheduled: no moment for X');
SELECT is(tweetkeeper.claim_wait('bluesky'), NULL, 'nor for Bluesky');
SELECT is(tweetkeeper.claim_wait('mastodon'), NULL, 'nor for Mastodon');

-- X: 10 tweets due a second ago, a partial batch.
-- (ids of tweets an hour old: tracked)
CREATE FUNCTION pg_temp.ids(a int, b int) RETURNS bigint[] LANGUAGE sql AS $$
  SELECT ARRAY(SELECT (((extract(epoch FROM now() - interval '1 hour') * 1000)::bigint - 1288834974657) << 22) + g
                 FROM generate_series(a, b) g) $$;
SELECT tweetkeeper.schedule_tweets(pg_temp.ids(1, 10));
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 second' WHERE tweet_id > 0;
SELECT is(tweetkeeper.claim_wait('x-v2'), now() + interval '4 seconds',
  'X: a partial batch due a second ago is claimable when it has waited the buffer TTL (5 s)');
SELECT is(tweetkeeper.claim_wait('x-v1.1'), now() + interval '4 seconds', 'the same for v1.1''s workers');
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 hour' WHERE tweet_id > 0;
SELECT is(tweetkeeper.claim_wait('x-v2'), now() + interval '1 hour', 'X: nothing due: when the next tweet falls due');
SELECT tweetkeeper.schedule_tweets(pg_temp.ids(11, 110));
UPDATE tweetkeeper.tweets SET due_at = now() WHERE tweet_id > 0 AND due_at < now() + interval '1 hour';
SELECT is(tweetkeeper.claim_wait('x-v2'), now(), 'X: a full batch due: now');

-- Bluesky: 3 posts due a second ago, then 30.
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3i%s', translate(lpad(g::text, 3, '0'), '0123456789', 'abcdefghij'))
    FROM generate_series(1, 30) g));
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 day' WHERE endpoint = 'bluesky';
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 second'
 WHERE tweet_id IN (SELECT tweet_id FROM tweetkeeper.tweets WHERE endpoint = 'bluesky' ORDER BY tweet_id LIMIT 3);
SELECT is(tweetkeeper.claim_wait('bluesky'), now() + interval '4 seconds',
  'Bluesky: 3 posts due a second ago are a partial batch, claimable after the buffer TTL');
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 second' WHERE endpoint = 'bluesky';
SELECT is(tweetkeeper.claim_wait('bluesky'), now(), 'Bluesky: 30 due, a full batch of 25: now');
INSERT INTO tweetkeeper.endpoints (endpoint, status, status_until) VALUES ('bluesky', 'waiting', now() + interval '1 minute')
  ON CONFLICT (endpoint) DO UPDATE SET status = excluded.status, status_until = excluded.status_until;
SELECT is(tweetkeeper.claim_wait('bluesky'), now() + interval '1 minute', 'Bluesky: the AppView asked us to wait: until then');
SELECT is(tweetkeeper.claim_wait('mastodon'), NULL, 'Bluesky''s posts are not Mastodon''s');

-- Mastodon: a.social's two statuses due in ten minutes; b.social's, long due, want a token.
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://%s/@u/%s', CASE WHEN g < 3 THEN 'a.social' ELSE 'b.social' END,
                ((extract(epoch FROM now() - interval '1 hour') * 1000)::bigint << 16) + g)
    FROM generate_series(1, 3) g));
UPDATE tweetkeeper.tweets SET due_at = now() + interval '10 minutes' WHERE endpoint = 'mastodon:a.social';
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 hour' WHERE endpoint = 'mastodon:b.social';
SELECT is(tweetkeeper.claim_wait('mastodon'), now(), 'Mastodon: a server''s status long due: now (a single status past the buffer TTL)');
INSERT INTO tweetkeeper.endpoints (endpoint, status, status_until) VALUES ('mastodon:b.social', 'needs-token', now() + interval '1 hour')
  ON CONFLICT (endpoint) DO UPDATE SET status = excluded.status, status_until = excluded.status_until;
SELECT is(tweetkeeper.claim_wait('mastodon'), now() + interval '10 minutes',
  'Mastodon: a server that wants a token is left out; the next status due elsewhere');
SELECT is(tweetkeeper.claim_wait(NULL), now(), 'no provider named: X''s');

SELECT * FROM finish();
ROLLBACK;
