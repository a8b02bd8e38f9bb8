-- What 0.3.0 adds to a queue, made only through 0.3.0's SQL API, on top of sample_queue.sql and
-- sample_queue_0_2_0.sql (run those first): posts of Bluesky and Mastodon (post_refs), a handle
-- resolved to its DID (bluesky_handles), endpoints' windows learned from answers (endpoints),
-- payloads kept, a tombstone, an edit, and history compacted (metric_history_compact).
-- Deterministic but for timestamps; leaves no batch of X's in flight but the one the 0.1.0
-- sample leaves.
-- Run with psql -v ON_ERROR_STOP=1 as a superuser, in a database with tweetkeeper 0.3.0.
\set QUIET on
SET tweetkeeper.buffer_ttl = 0;
SET tweetkeeper.payloads = 'changed';
SET tweetkeeper.spending = burst;
SET tweetkeeper.claim_order = due;

-- Four Bluesky posts (three by DID, one by handle) and three statuses of one Mastodon server.
SELECT tweetkeeper.schedule_posts(ARRAY[
  'at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2a',
  'at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2b',
  'https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2c',
  'https://bsky.app/profile/alice.example/post/3l6oveex3ii2d',
  'https://mastodon.example/@ann/113000000000000001',
  'https://mastodon.example/@ann/113000000000000002',
  'https://mastodon.example/@bob/113000000000000003']);

-- Each endpoint's due posts claimed and answered, as a worker would, until none is left: the
-- handle resolved to its DID, the others with counts, a payload each, and the endpoint's window.
CREATE FUNCTION pg_temp.answer(provider text, size integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  c record;
  n integer := 0;
BEGIN
  LOOP
    UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE tweet_id < 0 AND lease_id IS NULL AND update_count = 0;
    UPDATE tweetkeeper.endpoints SET answered_at = now();
    SELECT * INTO c FROM tweetkeeper.claim_posts('sample', size, provider) WHERE lease_id IS NOT NULL;
    EXIT WHEN c.lease_id IS NULL;
    IF c.endpoint = 'bluesky-handle' THEN
      n := n + tweetkeeper.complete_handles(c.lease_id, '[{"handle":"alice.example","did":"did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"}]');
    ELSE
      n := n + tweetkeeper.complete_batch(c.lease_id,
         (SELECT jsonb_agg(jsonb_build_object('id', x.id, 'like_count', 10 + x.n, 'retweet_count', x.n,
                           'reply_count', 1, 'created_at', (now() - interval '3 hours')::text,
                           'payload', jsonb_build_object('uri', x.id::text, 'text', 'post ' || x.n,
                                                         'likeCount', 10 + x.n)))
            FROM unnest(c.tweet_ids) WITH ORDINALITY AS x(id, n)),
         '[]', jsonb_build_object('limit', 3000, 'remaining', 2990, 'reset', extract(epoch FROM now() + interval '5 minutes')));
    END IF;
  END LOOP;
  RETURN n;
END $$;
SELECT pg_temp.answer('bluesky', 25), pg_temp.answer('mastodon', 20);

-- Five of the minute-old tweets of X, due early: three kept with their payloads, one deleted
-- (a tombstone), one edited (linked to its newest version).
CREATE TEMP TABLE sample_x AS
SELECT id, row_number() OVER (ORDER BY id) AS n FROM sample_ids WHERE grp = 'new' ORDER BY id LIMIT 5;
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE tweet_id IN (SELECT id FROM sample_x);
SELECT tweetkeeper.complete_batch(c.lease_id,
         (SELECT jsonb_agg(jsonb_build_object('id', s.id, 'like_count', s.n,
                   'payload', jsonb_build_object('id', s.id::text, 'text', 'tweet ' || s.n, 'author_id', '77',
                                                 'edit_history_tweet_ids', jsonb_build_array(s.id::text)),
                   'author', jsonb_build_object('id', '77', 'name', 'Ann', 'username', 'ann'))
                 || CASE WHEN s.n = 5 THEN jsonb_build_object('newest_id',
                      (((extract(epoch FROM now() - interval '30 seconds') * 1000)::bigint - 1288834974657) << 22) + 9999)
                    ELSE '{}' END)
            FROM sample_x s WHERE s.n <> 4),
         (SELECT jsonb_agg(jsonb_build_object('id', s.id, 'type', 'resource-not-found', 'detail', 'sample deleted'))
            FROM sample_x s WHERE s.n = 4))
  FROM tweetkeeper.claim_batch('sample', 5) c;

-- History of ten days ago (the 0.2.0 sample's, and one more observation of the Bluesky posts),
-- compacted.
INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, like_count)
SELECT tweet_id, 0, date_trunc('day', now() - interval '9 days'), 1 FROM tweetkeeper.post_refs WHERE network = 'bluesky';
RESET tweetkeeper.history_retention;
SELECT tweetkeeper.create_partitions();
SELECT tweetkeeper.compact_history();
