-- Following accounts: parse_profile_url(), follow(), follow_accounts(), unfollow() and the
-- follows view; who may follow; bad input refused with its SQLSTATE and nothing changed.
\ir lib/begin.sql
SELECT plan(87);

CREATE FUNCTION pg_temp.p(url text) RETURNS text LANGUAGE sql AS $$
  SELECT concat_ws(' | ', network, coalesce(host, '-'), coalesce(handle, '-'), coalesce(account_id, '-'), canonical)
    FROM tweetkeeper.parse_profile_url(url) $$;

-- What each form reads (network | host | handle | id | canonical).
SELECT is(pg_temp.p(url), expected, url) FROM (VALUES
  ('x.com/XDevelopers', 'x | - | xdevelopers | - | https://x.com/xdevelopers'),
  ('https://twitter.com/jack/with_replies?s=20', 'x | - | jack | - | https://x.com/jack'),
  ('https://x.com/i/user/12', 'x | - | - | 12 | https://x.com/i/user/12'),
  ('https://bsky.app/profile/Alice.Bsky.Social', 'bluesky | - | alice.bsky.social | - | https://bsky.app/profile/alice.bsky.social'),
  ('at://did:plc:z72i7hdynmk6r22z27h6tvur',
   'bluesky | - | - | did:plc:z72i7hdynmk6r22z27h6tvur | https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur'),
  ('https://hachyderm.io/@alice@Example.ORG', 'mastodon | example.org | alice | - | https://example.org/@alice'),
  ('@Gargron@mastodon.social', 'mastodon | mastodon.social | gargron | - | https://mastodon.social/@gargron')
) AS t(url, expected);
SELECT throws_ok($$SELECT tweetkeeper.parse_profile_url('https://x.com/jack/status/20')$$, '22023',
  'not a profile URL "https://x.com/jack/status/20": an X profile URL is https://x.com/<user> (a user name of 1 to 15 letters, digits and _) or https://x.com/i/user/<id>',
  'a post URL is no profile URL: 22023, the value quoted and the forms named');

-- follow(): new once, whatever the spelling (in this order: each answer depends on the follows
-- before it).
SELECT is(tweetkeeper.follow(url), new, why) FROM (VALUES
  (1, 'https://x.com/Jack', true, 'following an account is new'),
  (2, 'twitter.com/jack/media', false, 'the same account in another spelling is not'),
  (3, 'https://bsky.app/profile/alice.bsky.social', true, 'a Bluesky handle'),
  (4, 'https://mastodon.social/@Gargron', true, 'a Mastodon account'),
  (5, 'https://hachyderm.io/@Gargron@mastodon.social', false, 'the same Mastodon account seen from another server is not new'),
  (6, 'https://fosstodon.org/@Gargron', true, 'the same name on another server is another account')
) AS t(n, url, new, why) ORDER BY n;
SELECT results_eq(
  $$SELECT network, account, handle, host, url, status, behind >= interval '0', posts_found FROM tweetkeeper.follows ORDER BY url$$,
  $$VALUES ('bluesky', NULL::text, 'alice.bsky.social', NULL::text, 'https://bsky.app/profile/alice.bsky.social', 'resolving', true, 0::bigint),
           ('mastodon', NULL, 'gargron', 'fosstodon.org', 'https://fosstodon.org/@gargron', 'resolving', true, 0),
           ('mastodon', NULL, 'gargron', 'mastodon.social', 'https://mastodon.social/@gargron', 'resolving', true, 0),
           ('x', NULL, 'jack', NULL, 'https://x.com/jack', 'resolving', true, 0)$$,
  'follows: each account once, resolving (behind since it was followed)');

-- Once a follower has resolved an account, its id names it too.
UPDATE tweetkeeper.followed_accounts SET account_id = 'did:plc:z72i7hdynmk6r22z27h6tvur', status = 'following',
       checked_at = now() - interval '90 seconds'
 WHERE handle = 'alice.bsky.social';
UPDATE tweetkeeper.followed_accounts SET account_id = '12', status = 'following' WHERE network = 'x';
SELECT is(tweetkeeper.follow('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur'), false,
  'a resolved account followed again by its DID is not new');
SELECT is(tweetkeeper.follow('https://x.com/i/user/12'), false, 'nor an X account by its user id');
SELECT is(tweetkeeper.follow('https://x.com/12'), true, 'a user named 12 is not the user whose id is 12');
SELECT is((SELECT behind FROM tweetkeeper.follows WHERE handle = 'alice.bsky.social'), interval '90 seconds',
  'behind: since the moment up to which every post was seen');
SELECT is((SELECT behind FROM tweetkeeper.follows WHERE network = 'x' AND account = '12'), interval '0',
  'behind: since following, while nothing was seen yet');

-- follow_accounts(): all or nothing, a bad URL named by its position.
SELECT is(tweetkeeper.follow_accounts(ARRAY['@a@mastodon.social', 'https://mastodon.social/@a', 'x.com/b',
                                            'https://x.com/jack']), 2::bigint,
  'follow_accounts: how many were new, each account once');
SELECT throws_ok($$SELECT tweetkeeper.follow_accounts(ARRAY['x.com/c', 'x.com/home'])$$, '22023',
  'urls[2]: not a profile URL "x.com/home": an X profile URL is https://x.com/<user> (a user name of 1 to 15 letters, digits and _) or https://x.com/i/user/<id>',
  'a bad URL: 22023 naming its position');
SELECT throws_ok($$SELECT tweetkeeper.follow_accounts(ARRAY['x.com/c', NULL])$$, '22004',
  'urls[2] is NULL', 'a NULL URL: 22004 naming its position');
SELECT is((SELECT count(*) FROM tweetkeeper.followed_accounts WHERE handle = 'c'), 0::bigint,
  'nothing of a refused call is followed');
SELECT throws_ok($$SELECT tweetkeeper.follow_accounts(NULL)$$, '22004', 'urls must not be NULL', 'a NULL array');
SET LOCAL tweetkeeper.max_ids_per_call = 2;
SELECT throws_ok($$SELECT tweetkeeper.follow_accounts(ARRAY['x.com/c', 'x.com/d', 'x.com/e'])$$, '54000', NULL,
  'more URLs than max_ids_per_call: 54000');
RESET tweetkeeper.max_ids_per_call;
SELECT throws_ok($$SELECT tweetkeeper.follow(NULL)$$, '22004', 'profile_url must not be NULL', 'follow(NULL)');

-- unfollow(): by either name; the posts stay.
DO $$ BEGIN PERFORM tweetkeeper.schedule_post('https://mastodon.social/@Gargron/113310863287398209'); END $$;
SELECT is(tweetkeeper.unfollow('@GARGRON@Mastodon.Social'), true, 'unfollow: it was followed (user names in any case)');
SELECT is(tweetkeeper.unfollow('https://mastodon.social/@Gargron'), false, 'unfollow again: it was not');
SELECT is(tweetkeeper.follow('https://mastodon.social/@Gargron'), true, 'follow again after unfollow');
SELECT is(tweetkeeper.unfollow('https://mastodon.social/@gargron'), true, '... and unfollow');
SELECT is(tweetkeeper.unfollow('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur'), true,
  'unfollow by the id of an account followed by its handle');
SELECT is((SELECT count(*) FROM tweetkeeper.post_refs WHERE author = 'Gargron'), 1::bigint,
  'an account''s posts stay tracked after unfollow');

-- Who may follow: those who may schedule.
SET LOCAL ROLE tweetkeeper_admin;
SELECT is(tweetkeeper.follow('x.com/admins_pick'), true, 'tweetkeeper_admin follows');
RESET ROLE;
SET LOCAL ROLE tweetkeeper_reader;
SELECT throws_ok($$SELECT tweetkeeper.follow('x.com/readers_pick')$$, '42501', NULL, 'tweetkeeper_reader may not follow');
SELECT is((SELECT count(*) FROM tweetkeeper.follows), 6::bigint, 'tweetkeeper_reader reads the follows view');
RESET ROLE;
SET LOCAL ROLE tweetkeeper_worker;
SELECT throws_ok($$SELECT tweetkeeper.unfollow('x.com/jack')$$, '42501', NULL, 'tweetkeeper_worker may not unfollow');
RESET ROLE;

-- The followers' side: leases held by the database session, as batches are.
SET LOCAL ROLE tweetkeeper_worker;
CREATE TEMP TABLE claimed AS SELECT * FROM tweetkeeper.claim_follows('f1', 'x', 10);
RESET ROLE;
SELECT is((SELECT count(*) FROM claimed), 4::bigint, 'claim_follows: every due X account, leased');
SELECT is((SELECT count(*) FROM tweetkeeper.follows WHERE network = 'x' AND follower = 'f1'), 4::bigint,
  'follows names the follower that holds each account');
SELECT is((SELECT count(*) FROM tweetkeeper.followed_accounts WHERE network = 'x' AND lease_owner = 'f1'
              AND lease_pid = pg_backend_pid() AND lease_until > now()), 4::bigint, '... to this session');
UPDATE tweetkeeper.followed_accounts SET lease_pid = lease_pid + 1 WHERE handle = 'b';
SELECT is((SELECT count(*) FROM tweetkeeper.claim_follows('f2', 'x', 10)), 3::bigint,
  'an account another session holds is not claimed again (the rest are renewed)');
UPDATE tweetkeeper.followed_accounts SET lease_until = now() - interval '1 second' WHERE handle = 'b';
SELECT is((SELECT handle FROM tweetkeeper.claim_follows('f2', 'x', 10) WHERE handle = 'b'), 'b',
  'once its lease ran out, another follower takes it');
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_follows('f1', 'myspace', 1)$$, '22023', NULL, 'an unknown network: 22023');
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_follows('f1', 'x', 0)$$, '22023', NULL, 'max_accounts 0: 22023');

-- resolve_follow(): the id and handle, or missing; one row per account.
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.resolve_follow((SELECT follow_id FROM claimed WHERE handle = 'b'), '783214', 'b', 'following'),
  true, 'resolve_follow: the account''s id');
SELECT is(tweetkeeper.resolve_follow((SELECT follow_id FROM claimed WHERE handle = 'admins_pick'), NULL, NULL,
  'missing', 'Could not find user with username: [admins_pick].'), true, 'an account that does not exist is marked');
RESET ROLE;
SELECT results_eq($$SELECT status, reason FROM tweetkeeper.follows WHERE handle = 'admins_pick'$$,
  $$VALUES ('missing', 'Could not find user with username: [admins_pick].')$$, 'follows: missing, and why');
SELECT is((SELECT count(*) FROM tweetkeeper.claim_follows('f1', 'x', 10) WHERE handle = 'admins_pick'), 0::bigint,
  'a missing account is not read again');
INSERT INTO tweetkeeper.followed_accounts (network, host, handle, url) VALUES ('x', '', 'b_renamed', 'https://x.com/b_renamed');
DO $$ BEGIN PERFORM tweetkeeper.claim_follows('f1', 'x', 10); END $$;
SELECT is(tweetkeeper.resolve_follow((SELECT follow_id FROM tweetkeeper.followed_accounts WHERE handle = 'b_renamed'),
  '783214', 'B_Renamed', 'following'), false, 'the same account under another name: kept once');
SELECT results_eq($$SELECT follow_id, handle FROM tweetkeeper.followed_accounts WHERE account_id = '783214'$$,
  $$SELECT follow_id, 'b_renamed' FROM claimed WHERE handle = 'b'$$,
  '... the first row, with the account''s current handle (in lower case)');
SELECT is(tweetkeeper.follow('x.com/B_renamed'), false, 'its new name is followed already');
-- A handle taken by another account since: the resolved row that had it loses it.
INSERT INTO tweetkeeper.followed_accounts (network, host, handle, url) VALUES ('x', '', 'newcomer', 'https://x.com/newcomer');
DO $$ BEGIN PERFORM tweetkeeper.claim_follows('f1', 'x', 10); END $$;
SELECT is(tweetkeeper.resolve_follow((SELECT follow_id FROM tweetkeeper.followed_accounts WHERE handle = 'newcomer'),
  '999', 'jack', 'following'), true, 'an account whose handle another row had');
SELECT results_eq($$SELECT account_id, handle FROM tweetkeeper.followed_accounts WHERE account_id IN ('12', '999') ORDER BY 1$$,
  $$VALUES ('12', NULL::text), ('999', 'jack')$$, '... has it now; the old holder keeps its id, no handle');
SELECT throws_ok($$SELECT tweetkeeper.resolve_follow((SELECT follow_id FROM tweetkeeper.followed_accounts WHERE account_id = '12'),
  '12', 'jack', 'gone')$$, '22023', NULL, 'an unknown status: 22023');
UPDATE tweetkeeper.followed_accounts SET lease_pid = lease_pid + 1 WHERE account_id = '12';
SELECT throws_ok($$SELECT tweetkeeper.resolve_follow((SELECT follow_id FROM tweetkeeper.followed_accounts WHERE account_id = '12'),
  '12', 'jack', 'following')$$, '55000', NULL, 'an account this session does not hold: 55000');

-- store_follow_posts(): the posts scheduled with their own creation times, in one call.
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.store_follow_posts((SELECT follow_id FROM claimed WHERE handle = 'b'),
  ARRAY['https://x.com/i/web/status/1460323737035677698', 'https://x.com/i/web/status/1460323737035677699'],
  ARRAY[timestamptz '2021-11-15 19:08:05.647+00', timestamptz '2021-11-15 19:08:05.647+00'],
  '1460323737035677699', timestamptz '2021-11-15 19:10:00+00', now() + interval '1 minute'), 2::bigint,
  'store_follow_posts: both posts new');
SELECT is(tweetkeeper.store_follow_posts((SELECT follow_id FROM claimed WHERE handle = 'b'),
  ARRAY['https://x.com/i/web/status/1460323737035677699'], ARRAY[timestamptz '2021-11-15 19:08:05.647+00'],
  NULL, timestamptz '2021-11-15 19:09:00+00', now() + interval '2 minutes'), 0::bigint, 'again: nothing new');
RESET ROLE;
SELECT results_eq($$SELECT created_at, due_at - created_at = tweetkeeper.first_delay() FROM tweetkeeper.tweets
                    WHERE tweet_id IN (1460323737035677698, 1460323737035677699)$$,
  $$VALUES (timestamptz '2021-11-15 19:08:05.647+00', true), (timestamptz '2021-11-15 19:08:05.647+00', true)$$,
  'each post tracked from its own creation time, its first refresh at creation + the first delay');
SELECT results_eq($$SELECT c.name, c.kind, array_agg(p.tweet_id ORDER BY p.tweet_id) FROM tweetkeeper.collections c
                      JOIN tweetkeeper.collection_posts p ON p.collection = c.name GROUP BY c.name, c.kind$$,
  $$VALUES ('https://x.com/b', 'follow', ARRAY[1460323737035677698, 1460323737035677699])$$,
  'the posts found are the account''s collection''s (named by its profile URL), each once');
SELECT results_eq($$SELECT f.posts_found, f.newest_post_id, f.newest_post_at, f.checked_at, f.poll_after > now() + interval '90 seconds'
                      FROM tweetkeeper.followed_accounts f WHERE f.account_id = '783214'$$,
  $$VALUES (2::bigint, '1460323737035677699', timestamptz '2021-11-15 19:08:05.647+00',
            timestamptz '2021-11-15 19:10:00+00', true)$$,
  'the account: posts found, the newest, how far read (never backwards), when to read it next');
SELECT throws_ok($$SELECT tweetkeeper.store_follow_posts((SELECT follow_id FROM tweetkeeper.followed_accounts WHERE account_id = '783214'),
  ARRAY['https://x.com/i/web/status/20'], '{}', NULL, now(), now())$$, '22023', NULL,
  'a creation time per post, or 22023');
SELECT throws_ok($$SELECT tweetkeeper.store_follow_posts((SELECT follow_id FROM tweetkeeper.followed_accounts WHERE account_id = '12'),
  '{}', '{}', NULL, now(), now())$$, '55000', NULL, 'storing for an account this session does not hold: 55000');
SELECT throws_ok($$SELECT tweetkeeper.store_follow_posts((SELECT follow_id FROM tweetkeeper.followed_accounts WHERE account_id = '783214'),
  ARRAY['https://x.com/i/web/status/20', 'https://mastodon.social/@b/113310863287398209'],
  ARRAY[now(), now()], NULL, now(), now())$$, '22023',
  'urls[2]: https://mastodon.social/@b/113310863287398209 is not a post of https://x.com/b (x)',
  'a post of another network: 22023 naming its position, nothing stored');
SELECT throws_ok($$SELECT tweetkeeper.store_follow_posts((SELECT follow_id FROM tweetkeeper.followed_accounts WHERE account_id = '783214'),
  ARRAY['https://x.com/i/web/status/x'], ARRAY[now()], NULL, now(), now())$$, '22023', NULL, 'a bad URL: 22023');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id = 20), 0::bigint, 'nothing of a refused call is scheduled');
-- record_follow_read(): X bills each post a timeline returns, once per UTC day and credential.
SELECT tweetkeeper.add_credential('follow-cred', 300, interval '15 minutes', 1000);
SET LOCAL ROLE tweetkeeper_worker;
-- (The leases renewed with the credential this follower reads with: the only one it may bill.)
SELECT is((SELECT count(*) > 0 FROM tweetkeeper.claim_follows('f1', 'x', 10, '1 hour', false, 'follow-cred')), true,
  'the X leases renewed with the credential the follower reads with');
SELECT is(tweetkeeper.record_follow_read((SELECT follow_id FROM claimed WHERE handle = 'b'), 'follow-cred',
  ARRAY[1460323737035677698, 1460323737035677699, 1460323737035677699]), 2,
  'record_follow_read: the two posts returned are billed (a post listed twice once)');
SELECT is(tweetkeeper.record_follow_read((SELECT follow_id FROM claimed WHERE handle = 'b'), 'follow-cred',
  ARRAY[1460323737035677699, 99]), 1, 'again the same day: only the post not read today (99, not tracked) is billed');
RESET ROLE;
SELECT results_eq($$SELECT requests, tweets_read, billed_reads FROM tweetkeeper.daily_usage
                     WHERE day = (now() AT TIME ZONE 'UTC')::date AND provider = 'x-v2' AND credential = 'follow-cred'$$,
  $$VALUES (2::bigint, 4::bigint, 3::bigint)$$, 'daily_usage counts the follower''s requests, posts read and billed reads');
SELECT results_eq($$SELECT month_used, requests FROM tweetkeeper.credentials WHERE name = 'follow-cred'$$,
  $$VALUES (3::bigint, 2::bigint)$$, 'the credential''s month counts them too');
SELECT results_eq($$SELECT billed_on = (now() AT TIME ZONE 'UTC')::date, billed_by FROM tweetkeeper.tweets
                     WHERE tweet_id = 1460323737035677698$$,
  $$VALUES (true, ARRAY['follow-cred'])$$, 'the tweet is marked read today by the credential: its refresh today is not billed again');
SELECT is((SELECT allowed FROM tweetkeeper.follow_read_allowed('follow-cred')), true, 'follow_read_allowed: room left');
UPDATE tweetkeeper.credentials SET month_used = 950 WHERE name = 'follow-cred';
SELECT results_eq($$SELECT allowed, until = tweetkeeper.next_month_utc(), reason LIKE '%950 of its monthly cap of 1000%'
                     FROM tweetkeeper.follow_read_allowed('follow-cred')$$,
  $$VALUES (false, true, true)$$, '... none for a page of 100 under the monthly cap: not until next month');
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.record_follow_read((SELECT follow_id FROM claimed WHERE handle = 'b'), 'follow-cred', '{}',
  'usage-capped', 'Usage cap exceeded'), 0, 'a usage-capped answer bills nothing');
RESET ROLE;
SELECT is((SELECT status::text FROM tweetkeeper.credentials WHERE name = 'follow-cred'), 'capped',
  '... and marks the credential capped, as a refresh''s would');
SELECT throws_ok($$SELECT tweetkeeper.record_follow_read((SELECT follow_id FROM claimed WHERE handle = 'b'), 'follow-cred',
  '{}', 'tired')$$, '22023', NULL, 'an unknown refusal: 22023');
SELECT is((SELECT allowed FROM tweetkeeper.follow_read_allowed(NULL)), true, 'no registered credential: no cap to keep');
-- forecast(): an X account read every minute adds 60 requests an hour.
UPDATE tweetkeeper.followed_accounts SET checked_at = now() - interval '10 seconds', poll_after = now() + interval '50 seconds'
 WHERE account_id = '783214';
SELECT requests AS with_follow FROM tweetkeeper.forecast('1 hour') \gset
UPDATE tweetkeeper.followed_accounts SET status = 'private' WHERE account_id = '783214';
SELECT is(:with_follow - (SELECT requests FROM tweetkeeper.forecast('1 hour')), 60.0,
  'forecast: an X account read every minute adds 60 requests an hour, at its follower''s pace');
UPDATE tweetkeeper.followed_accounts SET status = 'following' WHERE account_id = '783214';
-- A stream follower: positions moved for its whole subscription at once; deletes seen on it.
SELECT tweetkeeper.follow('at://did:plc:streamstreamstreamstream');
SET LOCAL ROLE tweetkeeper_worker;
CREATE TEMP TABLE streamed AS SELECT * FROM tweetkeeper.claim_follows('f1', 'bluesky', 10, '1 minute', false)
 WHERE account_id = 'did:plc:streamstreamstreamstream';
SELECT tweetkeeper.resolve_follow((SELECT follow_id FROM streamed), 'did:plc:streamstreamstreamstream', 'streamer.bsky.social', 'following');
SELECT is(tweetkeeper.store_follow_posts((SELECT follow_id FROM streamed),
  ARRAY['at://did:plc:streamstreamstreamstream/app.bsky.feed.post/3l6oveex3ia22',
        'at://did:plc:streamstreamstreamstream/app.bsky.feed.post/3l6oveex3ia23'],
  ARRAY[now() - interval '10 seconds', now() - interval '9 seconds'], NULL, now() - interval '8 seconds', now()), 2::bigint,
  'a streamed account''s two posts stored');
SELECT is(tweetkeeper.mark_follows_read(ARRAY[(SELECT follow_id FROM streamed), -1], now() - interval '1 second'), 1::bigint,
  'mark_follows_read: the positions of this session''s accounts move (an unknown id is no one''s)');
RESET ROLE;
SELECT ok((SELECT checked_at > now() - interval '2 seconds' FROM tweetkeeper.followed_accounts
            WHERE account_id = 'did:plc:streamstreamstreamstream'), '... to the moment the stream was read up to');
UPDATE tweetkeeper.tweets t SET lease_id = 424242 FROM tweetkeeper.post_refs r
 WHERE r.tweet_id = t.tweet_id AND r.post_key = '3l6oveex3ia23';
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.delete_followed_posts((SELECT follow_id FROM streamed),
  ARRAY['at://did:plc:streamstreamstreamstream/app.bsky.feed.post/3l6oveex3ia22',
        'at://did:plc:streamstreamstreamstream/app.bsky.feed.post/3l6oveex3ia23',
        'at://did:plc:someoneelsesomeoneelseso/app.bsky.feed.post/3l6oveex3ia22']), 1::bigint,
  'delete_followed_posts: the account''s deleted post is marked; one in a batch in flight is left to the batch');
RESET ROLE;
SELECT results_eq($$SELECT r.post_key, t.state::text, t.due_at IS NULL, x.reason IS NOT NULL FROM tweetkeeper.tweets t
                     JOIN tweetkeeper.post_refs r USING (tweet_id) LEFT JOIN tweetkeeper.tombstones x USING (tweet_id)
                    WHERE r.author = 'did:plc:streamstreamstreamstream' ORDER BY 1$$,
  $$VALUES ('3l6oveex3ia22', 'deleted', true, true), ('3l6oveex3ia23', 'scheduled', false, false)$$,
  '... deleted at once, with a tombstone; the leased one as it was');
SELECT throws_ok($$SELECT tweetkeeper.delete_followed_posts((SELECT follow_id FROM tweetkeeper.followed_accounts WHERE account_id = '12'),
  '{}')$$, '55000', NULL, 'deletes for an account this session does not hold: 55000');
SELECT count(*) AS held FROM tweetkeeper.followed_accounts WHERE lease_pid = pg_backend_pid() \gset
SELECT cmp_ok(:held::bigint, '>', 1::bigint, 'this session holds leases');
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.release_follows(), :held::bigint, 'release_follows: this session''s leases end, all of them');
RESET ROLE;
SELECT is((SELECT count(*) FROM tweetkeeper.followed_accounts WHERE lease_pid = pg_backend_pid()), 0::bigint,
  '... none left');

SELECT * FROM finish();
ROLLBACK;
