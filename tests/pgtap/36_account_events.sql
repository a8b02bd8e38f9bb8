-- Bluesky account events (Jetstream's `account` kind): a deleted, taken down, suspended or
-- deactivated account's tracked posts are gone at once, without a read, and come back when the
-- account is active again; through a follower's lease (store_account_status()) and the stream
-- reader's (store_stream_accounts()). The attacks a worker-only role could make on them first:
-- each once succeeded and is refused or changes nothing.
\ir lib/begin.sql
SELECT plan(24);

CREATE TEMP VIEW other_session AS
  SELECT pid, backend_start FROM pg_stat_activity
   WHERE backend_type IN ('autovacuum launcher', 'logical replication launcher') ORDER BY pid LIMIT 1;
GRANT SELECT ON other_session TO PUBLIC;

-- Two posts of ann (did:plc:aaa...), one of bob (did:plc:bbb...), with payloads; a Mastodon status
-- whose author is spelled like ann's DID; an X post.
SELECT tweetkeeper.schedule_posts(ARRAY[
  'https://bsky.app/profile/did:plc:aaaaaaaaaaaaaaaaaaaaaaaa/post/3l6oveex3ii2a',
  'https://bsky.app/profile/did:plc:aaaaaaaaaaaaaaaaaaaaaaaa/post/3l6oveex3ii2b',
  'https://bsky.app/profile/did:plc:bbbbbbbbbbbbbbbbbbbbbbbb/post/3l6oveex3ii2c',
  'https://m.example/@ann/113000000000000004']);
SELECT tweetkeeper.schedule_tweet(1228393702244134912);
CREATE TEMP TABLE p AS
  SELECT CASE WHEN r.network = 'bluesky' THEN right(r.post_key, 1) ELSE 'm' END AS k, r.tweet_id AS id
    FROM tweetkeeper.post_refs r
  UNION ALL SELECT 'x', 1228393702244134912;
GRANT SELECT ON p TO PUBLIC;
-- (ann's first post done: past its last refresh, as most of an old collection is.)
UPDATE tweetkeeper.tweets SET state = 'done', due_at = NULL WHERE tweet_id = (SELECT id FROM p WHERE k = 'a');
INSERT INTO tweetkeeper.payloads (tweet_id, seen_at, lease_id, content_hash, payload)
  SELECT id, now(), 0, decode(md5(k), 'hex'), jsonb_build_object('text', 'post ' || k) FROM p;
CREATE FUNCTION pg_temp.states() RETURNS TABLE (k text, state text, problem_type text, payloads bigint)
  LANGUAGE sql AS $$
  SELECT p.k, t.state::text, t.problem_type, (SELECT count(*) FROM tweetkeeper.payloads x WHERE x.tweet_id = p.id)
    FROM p JOIN tweetkeeper.tweets t ON t.tweet_id = p.id ORDER BY p.k $$;
CREATE TEMP TABLE before AS SELECT * FROM pg_temp.states();

-- A follower of ann, and bob's follow leased by another live session.
SELECT tweetkeeper.follow_accounts(ARRAY['https://bsky.app/profile/did:plc:aaaaaaaaaaaaaaaaaaaaaaaa',
                                         'https://bsky.app/profile/did:plc:bbbbbbbbbbbbbbbbbbbbbbbb']);
UPDATE tweetkeeper.followed_accounts SET status = 'following';
UPDATE tweetkeeper.followed_accounts f SET lease_owner = 'theirs', lease_pid = o.pid, lease_started = o.backend_start,
       lease_until = now() + interval '1 hour'
  FROM other_session o WHERE f.account_id = 'did:plc:bbbbbbbbbbbbbbbbbbbbbbbb';
CREATE TEMP TABLE theirs AS SELECT follow_id FROM tweetkeeper.followed_accounts WHERE lease_owner = 'theirs';
GRANT SELECT ON theirs TO PUBLIC;
SET LOCAL ROLE tweetkeeper_worker;
CREATE TEMP TABLE held AS SELECT follow_id, account_id FROM tweetkeeper.claim_follows('f1', 'bluesky', 10, '1 minute', false);
RESET ROLE;
SELECT is((SELECT array_agg(account_id) FROM held), ARRAY['did:plc:aaaaaaaaaaaaaaaaaaaaaaaa'], 'the follower holds ann only');

-- Attacks, as the worker role.
SET LOCAL ROLE tweetkeeper_worker;
SELECT throws_ok($$SELECT tweetkeeper.store_account_status((SELECT follow_id FROM theirs), false, 'deleted')$$,
                 '55000', NULL, 'a follower cannot say an account another session follows was deleted');
SELECT throws_ok($$SELECT tweetkeeper.store_stream_accounts(ARRAY['did:plc:bbbbbbbbbbbbbbbbbbbbbbbb'], ARRAY[false], ARRAY['deleted'])$$,
                 '55000', NULL, 'nor can a worker without the stream''s lease');
RESET ROLE;
SELECT results_eq('SELECT * FROM pg_temp.states()', 'SELECT * FROM before', '... and no post changed');

-- The follower: ann's account deleted.
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.store_account_status((SELECT follow_id FROM held), false, 'deleted'), 2::bigint,
          'ann deleted her account: her two posts are gone');
RESET ROLE;
SELECT results_eq('SELECT * FROM pg_temp.states()',
  $$VALUES ('a', 'unavailable', 'account:deleted', 0::bigint), ('b', 'unavailable', 'account:deleted', 0::bigint),
           ('c', 'scheduled', NULL, 1::bigint), ('m', 'scheduled', NULL, 1::bigint), ('x', 'scheduled', NULL, 1::bigint)$$,
  '... her posts only (not the status of a Mastodon user named like her DID), payloads erased');
SELECT results_eq($$SELECT reason, payloads_erased FROM tweetkeeper.tombstones ORDER BY tweet_id$$,
  $$VALUES ('account:deleted', 1), ('account:deleted', 1)$$, '... with tombstones saying why');
SELECT is((SELECT array_agg(DISTINCT reason) FROM tweetkeeper.post_availability WHERE gone_since IS NOT NULL),
          ARRAY['account gone'], 'post_availability: account gone');
SELECT ok((SELECT bool_and(t.due_at BETWEEN now() + interval '6 days' AND now() + interval '8 days')
             FROM tweetkeeper.tweets t JOIN p ON p.id = t.tweet_id WHERE p.k IN ('a', 'b')),
          '... looked at again after unavailable_recheck (7 days)');
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.store_account_status((SELECT follow_id FROM held), false, 'deleted'), 0::bigint,
          'the same event again changes nothing');
SELECT is(tweetkeeper.store_account_status((SELECT follow_id FROM held), false, 'desynchronized'), 0::bigint,
          'a host''s state (desynchronized) changes nothing');
-- Its recheck read leaves the posts out (as getPosts does for a gone account): still the account's reason.
RESET ROLE;
SET LOCAL tweetkeeper.buffer_ttl = 0;
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE tweet_id IN (SELECT id FROM p WHERE k IN ('a', 'b'));
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 day' WHERE tweet_id IN (SELECT id FROM p WHERE k NOT IN ('a', 'b'));
CREATE TEMP TABLE b1 AS SELECT * FROM tweetkeeper.claim_posts('w', 25, 'bluesky');
SELECT is((SELECT cardinality(tweet_ids) FROM b1), 2, 'the recheck claims the two');
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM b1), '[]'::jsonb), 0, 'and the answer leaves both out');
SELECT results_eq($$SELECT k, state, problem_type FROM pg_temp.states() WHERE k IN ('a', 'b')$$,
  $$VALUES ('a', 'unavailable', 'account:deleted'), ('b', 'unavailable', 'account:deleted')$$,
  '... still gone with the account (not missing)');

-- Active again: both come back, due now.
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.store_account_status((SELECT follow_id FROM held), true), 2::bigint, 'ann is back');
RESET ROLE;
SELECT results_eq($$SELECT k, state FROM pg_temp.states() WHERE k IN ('a', 'b')$$,
  $$VALUES ('a', 'scheduled'), ('b', 'scheduled')$$, '... her posts with her, to be read');
SELECT ok((SELECT bool_and(t.due_at <= now()) FROM tweetkeeper.tweets t JOIN p ON p.id = t.tweet_id WHERE p.k IN ('a', 'b')),
          '... at once');
SELECT is((SELECT count(*) FROM tweetkeeper.post_availability WHERE gone_since IS NOT NULL), 0::bigint,
          'post_availability: available again');

-- The stream's reader: the whole network's events, in order; the last of a DID decides.
SET LOCAL tweetkeeper.bluesky_stream_counts = on;
SET LOCAL ROLE tweetkeeper_worker;
SELECT is((SELECT count(*) FROM tweetkeeper.stream_take('r')), 1::bigint, 'the reader takes the stream');
SELECT is(tweetkeeper.store_stream_accounts(
            ARRAY['did:plc:aaaaaaaaaaaaaaaaaaaaaaaa', 'did:plc:bbbbbbbbbbbbbbbbbbbbbbbb', 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa',
                  'did:plc:zzzzzzzzzzzzzzzzzzzzzzzz', 'ann'],
            ARRAY[false, false, true, false, false], ARRAY['takendown', 'suspended', NULL, 'deleted', 'deleted']),
          1::bigint, 'ann taken down then back, bob suspended, an account not tracked, a name that is no DID');
RESET ROLE;
SELECT results_eq('SELECT k, state, problem_type FROM pg_temp.states()',
  $$VALUES ('a', 'scheduled', 'account:deleted'), ('b', 'scheduled', 'account:deleted'), ('c', 'unavailable', 'account:suspended'),
           ('m', 'scheduled', NULL), ('x', 'scheduled', NULL)$$, '... bob''s post only');
SELECT is((SELECT reason FROM tweetkeeper.post_availability WHERE gone_since IS NOT NULL), 'suspended',
          'post_availability: suspended');
SELECT throws_ok($$SELECT tweetkeeper.store_stream_accounts(ARRAY['did:plc:a'], ARRAY[false, true], ARRAY['deleted'])$$,
                 '22023', NULL, 'arrays of different lengths: 22023');
SELECT throws_ok($$SELECT tweetkeeper.store_stream_accounts(NULL, ARRAY[false], ARRAY['deleted'])$$,
                 '22004', NULL, 'NULL: 22004');

SELECT * FROM finish();
ROLLBACK;
