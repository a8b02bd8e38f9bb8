-- watch_posts()/unwatch_posts(): watches by URL for posts of every network, and claim_posts()
-- taking an endpoint's watched posts first.
\ir lib/begin.sql
SELECT plan(16);

-- 30 Bluesky posts by DID, due from an hour ago (the first) to 30 minutes ago (the last).
CREATE TEMP TABLE bsky AS
  SELECT g, format('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3i%s',
                   translate(lpad(g::text, 3, '0'), '0123456789', 'abcdefghij')) AS url
    FROM generate_series(1, 30) g;
SELECT tweetkeeper.schedule_posts(ARRAY(SELECT url FROM bsky ORDER BY g));
UPDATE tweetkeeper.tweets t SET due_at = now() - interval '1 hour' + b.g * interval '1 minute'
  FROM bsky b WHERE t.tweet_id = (tweetkeeper_internal.url_post_ids(ARRAY[b.url]))[1];

SELECT is(tweetkeeper_internal.url_post_ids(ARRAY[(SELECT url FROM bsky WHERE g = 1),
                                          'at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3iaab']),
  ARRAY[(SELECT post_id FROM tweetkeeper.posts WHERE url = (SELECT url FROM bsky WHERE g = 1)),
        (SELECT post_id FROM tweetkeeper.posts WHERE url = (SELECT url FROM bsky WHERE g = 1))],
  'url_post_ids: a post''s id, whatever the spelling of its URL');

-- Watching by URL: the last two Bluesky posts (due last), a Mastodon status and an X tweet not
-- tracked yet, one of them twice in another spelling.
SELECT is(tweetkeeper.watch_posts(ARRAY[(SELECT url FROM bsky WHERE g = 29), (SELECT url FROM bsky WHERE g = 30),
                                        'https://a.social/@u/113284726341234501',
                                        'https://a.social/users/u/statuses/113284726341234501',
                                        'https://x.com/a/status/1460323737035677698'], '1 minute', '2 hours'),
  4::bigint, 'watch_posts: 4 posts watched (one given twice, in two spellings)');
SELECT results_eq($$SELECT network, every, until FROM tweetkeeper.watches ORDER BY network, url$$,
  $$VALUES ('bluesky', interval '1 minute', now() + interval '2 hours'), ('bluesky', '1 minute', now() + interval '2 hours'),
           ('mastodon', '1 minute', now() + interval '2 hours'), ('x', '1 minute', now() + interval '2 hours')$$,
  'the watches view shows each with its network');
SELECT is((SELECT url FROM tweetkeeper.watches WHERE network = 'mastodon'), 'https://a.social/@u/113284726341234501',
  'and its URL');
SELECT is((SELECT count(*) FROM tweetkeeper.posts WHERE network IN ('mastodon', 'x')), 2::bigint,
  'the posts not tracked before are tracked now');

-- claim_posts() takes the watched posts first, though 28 others have waited longer (the watch
-- left their due times as they were: already due).
INSERT INTO tweetkeeper.endpoints (endpoint, answered_at) VALUES ('bluesky', now());
CREATE TEMP TABLE got AS SELECT * FROM tweetkeeper.claim_posts('w', 25, 'bluesky');
SELECT is((SELECT tweet_ids[1:2] FROM got),
  tweetkeeper_internal.url_post_ids(ARRAY[(SELECT url FROM bsky WHERE g = 29), (SELECT url FROM bsky WHERE g = 30)]),
  'a Bluesky batch starts with the endpoint''s watched posts');
SELECT is((SELECT tweet_ids[3:25] FROM got),
  tweetkeeper_internal.url_post_ids(ARRAY(SELECT url FROM bsky WHERE g <= 23 ORDER BY g)),
  'then the oldest due');
SELECT is((SELECT cardinality(tweet_ids) FROM got), 25, 'still a full batch');
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM got),
  (SELECT jsonb_agg(jsonb_build_object('id', id, 'like_count', 1)) FROM got, unnest(tweet_ids) id)), 25, 'completed');
SELECT is((SELECT due_at FROM tweetkeeper.tweets WHERE tweet_id = (SELECT tweet_ids[1] FROM got)), now() + interval '1 minute',
  'a watched post is due again after its watch''s interval');

-- Unwatching by URL, in any spelling.
SELECT is(tweetkeeper.unwatch_posts(ARRAY['at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3iacj',
                                          'https://a.social/users/u/statuses/113284726341234501',
                                          'https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3iaaa']),
  2::bigint, 'unwatch_posts: 2 were watched (the third post was not)');
SELECT is((SELECT string_agg(network, ',' ORDER BY network) FROM tweetkeeper.watches), 'bluesky,x', 'the others stay watched');

-- Refusals: all or nothing.
SELECT throws_like($$SELECT tweetkeeper.watch_posts(ARRAY['https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3izzz',
                                                        'https://example.com/nothing'])$$,
  'urls[2]: %', 'a URL that names no post is refused, with its position');
SELECT is((SELECT count(*) FROM tweetkeeper.posts WHERE url LIKE '%3l6oveex3izzz'), 0::bigint, 'and nothing is tracked');
SELECT throws_ok($$SELECT tweetkeeper.watch_posts(ARRAY['https://c.social/@u/113284726341234509'], '1 second')$$,
  '22023', 'every must be between 10 seconds and 1 day, got 00:00:01', 'an interval watch() refuses is refused');
SELECT throws_ok($$SELECT tweetkeeper.unwatch_posts(ARRAY['https://a.social/@u/1', NULL])$$,
  '22004', 'urls[2] is NULL', 'unwatch_posts: a NULL element');

SELECT * FROM finish();
ROLLBACK;
