-- What a distributed install needs that one node can check: buckets (NULL on one node: not a byte
-- of a row), policy_delay() and after() (the next refresh with the policy and time given, as
-- routed statements compute it) agreeing with next_delay(), lease ids and their shard, the errors
-- of distribute() without Citus, and a claim routed to one shard (shard_buckets filled by hand,
-- as distribute() fills it on Citus: the same statements, with the buckets' predicate).
-- tests/citus/citus.sh runs all of it on a real cluster.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION tweetkeeper;
SELECT plan(30);

SELECT is((SELECT count(DISTINCT tweetkeeper.bucket_of(g)) FROM generate_series(1, 20000) g), 1024::bigint,
  'bucket_of spreads ids over all 1024 buckets');
SELECT ok((SELECT bool_and(tweetkeeper.bucket_of(g) BETWEEN 0 AND 1023) FROM generate_series(-5000, 5000) g),
  'bucket_of is in 0..1023, negative ids too');
-- Stable: the buckets rows on Citus already carry. Expected values worked out once from the
-- definition, hashint8(id) & 1023, with PostgreSQL's hash_uint32 (Jenkins' lookup3 final mix of
-- the id's low half XOR its high half, the high half complemented for negative ids) written out
-- in Python, not with PostgreSQL: a change of the hash or of the mask fails here.
SELECT is((SELECT string_agg(format('%s:%s', id, tweetkeeper.bucket_of(id)), ' ' ORDER BY n)
             FROM unnest(ARRAY[0, 1, 2, 3, 1023, 1024, -1, -2, 1595100000000000001, 1595100000000000002,
                               1852000000000000000, -4611686018427387904, -1234567890123,
                               9223372036854775807, -9223372036854775808]::bigint[]) WITH ORDINALITY AS x(id, n)),
  '0:175 1:838 2:246 3:919 1023:274 1024:890 -1:330 -2:641 1595100000000000001:498 1595100000000000002:590 '
  '1852000000000000000:570 -4611686018427387904:679 -1234567890123:214 9223372036854775807:951 -9223372036854775808:531',
  'bucket_of gives the buckets its definition gives (values worked out by hand, X and negative ids, the extremes)');

-- One node: inserts leave bucket NULL.
SELECT is(tweetkeeper.schedule_tweets(ARRAY(SELECT (((extract(epoch FROM now() - interval '1 hour') * 1000)::bigint
                                                   - 1288834974657) << 22) + g FROM generate_series(1, 300) g))
          + tweetkeeper.schedule_post('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l3qo2vutsw2b')::integer,
          301::bigint, '300 tweets and a Bluesky post scheduled');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE bucket IS NOT NULL), 0::bigint,
  'on one node no tweet stores a bucket');
SELECT is((SELECT count(*) FROM tweetkeeper.post_refs WHERE bucket IS NOT NULL), 0::bigint,
  'nor a post_refs row');
SELECT is(tweetkeeper.shard_count(), 0, 'shard_count() is 0 on one node');
SELECT is(tweetkeeper.new_lease(0) >> 48, 0::bigint, 'a lease on one node carries no shard');
SELECT is(tweetkeeper.lease_buckets(12345), NULL, 'and maps to no buckets');

-- policy_delay() is next_delay() with the policy and time given.
SELECT is((SELECT count(*) FROM generate_series(0, 40 * 24 * 60, 37) m
            WHERE tweetkeeper.policy_delay(now() - m * interval '1 minute', now(),
                    (SELECT array_agg(max_age ORDER BY max_age) FROM tweetkeeper.age_policy),
                    (SELECT array_agg(delay ORDER BY max_age) FROM tweetkeeper.age_policy))
                  IS DISTINCT FROM tweetkeeper.next_delay(now() - m * interval '1 minute')), 0::bigint,
  'policy_delay agrees with next_delay at every age up to 40 days');
SELECT is(tweetkeeper.policy_delay(now() - interval '3 minutes', now(), ARRAY['10 minutes', '1 day']::interval[],
                                   ARRAY['1 minute', '1 hour']::interval[]), interval '1 minute',
  'policy_delay reads the policy it is given, not the table');
SELECT is(tweetkeeper.policy_delay(now() - interval '2 days', now(), ARRAY['10 minutes', '1 day']::interval[],
                                   ARRAY['1 minute', '1 hour']::interval[]), NULL,
  'and is NULL past its last bucket');
SELECT throws_ok($$SELECT tweetkeeper.policy_delay(now(), now(), ARRAY['1 day']::interval[], ARRAY['1 hour', '1 day']::interval[])$$,
  '22023', NULL, 'max_ages and delays of different lengths are refused');
SELECT throws_ok($$SELECT tweetkeeper.policy_delay(now(), now(), ARRAY['1 day', NULL]::interval[], ARRAY['1 hour', '1 day']::interval[])$$,
  '22004', NULL, 'a NULL in the policy is refused');
SELECT throws_ok($$SELECT tweetkeeper.policy_delay(now(), now(), ARRAY['1 day', '1 day']::interval[], ARRAY['1 hour', '2 hours']::interval[])$$,
  '22023', NULL, 'a policy that makes no sense is refused as in age_policy');
SELECT is(tweetkeeper.refresh_delay_at(now() - interval '1 day', interval '5 minutes', now() + interval '1 hour', now(),
                                       ARRAY['30 days']::interval[], ARRAY['1 day']::interval[]), interval '5 minutes',
  'refresh_delay_at: a watch''s interval while it lasts');
SELECT is(tweetkeeper.after(timestamptz '2026-03-28 12:00+00', interval '1 day'), timestamptz '2026-03-29 12:00+00',
  'after() adds a day as 24 hours in UTC');

-- distribute() says what is missing.
SELECT throws_ok('SELECT tweetkeeper.distribute()', '55000', NULL, 'distribute() without Citus: 55000');
SELECT is(tweetkeeper.citus_worker_node(), false, 'without Citus this is no worker node');

-- A claim routed to one shard: two "shards" of 512 buckets each; each claim's tweets are all of
-- the shard its lease names, and two claims take the two shards in turn.
SET LOCAL tweetkeeper.buffer_ttl = '0s';
UPDATE tweetkeeper.tweets SET bucket = tweetkeeper.bucket_of(tweet_id);
INSERT INTO tweetkeeper.shard_buckets
SELECT s, ARRAY(SELECT b::smallint FROM generate_series(0, 1023) b WHERE b % 2 = s - 1) FROM generate_series(1, 2) s;
CREATE TEMP TABLE claims AS
SELECT c.lease_id, c.tweet_ids FROM tweetkeeper.claim_batch('shards', 50) c
UNION ALL SELECT c.lease_id, c.tweet_ids FROM tweetkeeper.claim_batch('shards', 50) c;
SELECT is((SELECT count(DISTINCT lease_id >> 48) FROM claims), 2::bigint, 'two claims take the two shards in turn');
SELECT ok((SELECT bool_and(tweetkeeper.bucket_of(t) % 2 = (c.lease_id >> 48) - 1)
             FROM claims c CROSS JOIN LATERAL unnest(c.tweet_ids) t),
  'every tweet of a claim is of the shard its lease names');
SELECT is((SELECT sum(tweetkeeper.complete_batch(c.lease_id,
             (SELECT jsonb_agg(jsonb_build_object('id', t, 'like_count', 1)) FROM unnest(c.tweet_ids) t)))
             FROM claims c), 100::bigint, 'their completions, routed by the lease, store all 100');

-- Bluesky's and Mastodon's claims routed alike: 40 statuses of a server that answered before.
SELECT is(tweetkeeper.schedule_posts(ARRAY(
            SELECT format('https://a.social/@u/%s', ((extract(epoch FROM now() - interval '1 hour') * 1000)::bigint << 16) + g)
              FROM generate_series(1, 40) g)), 40::bigint, '40 Mastodon statuses scheduled with shards mapped');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets t JOIN tweetkeeper.post_refs r USING (tweet_id)
            WHERE t.endpoint = 'mastodon:a.social' AND t.bucket = tweetkeeper.bucket_of(t.tweet_id)
              AND r.bucket = t.bucket), 40::bigint,
  'each stores its bucket, in tweets and post_refs');
INSERT INTO tweetkeeper.endpoints (endpoint, answered_at) VALUES ('mastodon:a.social', now());
CREATE TEMP TABLE post_claims AS
SELECT c.lease_id, c.tweet_ids, c.post_keys FROM tweetkeeper.claim_posts('shards', 20, 'mastodon') c
UNION ALL SELECT c.lease_id, c.tweet_ids, c.post_keys FROM tweetkeeper.claim_posts('shards', 20, 'mastodon') c;
SELECT is((SELECT count(DISTINCT lease_id >> 48) FROM post_claims WHERE lease_id IS NOT NULL), 2::bigint,
  'two Mastodon claims take the two shards in turn');
SELECT ok((SELECT bool_and(tweetkeeper.bucket_of(t.id) % 2 = (c.lease_id >> 48) - 1 AND r.post_key = c.post_keys[t.k])
             FROM post_claims c CROSS JOIN LATERAL unnest(c.tweet_ids) WITH ORDINALITY t(id, k)
             JOIN tweetkeeper.post_refs r ON r.tweet_id = t.id),
  'every status of a claim is of the shard its lease names, each with its own key');
SELECT is((SELECT sum(tweetkeeper.complete_batch(c.lease_id,
             (SELECT jsonb_agg(jsonb_build_object('id', t, 'like_count', 2)) FROM unnest(c.tweet_ids) t)))
             FROM post_claims c), (SELECT sum(cardinality(tweet_ids)) FROM post_claims),
  'their completions, routed by the lease, store every status claimed');

-- Going back (a coordinator's dump restored on one node): undistribute() empties the shard map
-- and lets a history partition made on the cluster (bucket NOT NULL, a column of its distributed
-- key) take one node's rows, whose bucket is NULL.
CREATE TABLE tweetkeeper.metric_history_back PARTITION OF tweetkeeper.metric_history_hot
  FOR VALUES FROM ('2001-01-01') TO ('2001-01-02');
ALTER TABLE tweetkeeper.metric_history_back ALTER COLUMN bucket SET NOT NULL;
SELECT is(tweetkeeper.undistribute(), 'one node again: 2 shards unmapped, 1 history partitions take rows without a bucket',
  'undistribute() says what it changed');
SELECT is(tweetkeeper.shard_count(), 0, 'no shard is mapped after it');
SELECT lives_ok($$INSERT INTO tweetkeeper.metric_history_hot (tweet_id, lease_id, observed_at, like_count)
                  VALUES (1, 0, '2001-01-01 12:00+00', 1)$$, 'the partition takes a row without a bucket');

SELECT * FROM finish();
ROLLBACK;
