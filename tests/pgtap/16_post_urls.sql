-- parse_post_url(): every accepted form of X, Bluesky and Mastodon post URLs, what it reads from
-- each, and the refused ones with SQLSTATE 22023 and a message that quotes the value.
\ir lib/begin.sql
SELECT plan(29);

CREATE FUNCTION pg_temp.p(url text) RETURNS text LANGUAGE sql AS $$
  SELECT concat_ws(' | ', network, coalesce(host, '-'), coalesce(author, '-'), post_key, canonical)
    FROM tweetkeeper.parse_post_url(url) $$;

-- Every accepted form: what it reads (network | host | author | key | canonical).
SELECT is(pg_temp.p(url), expected, form) FROM (VALUES
  ('https://x.com/XDevelopers/status/1460323737035677698',
   'x | - | XDevelopers | 1460323737035677698 | https://x.com/i/web/status/1460323737035677698', 'x.com'),
  ('https://twitter.com/XDevelopers/status/1460323737035677698?s=20',
   'x | - | XDevelopers | 1460323737035677698 | https://x.com/i/web/status/1460323737035677698',
   'twitter.com with a query string'),
  ('https://mobile.twitter.com/XDevelopers/status/1460323737035677698/photo/1',
   'x | - | XDevelopers | 1460323737035677698 | https://x.com/i/web/status/1460323737035677698',
   'mobile.twitter.com, a photo of the post'),
  ('https://x.com/i/web/status/1460323737035677698',
   'x | - | - | 1460323737035677698 | https://x.com/i/web/status/1460323737035677698', '/i/web/status/<id>'),
  ('https://bsky.app/profile/alice.bsky.social/post/3l6oveex3ii2l',
   'bluesky | - | alice.bsky.social | 3l6oveex3ii2l | at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l',
   'bsky.app with a handle'),
  ('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2l',
   'bluesky | - | did:plc:z72i7hdynmk6r22z27h6tvur | 3l6oveex3ii2l | at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l',
   'bsky.app with a DID'),
  ('at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l',
   'bluesky | - | did:plc:z72i7hdynmk6r22z27h6tvur | 3l6oveex3ii2l | at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l',
   'an at:// URI'),
  ('https://mastodon.social/@Gargron/113310863287398209',
   'mastodon | mastodon.social | Gargron | 113310863287398209 | https://mastodon.social/@Gargron/113310863287398209',
   'https://<host>/@<user>/<id>'),
  ('https://Mastodon.Social/users/Gargron/statuses/113310863287398209',
   'mastodon | mastodon.social | Gargron | 113310863287398209 | https://mastodon.social/@Gargron/113310863287398209',
   'https://<host>/users/<user>/statuses/<id>, the host lower-cased')
) AS v(url, expected, form);

-- The creation time from the key.
SELECT is((tweetkeeper.parse_post_url(url)).created_at, expected, what) FROM (VALUES
  ('https://x.com/a/status/1460323737035677698', tweetkeeper.snowflake_time(1460323737035677698),
   'an X post''s time is its Snowflake time'),
  ('https://x.com/jack/status/20', NULL, 'an id from before Snowflake encodes no time'),
  ('at://a.bsky.social/app.bsky.feed.post/3l6oveex3ii2l', timestamptz '2024-10-17 07:06:51.642+00',
   'a TID gives an estimate of the time'),
  ('https://mastodon.social/@Gargron/113310863287398209', timestamptz '2024-10-15 10:02:41.392+00',
   'a Mastodon id gives the time (milliseconds << 16)')
) AS v(url, expected, what);

-- Refused: 22023, the value quoted and the fault named.
SELECT throws_ok($$SELECT tweetkeeper.parse_post_url('https://x.com/jack/status/12ab')$$, '22023',
  'not a post URL "https://x.com/jack/status/12ab": an X post id is a positive number of at most 19 digits, got "12ab"',
  'an X id that is not a number');
SELECT throws_ok($$SELECT tweetkeeper.parse_post_url('https://bsky.app/profile/alice.bsky.social/post/short')$$, '22023',
  'not a post URL "https://bsky.app/profile/alice.bsky.social/post/short": a Bluesky post''s key is a TID (13 characters of 2-7 and a-z), got "short"',
  'a bad rkey');
SELECT throws_ok($$SELECT tweetkeeper.parse_post_url('at://did:plc:nope/app.bsky.feed.post/3l6oveex3ii2l')$$, '22023',
  'not a post URL "at://did:plc:nope/app.bsky.feed.post/3l6oveex3ii2l": a did:plc is "did:plc:" and 24 characters of a-z and 2-7, got "did:plc:nope"',
  'a bad DID');
SELECT throws_ok($$SELECT tweetkeeper.parse_post_url('https://mastodon.social/@Gargron/x1')$$, '22023',
  'not a post URL "https://mastodon.social/@Gargron/x1": a Mastodon status id is a positive number of at most 19 digits, got "x1"',
  'a Mastodon id that is not a number');
SELECT throws_like($$SELECT tweetkeeper.parse_post_url('https://example.org/blog/post-1')$$,
  'not a post URL "https://example.org/blog/post-1": no known post URL form%', 'a URL of no known form');
SELECT throws_like($$SELECT tweetkeeper.parse_post_url('1460323737035677698')$$,
  'not a post URL "1460323737035677698": expected an https:// or at:// URL%', 'a bare id is no URL');
SELECT throws_like($$SELECT tweetkeeper.parse_post_url('')$$, 'not a post URL "": it is empty', 'an empty one');
SELECT throws_like($$SELECT tweetkeeper.parse_post_url(repeat('https://x.com/', 100))$$,
  'not a post URL "https://x.com/https://x.com/%...": %', 'a long value is cut in the message');
-- A value far longer than any URL: a clear error, from its first bytes (also when stored, where
-- only a slice is read), never the whole of it copied.
SELECT throws_ok(format('SELECT tweetkeeper.parse_post_url(%L || repeat(''a'', 10000000))', 'https://x.com/jack/status/20?'),
  '22023', 'not a post URL "https://x.com/jack/status/20?' || repeat('a', 171)
           || '...": it is longer than 2048 bytes, the most a post URL has', 'a URL of 10 MB');
CREATE TEMP TABLE long_urls AS SELECT 'https://x.com/jack/status/20?' || repeat('a', 2019) AS url
  UNION ALL SELECT 'https://x.com/jack/status/20?' || repeat(md5(i::text), 312500) FROM generate_series(1, 1) i;
SELECT results_eq($$SELECT (SELECT p.post_key FROM tweetkeeper.parse_post_url(u.url) p) FROM long_urls u WHERE length(u.url) = 2048$$,
  $$VALUES ('20')$$, 'a URL of 2048 bytes is read');
SELECT throws_like($$SELECT tweetkeeper.parse_post_url(u.url) FROM long_urls u WHERE length(u.url) > 2048$$,
  'not a post URL "https://x.com/jack/status/20?%...": it is longer than 2048 bytes, the most a post URL has',
  'a stored URL of 10 MB (toasted: a slice of it is read)');
SELECT ok((tweetkeeper.parse_post_url(NULL)).network IS NULL, 'NULL in, NULL out (STRICT)');

-- Immutable and parallel safe: usable in an index or a generated column.
SELECT is((SELECT provolatile::text || proparallel::text FROM pg_proc WHERE oid = 'tweetkeeper.parse_post_url(text)'::regprocedure),
  'is', 'parse_post_url is IMMUTABLE and PARALLEL SAFE');

-- Who may call it: readers (and so admins), not workers.
SELECT ok(has_function_privilege('tweetkeeper_reader', 'tweetkeeper.parse_post_url(text)', 'EXECUTE'), 'readers may');
SELECT ok(has_function_privilege('tweetkeeper_admin', 'tweetkeeper.parse_post_url(text)', 'EXECUTE'), 'admins may');
SELECT ok(NOT has_function_privilege('tweetkeeper_worker', 'tweetkeeper.parse_post_url(text)', 'EXECUTE'),
  'workers need not');

SELECT * FROM finish();
ROLLBACK;
