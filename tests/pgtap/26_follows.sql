-- Following accounts: parse_profile_url(), follow(), follow_accounts(), unfollow() and the
-- follows view; who may follow; bad input refused with its SQLSTATE and nothing changed.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION tweetkeeper;
SELECT plan(36);

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
  ('@Gargron@mastodon.social', 'mastodon | mastodon.social | Gargron | - | https://mastodon.social/@Gargron')
) AS t(url, expected);
SELECT throws_ok($$SELECT tweetkeeper.parse_profile_url('https://x.com/jack/status/20')$$, '22023',
  'not a profile URL "https://x.com/jack/status/20": an X profile URL is https://x.com/<user> (a user name of 1 to 15 letters, digits and _) or https://x.com/i/user/<id>',
  'a post URL is no profile URL: 22023, the value quoted and the forms named');

-- follow(): new once, whatever the spelling.
SELECT is(tweetkeeper.follow('https://x.com/Jack'), true, 'following an account is new');
SELECT is(tweetkeeper.follow('twitter.com/jack/media'), false, 'the same account in another spelling is not');
SELECT is(tweetkeeper.follow('https://bsky.app/profile/alice.bsky.social'), true, 'a Bluesky handle');
SELECT is(tweetkeeper.follow('https://mastodon.social/@Gargron'), true, 'a Mastodon account');
SELECT is(tweetkeeper.follow('https://hachyderm.io/@Gargron@mastodon.social'), false,
  'the same Mastodon account seen from another server is not new');
SELECT is(tweetkeeper.follow('https://fosstodon.org/@Gargron'), true, 'the same name on another server is another account');
SELECT results_eq(
  $$SELECT network, account, handle, host, url, status, behind IS NULL, posts_found FROM tweetkeeper.follows ORDER BY url$$,
  $$VALUES ('bluesky', NULL::text, 'alice.bsky.social', NULL::text, 'https://bsky.app/profile/alice.bsky.social', 'resolving', true, 0::bigint),
           ('mastodon', NULL, 'Gargron', 'fosstodon.org', 'https://fosstodon.org/@Gargron', 'resolving', true, 0),
           ('mastodon', NULL, 'Gargron', 'mastodon.social', 'https://mastodon.social/@Gargron', 'resolving', true, 0),
           ('x', NULL, 'jack', NULL, 'https://x.com/jack', 'resolving', true, 0)$$,
  'follows: each account once, resolving, not yet behind');

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
  'urls[2]: profile_url must not be NULL', 'a NULL URL: 22004 naming its position');
SELECT is((SELECT count(*) FROM tweetkeeper.followed_accounts WHERE handle = 'c'), 0::bigint,
  'nothing of a refused call is followed');
SELECT throws_ok($$SELECT tweetkeeper.follow_accounts(NULL)$$, '22004', 'urls must not be NULL', 'a NULL array');
SET LOCAL tweetkeeper.max_ids_per_call = 2;
SELECT throws_ok($$SELECT tweetkeeper.follow_accounts(ARRAY['x.com/c', 'x.com/d', 'x.com/e'])$$, '54000', NULL,
  'more URLs than max_ids_per_call: 54000');
RESET tweetkeeper.max_ids_per_call;
SELECT throws_ok($$SELECT tweetkeeper.follow(NULL)$$, '22004', 'profile_url must not be NULL', 'follow(NULL)');

-- unfollow(): by either name; the posts stay.
SELECT tweetkeeper.schedule_post('https://mastodon.social/@Gargron/113310863287398209');
SELECT is(tweetkeeper.unfollow('@gargron@Mastodon.Social'), false, 'a Mastodon user name is matched as written');
SELECT is(tweetkeeper.unfollow('@Gargron@Mastodon.Social'), true, 'unfollow: it was followed');
SELECT is(tweetkeeper.unfollow('https://mastodon.social/@Gargron'), false, 'unfollow again: it was not');
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

SELECT * FROM finish();
ROLLBACK;
