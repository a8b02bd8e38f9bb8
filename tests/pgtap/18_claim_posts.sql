-- claim_posts(): Bluesky and Mastodon posts claimed per endpoint (at most 25 URIs, 20 statuses of
-- one server), their keys, the buffer TTL per endpoint, each endpoint's window and refusals; and
-- complete_batch()/release_batch() for them: counts, no billing, the creation time from the answer.
\ir lib/begin.sql
SELECT plan(78);

-- 30 Bluesky posts by DID, 3 by handle, 25 statuses on a.social and 5 on b.social, 2 X tweets;
-- all due an hour ago except b.social's, due 2 hours ago.
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3i%s', translate(lpad(g::text, 3, '0'), '0123456789', 'abcdefghij'))
    FROM generate_series(1, 30) g
  UNION ALL SELECT format('https://bsky.app/profile/alice.example/post/3l6oveex3ii2%s', g) FROM generate_series(2, 4) g
  UNION ALL SELECT format('https://a.social/@u/%s', 113284726341234500 + g) FROM generate_series(1, 25) g
  UNION ALL SELECT format('https://b.social/@u/%s', 113284726341234500 + g) FROM generate_series(1, 5) g
  UNION ALL SELECT 'https://x.com/a/status/' || (1460323737035677698 + g) FROM generate_series(1, 2) g));
UPDATE tweetkeeper.tweets SET due_at = now() - CASE WHEN endpoint = 'mastodon:b.social' THEN interval '2 hours'
                                                     ELSE interval '1 hour' END;
CREATE TEMP TABLE got AS SELECT 0 AS n, * FROM tweetkeeper.claim_posts('w', 25, 'bluesky') LIMIT 0;
CREATE FUNCTION pg_temp.claim(n int, size int, provider text, tokens text[] DEFAULT NULL) RETURNS void
  LANGUAGE sql AS $$ INSERT INTO got SELECT n, * FROM tweetkeeper.claim_posts('w', size, provider, tokens) $$;

SELECT pg_temp.claim(1, 25, 'bluesky');
SELECT is((SELECT cardinality(tweet_ids) FROM got WHERE n = 1), 25, 'a Bluesky batch: 25 posts');
SELECT is((SELECT endpoint FROM got WHERE n = 1), 'bluesky', 'of endpoint bluesky');
SELECT ok((SELECT bool_and(k = format('at://%s/app.bsky.feed.post/%s', r.author, r.post_key))
             FROM got, unnest(tweet_ids, post_keys) AS u(id, k) JOIN tweetkeeper.post_refs r ON r.tweet_id = u.id
            WHERE n = 1), 'post_keys: each id''s at:// URI with its DID, in the ids'' order');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets t, got WHERE n = 1 AND t.tweet_id = ANY (got.tweet_ids)
            AND t.lease_id = got.lease_id), 25::bigint, 'held by the lease');
SELECT is((SELECT b.endpoint || ' ' || b.provider || ' ' || b.billable FROM tweetkeeper.batches b JOIN got USING (lease_id) WHERE n = 1),
  'bluesky bluesky 0', 'the batch records its endpoint and provider, nothing billable');
SELECT pg_temp.claim(3, 25, 'bluesky');
SELECT is((SELECT endpoint || ' ' || cardinality(tweet_ids) FROM got WHERE n = 3), 'bluesky-handle 3',
  'bluesky never answered yet: no second batch of it while its first is in flight; the 3 posts known by handle instead, as a batch of their own');
-- (As if an earlier request had been answered: the rule has its own tests below.)
UPDATE tweetkeeper.endpoints SET answered_at = now() WHERE endpoint = 'bluesky';
SELECT pg_temp.claim(2, 25, 'bluesky');
SELECT is((SELECT cardinality(tweet_ids) FROM got WHERE n = 2), 5, 'the other 5, long past the buffer TTL');
SELECT is((SELECT array_agg(k ORDER BY k) FROM got, unnest(post_keys) k WHERE n = 3),
  ARRAY['at://alice.example/app.bsky.feed.post/3l6oveex3ii22', 'at://alice.example/app.bsky.feed.post/3l6oveex3ii23',
        'at://alice.example/app.bsky.feed.post/3l6oveex3ii24'], 'keyed by their handle''s at:// URI');
SELECT is(tweetkeeper.complete_handles((SELECT lease_id FROM got WHERE n = 3),
  '[{"handle":"alice.example","did":"did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"}]'), 3, 'complete_handles: 3 posts settled');
SELECT results_eq($$SELECT t.endpoint, r.author, t.due_at <= now(), t.lease_id IS NULL
                     FROM tweetkeeper.tweets t JOIN tweetkeeper.post_refs r USING (tweet_id)
                    WHERE r.post_key IN ('3l6oveex3ii22', '3l6oveex3ii23', '3l6oveex3ii24') ORDER BY r.post_key$$,
  $$VALUES ('bluesky', 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa', true, true), ('bluesky', 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa', true, true),
           ('bluesky', 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa', true, true)$$,
  'they are tracked under the DID from then on, due at once');
SELECT is((SELECT count(*) FROM tweetkeeper.post_refs WHERE author = 'alice.example'), 0::bigint, 'no row by handle is left');
SELECT is((SELECT did FROM tweetkeeper.bluesky_handles WHERE handle = 'alice.example'), 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa',
  'the handle is remembered');
SELECT ok(NOT tweetkeeper.schedule_post('https://bsky.app/profile/Alice.Example/post/3l6oveex3ii22'),
  'so the same post by its handle is known: nothing changes');
SELECT ok(tweetkeeper.schedule_post('https://bsky.app/profile/alice.example/post/3l6oveex3ii25'),
  'and a new post by that handle');
SELECT is((SELECT t.endpoint || ' ' || r.author FROM tweetkeeper.tweets t JOIN tweetkeeper.post_refs r USING (tweet_id)
            WHERE r.post_key = '3l6oveex3ii25'), 'bluesky did:plc:aaaaaaaaaaaaaaaaaaaaaaaa', 'is named by its DID at once');
SELECT tweetkeeper.schedule_post('https://bsky.app/profile/gone.example/post/3l6oveex3ii26');
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 hour' WHERE endpoint = 'bluesky-handle';
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 hour' WHERE endpoint = 'bluesky' AND lease_id IS NULL AND due_at IS NOT NULL;
SELECT pg_temp.claim(11, 25, 'bluesky');
SELECT is(tweetkeeper.complete_handles((SELECT lease_id FROM got WHERE n = 11),
  '[{"handle":"gone.example","problem":"Unable to resolve handle"}]'), 1, 'a handle that does not resolve');
SELECT results_eq($$SELECT t.state::text, t.problem_type, t.problem_detail FROM tweetkeeper.tweets t
                     JOIN tweetkeeper.post_refs r USING (tweet_id) WHERE r.author = 'gone.example'$$,
  $$VALUES ('missing', 'handle-unresolved', 'the handle gone.example does not resolve to a DID: Unable to resolve handle')$$,
  'makes its posts missing with a problem that says so');
-- (Out of the way of what follows.)
DELETE FROM tweetkeeper.tweets WHERE tweet_id IN (SELECT tweet_id FROM tweetkeeper.post_refs
  WHERE post_key IN ('3l6oveex3ii22', '3l6oveex3ii23', '3l6oveex3ii24', '3l6oveex3ii25', '3l6oveex3ii26'));

-- Mastodon: one server per batch, the one waiting longest first; status ids as keys.
SELECT pg_temp.claim(4, 20, 'mastodon');
SELECT is((SELECT endpoint || ' ' || cardinality(tweet_ids) FROM got WHERE n = 4), 'mastodon:b.social 5',
  'Mastodon: the server whose oldest status waited longest, its 5');
SELECT is((SELECT array_agg(k ORDER BY k) FROM got, unnest(post_keys) k WHERE n = 4),
  ARRAY(SELECT (113284726341234500 + g)::text FROM generate_series(1, 5) g), 'keys are the status ids');
SELECT pg_temp.claim(5, 20, 'mastodon');
SELECT is((SELECT endpoint || ' ' || cardinality(tweet_ids) FROM got WHERE n = 5), 'mastodon:a.social 20',
  'then a.social: 20, a Mastodon batch''s most');
SELECT is((SELECT array_agg(x ORDER BY x) FROM tweetkeeper.claim_batch('w', 100) c, unnest(c.tweet_ids) x),
  ARRAY[1460323737035677699, 1460323737035677700]::bigint[], 'X''s claim takes X''s tweets only');

-- The buffer TTL per endpoint: a server's few posts due just now wait.
UPDATE tweetkeeper.tweets SET due_at = now() WHERE endpoint = 'mastodon:a.social' AND lease_id IS NULL;
SELECT pg_temp.claim(6, 20, 'mastodon');
SELECT is((SELECT count(*) FROM got WHERE n = 6), 0::bigint, 'a partial batch due for less than the buffer TTL waits');

-- Completion: counts, history, no billing, the answer's creation time.
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM got WHERE n = 4),
  (SELECT jsonb_agg(jsonb_build_object('id', id, 'like_count', 7, 'retweet_count', 2, 'reply_count', 1,
                                       'created_at', (now() - interval '40 days')::text))
     FROM got, unnest(tweet_ids) id WHERE n = 4)), 5, 'complete: 5 statuses stored');
SELECT results_eq($$SELECT like_count, retweet_count, reply_count, quote_count, impression_count, billed_on, state::text
                     FROM tweetkeeper.tweets WHERE endpoint = 'mastodon:b.social' LIMIT 1$$,
  $$VALUES (7::bigint, 2::bigint, 1::bigint, NULL::bigint, NULL::bigint, NULL::date, 'done')$$,
  'counts stored, unreported ones NULL, nothing billed; made 40 days ago says the answer: done');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history h JOIN got ON h.lease_id = got.lease_id WHERE n = 4),
  5::bigint, 'history has the 5 observations');
SELECT is((SELECT billed || ' ' || tweets_read FROM tweetkeeper.batches b JOIN got USING (lease_id) WHERE n = 4),
  '0 5', 'the batch: 5 read, 0 billed');
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM got WHERE n = 2),
  (SELECT jsonb_agg(jsonb_build_object('id', id, 'like_count', 1, 'created_at', (now() - interval '2 days')::text))
     FROM got, unnest(tweet_ids) id WHERE n = 2)), 5, 'complete: 5 Bluesky posts');
SELECT ok((SELECT bool_and(t.delay = tweetkeeper.next_delay(now() - interval '2 days')
                           AND t.due_at = now() + t.delay AND t.created_at = now() - interval '2 days')
             FROM tweetkeeper.tweets t, got WHERE n = 2 AND t.tweet_id = ANY (got.tweet_ids)),
  'a creation time from the answer moves a post to its true age''s delay');
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM got WHERE n = 1),
  (SELECT jsonb_agg(jsonb_build_object('id', id, 'like_count', 1, 'created_at', (now() + interval '1 day')::text))
     FROM got, unnest(tweet_ids) id WHERE n = 1),
  '[]', jsonb_build_object('limit', 3000, 'remaining', 0, 'reset', extract(epoch FROM now() + interval '1 minute'))),
  25, 'complete: 25, with a creation time in the future and the endpoint''s window used up');
SELECT ok((SELECT bool_and(t.created_at < now()) FROM tweetkeeper.tweets t, got WHERE n = 1 AND t.tweet_id = ANY (got.tweet_ids)),
  'a creation time in the future is not taken');

-- Windows: what the answers said holds every worker back.
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 hour' WHERE endpoint = 'bluesky' AND state = 'scheduled';
SELECT pg_temp.claim(7, 25, 'bluesky');
SELECT is((SELECT lease_id IS NULL AND wait_reason = 'bluesky window used up' AND wait_until = now() + interval '5 seconds'
             FROM got WHERE n = 7), true,
  'a used-up window: no lease, a wait (at most the buffer TTL: other endpoints may come due) and why');
SELECT is((SELECT requests_per_window || ' ' || remaining FROM tweetkeeper.endpoints WHERE endpoint = 'bluesky'),
  '3000 0', 'endpoints keeps the window');
UPDATE tweetkeeper.endpoints SET window_reset_at = now() - interval '1 second' WHERE endpoint = 'bluesky';
SELECT pg_temp.claim(8, 25, 'bluesky');
SELECT is((SELECT cardinality(tweet_ids) FROM got WHERE n = 8), 5, 'after the reset, a batch again (the 5 still scheduled; the others are past 30 days: done)');
SELECT is((SELECT remaining FROM tweetkeeper.endpoints WHERE endpoint = 'bluesky'), 2999, 'one request of the new window counted');

-- A 401 from a server: no request until a worker with its token comes.
SELECT is(tweetkeeper.release_batch((SELECT lease_id FROM got WHERE n = 5), 'HTTP 401: This API requires an authenticated user',
                                    'rejected'), 20, 'release after a 401');
SELECT pg_temp.claim(9, 20, 'mastodon');
SELECT is((SELECT count(*) FROM got WHERE n = 9), 0::bigint, 'a.social needs a token now: nothing for a worker without one');
SELECT is((SELECT status || ': ' || status_reason FROM tweetkeeper.endpoints WHERE endpoint = 'mastodon:a.social'),
  'needs-token: HTTP 401: This API requires an authenticated user', 'endpoints says so');
SELECT pg_temp.claim(10, 20, 'mastodon', ARRAY['a.social']);
SELECT is((SELECT endpoint || ' ' || cardinality(tweet_ids) FROM got WHERE n = 10), 'mastodon:a.social 20',
  'a worker holding a token for it claims');
SELECT is((SELECT status FROM tweetkeeper.endpoints WHERE endpoint = 'mastodon:a.social'), 'needs-token',
  'and the server still needs one: workers without a token leave it alone');
SELECT results_eq($$SELECT endpoint, network, status, reason, released_batches FROM tweetkeeper.endpoint_stats
                     WHERE endpoint LIKE 'mastodon:%' ORDER BY endpoint$$,
  $$VALUES ('mastodon:a.social', 'mastodon', 'needs-token', 'HTTP 401: This API requires an authenticated user', 1::bigint),
           ('mastodon:b.social', 'mastodon', 'active', NULL, 0::bigint)$$,
  'endpoint_stats shows each server''s state, why, and its released batches');
SELECT is((SELECT remaining || ' of ' || requests_per_window || ', reset ' || (window_reset_at IS NULL)
             FROM tweetkeeper.endpoint_stats WHERE endpoint = 'bluesky'),
  '2999 of 3000, reset true', 'and the Bluesky window: one request counted since the reset, whose next end no answer gave yet');

-- An answer that says nothing new of the window leaves the row alone, not even locked: every
-- completion would otherwise queue on it, behind the others and every claim of the endpoint.
CREATE TEMP TABLE answer AS
  SELECT jsonb_build_object('limit', 3000, 'remaining', 2999,
                            'reset', extract(epoch FROM date_trunc('second', now()) + interval '5 minutes')) AS rate;
SELECT tweetkeeper_internal.record_endpoint_quota('bluesky', (SELECT rate FROM answer), NULL, NULL, true);
SELECT is((SELECT remaining || ' ' || (window_reset_at = date_trunc('second', now()) + interval '5 minutes')
             FROM tweetkeeper.endpoints WHERE endpoint = 'bluesky'), '2998 true',
  'an answer gives the window''s end, and what it has left less our request still in flight (batch 8)');
CREATE TEMP TABLE version AS SELECT ctid AS c FROM tweetkeeper.endpoints WHERE endpoint = 'bluesky';
SELECT tweetkeeper_internal.record_endpoint_quota('bluesky', (SELECT rate FROM answer), NULL, NULL, true);
SELECT tweetkeeper_internal.record_endpoint_quota('bluesky', (SELECT rate || '{"remaining": 3000}' FROM answer), NULL, NULL, true);
SELECT is((SELECT ctid FROM tweetkeeper.endpoints WHERE endpoint = 'bluesky'), (SELECT c FROM version),
  'the same answer again, or one counting fewer requests than we did, leaves the row as it was');
SELECT tweetkeeper_internal.record_endpoint_quota('bluesky', (SELECT rate || '{"remaining": 2990}' FROM answer), NULL, NULL, true);
SELECT is((SELECT remaining FROM tweetkeeper.endpoints WHERE endpoint = 'bluesky'), 2990, 'a stricter remaining is taken');

-- Lanes (endpoint_lanes): a claim that finds no lane holding requests counts on the endpoint's
-- row and moves a 64th of what is left into a lane; the claims after it count there, and the
-- row stays as it was. d.social's statuses are the oldest due: each claim below takes one.
SELECT tweetkeeper.schedule_posts(ARRAY(SELECT format('https://d.social/@u/%s', 113284726341234500 + g)
                                          FROM generate_series(1, 12) g));
UPDATE tweetkeeper.tweets SET due_at = now() - interval '10 hours' WHERE endpoint = 'mastodon:d.social';
INSERT INTO tweetkeeper.endpoints (endpoint, answered_at, requests_per_window, remaining, window_reset_at)
VALUES ('mastodon:d.social', now(), 10000, 6400, date_trunc('second', now()) + interval '5 minutes');
CREATE FUNCTION pg_temp.lanes(ep text) RETURNS text LANGUAGE sql AS $$
  SELECT (SELECT remaining FROM tweetkeeper.endpoints WHERE endpoint = ep) || ' | '
         || coalesce((SELECT string_agg(lane || ':' || granted || '/' || requests, ' ' ORDER BY lane)
                        FROM tweetkeeper.endpoint_lanes WHERE endpoint = ep AND (granted > 0 OR requests > 0)), '-') || ' | '
         || (SELECT remaining || '/' || requests FROM tweetkeeper.endpoint_stats WHERE endpoint = ep) $$;
SELECT pg_temp.claim(20, 1, 'mastodon');
SELECT is(pg_temp.lanes('mastodon:d.social'), '6300 | 0:99/0 | 6399/1',
  'the first claim counts on the row (6399 left) and moves 99 of them into lane 0; endpoint_stats adds them up');
SELECT is((SELECT valid_until FROM tweetkeeper.endpoint_lanes WHERE endpoint = 'mastodon:d.social' AND lane = 0),
  date_trunc('second', now()) + interval '5 minutes', 'of this window: they lapse at its end');
CREATE TEMP TABLE row_version AS SELECT ctid AS c FROM tweetkeeper.endpoints WHERE endpoint = 'mastodon:d.social';
SELECT pg_temp.claim(21, 1, 'mastodon');
SELECT pg_temp.claim(22, 1, 'mastodon');
SELECT is(pg_temp.lanes('mastodon:d.social'), '6300 | 0:97/2 | 6397/3', 'the next two count in the lane');
SELECT is((SELECT ctid FROM tweetkeeper.endpoints WHERE endpoint = 'mastodon:d.social'), (SELECT c FROM row_version),
  'and leave the endpoint''s row alone');
SELECT is((SELECT count(*) FROM got WHERE n IN (20, 21, 22) AND endpoint = 'mastodon:d.social'), 3::bigint,
  '(three batches of d.social)');
SELECT tweetkeeper_internal.record_endpoint_quota('mastodon:d.social', jsonb_build_object('limit', 10000, 'remaining', 6397,
  'reset', extract(epoch FROM date_trunc('second', now()) + interval '5 minutes')), NULL, NULL, true);
SELECT is(pg_temp.lanes('mastodon:d.social'), '6300 | 0:97/2 | 6397/3',
  'an answer that counts as we do (row and lanes together) changes nothing');
SELECT tweetkeeper_internal.record_endpoint_quota('mastodon:d.social', jsonb_build_object('limit', 10000, 'remaining', 6350,
  'reset', extract(epoch FROM date_trunc('second', now()) + interval '5 minutes')), NULL, NULL, true);
SELECT is(pg_temp.lanes('mastodon:d.social'), '6350 | 0:0/2 | 6350/3',
  'a stricter one takes the lane''s requests back: 6350 left, all on the row');
SELECT pg_temp.claim(23, 1, 'mastodon');
UPDATE tweetkeeper.endpoint_lanes SET valid_until = now() - interval '1 second' WHERE endpoint = 'mastodon:d.social' AND lane = 0;
SELECT pg_temp.claim(24, 1, 'mastodon');
SELECT is(pg_temp.lanes('mastodon:d.social'), '6152 | 0:97/2 | 6249/5',
  'requests of a lapsed window are not counted (as if lane 0''s were given as the window ended): the claim goes to the row, and the lane gets a share of this window');
SELECT is(tweetkeeper.release_batch((SELECT lease_id FROM got WHERE n = 24), 'HTTP 429: Too Many Requests', 'rate-limited'), 1,
  'a 429');
SELECT is(pg_temp.lanes('mastodon:d.social'), '0 | 0:0/2 | 0/5', 'takes every lane''s requests back');
SELECT pg_temp.claim(25, 1, 'mastodon');
SELECT is((SELECT count(*) FROM got WHERE n = 25 AND lease_id IS NOT NULL AND endpoint = 'mastodon:d.social'), 0::bigint,
  'and no claim goes to the server until its wait is over');
-- A window with 3 requests left gives 3 claims, whatever path each takes.
UPDATE tweetkeeper.endpoints SET remaining = 3, status = 'active', status_until = NULL WHERE endpoint = 'mastodon:d.social';
SELECT pg_temp.claim(26, 1, 'mastodon');
SELECT pg_temp.claim(27, 1, 'mastodon');
SELECT pg_temp.claim(28, 1, 'mastodon');
SELECT pg_temp.claim(29, 1, 'mastodon');
SELECT is((SELECT string_agg(coalesce(endpoint, split_part(wait_reason, ',', 1)), ', ' ORDER BY n) FROM got WHERE n BETWEEN 26 AND 29),
  'mastodon:d.social, mastodon:d.social, mastodon:d.social, mastodon:d.social window used up',
  'a window of 3 requests: 3 batches (row, lane, row), then it is used up');
SELECT is(pg_temp.lanes('mastodon:d.social'), '0 | 0:0/3 | 0/8', 'and nothing is left anywhere');
-- An answer of a later window than ours (the server's window turned while our requests were out)
-- speaks of the window our requests now go to: it becomes ours, with what it has left less our
-- requests still in flight, which it may not have counted yet, as for X's credentials
-- (06_credentials.sql, tests/integration/windows.sh); the lanes' requests of the old window lapse.
SELECT is((SELECT count(*) FROM tweetkeeper.batches WHERE endpoint = 'mastodon:d.social' AND outcome IS NULL), 7::bigint,
  '(7 batches of d.social in flight)');
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM got WHERE n = 28), '[]', '[]',
  jsonb_build_object('limit', 10000, 'remaining', 9990,
                     'reset', extract(epoch FROM date_trunc('second', now()) + interval '10 minutes'))), 0,
  'one of them answered by the server''s next window');
SELECT is(pg_temp.lanes('mastodon:d.social') || ' | ' || (SELECT window_reset_at - date_trunc('second', now())
                                                          FROM tweetkeeper.endpoints WHERE endpoint = 'mastodon:d.social'),
  '9984 | 0:0/3 | 9984/8 | 00:10:00', 'that window is ours: its reset, its 9990 left less our 6 requests still in flight');
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 day' WHERE endpoint = 'mastodon:d.social';

-- A server never answered is asked once at a time until it answers: concurrent first requests
-- would each be refused alike (a 401, an old server's 404).
SELECT tweetkeeper.schedule_posts(ARRAY(SELECT format('https://c.social/@u/%s', 113284726341234500 + g)
                                          FROM generate_series(1, 65) g));
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 hour' WHERE endpoint = 'mastodon:c.social';
SELECT pg_temp.claim(13, 20, 'mastodon');
SELECT is((SELECT endpoint || ' ' || cardinality(tweet_ids) FROM got WHERE n = 13), 'mastodon:c.social 20',
  'a new server''s first batch');
SELECT pg_temp.claim(14, 20, 'mastodon');
SELECT is((SELECT count(*) FROM got WHERE n = 14), 0::bigint, 'no second batch of it while the first is in flight');
SELECT is(tweetkeeper.release_batch((SELECT lease_id FROM got WHERE n = 13), 'Could not connect to server'), 20,
  'the request got no answer: released');
SELECT is((SELECT answered_at FROM tweetkeeper.endpoints WHERE endpoint = 'mastodon:c.social'), NULL,
  'which says nothing of the server');
SELECT pg_temp.claim(15, 20, 'mastodon');
SELECT pg_temp.claim(16, 20, 'mastodon');
SELECT is((SELECT string_agg(endpoint || ' ' || cardinality(tweet_ids), ', ') FROM got WHERE n IN (15, 16)),
  'mastodon:c.social 20', 'so it is probed again, still once at a time');
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM got WHERE n = 15),
  (SELECT jsonb_agg(jsonb_build_object('id', id, 'like_count', 1)) FROM got, unnest(tweet_ids) id WHERE n = 15)),
  20, 'its first answer');
SELECT is((SELECT answered_at FROM tweetkeeper.endpoints WHERE endpoint = 'mastodon:c.social'), now(),
  'is recorded');
SELECT pg_temp.claim(17, 20, 'mastodon');
SELECT pg_temp.claim(18, 20, 'mastodon');
SELECT is((SELECT string_agg(endpoint || ' ' || cardinality(tweet_ids), ', ' ORDER BY n) FROM got WHERE n IN (17, 18)),
  'mastodon:c.social 20, mastodon:c.social 20', 'and from then on its batches go side by side');

-- A key the API refused outright (the worker took it out of the batch: provider/refusals.hpp).
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM got WHERE n = 17),
  (SELECT jsonb_agg(jsonb_build_object('id', id, 'like_count', 1)) FROM got, unnest(tweet_ids[2:]) id WHERE n = 17),
  (SELECT jsonb_build_array(jsonb_build_object('id', tweet_ids[1], 'type', 'invalid-key',
                                               'detail', 'the API refused it: HTTP 400')) FROM got WHERE n = 17)),
  20, 'a key the API refused comes back as a problem, beside the others'' answers');
SELECT results_eq($$SELECT t.state::text, t.problem_type, t.due_at - now(), t.delay, t.update_count
                     FROM tweetkeeper.tweets t, got WHERE n = 17 AND t.tweet_id = got.tweet_ids[1]$$,
  $$SELECT 'missing', 'invalid-key', s.unavailable_recheck, s.unavailable_recheck, 0 FROM tweetkeeper.settings() s$$,
  'it is missing, asked again only as rarely as a hidden post');

-- Stats by network: X's rows first, then each network with posts; the counts are the tweets'.
SELECT results_eq($$SELECT network, state::text, tweets, due_now FROM tweetkeeper.queue_stats$$,
  $$SELECT n, s::text,
           (SELECT count(*) FROM tweetkeeper.tweets t
             WHERE t.state = s AND CASE WHEN t.endpoint IS NULL THEN 'x' WHEN t.endpoint LIKE 'mastodon:%' THEN 'mastodon' ELSE 'bluesky' END = n),
           (SELECT count(*) FROM tweetkeeper.tweets t
             WHERE t.state = s AND t.due_at <= now() AND CASE WHEN t.endpoint IS NULL THEN 'x' WHEN t.endpoint LIKE 'mastodon:%' THEN 'mastodon' ELSE 'bluesky' END = n)
      FROM unnest(ARRAY['x', 'bluesky', 'mastodon']) WITH ORDINALITY AS a(n, k),
           unnest(enum_range(NULL::tweetkeeper.tweet_state)) WITH ORDINALITY AS e(s, o) ORDER BY k, o$$,
  'queue_stats: a row per network and state, X''s first, each counting its own network''s posts');
SELECT ok((SELECT count(*) FILTER (WHERE network = 'mastodon') > 0 AND count(*) FILTER (WHERE network = 'bluesky') > 0
             FROM tweetkeeper.tweets t, LATERAL (SELECT CASE WHEN t.endpoint IS NULL THEN 'x' WHEN t.endpoint LIKE 'mastodon:%'
                                                             THEN 'mastodon' ELSE 'bluesky' END AS network) x
            WHERE t.state = 'scheduled'), '(with scheduled posts of both networks to count)');
SELECT results_eq($$SELECT network, batches, full_batches FROM tweetkeeper.batch_stats WHERE window_name = 'last hour'$$,
  $$SELECT n, (SELECT count(*) FROM tweetkeeper.batches b WHERE coalesce(b.provider, 'x') LIKE n || '%'),
              (SELECT count(*) FROM tweetkeeper.batches b WHERE coalesce(b.provider, 'x') LIKE n || '%'
                  AND b.size = CASE n WHEN 'x' THEN 100 WHEN 'bluesky' THEN 25 ELSE 20 END)
      FROM unnest(ARRAY['x', 'bluesky', 'mastodon']) WITH ORDINALITY AS a(n, k) ORDER BY k$$,
  'batch_stats: a row per network, whose full batches are its own most (100, 25, 20)');
SELECT ok((SELECT full_batches > 0 FROM tweetkeeper.batch_stats WHERE window_name = 'last hour' AND network = 'bluesky'),
  '(with full Bluesky batches to count)');

-- Refusals.
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_posts('w', 26, 'bluesky')$$, '22023',
  'max_size must be between 1 and 25 for bluesky, got 26', 'more than 25 URIs');
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_posts('w', 21, 'mastodon')$$, '22023',
  'max_size must be between 1 and 20 for mastodon, got 21', 'more than 20 statuses');
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_posts('w', 20, 'x-v2')$$, '22023',
  'provider must be bluesky or mastodon, got x-v2', 'X is claim_batch''s');
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_batch('w', 20, 'bluesky')$$, '22023',
  'provider must be x-v2 or x-v1.1, got bluesky', 'and claim_batch stays X''s');

SELECT * FROM finish();
ROLLBACK;
