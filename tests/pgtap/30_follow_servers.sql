-- A Mastodon server's rate window is one budget (and an X credential's), so one follower holds
-- all of its accounts: claim_follows() takes a server's free accounts whole or not at all, and
-- leaves those of a server another follower reads to that follower (issue 49: two followers that split a server
-- by chance each read with a part of its window; the one holding its busiest accounts got 4%
-- and fell 100 s behind). Another live session is played by a launcher, as in 23_leases.
\ir lib/begin.sql
SELECT plan(10);

CREATE TEMP VIEW other_session AS
  SELECT pid, backend_start FROM pg_stat_activity
   WHERE backend_type IN ('autovacuum launcher', 'logical replication launcher') ORDER BY pid LIMIT 1;
SELECT tweetkeeper.follow_accounts(ARRAY['@a@m1.test', '@b@m1.test', '@c@m1.test', '@d@m1.test',
                                         '@a@m2.test', '@b@m2.test', '@c@m2.test',
                                         '@a@m3.test', '@b@m3.test', '@c@m3.test', 'x.com/x1', 'x.com/x2']);
-- The other follower took m1.test when a was its only account there; b, c and d were followed since.
UPDATE tweetkeeper.followed_accounts f SET lease_owner = 'theirs', lease_pid = o.pid, lease_started = o.backend_start,
       lease_until = now() + interval '1 hour'
  FROM other_session o WHERE f.host = 'm1.test' AND f.handle = 'a';

SET LOCAL ROLE tweetkeeper_worker;
CREATE TEMP TABLE got AS SELECT host, handle FROM tweetkeeper.claim_follows('mine', 'mastodon', 4, '1 minute', false);
RESET ROLE;
SELECT is((SELECT count(*) FROM got WHERE host = 'm1.test'), 0::bigint,
  'the accounts of a server another follower reads are left to it: one window, one follower');
SELECT is((SELECT string_agg(DISTINCT host, ' ') FROM got), 'm2.test',
  'whole servers only, as many as max_accounts holds: m2.test''s three, not one of m3.test''s besides');
SET LOCAL ROLE tweetkeeper_worker;
SELECT is((SELECT string_agg(host || ' ' || handle, ', ' ORDER BY host, handle)
             FROM tweetkeeper.claim_follows('mine', 'mastodon', 10, '1 minute', false)),
          'm2.test a, m2.test b, m2.test c, m3.test a, m3.test b, m3.test c',
  'with room, its own server renewed and the next free one taken whole');
RESET ROLE;
SELECT is((SELECT count(*) FROM tweetkeeper.followed_accounts WHERE host = 'm1.test' AND lease_owner IS NULL), 3::bigint,
  '... m1.test''s new accounts still free, for the follower that reads m1.test');

-- A server's holder with no room for its new accounts: after a lease they go to another follower.
UPDATE tweetkeeper.followed_accounts SET since = now() - interval '2 minutes' WHERE host = 'm1.test' AND lease_owner IS NULL;
SET LOCAL ROLE tweetkeeper_worker;
SELECT is((SELECT count(*) FROM tweetkeeper.claim_follows('mine', 'mastodon', 10, '1 minute', false) WHERE host = 'm1.test'),
  3::bigint, 'accounts of another''s server left free for longer than a lease are taken');
-- A server larger than max_accounts: a follower holding nothing takes what it has room for.
SELECT is(tweetkeeper.release_follows(), 9::bigint, 'released');
SELECT is((SELECT count(*) FROM tweetkeeper.claim_follows('mine', 'mastodon', 2, '1 minute', false)), 2::bigint,
  'a server with more accounts than max_accounts: max_accounts of them');
RESET ROLE;
UPDATE tweetkeeper.followed_accounts SET poll_after = now() + interval '1 minute' WHERE lease_pid = pg_backend_pid();
SET LOCAL ROLE tweetkeeper_worker;
CREATE TEMP TABLE again AS SELECT follow_id, poll_after FROM tweetkeeper.claim_follows('mine', 'mastodon', 2, '1 minute', false);
RESET ROLE;
SELECT is((SELECT count(*) FROM again WHERE poll_after > now()), 2::bigint,
  '... the same ones at the next claim, though the server''s others are due sooner');
SET LOCAL ROLE tweetkeeper_worker;
RESET ROLE;

-- X: a window per credential. Another follower reads x1 with credential c1.
UPDATE tweetkeeper.followed_accounts f SET lease_owner = 'theirs', lease_pid = o.pid, lease_started = o.backend_start,
       lease_until = now() + interval '1 hour', lease_credential = 'c1'
  FROM other_session o WHERE f.handle = 'x1';
SET LOCAL ROLE tweetkeeper_worker;
SELECT is((SELECT count(*) FROM tweetkeeper.claim_follows('mine', 'x', 10, '1 minute', false, 'c1')), 0::bigint,
  'X: the accounts of a credential''s window another follower reads are left to it');
SELECT is((SELECT string_agg(handle, ' ') FROM tweetkeeper.claim_follows('mine', 'x', 10, '1 minute', false, 'c2')), 'x2',
  '... and taken by a follower with another credential, another window');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
