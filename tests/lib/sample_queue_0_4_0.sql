-- What 0.4.0 adds to a queue, made only through 0.4.0's SQL API, on top of sample_queue.sql,
-- sample_queue_0_2_0.sql and sample_queue_0_3_0.sql (run those first): followed accounts of every
-- network (followed_accounts), two of them answered by a follower as 0.4.0's follower answers
-- (one resolved with a post found and scheduled, one missing), the others still resolving.
-- Deterministic but for timestamps. Run with psql -v ON_ERROR_STOP=1 as a superuser, in a
-- database with tweetkeeper 0.4.0.
\set QUIET on
SELECT tweetkeeper.follow_accounts(ARRAY[
  'https://x.com/sample_author',
  'https://bsky.app/profile/sample.bsky.social',
  'https://mastodon.example/@carol',
  'https://mastodon.example/@dave']);

-- A follower's session: it leases Mastodon's two accounts, resolves one and finds it missing the
-- other, stores the first one's new post, and lets go.
CREATE TEMP TABLE sample_follows AS
SELECT * FROM tweetkeeper.claim_follows('sample-follower', 'mastodon', 10, '1 hour', false);
SELECT tweetkeeper.resolve_follow(f.follow_id, '109000000000000001', 'carol', 'following')
  FROM sample_follows f WHERE f.handle = 'carol';
SELECT tweetkeeper.resolve_follow(f.follow_id, NULL, NULL, 'missing', 'Record not found')
  FROM sample_follows f WHERE f.handle = 'dave';
SELECT tweetkeeper.store_follow_posts(f.follow_id, ARRAY['https://mastodon.example/@carol/113000000000000010'],
                                      ARRAY[now() - interval '1 minute'], '113000000000000010', now(),
                                      now() + interval '5 minutes')
  FROM sample_follows f WHERE f.handle = 'carol';
SELECT tweetkeeper.release_follows();
