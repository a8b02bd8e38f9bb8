-- Posts of other networks on the wire (the tables: sql/schema/42_claim_bluesky_mastodon.sql):
-- each endpoint's request window, learned from its answers, and claim_posts(), the claim of one
-- endpoint's due posts (Bluesky's AppView, a Mastodon server); Bluesky handles resolved to DIDs.

-- The largest batch an endpoint (or a provider: bluesky, mastodon) takes: getPosts 25 URIs,
-- Mastodon 20 statuses (1 on a server without GET /api/v1/statuses).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.endpoint_batch_max(endpoint text, single_status boolean) RETURNS integer
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE WHEN endpoint IN ('bluesky', 'bluesky-handle') THEN 25 WHEN single_status THEN 1 ELSE 20 END;

-- The keys the API knows the posts ids by, in their order: at:// URIs (Bluesky), status ids
-- (Mastodon).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.post_keys_of(ids bigint[]) RETURNS text[]
  LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  -- Each id's key looked up by itself: a join could be planned (generic plan, ids unknown)
  -- as a hash of all of post_refs, spilled to disk on every claim.
  RETURN ARRAY(SELECT (SELECT CASE r.network WHEN 'bluesky' THEN format('at://%s/app.bsky.feed.post/%s', r.author, r.post_key)
                                              ELSE r.post_key END
                          FROM tweetkeeper.post_refs r WHERE r.tweet_id = i.id)
                  FROM unnest(ids) WITH ORDINALITY AS i(id, k) ORDER BY i.k);
END $$;

-- Up to n due posts of an endpoint, locked (claim_posts()'s step, under its search_path): its
-- watched posts first (tweetkeeper.watch_posts: a window too small for everything due goes to
-- them), then the oldest due. (Each row's ctid too: the lease is set where the lock found it, as
-- claim_batch() does; and the content hash of its last kept payload, in the order of the ids, for
-- the worker.)
CREATE OR REPLACE FUNCTION tweetkeeper_internal.lock_endpoint_posts(ep text, n integer, OUT ids bigint[],
                                               OUT dues timestamptz[], OUT oldest timestamptz,
                                               OUT ctids tid[], OUT hashes text[])
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  SELECT array_agg(c.tweet_id ORDER BY c.w, c.due_at, c.tweet_id), array_agg(c.due_at ORDER BY c.w, c.due_at, c.tweet_id),
         min(c.due_at), array_agg(c.ctid),
         CASE WHEN count(c.payload_hash) > 0 THEN array_agg(encode(c.payload_hash, 'hex') ORDER BY c.w, c.due_at, c.tweet_id) END
    INTO ids, dues, oldest, ctids, hashes
    FROM (SELECT * FROM (SELECT t.tweet_id, t.due_at, 0 AS w, t.ctid, t.payload_hash FROM tweetkeeper.tweets t
                          WHERE t.watch_until IS NOT NULL AND t.tweet_id < 0 AND t.endpoint COLLATE "C" = ep
                            AND t.due_at <= now()
                          ORDER BY t.due_at LIMIT n FOR UPDATE SKIP LOCKED) watched
          UNION ALL
          SELECT * FROM (SELECT t.tweet_id, t.due_at, 1, t.ctid, t.payload_hash FROM tweetkeeper.tweets t
                          WHERE t.due_at IS NOT NULL AND t.tweet_id < 0 AND t.endpoint COLLATE "C" = ep
                            AND t.due_at <= now() AND t.watch_until IS NULL
                          ORDER BY t.due_at LIMIT n FOR UPDATE SKIP LOCKED) others
          LIMIT n) c;
END $$;

-- One endpoint's claim (claim_posts()): whether its window allows a request now (endpoint_hold()),
-- up to max_size of its due posts locked (lock_endpoint_posts()), a lease on them (open_lease())
-- and one request of its window counted (count_endpoint_request()). Returns the lease, its posts
-- and their payload hashes; or no lease, and why not (why, and until when, if that is known; no
-- why for a partial batch held back by the buffer TTL, per endpoint). s: settings().
CREATE OR REPLACE FUNCTION tweetkeeper_internal.claim_endpoint(worker text, provider text, ep text, max_size integer, tokens text[],
                                          s record, OUT lease bigint, OUT ids bigint[], OUT hashes text[],
                                          OUT why text, OUT until timestamptz)
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  q record := tweetkeeper_internal.endpoint_hold(ep, tokens);
  l record;
  n integer;
BEGIN
  IF q.why IS NOT NULL THEN
    why := q.why;
    until := q.until;
    RETURN;
  END IF;
  n := least(max_size, tweetkeeper_internal.endpoint_batch_max(ep, q.single_status));
  l := tweetkeeper_internal.lock_endpoint_posts(ep, n);
  IF l.ids IS NULL OR (cardinality(l.ids) < n AND l.oldest > now() - s.buffer_ttl) THEN
    RETURN;
  END IF;
  lease := tweetkeeper_internal.open_lease(worker, l.ids, l.ctids, l.oldest, s.lease_ttl, NULL, 0, provider, ep);
  IF NOT tweetkeeper_internal.count_endpoint_request(ep, tokens, q.answered_at) THEN
    -- Taken meanwhile by other claims, or refused: the claim is undone (its posts due as they
    -- were, no batch), and the next claim says why.
    PERFORM tweetkeeper_internal.hand_back(lease, l.ids, NULL, l.dues);
    DELETE FROM tweetkeeper.batches b WHERE b.lease_id = claim_endpoint.lease;
    lease := NULL;
    why := format('%s: its window changed meanwhile', ep);
    until := now() + interval '1 second';
    RETURN;
  END IF;
  ids := l.ids;
  hashes := l.hashes;
END $$;


-- The worker's claim for posts of Bluesky and Mastodon (claim_batch() is X's): up to max_size
-- due posts of one endpoint under a new lease, oldest due first, with their keys (at:// URIs;
-- Mastodon status ids, the server in `endpoint`) and their last kept payloads' content hashes
-- (payload_hashes, as claim_batch()'s).
-- A Bluesky batch of endpoint bluesky-handle holds posts known by handle only: the worker
-- resolves their handles and hands the DIDs to complete_handles().
-- For Mastodon, the server whose oldest due status has waited longest among those whose window
-- allows a request (and, for a server that refused us without a token, that this worker holds a
-- token for: `tokens`, the hosts it has one for). The buffer TTL holds per endpoint. One request
-- of the endpoint's window is counted here, under its row lock, so workers together never send
-- more than the endpoint said it takes. Completed and released as any batch.
CREATE OR REPLACE FUNCTION claim_posts(worker text, max_size integer, provider text, tokens text[] DEFAULT NULL)
  RETURNS TABLE (lease_id bigint, tweet_ids bigint[], post_keys text[], endpoint text,
                 wait_until timestamptz, wait_reason text, payload_hashes text[])
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  s record := tweetkeeper.settings();
  e record;
  c record;
  lo text := CASE provider WHEN 'bluesky' THEN 'bluesky' ELSE 'mastodon:' END;
  hi text := CASE provider WHEN 'bluesky' THEN 'bluesky-handle' ELSE 'mastodon;' END;  -- ';' follows ':'
  tried text;
  endpoints_due refcursor;
  waits text[] := '{}';
  wait_min timestamptz;
  ep text;
BEGIN
  PERFORM tweetkeeper_internal.check_claim(worker, max_size, provider, false);
  -- Two passes. 1 (Mastodon): the server of the oldest due status of all, one probe of
  -- tweets_mastodon_due_idx whatever the number of servers: the one the rule below takes first,
  -- and, unless its window or a partial batch holds it back, the one claimed. 2: the endpoints
  -- with due posts, the longest waiting first: a loose scan of tweets_endpoint_due_idx (one probe
  -- per endpoint, not one per post, its first entry being its oldest due post), without the one
  -- tried in pass 1. In byte order (COLLATE "C", as the index): the range 'mastodon:' ..
  -- 'mastodon;' holds every Mastodon server there, not in en_US's order, which ignores
  -- punctuation. (Two cursors, two queries: each keeps a plan of its own.)
  FOR pass IN 1..2 LOOP
    IF pass = 1 THEN
      CONTINUE WHEN provider <> 'mastodon';
      OPEN endpoints_due FOR
        SELECT t.endpoint COLLATE "C" AS endpoint FROM tweetkeeper.tweets t
         WHERE t.due_at IS NOT NULL AND t.tweet_id < 0 AND starts_with(t.endpoint, 'mastodon:') AND t.due_at <= now()
         ORDER BY t.due_at LIMIT 1;
    ELSE
      OPEN endpoints_due FOR
        WITH RECURSIVE d(endpoint, first_due) AS (
          (SELECT t.endpoint COLLATE "C", t.due_at FROM tweetkeeper.tweets t
            WHERE t.due_at IS NOT NULL AND t.tweet_id < 0 AND t.endpoint COLLATE "C" >= lo AND t.endpoint COLLATE "C" <= hi
            ORDER BY t.endpoint COLLATE "C", t.due_at LIMIT 1)
          UNION ALL
          SELECT n.endpoint, n.due_at
            FROM d CROSS JOIN LATERAL (
              SELECT t.endpoint COLLATE "C" AS endpoint, t.due_at FROM tweetkeeper.tweets t
               WHERE t.due_at IS NOT NULL AND t.tweet_id < 0 AND t.endpoint COLLATE "C" > d.endpoint
                 AND t.endpoint COLLATE "C" <= hi
               ORDER BY t.endpoint COLLATE "C", t.due_at LIMIT 1) n)
        SELECT d.endpoint FROM d
         WHERE d.first_due <= now() AND d.endpoint IS DISTINCT FROM tried
         ORDER BY d.first_due;
    END IF;
  LOOP
    FETCH endpoints_due INTO e;
    EXIT WHEN NOT FOUND;
    -- The endpoint in the default collation (the cursor's is "C", as tweets' index), so that
    -- endpoints' and endpoint_lanes' keys are looked up by their indexes.
    ep := e.endpoint;
    IF pass = 1 THEN
      tried := ep;
    END IF;
    c := tweetkeeper_internal.claim_endpoint(worker, provider, ep, max_size, tokens, s);
    IF c.why IS NOT NULL THEN
      waits := waits || c.why;
      wait_min := least(wait_min, c.until);
    END IF;
    CONTINUE WHEN c.lease IS NULL;
    CLOSE endpoints_due;
    RETURN QUERY SELECT c.lease, c.ids, tweetkeeper_internal.post_keys_of(c.ids), ep, NULL::timestamptz, NULL::text, c.hashes;
    RETURN;
  END LOOP;
  CLOSE endpoints_due;
  END LOOP;
  IF wait_min IS NOT NULL THEN
    -- Due posts, but their endpoints take no request now: say until when and why. No longer
    -- than the buffer TTL: another endpoint's posts may come due meanwhile, and a worker serves
    -- every endpoint of its network. (A server that wants a token gives no time to wait for:
    -- then no row, and the worker polls as when nothing is due.)
    RETURN QUERY SELECT NULL::bigint, NULL::bigint[], NULL::text[], NULL::text,
      greatest(least(wait_min, now() + s.buffer_ttl), now()), array_to_string(waits, ', '), NULL::text[];
  END IF;
END $$;
COMMENT ON FUNCTION claim_posts(text, integer, text, text[]) IS
  'Claims up to max_size due posts of one Bluesky (1-25) or Mastodon (1-20) endpoint under a new '
  'lease, with their keys (at:// URIs, status ids); complete and release them as any batch.';

-- A post's author as its key names it: a Bluesky handle resolved before by its DID (so that the
-- same post by handle or by DID is one post), anything else as given. schedule_post(s) and
-- url_post_ids() read URLs through it.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.post_author(network text, author text) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE WHEN network = 'bluesky' AND author NOT LIKE 'did:%'
              THEN coalesce((SELECT h.did FROM tweetkeeper.bluesky_handles h WHERE h.handle = author), author)
              ELSE author END;

-- Stores what a Bluesky worker learnt of the handles of a batch of endpoint bluesky-handle:
-- resolutions [{"handle":"alice.example","did":"did:plc:..."}, {"handle":"x.example",
-- "problem":"Unable to resolve handle"}]. Each post of the batch (still held by the lease) whose
-- handle resolved is tracked from then on under its DID (its id changes: the hash of the DID
-- form), due at once, with what it had (no observation: posts by handle are never fetched);
-- a post already tracked under that DID stays as it is and the handle's row goes. A handle that
-- does not resolve makes its posts missing with a problem that says so, rechecked every
-- tweetkeeper.unavailable_recheck (a handle may come to resolve later). Posts whose handle the
-- answer does not mention are handed back. Returns how many posts were settled.
CREATE OR REPLACE FUNCTION complete_handles(lease bigint, resolutions jsonb) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  b tweetkeeper.batches;
  p record;
  r record;
  settled integer := 0;
  recheck interval := (SELECT x.unavailable_recheck FROM tweetkeeper.settings() x);
  h record;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('lease and resolutions', lease IS NULL OR resolutions IS NULL);
  IF jsonb_typeof(resolutions) <> 'array' THEN
    RAISE EXCEPTION 'resolutions must be a JSON array' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Not such a batch, another session's (refused), or completed already (a repeated call):
  -- nothing to settle.
  b := tweetkeeper_internal.fenced_batch(lease, 'bluesky-handle', ARRAY['completed'], NULL);
  IF b.lease_id IS NULL THEN
    RETURN 0;
  END IF;
  INSERT INTO tweetkeeper.bluesky_handles AS h (handle, did, problem, resolved_at)
  SELECT DISTINCT ON (lower(x.handle)) lower(x.handle), x.did, CASE WHEN x.did IS NULL THEN coalesce(x.problem, 'did not resolve') END, now()
    FROM jsonb_to_recordset(resolutions) AS x(handle text, did text, problem text)
   WHERE x.handle IS NOT NULL AND (x.did IS NULL OR x.did ~ '^did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]$')
     -- only the handles of this batch's posts: a worker answers for what its lease holds
     AND lower(x.handle) IN (SELECT f.author FROM tweetkeeper.post_refs f
                              WHERE f.tweet_id = ANY (b.tweet_ids) AND f.network = 'bluesky')
  ON CONFLICT ON CONSTRAINT bluesky_handles_pkey
  DO UPDATE SET did = excluded.did, problem = excluded.problem, resolved_at = excluded.resolved_at;
  FOR p IN
    SELECT t.*, f.author, f.post_key
      FROM tweetkeeper.tweets t JOIN tweetkeeper.post_refs f USING (tweet_id)
     WHERE t.tweet_id = ANY (b.tweet_ids) AND t.lease_id = lease
  LOOP
    SELECT x.did, x.problem INTO h FROM tweetkeeper.bluesky_handles x
     WHERE x.handle = p.author AND x.resolved_at = now();
    CONTINUE WHEN NOT FOUND;
    settled := settled + 1;
    IF h.did IS NULL THEN
      UPDATE tweetkeeper.tweets t
         SET state = 'missing', lease_id = NULL, due_at = now() + recheck, delay = recheck,
             problem_type = 'handle-unresolved', problem_at = now(),
             problem_detail = format('the handle %s does not resolve to a DID: %s', p.author, h.problem)
       WHERE t.tweet_id = p.tweet_id;
      CONTINUE;
    END IF;
    r := tweetkeeper_internal.enter_post_ref('bluesky', '', h.did, p.post_key, NULL);
    IF NOT r.tracked THEN
      -- (re-keyed, not new: it keeps its schedule and watch, and is due at once)
      INSERT INTO tweetkeeper.tweets (tweet_id, created_at, state, due_at, scheduled_at, delay, watch_every,
                                      watch_until, endpoint)
      VALUES (r.tweet_id, p.created_at, 'scheduled', now(), p.scheduled_at, p.delay, p.watch_every,
              p.watch_until, 'bluesky');
    END IF;
    DELETE FROM tweetkeeper.tweets t WHERE t.tweet_id = p.tweet_id;
    DELETE FROM tweetkeeper.post_refs f WHERE f.tweet_id = p.tweet_id;
  END LOOP;
  -- Posts of handles the answer did not mention: due again now, for the next worker.
  PERFORM tweetkeeper_internal.hand_back(lease, b.tweet_ids, now());
  UPDATE tweetkeeper.batches
     SET finished_at = now(), outcome = coalesce(outcome, 'completed'), stored = settled, billed = 0,
         tweets_read = 0
   WHERE batches.lease_id = lease;
  RETURN settled;
END $$;
COMMENT ON FUNCTION complete_handles(bigint, jsonb) IS
  'Stores the DIDs a Bluesky worker resolved for a batch of posts known by handle: they are '
  'tracked under their DIDs from then on (or missing, when a handle does not resolve).';

-- Each endpoint's window and state beside credential_stats (X's): what the answers said, how
-- many of its posts are due, and its batches released by refusals or failures.
CREATE OR REPLACE VIEW endpoint_stats AS
SELECT e.endpoint,
       CASE WHEN e.endpoint LIKE 'mastodon:%' THEN 'mastodon' ELSE 'bluesky' END AS network,
       e.status, e.status_reason AS reason,
       CASE WHEN e.status IN ('waiting', 'needs-token') AND e.status_until > now() THEN e.status_until END AS until,
       CASE WHEN e.window_reset_at <= now() THEN e.requests_per_window ELSE e.remaining + l.held END AS remaining,
       e.requests_per_window,
       CASE WHEN e.window_reset_at > now() THEN e.window_reset_at END AS window_reset_at,
       e.single_status, e.requests + l.requests AS requests, greatest(e.last_used_at, l.last_used_at) AS last_used_at,
       (SELECT count(*) FROM tweetkeeper.tweets t
         WHERE t.endpoint COLLATE "C" = e.endpoint AND t.due_at <= now() AND t.tweet_id < 0 AND t.lease_id IS NULL) AS due_now,
       (SELECT count(*) FROM tweetkeeper.batches b
         WHERE b.endpoint = e.endpoint AND b.outcome = 'released') AS released_batches
  FROM tweetkeeper.endpoints e,
       LATERAL (SELECT coalesce(sum(l.granted) FILTER (WHERE l.valid_until > now() AND l.valid_until < 'infinity'), 0)::integer AS held,
                       coalesce(sum(l.requests), 0)::bigint AS requests, max(l.last_used_at) AS last_used_at
                  FROM tweetkeeper.endpoint_lanes l WHERE l.endpoint = e.endpoint) l
 ORDER BY e.endpoint;
COMMENT ON VIEW endpoint_stats IS
  'Each Bluesky and Mastodon endpoint: its window as its answers said (remaining, limit, reset), '
  'its status (waiting after a 429, needs-token after a 401, until tweetkeeper.rejected_recheck) and why, whether it is read one '
  'status at a time, its due posts, and its batches released in the retention window.';
