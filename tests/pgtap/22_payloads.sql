-- Payloads (tweetkeeper.payloads): none by default; first keeps a post's first answer; changed
-- keeps each answer whose content differs (not its counts, not the reader's state); deleted or
-- unavailable posts lose theirs (tweetkeeper.deleted_payloads = erase) and leave a tombstone; a
-- post seen again loses its tombstone; an edited X post links to its newest version, which is
-- tracked in its place; retention keeps each post's newest payload.
\ir lib/begin.sql
SELECT plan(51);
SET LOCAL tweetkeeper.buffer_ttl = 0;

SELECT tweetkeeper.schedule_tweet(5000 + g, now() - interval '2 hours') FROM generate_series(1, 4) g;
-- One round: every scheduled tweet due, one claim, one completion with these answers.
CREATE FUNCTION pg_temp.round(obs jsonb, probs jsonb DEFAULT '[]') RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  l bigint;
BEGIN
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE due_at IS NOT NULL AND lease_id IS NULL;
  SELECT lease_id INTO l FROM tweetkeeper.claim_batch('w', 100);
  RETURN tweetkeeper.complete_batch(l, obs, probs);
END $$;
-- An X answer for tweet id: its text, like count and author (name, followers).
CREATE FUNCTION pg_temp.x(id bigint, body text, likes integer, name text DEFAULT 'Ann', followers integer DEFAULT 10)
  RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'like_count', likes,
    'payload', jsonb_build_object('id', id::text, 'text', body, 'author_id', '77',
                                  'edit_history_tweet_ids', jsonb_build_array(id::text),
                                  'public_metrics', jsonb_build_object('like_count', likes)),
    'author', jsonb_build_object('id', '77', 'name', name, 'username', 'ann',
                                 'public_metrics', jsonb_build_object('followers_count', followers))) $$;
CREATE FUNCTION pg_temp.n(id bigint) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM tweetkeeper.payloads WHERE tweet_id = id $$;

SELECT is(current_setting('tweetkeeper.payloads'), 'none', 'payloads: none by default');
SELECT is(current_setting('tweetkeeper.deleted_payloads'), 'erase', 'deleted payloads: erased by default');
SELECT throws_ok($$SET tweetkeeper.payloads = 'all'$$, '22023', NULL, 'an unknown payloads setting is refused');
SELECT throws_ok($$SET tweetkeeper.deleted_payloads = 'archive'$$, '22023', NULL,
  'an unknown deleted_payloads setting is refused');
SELECT ok((SELECT bool_and(c.relname::text = ANY (ARRAY['payloads', 'tombstones', 'edits']))
             FROM pg_extension e, unnest(e.extconfig) AS x(oid) JOIN pg_class c ON c.oid = x.oid
            WHERE e.extname = 'tweetkeeper' AND c.relname IN ('payloads', 'tombstones', 'edits'))
          AND (SELECT count(*) FROM pg_extension e, unnest(e.extconfig) AS x(oid) JOIN pg_class c ON c.oid = x.oid
                WHERE e.extname = 'tweetkeeper' AND c.relname IN ('payloads', 'tombstones', 'edits')) = 3,
  'payloads, tombstones and edits are dumped by pg_dump');

-- none: the counts are stored, the payload is not.
SELECT is(pg_temp.round(jsonb_build_array(pg_temp.x(5001, 'hello', 1), pg_temp.x(5002, 'b', 1),
                                          pg_temp.x(5003, 'c', 1), pg_temp.x(5004, 'd', 1))), 4, 'none: the batch is stored');
SELECT is((SELECT count(*) FROM tweetkeeper.payloads), 0::bigint, 'none: no payload kept');
-- A claim hands the worker each tweet's last kept payload's hash: NULL when none has one.
CREATE FUNCTION pg_temp.claimed_hashes() RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  c record;
BEGIN
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE due_at IS NOT NULL AND lease_id IS NULL;
  SELECT * INTO c FROM tweetkeeper.claim_batch('w', 100);
  PERFORM tweetkeeper.release_batch(c.lease_id);
  RETURN CASE WHEN c.payload_hashes IS NOT NULL THEN
    ARRAY(SELECT format('%s %s', h.id, coalesce(h.hash, '-')) FROM unnest(c.tweet_ids, c.payload_hashes) AS h(id, hash)
           ORDER BY h.id) END;
END $$;
SELECT is(pg_temp.claimed_hashes(), NULL::text[], 'none: a claim''s payload_hashes is NULL');

-- first: the first answer only, whatever changes later.
SET LOCAL tweetkeeper.payloads = 'first';
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5001, 'hello', 2)));
SELECT is(pg_temp.n(5001), 1::bigint, 'first: the first answer is kept');
SELECT is((SELECT payload->>'text' || '/' || (author->>'name') FROM tweetkeeper.payloads WHERE tweet_id = 5001), 'hello/Ann',
  'as the API gave it: the tweet, and its author beside it');
SELECT is((SELECT content_hash FROM tweetkeeper.payloads WHERE tweet_id = 5001),
          decode(md5(tweetkeeper.payload_content(pg_temp.x(5001, 'hello', 2)->'payload', pg_temp.x(5001, 'hello', 2)->'author')::text), 'hex'),
  'with the hash of its content');
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5001, 'hello, edited', 3)));
SELECT is(pg_temp.n(5001), 1::bigint, 'first: a later, different answer is not kept');
SELECT is((SELECT payload_hash FROM tweetkeeper.tweets WHERE tweet_id = 5001),
          (SELECT content_hash FROM tweetkeeper.payloads WHERE tweet_id = 5001),
  'first: the tweet keeps the hash of the payload kept, not of the later answer');

-- changed: each answer whose content differs from the last one kept.
SET LOCAL tweetkeeper.payloads = 'changed';
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5001, 'hello', 50, 'Ann', 99)));
SELECT is(pg_temp.n(5001), 1::bigint, 'changed: new counts (the post''s and its author''s) are no new content');
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5001, 'hello, edited', 50)));
SELECT is(pg_temp.n(5001), 2::bigint, 'changed: a new text is kept');
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5001, 'hello, edited', 51, 'Ann B.')));
SELECT is(pg_temp.n(5001), 3::bigint, 'changed: the author''s new name is kept');
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5001, 'hello', 52, 'Ann B.')));
SELECT is(pg_temp.n(5001), 4::bigint, 'changed: back to an earlier content is a change too (compared with the last kept)');
SELECT is((SELECT array_agg(payload->>'text' ORDER BY lease_id) FROM tweetkeeper.payloads WHERE tweet_id = 5001),
  ARRAY['hello', 'hello, edited', 'hello, edited', 'hello'], 'each kept version is there, in order');
SELECT is((SELECT count(DISTINCT lease_id) FROM tweetkeeper.payloads WHERE tweet_id = 5001), 4::bigint,
  'each with the batch that saw it');
SELECT is(pg_temp.claimed_hashes(),
          ARRAY['5001 ' || (SELECT encode(content_hash, 'hex') FROM tweetkeeper.payloads WHERE tweet_id = 5001
                             ORDER BY lease_id DESC LIMIT 1), '5002 -', '5003 -', '5004 -'],
  'a claim''s payload_hashes: the last kept payload''s hash, in the order of tweet_ids, NULL for posts without');
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5001, 'hello', 53, 'Ann B.', 7)));
SELECT is(pg_temp.n(5001), 4::bigint, 'changed: the same content again is not kept');
SELECT is((SELECT payload_hash FROM tweetkeeper.tweets WHERE tweet_id = 5001),
          (SELECT content_hash FROM tweetkeeper.payloads WHERE tweet_id = 5001 ORDER BY lease_id DESC LIMIT 1),
  'and the tweet''s hash is still the last kept one''s');
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5004, 'given', 1) || '{"content_hash": "0123456789abcdef0123456789abcdef"}'));
SELECT is((SELECT encode(content_hash, 'hex') FROM tweetkeeper.payloads WHERE tweet_id = 5004 ORDER BY lease_id DESC LIMIT 1),
  '0123456789abcdef0123456789abcdef', 'a hash the worker gives is the one kept');
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5004, 'given', 1) || '{"content_hash": "not hex"}'));
SELECT is((SELECT encode(content_hash, 'hex') FROM tweetkeeper.payloads WHERE tweet_id = 5004 ORDER BY lease_id DESC LIMIT 1),
  md5(tweetkeeper.payload_content(pg_temp.x(5004, 'given', 1)->'payload', pg_temp.x(5004, 'given', 1)->'author')::text),
  'one that is no md5 is computed instead');
SELECT is(tweetkeeper.payload_content('{"uri":"at://x","record":{"text":"t"},"likeCount":1,"repostCount":2,"viewer":{"like":"x"},"author":{"handle":"a","viewer":{"muted":false}}}', NULL),
          tweetkeeper.payload_content('{"uri":"at://x","record":{"text":"t"},"likeCount":9,"repostCount":7,"author":{"handle":"a"}}', NULL),
  'a Bluesky postView: counts and viewer state are no content');
SELECT is(tweetkeeper.payload_content('{"id":"1","content":"<p>t</p>","favourites_count":1,"favourited":true,"account":{"acct":"a","followers_count":5,"last_status_at":"2026-11-01"}}', NULL),
          tweetkeeper.payload_content('{"id":"1","content":"<p>t</p>","favourites_count":8,"account":{"acct":"a","followers_count":6}}', NULL),
  'a Mastodon Status: counts, viewer state and the account''s counts are no content');
SELECT is(tweetkeeper.payload_content('{"uri":"at://x","embed":{"$type":"app.bsky.embed.recordWithMedia#view","record":{"record":{"uri":"at://q","likeCount":1,"quoteCount":0,"author":{"did":"d","viewer":{"muted":false}},"embeds":[{"record":{"likeCount":3}}]}}}}', NULL),
          tweetkeeper.payload_content('{"uri":"at://x","embed":{"$type":"app.bsky.embed.recordWithMedia#view","record":{"record":{"uri":"at://q","likeCount":8,"quoteCount":2,"author":{"did":"d"},"embeds":[{"record":{"likeCount":4}}]}}}}', NULL),
  'a quoted post''s counts, however deep in the embed, are no content');
SELECT is(tweetkeeper.payload_content('{"id":"1","reblogs_count":0,"reblog":{"id":"2","favourites_count":5,"account":{"acct":"b","statuses_count":1},"poll":{"votes_count":3,"options":[{"title":"a","votes_count":3}]}}}', NULL),
          tweetkeeper.payload_content('{"id":"1","reblogs_count":0,"reblog":{"id":"2","favourites_count":7,"account":{"acct":"b","statuses_count":2},"poll":{"votes_count":9,"options":[{"title":"a","votes_count":9}]}}}', NULL),
  'a boosted status''s counts and its poll''s votes are no content');
SELECT is(tweetkeeper.payload_without_counts((repeat('[', 3000) || '{"likeCount": 1, "text": "t"}' || repeat(']', 3000))::jsonb),
          (repeat('[', 3000) || '{"text": "t"}' || repeat(']', 3000))::jsonb,
  'a document 3,000 deep is walked to its bottom (the jsonb iterator''s own stack, no recursion)');
SELECT is(tweetkeeper.payload_without_counts('{"a": {"viewer": {"likeCount": 1, "x": [{"pinned": true}]}, "b": [[{"quoteCount": 2, "c": [1, {"muted": false}]}]]},
                                                 "public_metrics": [{"text": "kept?"}], "z": null, "last_status_at": "2026-11-01"}'),
          '{"a": {"b": [[{"c": [1, {}]}]]}, "z": null}'::jsonb,
  'a removed key''s whole value goes, object or array, and every key beside and below it is looked at');
SELECT is(tweetkeeper.payload_without_counts('[{"likeCount": 1}, [{"viewer": 2, "t": "u"}], 3, "s", null]'),
          '[{}, [{"t": "u"}], 3, "s", null]'::jsonb, 'a document that is an array: each element walked, in order');
SELECT is(ARRAY[tweetkeeper.payload_without_counts('7'), tweetkeeper.payload_without_counts('"likeCount"'),
                tweetkeeper.payload_without_counts('{}'), tweetkeeper.payload_without_counts('[]')],
          ARRAY['7', '"likeCount"', '{}', '[]']::jsonb[], 'a scalar, an empty object and an empty array: as they are');
SELECT ok(tweetkeeper.payload_without_counts(NULL) IS NULL AND tweetkeeper.payload_content(NULL, NULL) = '[null, null]',
  'no payload: none, and payload_content() says so for both');
SELECT isnt(tweetkeeper.payload_content('{"id":"1","content":"<p>t</p>","account":{"acct":"a"}}', NULL),
            tweetkeeper.payload_content('{"id":"1","content":"<p>t!</p>","account":{"acct":"a"}}', NULL),
  'a Mastodon Status: its text is content');
SELECT is(pg_temp.round('[{"id": 5002, "like_count": 4, "payload": "not an object"}]'), 1,
  'a payload that is no JSON object: the counts are stored');
SELECT is(pg_temp.n(5002), 0::bigint, 'and the payload is not');

-- Deleted: payloads erased, a tombstone kept.
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5003, 'c', 1), pg_temp.x(5004, 'd', 1)));
SELECT pg_temp.round('[]', '[{"id": 5001, "type": "resource-not-found", "detail": "gone"},
                             {"id": 5003, "type": "not-authorized-for-resource", "detail": "protected"}]');
SELECT is(pg_temp.n(5001) + pg_temp.n(5003), 0::bigint, 'deleted and unavailable posts: their payloads are erased');
SELECT is((SELECT count(payload_hash) FROM tweetkeeper.tweets WHERE tweet_id IN (5001, 5003)), 0::bigint,
  'and their hashes with them, so that the next payload seen is kept');
SELECT is((SELECT array_agg(format('%s %s %s', tweet_id, reason, payloads_erased) ORDER BY tweet_id) FROM tweetkeeper.tombstones),
  ARRAY['5001 resource-not-found 4', '5003 not-authorized-for-resource 1'], 'and tombstones say which, why and how many');
SELECT is((SELECT observed_at FROM tweetkeeper.tombstones WHERE tweet_id = 5001), now(), 'and when');
SELECT is(pg_temp.n(5004), 3::bigint, 'the other posts keep theirs');
-- keep: the operator's choice, outside X's terms.
SET LOCAL tweetkeeper.deleted_payloads = 'keep';
SELECT pg_temp.round('[]', '[{"id": 5004, "type": "resource-not-found", "detail": "gone"}]');
SELECT is(pg_temp.n(5004), 3::bigint, 'deleted_payloads = keep: the payloads stay');
SELECT is((SELECT payloads_erased FROM tweetkeeper.tombstones WHERE tweet_id = 5004), 0, 'and the tombstone says none went');
-- Seen again (an account public again): no longer gone.
UPDATE tweetkeeper.tweets SET state = 'scheduled', due_at = now() WHERE tweet_id = 5003;
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5003, 'c', 2)));
SELECT ok(NOT EXISTS (SELECT FROM tweetkeeper.tombstones WHERE tweet_id = 5003) AND pg_temp.n(5003) = 1,
  'a post seen again loses its tombstone, and its payload is kept again');

-- Edited: the answer names a newer version; it is tracked in the old one's place.
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5003, 'c', 2) || '{"newest_id": 9000000000000000001}'));
SELECT is((SELECT state::text FROM tweetkeeper.tweets WHERE tweet_id = 5003), 'scheduled',
  'a newer id from the future is no version: ignored, the post stays as it was');
CREATE TEMP TABLE v AS SELECT (((extract(epoch FROM now() - interval '90 minutes') * 1000)::bigint - 1288834974657) << 22) AS id;
SELECT pg_temp.round(jsonb_build_array(pg_temp.x(5003, 'c', 2) || jsonb_build_object('newest_id', (SELECT id FROM v))));
SELECT is((SELECT format('%s %s %s', state, problem_type, due_at IS NULL) FROM tweetkeeper.tweets WHERE tweet_id = 5003),
  'done edited t', 'an edited post is done, and says why');
SELECT is((SELECT newest_id FROM tweetkeeper.edits WHERE tweet_id = 5003), (SELECT id FROM v), 'linked to its newest version');
SELECT is((SELECT state::text FROM tweetkeeper.tweets WHERE tweet_id = (SELECT id FROM v)), 'scheduled',
  'which is tracked from now on');
SELECT is((SELECT array_agg(edits_followed ORDER BY lease_id) FILTER (WHERE edits_followed IS NOT NULL) FROM tweetkeeper.batches),
  ARRAY[1], 'the batch counts the one edit it followed');
SELECT is((SELECT edits_followed FROM tweetkeeper.batch_stats WHERE network = 'x' AND window_name = 'last hour'),
  1::bigint, 'and batch_stats shows it');

-- Retention: old versions go, each post's newest stays.
UPDATE tweetkeeper.payloads SET seen_at = seen_at - interval '10 days' * (10 - (lease_id - (SELECT min(lease_id) FROM tweetkeeper.payloads)));
SET LOCAL tweetkeeper.history_retention = '1d';
SELECT tweetkeeper.apply_retention();
SELECT is((SELECT count(*) FROM tweetkeeper.payloads), (SELECT count(DISTINCT tweet_id) FROM tweetkeeper.payloads),
  'retention: one payload per post is left, all older than the cutoff');
SELECT * FROM finish();
ROLLBACK;
