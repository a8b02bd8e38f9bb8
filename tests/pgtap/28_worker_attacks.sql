-- What the worker role can call acts only on what its own lease holds: each attack below, made as
-- tweetkeeper_worker, once succeeded (issue 49) and is now refused or changes nothing. Another
-- live session is played by the autovacuum or logical replication launcher, as in 23_leases.
\ir lib/begin.sql
SELECT plan(28);

SET LOCAL tweetkeeper.buffer_ttl = 0;
SET LOCAL tweetkeeper.spending = 'burst';
SELECT tweetkeeper.add_credential('mine', 450, interval '15 minutes');
SELECT tweetkeeper.add_credential('victim', 450, interval '15 minutes');
CREATE TEMP VIEW other_session AS
  SELECT pid, backend_start FROM pg_stat_activity
   WHERE backend_type IN ('autovacuum launcher', 'logical replication launcher') ORDER BY pid LIMIT 1;
GRANT SELECT ON other_session TO PUBLIC;
CREATE TEMP TABLE held (follow_id bigint, network text, handle text);
GRANT ALL ON held TO PUBLIC;

-- The worker's own accounts (X: attacker, resolving; Mastodon: ann, resolved) and victims' accounts that
-- another live session leases.
SELECT tweetkeeper.follow_accounts(ARRAY['https://x.com/attacker', 'https://x.com/victim', 'https://x.com/victim_new',
                                         'https://m.example/@ann', 'https://bsky.app/profile/victim.example']);
UPDATE tweetkeeper.followed_accounts SET account_id = '999', status = 'following' WHERE handle = 'victim';
UPDATE tweetkeeper.followed_accounts SET account_id = '109000000000000001', status = 'following' WHERE handle = 'ann';
UPDATE tweetkeeper.followed_accounts f SET lease_owner = 'theirs', lease_pid = o.pid, lease_started = o.backend_start,
       lease_until = now() + interval '1 hour'
  FROM other_session o WHERE f.handle IN ('victim', 'victim_new', 'victim.example');
CREATE TEMP TABLE follows_before AS SELECT * FROM tweetkeeper.followed_accounts WHERE lease_owner = 'theirs';

SET LOCAL ROLE tweetkeeper_worker;
INSERT INTO held SELECT follow_id, 'x', handle FROM tweetkeeper.claim_follows('w', 'x', 10, '1 hour', false, 'mine');
INSERT INTO held SELECT follow_id, 'mastodon', handle FROM tweetkeeper.claim_follows('w', 'mastodon', 10, '1 hour', false);
RESET ROLE;
SELECT is((SELECT string_agg(handle, ' ' ORDER BY handle) FROM held), 'ann attacker', 'the worker leases its own two accounts');

-- Credentials: only the lease's one, and a page of posts at most.
SET LOCAL ROLE tweetkeeper_worker;
SELECT throws_ok(format($$SELECT tweetkeeper.record_follow_read(%s, 'victim', '{}', 'rejected')$$,
                        (SELECT follow_id FROM held WHERE handle = 'attacker')),
                 '42501', NULL, 'a refusal reported for a credential the lease was not taken with: 42501');
SELECT throws_ok(format($$SELECT tweetkeeper.record_follow_read(%s, 'victim', ARRAY[1,2,3]::bigint[])$$,
                        (SELECT follow_id FROM held WHERE handle = 'attacker')),
                 '42501', NULL, '... and reads billed to it: 42501');
SELECT throws_ok(format($$SELECT tweetkeeper.record_follow_read(%s, 'mine', ARRAY(SELECT g FROM generate_series(1, 10000000) g))$$,
                        (SELECT follow_id FROM held WHERE handle = 'attacker')),
                 '54000', NULL, 'ten million fake ids billed to its own credential: 54000 (a page is 100 posts)');
RESET ROLE;
SELECT results_eq($$SELECT name, status::text, month_used FROM tweetkeeper.credentials ORDER BY name$$,
  $$VALUES ('mine', 'active', 0::bigint), ('victim', 'active', 0::bigint)$$, 'both credentials are as they were');

-- A rejection the worker may report (its own credential) ends after tweetkeeper.rejected_recheck.
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.record_follow_read((SELECT follow_id FROM held WHERE handle = 'attacker'), 'mine', '{}', 'rejected', '401'),
          0, 'its own credential rejected');
RESET ROLE;
SELECT is((SELECT until - now() FROM tweetkeeper.credential_stats WHERE name = 'mine'), interval '1 hour',
  'credential_stats says until when: tweetkeeper.rejected_recheck (an hour) from now');
SELECT tweetkeeper.schedule_tweet(2000 + g, now() - interval '2 hours') FROM generate_series(1, 2) g;
SELECT is((SELECT count(*) FROM tweetkeeper.claim_batch('w', 2, 'x-v2', ARRAY['mine']) WHERE lease_id IS NOT NULL), 0::bigint,
  'meanwhile no claim uses it');
UPDATE tweetkeeper.credentials SET status_until = now() - interval '1 second' WHERE name = 'mine';
SELECT is((SELECT credential FROM tweetkeeper.claim_batch('w', 2, 'x-v2', ARRAY['mine']) WHERE lease_id IS NOT NULL), 'mine',
  'once it has passed, the credential is tried again');
SELECT is((SELECT status FROM tweetkeeper.credentials WHERE name = 'mine'), 'active', '... and active');

-- resolve_follow(): another session's rows are left alone.
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.resolve_follow((SELECT follow_id FROM held WHERE handle = 'attacker'), '999', 'attacker', 'private'),
          false, 'claiming to be the victim''s account: the worker''s own row goes as a duplicate');
RESET ROLE;
SELECT set_eq($$SELECT * FROM tweetkeeper.followed_accounts WHERE lease_owner = 'theirs'$$, $$SELECT * FROM follows_before$$,
  '... and the victim''s rows are as they were (not private for a week)');
SELECT tweetkeeper.follow('https://x.com/attacker');
SET LOCAL ROLE tweetkeeper_worker;
DELETE FROM held WHERE handle = 'attacker';
INSERT INTO held SELECT follow_id, 'x', handle FROM tweetkeeper.claim_follows('w', 'x', 10, '1 hour', false, 'mine');
SELECT is(tweetkeeper.resolve_follow((SELECT follow_id FROM held WHERE handle = 'attacker'), '555', 'victim_new', 'following'),
          true, 'an answer that names a handle another session''s row holds');
RESET ROLE;
SELECT set_eq($$SELECT * FROM tweetkeeper.followed_accounts WHERE lease_owner = 'theirs'$$, $$SELECT * FROM follows_before$$,
  '... takes it from no one: the victim''s unresolved follow stays, with its handle');
SELECT is((SELECT handle FROM tweetkeeper.followed_accounts WHERE account_id = '555'), 'attacker',
  '... and the worker''s row keeps its own');

-- delete_followed_posts(): only the account's own posts.
SELECT tweetkeeper.schedule_posts(ARRAY['https://m.example/@bob/113000000000000003', 'https://m.example/@ann/113000000000000004']);
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.delete_followed_posts((SELECT follow_id FROM held WHERE handle = 'ann'),
            ARRAY['https://m.example/@bob/113000000000000003']), 0::bigint,
          'a Mastodon follower marks no post of another account of its server deleted');
SELECT is(tweetkeeper.delete_followed_posts((SELECT follow_id FROM held WHERE handle = 'ann'),
            ARRAY['https://m.example/@ann/113000000000000004']), 1::bigint, '... its account''s own, yes');
RESET ROLE;
SELECT results_eq($$SELECT author, state::text FROM tweetkeeper.posts WHERE network = 'mastodon' ORDER BY author$$,
  $$VALUES ('ann', 'deleted'), ('bob', 'scheduled')$$, 'bob''s post is still scheduled');

-- follow_shares(): reads other sessions' rows, so it tells counts only and changes nothing.
SELECT is(pg_get_function_result('tweetkeeper.follow_shares(text, text)'::regprocedure), 'TABLE(host text, accounts bigint)',
  'follow_shares() returns a count per server, no account, handle, follower or lease');
SELECT is((SELECT provolatile FROM pg_proc WHERE oid = 'tweetkeeper.follow_shares(text, text)'::regprocedure), 's'::"char",
  '... and is STABLE: it writes nothing');
SET LOCAL ROLE tweetkeeper_worker;
SELECT results_eq($$SELECT host, accounts FROM tweetkeeper.follow_shares('mastodon')$$, $$VALUES ('m.example', 1::bigint)$$,
  'a Mastodon follower learns how many of a server''s accounts the followers hold');
-- claim_follows()'s test of whether a window's accounts may be taken takes a lock: not the worker's to call.
SELECT throws_ok($$SELECT tweetkeeper_internal.follow_window_open('mastodon', 'm.example', NULL, true)$$, '42501', NULL,
  'the worker may not call claim_follows()''s window test (it takes the window''s claim lock)');
RESET ROLE;

-- complete_handles(): only the handles of the batch's posts.
SELECT tweetkeeper.schedule_post('https://bsky.app/profile/alice.example/post/3l6oveex3ii2d');
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(tweetkeeper.complete_handles((SELECT lease_id FROM tweetkeeper.claim_posts('w', 25, 'bluesky') WHERE lease_id IS NOT NULL),
            '[{"handle": "alice.example", "did": "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"},
              {"handle": "victim.example", "did": "did:plc:evilevilevilevilevilevil"}]'), 1,
          'a batch of alice.example''s post resolved, with a second pair slipped in');
RESET ROLE;
SELECT results_eq($$SELECT handle, did FROM tweetkeeper.bluesky_handles ORDER BY handle$$,
  $$VALUES ('alice.example', 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa')$$, 'only the batch''s handle is stored');

-- A server that asked for a token: asked again without one after tweetkeeper.rejected_recheck.
SELECT tweetkeeper.schedule_post('https://locked.example/@carol/113000000000000005');
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 day' WHERE endpoint = 'mastodon:m.example' AND state = 'scheduled';  -- (only locked.example's is due)
SET LOCAL ROLE tweetkeeper_worker;
SELECT ok(tweetkeeper.release_batch((SELECT lease_id FROM tweetkeeper.claim_posts('w', 20, 'mastodon') WHERE endpoint = 'mastodon:locked.example'),
            'HTTP 401', 'rejected') = 1, 'a Mastodon batch released: the server wants a token');
SELECT is((SELECT count(*) FROM tweetkeeper.claim_posts('w', 20, 'mastodon') WHERE endpoint = 'mastodon:locked.example'), 0::bigint,
  'a worker without its token claims none of its statuses meanwhile');
RESET ROLE;
SELECT is((SELECT until - now() FROM tweetkeeper.endpoint_stats WHERE endpoint = 'mastodon:locked.example'), interval '1 hour',
  'endpoint_stats says until when');
UPDATE tweetkeeper.endpoints SET status_until = now() - interval '1 second' WHERE endpoint = 'mastodon:locked.example';
SET LOCAL ROLE tweetkeeper_worker;
SELECT is((SELECT count(*) FROM tweetkeeper.claim_posts('w', 20, 'mastodon') WHERE endpoint = 'mastodon:locked.example'), 1::bigint,
  'once it has passed, one is claimed again without a token');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
