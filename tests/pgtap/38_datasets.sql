-- import_history (sql/replaceable/77_datasets.sql): a dataset's observations stored as history of
-- tracked posts, by URL of any network; exact (one already there, or given twice, stored once;
-- through compaction unchanged); bad input refused with its SQLSTATE and nothing stored; the
-- admin's alone.
\ir lib/begin.sql
SELECT plan(17);

SELECT tweetkeeper.schedule_tweets(ARRAY[1460323737035677698]);
SELECT tweetkeeper.schedule_posts(ARRAY['at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2a']);
CREATE TEMP VIEW h AS
  SELECT tweet_id, lease_id, observed_at, retweet_count, reply_count, like_count, quote_count, bookmark_count,
         impression_count FROM tweetkeeper.metric_history;

SELECT is(tweetkeeper.import_history(
  ARRAY['https://x.com/i/web/status/1460323737035677698', 'https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2a',
        'https://twitter.com/a/status/1460323737035677698?s=20', 'https://x.com/a/status/1460323737035677698'],
  ARRAY['2021-11-16 00:00:00.123456+00', '2021-11-17 00:00:00+00', '2021-11-16 00:00:00.123456+00', '2021-11-23 12:00:00+00']::timestamptz[],
  '{{1,2,3,4,5,6},{7,8,9,10,NULL,NULL},{1,2,3,4,5,6},{11,12,13,14,15,16}}'), 3::bigint,
  'four observations, one given twice in another spelling: three stored');
SELECT results_eq($$SELECT tweet_id, lease_id, observed_at, retweet_count, reply_count, like_count, quote_count,
                           bookmark_count, impression_count FROM h ORDER BY observed_at$$,
  $$VALUES (1460323737035677698::bigint, 0::bigint, '2021-11-16 00:00:00.123456+00'::timestamptz, 1::bigint, 2::bigint, 3::bigint, 4::bigint, 5::bigint, 6::bigint),
           ((SELECT tweet_id FROM tweetkeeper.post_refs), 0, '2021-11-17 00:00:00+00', 7, 8, 9, 10, NULL, NULL),
           (1460323737035677698, 0, '2021-11-23 12:00:00+00', 11, 12, 13, 14, 15, 16)$$,
  '... as given, to the microsecond, counts in order (retweets, replies, likes, quotes, bookmarks, impressions), lease 0');
SELECT is(tweetkeeper.import_history(ARRAY['https://x.com/i/web/status/1460323737035677698'],
                                     ARRAY['2021-11-16 00:00:00.123456+00']::timestamptz[], '{{9,9,9,9,9,9}}'),
  0::bigint, 'an observation of the same post at the same moment is there already: skipped (a dataset imported again)');
SELECT is((SELECT like_count FROM h WHERE observed_at = '2021-11-16 00:00:00.123456+00'), 3::bigint, '... unchanged');
SELECT is(tweetkeeper.import_history('{}', '{}', '{}'), 0::bigint, 'nothing: 0');
SELECT is((SELECT row(t.updated_at, t.update_count, t.like_count)::text FROM tweetkeeper.tweets t WHERE t.tweet_id > 0),
  row(NULL::timestamptz, 0, NULL::bigint)::text, 'the post itself is unchanged: its reads here say what it is now');

-- Old observations are compacted as any, unchanged (housekeeping: partitions, then compaction).
CREATE TEMP TABLE before AS SELECT * FROM h;
SELECT tweetkeeper.create_partitions();
SELECT cmp_ok(tweetkeeper.compact_history(), '>', 0, 'compaction takes their weeks ...');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history_hot), 0::bigint, '... out of the hot table ...');
SELECT set_eq($$SELECT * FROM h$$, $$SELECT * FROM before$$, '... and the history reads the same');

-- Bad input: its SQLSTATE, nothing stored.
SELECT throws_ok($$SELECT tweetkeeper.import_history(ARRAY['https://x.com/i/web/status/1460323737035677699'], ARRAY[now()], '{{1,2,3,4,5,6}}')$$,
  '22023', 'urls[1]: post https://x.com/i/web/status/1460323737035677699 is not tracked here', 'a post not tracked: 22023');
SELECT throws_ok($$SELECT tweetkeeper.import_history(ARRAY['https://x.com/i/web/status/1460323737035677698', 'https://example.com/'],
                                                     ARRAY[now(), now()], '{{1,2,3,4,5,6},{1,2,3,4,5,6}}')$$,
  '22023', NULL, 'no post''s URL: 22023');
SELECT throws_ok($$SELECT tweetkeeper.import_history(ARRAY['https://x.com/i/web/status/1460323737035677698'],
                                                     ARRAY[now() + interval '1 hour'], '{{1,2,3,4,5,6}}')$$,
  '22023', NULL, 'a time in the future: 22023');
SELECT throws_ok($$SELECT tweetkeeper.import_history(ARRAY['https://x.com/i/web/status/1460323737035677698'], ARRAY[now()], '{{1,2,3,-4,5,6}}')$$,
  '22023', 'counts[1][4] is negative (-4)', 'a negative count: 22023');
SELECT throws_ok($$SELECT tweetkeeper.import_history(ARRAY['https://x.com/i/web/status/1460323737035677698'], ARRAY[now()], '{1,2,3,4,5,6}')$$,
  '22023', NULL, 'counts not n x 6: 22023');
SELECT throws_ok($$SELECT tweetkeeper.import_history(ARRAY['https://x.com/i/web/status/1460323737035677698'], ARRAY[now(), now()], '{{1,2,3,4,5,6}}')$$,
  '22023', 'observed_at has 2 elements, urls 1: one time per observation', 'arrays of other lengths: 22023');
SELECT throws_ok($$SELECT tweetkeeper.import_history(NULL, ARRAY[now()], '{{1,2,3,4,5,6}}')$$, '22004', 'urls must not be NULL', 'NULL: 22004');
SELECT set_eq($$SELECT * FROM h$$, $$SELECT * FROM before$$, 'nothing was stored by the refused calls');

SELECT * FROM finish();
ROLLBACK;
