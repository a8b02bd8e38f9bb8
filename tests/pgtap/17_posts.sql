-- Posts of every network: schedule_post and schedule_posts for each accepted URL form, one row per
-- post whatever URL it came by, refusals with their positions, the keys of Bluesky and Mastodon
-- posts (negative, hashed, probed past a collision), the posts view, and X's claim and wake-up
-- untouched by them.
\ir lib/begin.sql
SELECT plan(50);

\set x_url 'https://x.com/XDevelopers/status/1460323737035677698'
\set did 'did:plc:z72i7hdynmk6r22z27h6tvur'
\set bsky_url 'https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2l'
\set masto_url 'https://mastodon.social/@Gargron/113284726341234567'

-- X: the same as schedule_tweet.
SELECT ok(tweetkeeper.schedule_post(:'x_url'), 'an X URL schedules its tweet');
SELECT results_eq($$SELECT tweet_id, endpoint, created_at FROM tweetkeeper.tweets$$,
  $$VALUES (1460323737035677698::bigint, NULL::text, tweetkeeper.snowflake_time(1460323737035677698))$$,
  'under its own id, with the Snowflake time, no endpoint');
SELECT ok(NOT tweetkeeper.schedule_post('https://mobile.twitter.com/x/status/1460323737035677698?s=20'),
  'the same tweet by another URL changes nothing');
SELECT ok(NOT tweetkeeper.schedule_tweet(1460323737035677698), 'nor does its id');

-- Bluesky by DID: a negative id, the post's names in post_refs, the TID's time as an estimate.
SELECT ok(tweetkeeper.schedule_post(:'bsky_url'), 'a bsky.app URL with a DID schedules its post');
SELECT results_eq($$SELECT t.tweet_id < 0, t.endpoint, r.network, r.host, r.author, r.post_key, r.url,
                           t.created_at = (tweetkeeper.parse_post_url(r.url)).created_at, t.state::text
                      FROM tweetkeeper.tweets t JOIN tweetkeeper.post_refs r USING (tweet_id)$$,
  $$VALUES (true, 'bluesky', 'bluesky', '', 'did:plc:z72i7hdynmk6r22z27h6tvur', '3l6oveex3ii2l',
            'https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2l', true, 'scheduled')$$,
  'a negative id, endpoint bluesky, its DID, record key, URL, and the record key''s time');
SELECT is((SELECT tweet_id FROM tweetkeeper.post_refs),
          tweetkeeper_internal.post_id(tweetkeeper_internal.post_identity('bluesky', '', :'did', '3l6oveex3ii2l'), 0),
          'the id is the hash of what names the post (seed 0)');
SELECT ok(NOT tweetkeeper.schedule_post('at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l'),
  'the same post by its at:// URI changes nothing');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets), 2::bigint, 'two posts tracked');

-- Bluesky by handle: its own endpoint until the handle is resolved; a handle in any case is one.
SELECT ok(tweetkeeper.schedule_post('https://bsky.app/profile/alice.bsky.social/post/3l6oveex3ii2m'),
  'a bsky.app URL with a handle schedules its post');
SELECT is((SELECT t.endpoint || ' ' || r.author FROM tweetkeeper.tweets t JOIN tweetkeeper.post_refs r USING (tweet_id)
            WHERE r.post_key = '3l6oveex3ii2m'), 'bluesky-handle alice.bsky.social',
  'which waits for its handle to be resolved');
SELECT ok(NOT tweetkeeper.schedule_post('at://Alice.Bsky.Social/app.bsky.feed.post/3l6oveex3ii2m'),
  'the same handle in capitals is the same post');

-- Mastodon: per server, whatever the URL's form; the id's time (ms << 16).
SELECT ok(tweetkeeper.schedule_post(:'masto_url'), 'a Mastodon URL schedules its status');
SELECT results_eq($$SELECT t.endpoint, r.host, r.author, r.post_key, r.url,
                           t.created_at = to_timestamp((113284726341234567 >> 16) / 1000.0)
                      FROM tweetkeeper.tweets t JOIN tweetkeeper.post_refs r USING (tweet_id)
                     WHERE r.network = 'mastodon'$$,
  $$VALUES ('mastodon:mastodon.social', 'mastodon.social', 'Gargron', '113284726341234567',
            'https://mastodon.social/@Gargron/113284726341234567', true)$$,
  'endpoint mastodon:<host>, its server, user, id, URL and the id''s time');
SELECT ok(NOT tweetkeeper.schedule_post('https://MASTODON.social/users/Gargron/statuses/113284726341234567'),
  'the same status by its /users/ URL changes nothing');
SELECT ok(tweetkeeper.schedule_post('https://fosstodon.org/@Gargron@mastodon.social/113284726341234567'),
  'the same id on another server is another status (ids are per server)');

-- Creation times: the caller's wins; a record key's estimate is never later than now.
SELECT ok(tweetkeeper.schedule_post('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2n',
                                    '2024-10-01 12:00+00'), 'with a creation time');
SELECT is((SELECT t.created_at FROM tweetkeeper.tweets t JOIN tweetkeeper.post_refs r USING (tweet_id)
            WHERE r.post_key = '3l6oveex3ii2n'), '2024-10-01 12:00+00'::timestamptz, 'which is kept');
SELECT ok(tweetkeeper.schedule_post('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3zzzzzzzzzzzz'),
  'a record key from the future');
SELECT ok((SELECT t.created_at <= now() FROM tweetkeeper.tweets t JOIN tweetkeeper.post_refs r USING (tweet_id)
            WHERE r.post_key = '3zzzzzzzzzzzz'), 'is taken as made now, not later');
SELECT throws_ok($$SELECT tweetkeeper.schedule_post('https://mastodon.social/@a/113284726341234999', now() + interval '1 day')$$,
  '22023', NULL, 'a creation time in the future is refused');

-- Refusals.
SELECT throws_ok($$SELECT tweetkeeper.schedule_post(NULL)$$, '22004', 'url must not be NULL', 'NULL');
SELECT throws_like($$SELECT tweetkeeper.schedule_post('https://example.com/')$$,
  '%https://example.com/%', 'a URL that names no post: 22023 quoting it');
SELECT throws_ok($$SELECT tweetkeeper.schedule_post('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/bad!')$$,
  '22023', NULL, 'a bad record key');
SELECT throws_ok($$SELECT tweetkeeper.schedule_post('https://x.com/a/status/20')$$, '22023', NULL,
  'a pre-Snowflake id without a creation time, as schedule_tweet');

-- schedule_posts: all or nothing, a post in several spellings once, positions in the errors.
SELECT is(tweetkeeper.schedule_posts(ARRAY[
  'https://x.com/a/status/1460323737035677699',
  'https://twitter.com/b/status/1460323737035677699',
  'https://x.com/i/web/status/1460323737035677698',
  'https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2o',
  'at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2o',
  'https://mastodon.social/@Gargron/113284726341234568',
  :'masto_url']), 3::bigint, 'seven URLs of five posts, two tracked already: three new');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets), 10::bigint, 'ten posts tracked');
SELECT throws_ok($$SELECT tweetkeeper.schedule_posts(ARRAY['https://x.com/a/status/1460323737035677700',
                    'https://mastodon.social/@Gargron/113284726341234569', 'https://example.com/nothing'])$$,
  '22023', 'urls[3]: not a post URL "https://example.com/nothing": no known post URL form (X: https://x.com/<user>/status/<id>; Bluesky: https://bsky.app/profile/<handle or DID>/post/<rkey> or at://<handle or DID>/app.bsky.feed.post/<rkey>; Mastodon: https://<host>/@<user>/<id>)',
  'a bad URL: 22023 naming its position and value');
SELECT throws_ok($$SELECT tweetkeeper.schedule_posts(ARRAY['https://x.com/a/status/1460323737035677700', NULL])$$,
  '22004', 'urls[2] is NULL', 'a NULL element, by position');
SELECT throws_like($$SELECT tweetkeeper.schedule_posts(ARRAY['https://mastodon.social/@a/113284726341234570', 'https://x.com/a/status/20'])$$,
  'urls[2]: tweet 20 predates Snowflake ids%', 'a pre-Snowflake X id, by position');
SELECT throws_ok($$SELECT tweetkeeper.schedule_posts(NULL)$$, '22004', NULL, 'NULL array');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets), 10::bigint, 'a refused array schedules nothing');
SELECT is(tweetkeeper.schedule_posts('{}'), 0::bigint, 'an empty array: none');

-- Keys: a collision moves the later post to the next seed; a deleted tweets row can come back.
INSERT INTO tweetkeeper.post_refs (tweet_id, network, host, author, post_key, url)
VALUES (tweetkeeper_internal.post_id(tweetkeeper_internal.post_identity('mastodon', 'example.social', 'bob', '113284726341234600'), 0),
        'mastodon', 'example.social', 'somebody', '1', 'https://example.social/@somebody/1');
SELECT ok(tweetkeeper.schedule_post('https://example.social/@bob/113284726341234600'),
  'a post whose hash another post holds is scheduled');
SELECT is((SELECT tweet_id FROM tweetkeeper.post_refs WHERE post_key = '113284726341234600'),
          tweetkeeper_internal.post_id(tweetkeeper_internal.post_identity('mastodon', 'example.social', 'bob', '113284726341234600'), 1),
          'under the next seed''s id');
SELECT ok(NOT tweetkeeper.schedule_post('https://example.social/@bob/113284726341234600'), 'and found there again');
DELETE FROM tweetkeeper.tweets WHERE tweet_id = (SELECT tweet_id FROM tweetkeeper.post_refs WHERE post_key = '113284726341234568');
SELECT ok(tweetkeeper.schedule_post('https://mastodon.social/@Gargron/113284726341234568'),
  'a post whose tweets row an operator deleted is tracked again');
-- schedule_posts does the same, set-based for the many and by schedule_post for the rare rest.
INSERT INTO tweetkeeper.post_refs (tweet_id, network, host, author, post_key, url)
VALUES (tweetkeeper_internal.post_id(tweetkeeper_internal.post_identity('mastodon', 'example.social', 'carol', '113284726341234601'), 0),
        'mastodon', 'example.social', 'somebody', '2', 'https://example.social/@somebody/2');
DELETE FROM tweetkeeper.tweets WHERE tweet_id = (SELECT tweet_id FROM tweetkeeper.post_refs WHERE post_key = '113284726341234568');
SELECT is(tweetkeeper.schedule_posts(ARRAY['https://example.social/@carol/113284726341234601',
                                           'https://example.social/@dave/113284726341234602',
                                           'https://mastodon.social/@Gargron/113284726341234568',
                                           'https://example.social/@bob/113284726341234600',
                                           'https://example.social/@dave/113284726341234602']), 3::bigint,
  'schedule_posts: a post whose hash another holds, a new one (twice), one whose tweets row was deleted, one tracked: 3 new');
SELECT results_eq($$SELECT r.post_key, r.tweet_id = tweetkeeper_internal.post_id(tweetkeeper_internal.post_identity('mastodon', r.host, r.author, r.post_key), 1),
                           t.endpoint, t.due_at = t.created_at + tweetkeeper.first_delay() AND t.created_at < now()
                      FROM tweetkeeper.post_refs r JOIN tweetkeeper.tweets t USING (tweet_id)
                     WHERE r.post_key IN ('113284726341234601', '113284726341234602') ORDER BY 1$$,
  $$VALUES ('113284726341234601', true, 'mastodon:example.social', true),
           ('113284726341234602', false, 'mastodon:example.social', true)$$,
  'the collided one under the next seed, the other under its own; both due as their ids'' time says, on their server');
DELETE FROM tweetkeeper.post_refs WHERE author = 'somebody' AND post_key = '2';
SELECT throws_ok($$INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay) VALUES (-5, now(), now(), '1 minute')$$,
  '23514', NULL, 'a negative id needs an endpoint');
-- The worker sends a Mastodon post's requests to its endpoint's host: only a DNS name, as post
-- URLs have it, whoever writes the row.
SELECT throws_ok(format($$INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay, endpoint)
                          VALUES (-5, now(), now(), '1 minute', %L)$$, e),
  '23514', 'new row for relation "tweets" violates check constraint "tweets_endpoint_known"', 'endpoint ' || e || ' is refused')
  FROM unnest(ARRAY['mastodon:127.0.0.1:8080/x', 'mastodon:user@example.social', 'mastodon:127.0.0.1', 'mastodon:Example.social', 'mastodon:localhost']) e;

-- The view: every post, as people name them.
SELECT results_eq($$SELECT network, count(*) FROM tweetkeeper.posts GROUP BY 1 ORDER BY 1$$,
  $$VALUES ('bluesky', 5::bigint), ('mastodon', 6), ('x', 2)$$, 'posts shows every network''s posts');
SELECT is((SELECT url FROM tweetkeeper.posts WHERE post_id = 1460323737035677698),
  'https://x.com/i/web/status/1460323737035677698', 'an X post''s URL');

-- X's claim takes X's tweets only, and the wake-up counts only them.
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 hour' WHERE due_at IS NOT NULL;
SELECT is((SELECT array_agg(x ORDER BY x) FROM tweetkeeper.claim_batch('w', 100) c, unnest(c.tweet_ids) x),
  ARRAY[1460323737035677698, 1460323737035677699]::bigint[], 'X''s claim takes X''s tweets only');

-- forecast() prices X's tweets only: other networks' posts change nothing in it.
CREATE TEMP TABLE with_others AS SELECT * FROM tweetkeeper.forecast('1 day');
DELETE FROM tweetkeeper.tweets WHERE tweet_id < 0;
SELECT results_eq($$SELECT * FROM with_others$$, $$SELECT * FROM tweetkeeper.forecast('1 day')$$,
  'forecast() is the same with and without Bluesky and Mastodon posts');
SELECT ok((SELECT refreshes > 0 FROM with_others), 'and it does count X''s tweets');

SELECT * FROM finish();
ROLLBACK;
