-- Collections (sql/replaceable/39_collections.sql): made by hand or at scheduling, filled by id
-- and by URL in any spelling, emptied and dropped without touching tracking; bad input refused
-- with its SQLSTATE and nothing changed; who may change them.
\ir lib/begin.sql
SELECT plan(28);

CREATE FUNCTION pg_temp.members(c text) RETURNS bigint[] LANGUAGE sql AS $$
  SELECT coalesce(array_agg(tweet_id ORDER BY tweet_id), '{}') FROM tweetkeeper.collection_posts WHERE collection = c $$;

-- Made by hand: once; its kind checked; its name checked.
SELECT is(tweetkeeper.create_collection('covid-19 wave 2'), true, 'create_collection: a new tag');
SELECT is(tweetkeeper.create_collection('covid-19 wave 2', 'import'), false, 'again: it exists (kept as it was)');
SELECT is((SELECT kind FROM tweetkeeper.collections WHERE name = 'covid-19 wave 2'), 'tag', '... a tag still');
SELECT throws_ok($$SELECT tweetkeeper.create_collection('x', 'folder')$$, '22023',
  'collection kind ''folder'': tag, import or follow', 'an unknown kind: 22023');
SELECT throws_ok($$SELECT tweetkeeper.create_collection(' padded')$$, '22023',
  'collection name '' padded'': 1 to 400 characters, no control characters, no spaces at either end', 'a padded name: 22023');
SELECT throws_ok($$SELECT tweetkeeper.create_collection(E'two\nlines')$$, '22023', NULL, 'a control character: 22023');
SELECT throws_ok($$SELECT tweetkeeper.create_collection('')$$, '22023', NULL, 'an empty name: 22023');
SELECT throws_ok($$SELECT tweetkeeper.create_collection(NULL)$$, '22004', 'collection must not be NULL', 'NULL: 22004');

-- By URL, a tag given at scheduling: posts not tracked yet are scheduled; every post named joins.
SELECT is(tweetkeeper.collect_posts('wave', ARRAY['https://x.com/a/status/1460323737035677698',
                                                  'https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2a']),
  2::bigint, 'collect_posts: two posts join ...');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets), 2::bigint, '... scheduled, as they were not tracked');
SELECT is(tweetkeeper.collect_posts('wave 2', ARRAY['https://twitter.com/b/status/1460323737035677698?s=20',
                                                    'at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2a',
                                                    'https://a.social/@u/113284726341234501',
                                                    'https://A.Social/@U/113284726341234501']),
  3::bigint, 'another collection: the same two in other spellings and one more (given twice) join once each');
SELECT is(pg_temp.members('wave 2'), ARRAY(SELECT post_id FROM tweetkeeper.posts ORDER BY post_id),
  'all three are the second collection''s, the two tracked before too');
SELECT is(pg_temp.members('wave'), ARRAY(SELECT post_id FROM tweetkeeper.posts WHERE network <> 'mastodon' ORDER BY post_id),
  'the first keeps its two');
SELECT is((SELECT kind FROM tweetkeeper.collections WHERE name = 'wave'), 'tag', 'a collection made so is a tag');

-- By id: an X id not tracked is scheduled; a post of another network must be tracked.
SELECT is(tweetkeeper.collect('covid-19 wave 2', ARRAY[1460323737035677699, 1460323737035677699]), 1::bigint,
  'collect: an X post given twice joins once ...');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id = 1460323737035677699), 1::bigint, '... scheduled');
SELECT throws_ok($$SELECT tweetkeeper.collect('covid-19 wave 2', ARRAY[1460323737035677698, -20])$$, '22023',
  'post_ids[2]: post -20 is not tracked here', 'collect: a post of another network not tracked, 22023 with its position');
SELECT is(pg_temp.members('covid-19 wave 2'), ARRAY[1460323737035677699::bigint], '... and nothing was added');
SELECT throws_ok($$SELECT tweetkeeper.collect_posts('wave', ARRAY['https://a.social/@u/1', 'https://example.com/x'])$$,
  '22023', NULL, 'collect_posts: a bad URL, 22023 ...');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets), 4::bigint, '... and nothing scheduled');
SELECT throws_ok($$SELECT tweetkeeper.collect('wave', ARRAY[NULL::bigint])$$, '22004', 'post_ids[1] is NULL', 'a NULL id: 22004');
SELECT throws_ok($$SELECT tweetkeeper.collect('wave', ARRAY[0::bigint])$$, '22023', 'post_ids[1]: post 0 is not tracked here',
  'id 0, no post''s: 22023');
SELECT throws_ok($$SELECT tweetkeeper.collect_posts(E'bad\tname', ARRAY['https://x.com/a/status/1460323737035677690'])$$,
  '22023', NULL, 'a bad name: 22023 ...');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id = 1460323737035677690), 0::bigint, '... and nothing scheduled');

-- Taking out and dropping never stops tracking; a post no longer tracked leaves its collections.
SELECT is(tweetkeeper.uncollect('wave 2', ARRAY[1460323737035677698, 20]), 1::bigint, 'uncollect: one was in it');
SELECT is(tweetkeeper.drop_collection('wave'), 2::bigint, 'drop_collection: the posts it held');
SELECT throws_ok($$SELECT tweetkeeper.drop_collection('wave')$$, '42704', 'no collection ''wave''', 'dropping it again: 42704');
DELETE FROM tweetkeeper.tweets WHERE tweet_id = 1460323737035677699;
SELECT results_eq($$SELECT (SELECT count(*) FROM tweetkeeper.tweets), (SELECT count(*) FROM tweetkeeper.collection_posts WHERE tweet_id = 1460323737035677699)$$,
  $$VALUES (3::bigint, 0::bigint)$$, 'the other posts still tracked; the one deleted left every collection');

SELECT * FROM finish();
ROLLBACK;
