-- Claim, complete, release: the worker's API, and the lease that ties them together.
--
-- Lease design (a visibility timeout, not row locks held during the API call). claim_batch() pushes each claimed
-- tweet's due_at forward by tweetkeeper.lease_ttl and stamps it with a lease id, in a short
-- transaction; complete_batch() stores the results only for rows that still carry that lease id.
-- Why this one and not "hold the row locks during the API call":
--  * no connection and no open transaction is held during the HTTP request, so a worker can
--    keep many batches in flight on few connections and slow API calls do not hold back vacuum;
--  * expiry needs no code at all: an expired lease is simply a due tweet, claimable again;
--  * the lease id is a fencing token: a worker that was paused past its lease and completes
--    late changes nothing once another worker has claimed the tweet.
-- The price is two writes per tweet per refresh (claim, complete) instead of one; make bench
-- measures it.
-- JIT off (SET jit = off on claim_batch, complete_batch, release_batch, claim_posts,
-- complete_handles, claim_wait and maintenance, and so on everything they call): their statements
-- run on cached generic plans whose row estimates grow with the queue (a LIMIT given by a variable
-- is estimated as a tenth of the table), and past 100,000 in cost PostgreSQL compiled them with
-- LLVM at every call: 15 ms of a 20 ms X claim at 5,000,000 tracked posts, for statements that
-- read a few hundred rows (measured: 20 ms a claim with jit on, 5 ms with it off).
-- A lease also records the database session that claimed it (pid and start time). A worker
-- keeps its connection while it lives, so when that session is gone the background worker
-- hands the batch back within a tick instead of after lease_ttl (tweetkeeper.reclaim_abandoned).

-- The full look of delay_heads(): a loose scan from the start of tweets_lateness_idx, one
-- descent per delay.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.full_delay_heads(OUT delays interval[], OUT heads timestamptz[])
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  WITH RECURSIVE d(delay, head) AS (
     (SELECT t.delay, t.due_at FROM tweetkeeper.tweets t
       WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
       ORDER BY t.delay, t.due_at LIMIT 1)
     UNION ALL
     SELECT n.delay, n.due_at
       FROM d CROSS JOIN LATERAL (
         SELECT t.delay, t.due_at FROM tweetkeeper.tweets t
          WHERE t.due_at IS NOT NULL AND t.tweet_id > 0 AND t.delay > d.delay
          ORDER BY t.delay, t.due_at LIMIT 1) n)
  SELECT coalesce(array_agg(d.delay ORDER BY d.delay), '{}'), coalesce(array_agg(d.head ORDER BY d.delay), '{}')
    INTO delays, heads FROM d;
END $$;

-- The delays of X's scheduled tweets, each with its head: the oldest due_at among them, or a
-- lower bound of it. From where this session last saw them (claim_heads(): extension/
-- claim_heads.cpp says when that is forgotten), or by a full look: a loose scan from the start of
-- tweets_lateness_idx, one descent per delay (each walks the dead entries at the head of its
-- delay's range, which every claim and completion leave until VACUUM; the remembered heads skip
-- them). claim_batch() and maintenance() read the queue from here. (Heads are kept a second at
-- most: heads_moved(), extension/claim_heads.cpp, relies on that second.)
CREATE OR REPLACE FUNCTION tweetkeeper_internal.delay_heads(OUT delays interval[], OUT heads timestamptz[])
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  SELECT h.delays, h.heads INTO delays, heads FROM tweetkeeper_internal.claim_heads(interval '1 second') h;
  IF delays IS NULL THEN
    SELECT f.delays, f.heads INTO delays, heads FROM tweetkeeper_internal.full_delay_heads() f;
    PERFORM tweetkeeper_internal.remember_claim_heads(delays, heads, true);
  ELSE
    -- Each head as it is now: the first tweet at or after the remembered one (a delay that has
    -- none keeps its head until the next full look).
    SELECT coalesce(array_agg(d.delay ORDER BY d.i), '{}'), coalesce(array_agg(coalesce(n.due_at, d.head) ORDER BY d.i), '{}')
      INTO delays, heads
      FROM unnest(delays, heads) WITH ORDINALITY AS d(delay, head, i)
      LEFT JOIN LATERAL (
        SELECT t.due_at FROM tweetkeeper.tweets t
         WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
           AND (t.delay, t.due_at) >= (d.delay, d.head)
           AND (t.delay, t.due_at) <= (d.delay, 'infinity'::timestamptz)
         ORDER BY t.delay, t.due_at LIMIT 1) n ON true;
    PERFORM tweetkeeper_internal.remember_claim_heads(delays, heads, false);
  END IF;
END $$;
COMMENT ON FUNCTION tweetkeeper_internal.delay_heads() IS
  'The distinct delays of X''s scheduled tweets, each with the oldest due_at among them (or a lower '
  'bound of it), as claim_batch() and maintenance() read them.';

-- A claim's lease on the rows its locking read returned: each row version where the read found
-- it (a TID scan, no index descent: only this transaction may update a row it locked, so none
-- should have moved), and by key any that was not there.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.lease_rows(lease bigint, ids bigint[], ctids tid[], expires_at timestamptz) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n_leased bigint;
BEGIN
  UPDATE tweetkeeper.tweets t SET due_at = expires_at, lease_id = lease
   WHERE t.ctid = ANY (ctids) AND t.tweet_id = ANY (ids);
  GET DIAGNOSTICS n_leased = ROW_COUNT;
  IF n_leased < cardinality(ids) THEN
    UPDATE tweetkeeper.tweets t SET due_at = expires_at, lease_id = lease
     WHERE t.tweet_id = ANY (ids) AND t.lease_id IS DISTINCT FROM lease;
  END IF;
END $$;

-- The one way a claim of any network takes a lease: a new lease id on the rows its locking read
-- returned (lease_rows()), and the batch's record, which names this session as its holder
-- (fenced_batch(), lease_holder()). Returns the lease id.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.open_lease(worker text, ids bigint[], ctids tid[], oldest timestamptz, ttl interval,
                                      credential text, billable integer, provider text, endpoint text)
  RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  lease bigint := nextval('tweetkeeper.lease_id_seq');
BEGIN
  PERFORM tweetkeeper_internal.lease_rows(lease, ids, ctids, now() + ttl);
  INSERT INTO tweetkeeper.batches (lease_id, worker, tweet_ids, size, oldest_due_at, claimed_at,
                                   expires_at, credential, claimer_pid, claimer_started, billable,
                                   provider, endpoint)
  VALUES (lease, worker, ids, cardinality(ids), oldest, now(), now() + ttl, credential,
          pg_backend_pid(), tweetkeeper_internal.backend_start(), billable, provider, endpoint);
  RETURN lease;
END $$;

-- claim_batch()'s steps; each runs under claim_batch()'s search_path and SECURITY
-- DEFINER, and none is granted to anyone.

-- How many to lock of each delay with due tweets (lock_due_tweets(), when more than one delay
-- has some): each such delay gives at most per_delay of its most overdue tweets (not among held), and
-- only those (delays x per_delay rows) are ranked by claim_order; that ranking, read without locks, says
-- how many tweets to take from each delay. Returns those numbers, in the order of due_delays, and
-- their sum (wanted).
-- (A range of tweets_lateness_idx written as row comparisons, not delay = d.delay: with an
-- equality the planner may walk another index instead, filtering on the delay, which for a rare
-- delay reads past every other due tweet: 0.5 s at 1M.)
CREATE OR REPLACE FUNCTION tweetkeeper_internal.delay_shares(due_delays interval[], due_heads timestamptz[], held bigint[], per_delay integer,
                                        claim_order text, OUT group_sizes bigint[], OUT wanted bigint)
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  SELECT array_agg(coalesce(r.n, 0) ORDER BY d.i), coalesce(sum(r.n), 0) INTO group_sizes, wanted
    FROM unnest(due_delays) WITH ORDINALITY AS d(delay, i)
    LEFT JOIN (
      SELECT x.delay, count(*) AS n FROM (
        SELECT d.delay
          FROM unnest(due_delays, due_heads) AS d(delay, head) CROSS JOIN LATERAL (
            SELECT t.due_at FROM tweetkeeper.tweets t
             WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
               AND (t.delay, t.due_at) >= (d.delay, d.head)
               AND (t.delay, t.due_at) <= (d.delay, now()) AND t.tweet_id <> ALL (held)
             ORDER BY t.delay, t.due_at LIMIT per_delay) c
         ORDER BY CASE claim_order
                    WHEN 'due' THEN extract(epoch FROM now() - c.due_at)
                    WHEN 'young' THEN extract(epoch FROM now() - c.due_at) / greatest(extract(epoch FROM d.delay), 1) ^ 2
                    ELSE extract(epoch FROM now() - c.due_at) / greatest(extract(epoch FROM d.delay), 1)
                  END DESC
         LIMIT per_delay) x
       GROUP BY x.delay) r ON r.delay = d.delay;
END $$;

-- Which due tweets: watched ones first (tweets_watched_idx), then by tweetkeeper.claim_order.
--  * lateness (default): the most overdue relative to their own delay, (now - due_at) / delay,
--    so that under a shortage every tweet's interval stretches by about the same factor and
--    young tweets stay close to their schedule; nothing starves, as a waiting tweet's lateness
--    only grows.
--  * young: lateness divided by the delay once more, (now - due_at) / delay^2, so that under a
--    shortage the posts with the shortest delays (the youngest, whose curve moves fastest) keep
--    their schedule first and the others' intervals stretch more; nothing starves here either,
--    but a daily post may wait many of its delays while young posts are due.
--  * due: the oldest due first, 0.1.0's order.
-- All are read from one index, tweets_lateness_idx (delay, due_at). delay_heads() gives the
-- few distinct delays and each one's head, its oldest due_at; every read of a delay starts at
-- its head, past the dead entries that every claim and completion leave at the head of their
-- delay's range until VACUUM. When only one
-- delay has due tweets, its most overdue tweets are the answer in any order and are locked
-- straight away. Otherwise each such delay gives at most max_size of its most overdue tweets,
-- and only those (delays x max_size rows) are ranked; that ranking, read without locks, says
-- how many tweets to take from each delay. Locks are taken per delay, most overdue first,
-- skipping those another claim holds, so concurrent claims take successive slices. The locking
-- read also returns what the claim needs of each tweet (its due time, who read it this UTC
-- day, where its row is: a lock holds the row version in place until this transaction
-- updates it, and the content hash of its last kept payload, for the worker), so no claimed
-- tweet is read again, nor looked up in an index, before it is updated.
-- X's tweets only (tweet_id > 0, as X's indexes): other networks' posts are not X's to send.
-- X bills a post once per UTC day: a tweet this credential already read today costs nothing
-- (read_today: per read of a claimed tweet this UTC day, the credential that read it).
-- Returns the locked tweets (held), their due times, row versions and kept payload hashes, per
-- read of them this UTC day the credential that read it (read_today), and how many due tweets a
-- concurrent claim held (skipped).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.lock_due_tweets(max_size integer, claim_order text,
                               OUT held bigint[], OUT held_due timestamptz[], OUT held_ctid tid[],
                               OUT held_hash bytea[], OUT read_today text[], OUT skipped bigint)
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  today date := (now() AT TIME ZONE 'UTC')::date;
  got bigint[];
  got_due timestamptz[];
  got_ctid tid[];
  got_hash bytea[];
  got_read text[];
  due_delays interval[];   -- the delays whose most overdue tweet is due, and that tweet's due_at
  due_heads timestamptz[];
  group_sizes bigint[];    -- how many to lock of each
  wanted bigint;
BEGIN
  skipped := 0;
  WITH c AS MATERIALIZED (
    SELECT t.tweet_id, t.due_at, tweetkeeper_internal.reads_today(t.billed_on, t.billed_by, today) AS read_by, t.ctid, t.payload_hash
      FROM tweetkeeper.tweets t
     WHERE t.watch_until IS NOT NULL AND t.due_at <= now() AND t.tweet_id > 0
     ORDER BY t.due_at LIMIT max_size FOR UPDATE SKIP LOCKED)
  SELECT coalesce(array_agg(c.tweet_id), '{}'), coalesce(array_agg(c.due_at), '{}'), coalesce(array_agg(c.ctid), '{}'),
         coalesce(array_agg(c.payload_hash), '{}'),
         ARRAY(SELECT r.name FROM c AS c2 CROSS JOIN LATERAL unnest(c2.read_by) AS r(name))
    INTO held, held_due, held_ctid, held_hash, read_today FROM c;
  IF cardinality(held) < max_size THEN
    SELECT h.delays, h.heads INTO due_delays, due_heads FROM tweetkeeper_internal.delay_heads() h;
    SELECT coalesce(array_agg(d.delay ORDER BY d.delay), '{}'), coalesce(array_agg(d.head ORDER BY d.delay), '{}')
      INTO due_delays, due_heads FROM unnest(due_delays, due_heads) AS d(delay, head) WHERE d.head <= now();
    IF cardinality(due_delays) = 1 THEN
      group_sizes := ARRAY[max_size - cardinality(held)];
    ELSIF cardinality(due_delays) > 1 THEN
      SELECT x.group_sizes, x.wanted INTO group_sizes, wanted
        FROM tweetkeeper_internal.delay_shares(due_delays, due_heads, held, max_size - cardinality(held), claim_order) x;
    END IF;
    WITH c AS MATERIALIZED (
      SELECT l.tweet_id, l.due_at, l.read_by, l.ctid, l.payload_hash
        FROM unnest(due_delays, due_heads, group_sizes) AS g(delay, head, n)
        CROSS JOIN LATERAL (
          SELECT t.tweet_id, t.due_at, tweetkeeper_internal.reads_today(t.billed_on, t.billed_by, today) AS read_by, t.ctid,
                 t.payload_hash
            FROM tweetkeeper.tweets t
           WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
             AND (t.delay, t.due_at) >= (g.delay, g.head)
             AND (t.delay, t.due_at) <= (g.delay, now()) AND t.tweet_id <> ALL (held)
           ORDER BY t.delay, t.due_at LIMIT g.n FOR UPDATE SKIP LOCKED) l
       WHERE g.n > 0)
    SELECT coalesce(array_agg(c.tweet_id), '{}'), coalesce(array_agg(c.due_at), '{}'), coalesce(array_agg(c.ctid), '{}'),
           coalesce(array_agg(c.payload_hash), '{}'),
           ARRAY(SELECT r.name FROM c AS c2 CROSS JOIN LATERAL unnest(c2.read_by) AS r(name))
      INTO got, got_due, got_ctid, got_hash, got_read FROM c;
    IF cardinality(due_delays) = 1 AND cardinality(got) < max_size - cardinality(held) THEN
      -- One delay, fewer locked than asked for: how many of its tweets are due (those another
      -- claim holds were skipped).
      SELECT count(*) INTO wanted
        FROM (SELECT 1 FROM tweetkeeper.tweets t
               WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
                 AND (t.delay, t.due_at) >= (due_delays[1], due_heads[1])
                 AND (t.delay, t.due_at) <= (due_delays[1], now()) AND t.tweet_id <> ALL (held)
               LIMIT max_size - cardinality(held)) x;
    END IF;
    skipped := coalesce(wanted - cardinality(got), 0);
    held := held || got;
    held_due := held_due || got_due;
    held_ctid := held_ctid || got_ctid;
    held_hash := held_hash || got_hash;
    read_today := read_today || got_read;
  END IF;
END $$;


-- The arguments of a claim, X's (claim_batch(): x-v2 or x-v1.1, 1-100 tweets a batch) or the
-- others' (claim_posts(): bluesky 1-25, mastodon 1-20, as endpoint_batch_max() says), checked
-- in the order each claim has always checked them: 22023 naming the wrong one, and the other
-- claim for a provider that is its.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.check_claim(worker text, max_size integer, provider text, x boolean) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  most integer := CASE WHEN x THEN 100 ELSE tweetkeeper_internal.endpoint_batch_max(provider, false) END;
  size_ok boolean := coalesce(max_size BETWEEN 1 AND most, false);
BEGIN
  IF worker IS NULL OR worker = '' THEN
    RAISE EXCEPTION 'worker must be a non-empty name' USING ERRCODE = 'invalid_parameter_value';
  ELSIF x AND NOT size_ok THEN
    RAISE EXCEPTION 'max_size must be between 1 and 100, got %', coalesce(max_size::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  ELSIF x AND provider IN ('bluesky', 'mastodon') THEN
    RAISE EXCEPTION 'provider must be x-v2 or x-v1.1, got %', provider USING ERRCODE = 'invalid_parameter_value',
      HINT = 'Posts of Bluesky and Mastodon are claimed with tweetkeeper.claim_posts().';
  ELSIF x AND (provider IS NULL OR provider NOT IN ('x-v2', 'x-v1.1')) THEN
    RAISE EXCEPTION 'provider must be x-v2 or x-v1.1, got %', coalesce(provider, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  ELSIF NOT x AND (provider IS NULL OR provider NOT IN ('bluesky', 'mastodon')) THEN
    RAISE EXCEPTION 'provider must be bluesky or mastodon, got %', coalesce(provider, 'NULL')
      USING ERRCODE = 'invalid_parameter_value', HINT = 'X''s tweets are claimed with tweetkeeper.claim_batch().';
  ELSIF NOT x AND NOT size_ok THEN
    RAISE EXCEPTION 'max_size must be between 1 and % for %, got %', most, provider, coalesce(max_size::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
END $$;

-- Hands out up to max_size due tweets, oldest due first, under a new lease, together with a
-- credential that still has quota (when credentials are registered for the provider): one
-- request of its window is spent here, atomically with the claim, so any number of workers
-- together never exceed it. Returns no row when nothing may be sent now: nothing due, or fewer
-- than max_size due and the oldest of them due for less than tweetkeeper.buffer_ttl. Returns a
-- row with lease_id NULL, wait_until and wait_reason when tweets are due but no credential
-- among `credentials` (the names the worker holds tokens for; NULL: any) has quota.
-- payload_hashes: for each of tweet_ids, the hex content hash of its last kept payload (NULL:
-- none kept; the whole array NULL when none of them has one), so that a worker hands on only
-- payloads that differ (tweetkeeper.payloads); taken by the claim's locking read, with no lookup
-- of its own.
CREATE OR REPLACE FUNCTION claim_batch(worker text, max_size integer DEFAULT 100,
                            provider text DEFAULT 'x-v2', credentials text[] DEFAULT NULL)
  RETURNS TABLE (lease_id bigint, tweet_ids bigint[], credential text, wait_until timestamptz,
                 wait_reason text, payload_hashes text[])
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  s record := tweetkeeper.settings();
  ids bigint[];
  oldest timestamptz;
  lease bigint;
  cred text;
  quota_mode boolean;
  w record;
  read_today text[];  -- per read of a claimed tweet this UTC day: the credential that read it
  billable integer;
  burst boolean := current_setting('tweetkeeper.spending') = 'burst';
  claim_order text := current_setting('tweetkeeper.claim_order');  -- lateness, young or due
  held bigint[];           -- the locked tweets, their due times and row versions
  held_due timestamptz[];
  held_ctid tid[];
  held_hash bytea[];       -- and their last kept payloads' content hashes (tweets.payload_hash)
  hashes text[];
  skipped bigint;
  l record;
BEGIN
  PERFORM tweetkeeper_internal.check_claim(worker, max_size, provider, true);
  -- Which due tweets, locked (lock_due_tweets() says how they are chosen).
  l := tweetkeeper_internal.lock_due_tweets(max_size, claim_order);
  held := l.held;
  held_due := l.held_due;
  held_ctid := l.held_ctid;
  held_hash := l.held_hash;
  read_today := l.read_today;
  skipped := l.skipped;
  -- (The hashes in the order of the ids, hex; NULL when none of them has a payload kept.)
  SELECT array_agg(x.id ORDER BY x.due, x.id), min(x.due),
         CASE WHEN count(x.hash) > 0 THEN array_agg(encode(x.hash, 'hex') ORDER BY x.due, x.id) END
    INTO ids, oldest, hashes
    FROM unnest(held, held_due, held_hash) AS x(id, due, hash);
  -- A partial batch waits for the buffer TTL. One that found part of its tweets held by a claim
  -- still in progress is left to that claim: sending both halves would spend two requests on one
  -- batch's worth of tweets. A claim commits in milliseconds, so that deference ends a second
  -- past the buffer TTL: a lock held longer (an operator's open transaction) must not stall
  -- every partial batch behind it.
  IF ids IS NULL OR (cardinality(ids) < max_size
                     AND (oldest > now() - s.buffer_ttl
                          OR (skipped > 0 AND oldest > now() - s.buffer_ttl - interval '1 second'))) THEN
    RETURN;
  END IF;

  quota_mode := EXISTS (SELECT 1 FROM tweetkeeper.credentials c WHERE c.provider = claim_batch.provider);
  IF quota_mode THEN
    cred := tweetkeeper_internal.choose_credential(claim_batch.provider, claim_batch.credentials, cardinality(ids), read_today,
                                          burst);
    IF cred IS NULL THEN
      SELECT q.until, q.why INTO w
        FROM tweetkeeper_internal.quota_wait(claim_batch.provider, claim_batch.credentials, cardinality(ids), read_today) q;
      RETURN QUERY SELECT NULL::bigint, NULL::bigint[], NULL::text,
        greatest(coalesce(w.until, now() + interval '1 minute'), now()),
        coalesce(w.why, format('none of this worker''s credentials (%s) is registered for %s',
                               array_to_string(claim_batch.credentials, ', '), claim_batch.provider)),
        NULL::text[];
      RETURN;
    END IF;
  END IF;

  billable := tweetkeeper_internal.billable_reads(cardinality(ids), read_today, cred);
  lease := tweetkeeper_internal.open_lease(worker, ids, held_ctid, oldest, s.lease_ttl, cred, billable, claim_batch.provider, NULL);
  RETURN QUERY SELECT lease, ids, cred, NULL::timestamptz, NULL::text, hashes;
END $$;
COMMENT ON FUNCTION claim_batch(text, integer, text, text[]) IS
  'Claims up to max_size (1-100) due tweets under a new lease (see tweetkeeper.lease_ttl) and, '
  'when credentials are registered, one request of a credential''s quota; with the content hashes '
  'of their last kept payloads.';

-- complete_batch()'s steps. Each runs under complete_batch()'s SECURITY DEFINER and search_path,
-- with the batch's row locked (b) and its tweets' rows as the lease left them; none is granted to
-- anyone. at_now is complete_batch()'s now(); ages and delays the age policy, read once.

-- What store_observations() keeps of the tweets it updated (ids; counts: per tweet, its six
-- counts, retweets, replies, likes, quotes, bookmarks, impressions; changed: whether they differ
-- from the stored ones): their history, their payloads, and no tombstone.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.keep_observed(lease bigint, at_now timestamptz, keep_all boolean, keep_payloads text,
                                         ids bigint[], counts bigint[], changed boolean[], pays jsonb[],
                                         authors jsonb[], hashes bytea[])
  RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO tweetkeeper.metric_history_hot (tweet_id, lease_id, observed_at, retweet_count,
              reply_count, like_count, quote_count, bookmark_count, impression_count)
  SELECT u.id, lease, at_now, counts[u.i][1], counts[u.i][2], counts[u.i][3], counts[u.i][4], counts[u.i][5],
         counts[u.i][6]
    FROM unnest(ids, changed) WITH ORDINALITY AS u(id, changed, i)
   WHERE u.changed OR keep_all;
  IF keep_payloads <> 'none' AND EXISTS (SELECT FROM unnest(pays) AS x(p) WHERE x.p IS NOT NULL) THEN
    -- Payloads (tweetkeeper.payloads): a post's first, or each one whose content differs from
    -- its last stored one (payload_content(): not the counts), compared by hash.
    INSERT INTO tweetkeeper.payloads (tweet_id, seen_at, lease_id, content_hash, payload, author)
    SELECT u.id, at_now, lease, u.hash, u.payload, u.author
      FROM unnest(ids, pays, authors, hashes) AS u(id, payload, author, hash)
     WHERE u.payload IS NOT NULL
       AND CASE WHEN keep_payloads = 'first'
                THEN NOT EXISTS (SELECT 1 FROM tweetkeeper.payloads p
                                  WHERE p.tweet_id = u.id)
                ELSE (SELECT p.content_hash FROM tweetkeeper.payloads p
                       WHERE p.tweet_id = u.id
                       ORDER BY p.seen_at DESC, p.lease_id DESC LIMIT 1) IS DISTINCT FROM u.hash END;
  END IF;
  -- A post seen again is no longer gone.
  DELETE FROM tweetkeeper.tombstones x
   WHERE x.tweet_id = ANY (ids);
END $$;

-- The observations: each of our tweets updated once, its history and payload kept. Returns how
-- many were stored and billed, and the X posts found edited with their newest versions.
-- One update of each of our tweets, which also decides from the row as it was: billed (a found
-- tweet this batch's credential had not read yet this UTC day: bills()) and changed (a count
-- differs from the stored one, or it is the first observation), kept on the row as the lease that
-- last did so (last_billed_lease, last_change_lease: RETURNING sees only the new row, and a second
-- read of each tweet before the update would cost a third of the completion); history stores only
-- changed observations unless keep_all. A count the answer did not give (NULL) keeps the tweet's
-- last known value; history records it as NULL: not reported (observations_in() reads the answer).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.store_observations(lease bigint, observations jsonb, batch_ids bigint[],
                               batch_credential text, keep_payloads text, keep_all boolean,
                               at_now timestamptz, ages interval[], delays interval[],
                               OUT n_observed integer, OUT n_billed integer, OUT edited bigint[],
                               OUT newest bigint[])
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  today date := (at_now AT TIME ZONE 'UTC')::date;
  ids bigint[];
  counts bigint[];  -- per tweet of ids, its six counts (keep_observed())
  changed boolean[];
  pays jsonb[];
  authors jsonb[];
  hashes bytea[];
BEGIN
  WITH upd AS (
    UPDATE tweetkeeper.tweets t
       SET last_billed_lease = CASE  -- X bills; Bluesky and Mastodon do not
             WHEN t.tweet_id > 0 AND tweetkeeper_internal.bills(t.billed_on, t.billed_by, batch_credential, today)
             THEN lease ELSE t.last_billed_lease END,
           last_change_lease = CASE
             WHEN t.update_count = 0
               OR (o.retweet_count IS NOT NULL AND o.retweet_count IS DISTINCT FROM t.retweet_count)
               OR (o.reply_count IS NOT NULL AND o.reply_count IS DISTINCT FROM t.reply_count)
               OR (o.like_count IS NOT NULL AND o.like_count IS DISTINCT FROM t.like_count)
               OR (o.quote_count IS NOT NULL AND o.quote_count IS DISTINCT FROM t.quote_count)
               OR (o.bookmark_count IS NOT NULL AND o.bookmark_count IS DISTINCT FROM t.bookmark_count)
               OR (o.impression_count IS NOT NULL AND o.impression_count IS DISTINCT FROM t.impression_count)
             THEN lease ELSE t.last_change_lease END,
           billed_on = CASE WHEN t.tweet_id > 0 THEN today END,
           billed_by = CASE WHEN t.tweet_id > 0
                            THEN tweetkeeper_internal.billed_by_after(t.billed_on, t.billed_by, batch_credential, today) END,
           retweet_count = coalesce(o.retweet_count, t.retweet_count),
           reply_count = coalesce(o.reply_count, t.reply_count),
           like_count = coalesce(o.like_count, t.like_count),
           quote_count = coalesce(o.quote_count, t.quote_count),
           bookmark_count = coalesce(o.bookmark_count, t.bookmark_count),
           impression_count = coalesce(o.impression_count, t.impression_count),
           updated_at = at_now, update_count = t.update_count + 1, lease_id = NULL, omissions = 0,
           -- A creation time from the answer moves the post to its true age's delay from now on.
           created_at = coalesce(o.created_at, t.created_at),
           -- An edited post is done: its newest version is refreshed in its place (edits).
           -- (the adaptive policy's state, none off it; next_gap(): the delay to the next read, none: done)
           adaptive_state = tweetkeeper_internal.adaptive_after(t, coalesce(o.created_at, t.created_at), o.counts,
                                                       at_now, ages, delays),
           due_at = CASE WHEN NOT o.edited THEN tweetkeeper_internal.after(at_now, tweetkeeper_internal.next_gap(t,
                           coalesce(o.created_at, t.created_at), o.counts, at_now, ages, delays)) END,
           state = CASE WHEN o.edited OR tweetkeeper_internal.next_gap(t, coalesce(o.created_at, t.created_at), o.counts,
                                                              at_now, ages, delays) IS NULL
                        THEN 'done'::tweetkeeper.tweet_state ELSE 'scheduled' END,
           delay = coalesce(tweetkeeper_internal.refresh_delay_at(coalesce(o.created_at, t.created_at), t.watch_every,
                                                         t.watch_until, at_now, ages, delays),
                            t.delay),
           -- An expired watch ends here: the tweet is back on its age schedule.
           watch_every = CASE WHEN t.watch_until > at_now THEN t.watch_every END,
           watch_until = CASE WHEN t.watch_until > at_now THEN t.watch_until END,
           problem_type = CASE WHEN o.edited THEN 'edited' WHEN o.invalid IS NOT NULL THEN 'invalid-count' END,
           problem_detail = CASE WHEN o.edited THEN 'newest version: ' || o.newest_id
                                 ELSE 'not stored, the last known kept: ' || o.invalid END,
           problem_at = CASE WHEN o.edited OR o.invalid IS NOT NULL THEN at_now END,
           -- What the next claim hands the worker: the hash of the last kept payload (the
           -- payloads insert below keeps this one, or the last kept has this hash); under first,
           -- that one is kept.
           payload_hash = CASE WHEN o.content_hash IS NOT NULL AND (keep_payloads = 'changed' OR t.payload_hash IS NULL)
                               THEN o.content_hash ELSE t.payload_hash END
      FROM (SELECT x.*, ARRAY[x.retweet_count, x.reply_count, x.like_count, x.quote_count, x.bookmark_count, x.impression_count] AS counts
              FROM tweetkeeper_internal.observations_in(observations, batch_ids, keep_payloads) x) o
     WHERE t.tweet_id = o.id AND t.lease_id = lease
    RETURNING t.tweet_id, o.retweet_count, o.reply_count, o.like_count, o.quote_count,
              o.bookmark_count, o.impression_count, t.last_billed_lease = lease AS billed,
              t.last_change_lease = lease AS changed, o.payload, o.author, o.content_hash, o.edited, o.newest_id
  )
  -- (What the update returned, as arrays for the statements below, each of one table.)
  SELECT array_agg(u.tweet_id), array_agg(ARRAY[u.retweet_count, u.reply_count, u.like_count, u.quote_count,
                                               u.bookmark_count, u.impression_count]),
         array_agg(u.changed), array_agg(u.payload), array_agg(u.author), array_agg(u.content_hash),
         count(*), count(*) FILTER (WHERE u.billed),
         array_agg(u.tweet_id) FILTER (WHERE u.edited), array_agg(u.newest_id) FILTER (WHERE u.edited)
    INTO ids, counts, changed, pays, authors, hashes, n_observed, n_billed, edited, newest
    FROM upd u;
  IF n_observed > 0 THEN
    PERFORM tweetkeeper_internal.keep_observed(lease, at_now, keep_all, keep_payloads, ids, counts, changed, pays, authors,
                                      hashes);
  END IF;
END $$;

-- Each edited post's newest version is tracked from now on, on its own age schedule (each
-- version has its own counts); the old one is done, linked to it.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.link_edits(edited bigint[], newest bigint[], at_now timestamptz)
  RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  slots bit(64);
BEGIN
  INSERT INTO tweetkeeper.edits (tweet_id, newest_id, seen_at)
  SELECT e.id, e.newest, at_now
    FROM unnest(edited, newest) AS e(id, newest)
  ON CONFLICT ON CONSTRAINT edits_pkey DO UPDATE SET newest_id = excluded.newest_id, seen_at = excluded.seen_at;
  -- The newest versions this node holds are tracked here; the others are handed over to the
  -- node that holds them (a refusal here would lose the batch's paid reads).
  -- (The slots read under the lock a slot's move waits for: none is given up meanwhile.)
  slots := CASE WHEN tweetkeeper_internal.held_slots() IS NOT NULL THEN tweetkeeper_internal.held_slots_locked() END;
  PERFORM tweetkeeper.schedule_tweets(ARRAY(
    SELECT DISTINCT n FROM unnest(newest) AS n
     WHERE tweetkeeper_internal.holds(slots, tweetkeeper.partition_hash('x', '', n::text))));
  IF slots IS NOT NULL THEN
    PERFORM tweetkeeper_internal.hand_over(array_agg('https://x.com/i/web/status/' || n), array_agg(tweetkeeper.snowflake_time(n)), 'edit', NULL)
       FROM (SELECT DISTINCT n FROM unnest(newest) AS n) AS d
      WHERE NOT tweetkeeper_internal.holds(slots, tweetkeeper.partition_hash('x', '', n::text));
  END IF;
END $$;

-- Posts gone (deleted or unavailable; reasons: the problem types that say so, one per id), as a
-- completion (store_problems()) or a follower's stream (delete_followed_posts()) learnt it: their
-- payloads go (X's terms: stored content follows deletions) when erase (unless
-- tweetkeeper.deleted_payloads = keep), and a tombstone says when and why.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.bury(ids bigint[], reasons text[], erase boolean, at_now timestamptz) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  erased bigint[];  -- per payload erased, its post
BEGIN
  IF erase THEN
    WITH gone AS (DELETE FROM tweetkeeper.payloads x WHERE x.tweet_id = ANY (ids) RETURNING x.tweet_id)
    SELECT array_agg(g.tweet_id) INTO erased FROM gone g;
  END IF;
  -- (gone_since: the first time it was found gone; a recheck that finds it gone again keeps it.)
  INSERT INTO tweetkeeper.tombstones AS x (tweet_id, reason, observed_at, payloads_erased, gone_since)
  SELECT g.id, g.reason, at_now, coalesce(cardinality(array_positions(erased, g.id)), 0), at_now
    FROM unnest(ids, reasons) AS g(id, reason)
  ON CONFLICT ON CONSTRAINT tombstones_pkey
    DO UPDATE SET reason = excluded.reason, observed_at = excluded.observed_at,
                  payloads_erased = x.payloads_erased + excluded.payloads_erased;
END $$;

-- A Bluesky account's status, as the network's stream said it (Jetstream's account events, in
-- their order; the last of each DID decides): an account deleted, taken down, suspended or
-- deactivated takes its tracked posts with it at once, without a read (unavailable, reason
-- 'account:<status>', payloads erased unless tweetkeeper.deleted_payloads = keep; looked at again
-- after tweetkeeper.unavailable_recheck, as a hidden post is); an account active again brings back
-- the posts it took (due now: a read confirms them and their counts). Other statuses
-- (desynchronized, throttled: the host's state, not the account's) change nothing. Posts in a batch
-- in flight are left to the batch. Returns how many posts changed. (store_account_status() for a
-- follower's own accounts, store_stream_accounts() for the stream's reader.)
CREATE OR REPLACE FUNCTION tweetkeeper_internal.mark_account_posts(dids text[], actives boolean[], statuses text[])
  RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  erase boolean := current_setting('tweetkeeper.deleted_payloads') = 'erase';
  recheck interval := current_setting('tweetkeeper.unavailable_recheck')::interval;
  gone_ids bigint[];
  gone_reasons text[];
  back bigint;
  ev_dids text[];      -- the last event of each DID: active, or why not (NULL: no change)
  ev_actives boolean[];
  ev_reasons text[];
BEGIN
  IF cardinality(dids) IS DISTINCT FROM cardinality(actives) OR cardinality(dids) IS DISTINCT FROM cardinality(statuses) THEN
    RAISE EXCEPTION 'dids, actives and statuses must be as long as each other' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF cardinality(dids) > 100000 THEN
    RAISE EXCEPTION 'at most 100000 account events at once, got %', cardinality(dids) USING ERRCODE = 'program_limit_exceeded';
  END IF;
  SELECT array_agg(x.did), array_agg(x.active), array_agg(x.reason) INTO ev_dids, ev_actives, ev_reasons
    FROM (SELECT DISTINCT ON (e.did) e.did, e.active,
                 CASE WHEN NOT e.active AND e.status IN ('deleted', 'takendown', 'suspended', 'deactivated')
                      THEN 'account:' || e.status END AS reason
            FROM unnest(dids, actives, statuses) WITH ORDINALITY AS e(did, active, status, i)
           WHERE e.did LIKE 'did:%' AND e.active IS NOT NULL
           ORDER BY e.did, e.i DESC) x;
  WITH g AS (
    UPDATE tweetkeeper.tweets t
       SET state = 'unavailable', due_at = tweetkeeper_internal.after(now(), recheck), delay = recheck,
           watch_every = NULL, watch_until = NULL, omissions = 0,
           problem_type = e.reason, problem_detail = e.reason || ' (seen on the network''s stream)', problem_at = now(),
           payload_hash = CASE WHEN erase THEN NULL ELSE t.payload_hash END
      FROM unnest(ev_dids, ev_reasons) AS e(did, reason)
      JOIN tweetkeeper.post_refs r ON r.network = 'bluesky' AND r.host = '' AND r.author = e.did
     WHERE e.reason IS NOT NULL AND t.tweet_id = r.tweet_id AND t.lease_id IS NULL
       AND t.state <> 'deleted' AND t.problem_type IS DISTINCT FROM e.reason
    RETURNING t.tweet_id, e.reason)
  SELECT array_agg(g.tweet_id), array_agg(g.reason) INTO gone_ids, gone_reasons FROM g;
  IF gone_ids IS NOT NULL THEN
    PERFORM tweetkeeper_internal.bury(gone_ids, gone_reasons, erase, now());
  END IF;
  UPDATE tweetkeeper.tweets t
     SET state = 'scheduled', due_at = now(), omissions = 0,
         problem_detail = 'account active again (seen on the network''s stream)', problem_at = now()
    FROM unnest(ev_dids, ev_actives) AS e(did, active)
    JOIN tweetkeeper.post_refs r ON r.network = 'bluesky' AND r.host = '' AND r.author = e.did
   WHERE e.active AND t.tweet_id = r.tweet_id AND t.lease_id IS NULL
     AND t.state = 'unavailable' AND t.problem_type LIKE 'account:%';
  GET DIAGNOSTICS back = ROW_COUNT;
  RETURN coalesce(cardinality(gone_ids), 0) + back;
END $$;

-- Per-id problems (complete_batch() calls this only when there are some). Deleted: stop, keep
-- the last metrics and when it vanished. Hidden (protected, suspended): keep the last metrics,
-- look again after unavailable_recheck. Anything else is recorded and the tweet stays on its
-- schedule.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.store_problems(lease bigint, problems jsonb, batch_ids bigint[],
                               erase boolean, recheck interval, at_now timestamptz, ages interval[],
                               delays interval[])
  RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n_problems integer;
  gone_ids bigint[];       -- the posts gone (deleted or unavailable), and their types
  gone_types text[];
BEGIN
  WITH p AS (
    SELECT DISTINCT ON (x.id) x.id, x.type, x.detail,
           CASE WHEN x.type = 'resource-not-found' THEN 'deleted'::tweetkeeper.tweet_state
                -- v1.1 answers null for deleted and hidden alike: keep asking, rarely.
                WHEN x.type IN ('not-authorized-for-resource', 'resource-unavailable',
                                'disallowed-resource', 'v1.1-missing') THEN 'unavailable'
                -- A key the API refuses outright (Bluesky: "uris/3 must be a valid at-uri"):
                -- asked again only as rarely as a hidden post, in case the API's rules change.
                WHEN x.type = 'invalid-key' THEN 'missing'
           END AS terminal
      FROM jsonb_to_recordset(problems) AS x(id bigint, type text, detail text)
     WHERE x.id = ANY (batch_ids)
  ), u AS (
  UPDATE tweetkeeper.tweets t
     SET state = coalesce(p.terminal,
                          CASE WHEN tweetkeeper_internal.refresh_delay_at(t.created_at, t.watch_every, t.watch_until,
                                                                 at_now, ages, delays) IS NULL
                               THEN 'done'::tweetkeeper.tweet_state ELSE 'scheduled' END),
         due_at = CASE WHEN p.terminal IN ('unavailable', 'missing') THEN tweetkeeper_internal.after(at_now, recheck)
                       WHEN p.terminal IS NULL
                         THEN tweetkeeper_internal.after(at_now, tweetkeeper_internal.refresh_delay_at(t.created_at, t.watch_every,
                                                          t.watch_until, at_now, ages, delays)) END,
         delay = CASE WHEN p.terminal IN ('unavailable', 'missing') THEN recheck
                      ELSE coalesce(tweetkeeper_internal.refresh_delay_at(t.created_at, t.watch_every, t.watch_until,
                                                                 at_now, ages, delays), t.delay) END,
         -- A watch ends with the tweet's visibility, or when it expired.
         watch_every = CASE WHEN p.terminal IS NULL AND t.watch_until > at_now THEN t.watch_every END,
         watch_until = CASE WHEN p.terminal IS NULL AND t.watch_until > at_now THEN t.watch_until END,
         lease_id = NULL, omissions = 0,
         problem_type = coalesce(p.type, 'unknown'), problem_detail = p.detail, problem_at = at_now,
         -- Its payloads erased by bury() (gone): none kept, so the next one seen is kept.
         payload_hash = CASE WHEN erase AND p.terminal IN ('deleted', 'unavailable') THEN NULL ELSE t.payload_hash END
    FROM p
   WHERE t.tweet_id = p.id AND t.lease_id = lease
  RETURNING t.tweet_id, p.terminal, coalesce(p.type, 'unknown') AS type
  )
  SELECT count(*), array_agg(u.tweet_id) FILTER (WHERE u.terminal IN ('deleted', 'unavailable')),
         array_agg(u.type) FILTER (WHERE u.terminal IN ('deleted', 'unavailable'))
    INTO n_problems, gone_ids, gone_types FROM u;
  IF gone_ids IS NOT NULL THEN
    PERFORM tweetkeeper_internal.bury(gone_ids, gone_types, erase, at_now);
  END IF;
  RETURN n_problems;
END $$;

  -- Ids the answer left out: neither found nor an error (tweets of a lease taken over are
  -- not ours any more and are left alone). Asking again at once would spend a request on
  -- each, every buffer TTL, without end if the API never mentions the id. So: not before the
  -- tweet's normal delay, doubled at each omission in a row (at most unavailable_recheck, if
  -- that is longer); at the missing_after-th in a row it is 'missing', rechecked every
  -- unavailable_recheck like an unavailable tweet. An answer that mentions it again resets
  -- the count. The doubling is done in seconds: an interval would overflow long before.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.put_off_omitted(lease bigint, batch_ids bigint[],
                               missing_after integer, recheck interval, at_now timestamptz,
                               ages interval[], delays interval[])
  RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n_omitted integer;
  erase boolean := current_setting('tweetkeeper.deleted_payloads') = 'erase';
  gone bigint[];  -- the posts missing from now on
BEGIN
  WITH o AS (
    SELECT x.tweet_id, x.n, x.n >= missing_after AND x.state <> 'missing' AND NOT x.kept AS turned, x.kept,
           CASE WHEN x.n >= missing_after OR x.state IN ('unavailable', 'missing') THEN recheck
                ELSE make_interval(secs => greatest(x.base_s, least(extract(epoch FROM recheck)::float8,
                                                                    x.base_s * power(2, least(x.n - 1, 60)))))
           END AS wait
      FROM (SELECT t.tweet_id, t.omissions + 1 AS n, t.state,
                   -- (gone with its account: left out as expected, and the account's reason stays)
                   t.state = 'unavailable' AND t.problem_type LIKE 'account:%' AS kept,
                   extract(epoch FROM coalesce(tweetkeeper_internal.refresh_delay_at(t.created_at, t.watch_every,
                                                 t.watch_until, at_now, ages, delays), t.delay))::float8 AS base_s
              FROM tweetkeeper.tweets t
             WHERE t.tweet_id = ANY (batch_ids) AND t.lease_id = lease) x
  ), u AS (
  UPDATE tweetkeeper.tweets t
     SET omissions = o.n,
         state = CASE WHEN o.n >= missing_after AND NOT o.kept THEN 'missing'::tweetkeeper.tweet_state ELSE t.state END,
         due_at = tweetkeeper_internal.after(at_now, o.wait), delay = o.wait, lease_id = NULL,
         -- A watch ends when the tweet is missing, or when it expired meanwhile (as above).
         watch_every = CASE WHEN o.n < missing_after AND t.watch_until > at_now THEN t.watch_every END,
         watch_until = CASE WHEN o.n < missing_after AND t.watch_until > at_now THEN t.watch_until END,
         problem_type = CASE WHEN o.kept THEN t.problem_type ELSE 'omitted' END,
         problem_detail = 'left out of ' || o.n::text || ' answer(s) in a row', problem_at = at_now,
         -- Its payloads erased by bury() (gone): none kept, so the next one seen is kept.
         payload_hash = CASE WHEN erase AND o.turned THEN NULL ELSE t.payload_hash END
    FROM o
   WHERE t.tweet_id = o.tweet_id AND t.lease_id = lease
  RETURNING t.tweet_id, o.turned
  )
  SELECT count(*), array_agg(u.tweet_id) FILTER (WHERE u.turned) INTO n_omitted, gone FROM u;
  -- Missing from now on: the network left it out of missing_after answers in a row, which is how
  -- Bluesky (getPosts omits deleted and taken-down posts) and Mastodon (statuses omits deleted and
  -- private ones) say it is gone: buried as a deleted post is (a tombstone; payloads erased unless
  -- tweetkeeper.deleted_payloads = keep). Seen again, it comes back.
  IF gone IS NOT NULL THEN
    PERFORM tweetkeeper_internal.bury(gone, array_fill('omitted'::text, ARRAY[cardinality(gone)]), erase, at_now);
  END IF;
  RETURN n_omitted;
END $$;

-- Whether this session holds batch b, to complete or release it. A lease belongs to the session
-- that claimed it (its pid and start time, as the claim recorded them): another session's call is
-- refused (42501) while that one lives, so that no worker can store into, release, or spend the
-- credential of another's batch. A claimer that is gone (a worker that lost its connection and
-- calls again from a new one) finds its batch handed back here, as maintenance() would at its
-- next tick: false, and nothing more happens. Batches claimed before 0.2.0 name no session; with
-- tweetkeeper.reclaim_abandoned off (a connection pooler in transaction mode, where sessions are
-- not workers) the lease id alone fences, as before.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.lease_holder(b tweetkeeper.batches) RETURNS boolean
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF b.claimer_pid IS NULL OR tweetkeeper_internal.session_is(b.claimer_pid, b.claimer_started)
     OR NOT current_setting('tweetkeeper.reclaim_abandoned')::boolean THEN
    RETURN true;
  END IF;
  IF tweetkeeper.backend_alive(b.claimer_pid, b.claimer_started) THEN
    RAISE EXCEPTION 'lease % belongs to another database session (pid %)', b.lease_id, b.claimer_pid
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'A batch is completed or released by the session that claimed it.';
  END IF;
  PERFORM tweetkeeper_internal.abandon_batch(b.lease_id);
  RETURN false;
END $$;

-- Hands back a batch whose claimer is gone (lease_holder(), maintenance()): the batch is
-- `abandoned`, and its tweets are due again at their place in the queue, since the oldest of them
-- was. Nothing happens to a batch that is finished already.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.abandon_batch(lease bigint) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  ids bigint[];
  oldest timestamptz;
BEGIN
  UPDATE tweetkeeper.batches b SET outcome = 'abandoned', finished_at = now(), stored = 0
   WHERE b.lease_id = lease AND b.outcome IS NULL
  RETURNING b.tweet_ids, b.oldest_due_at INTO ids, oldest;
  IF FOUND THEN
    PERFORM tweetkeeper_internal.hand_back(lease, ids, oldest);
  END IF;
END $$;

-- The batch a worker's call names (complete_batch(), release_batch(), complete_handles()), its
-- row locked, when this session holds its lease (lease_holder()); of endpoint `endpoint` when that
-- is given. Else a row of NULLs: unknown (or purged), another endpoint's, handed back here because
-- its claimer is gone, or finished already with an outcome among `finished` (a repeated call, or a
-- batch handed back meanwhile: what was done then stays as it is; with `call`, a NOTICE says
-- "nothing <call>"). (The claimer is nearly always this session: the test of that is inline,
-- lease_holder() is called only when it fails.)
CREATE OR REPLACE FUNCTION tweetkeeper_internal.fenced_batch(lease bigint, endpoint text, finished text[], call text)
  RETURNS tweetkeeper.batches LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  b tweetkeeper.batches;
BEGIN
  SELECT * INTO b FROM tweetkeeper.batches x WHERE x.lease_id = lease FOR UPDATE;
  IF NOT FOUND OR (fenced_batch.endpoint IS NOT NULL AND b.endpoint IS DISTINCT FROM fenced_batch.endpoint)
     OR NOT (tweetkeeper_internal.session_is(b.claimer_pid, b.claimer_started) OR tweetkeeper_internal.lease_holder(b)) THEN
    RETURN NULL;
  END IF;
  IF b.outcome = ANY (finished) THEN
    IF call IS NOT NULL THEN
      RAISE NOTICE 'lease % was % already: nothing %', lease, b.outcome, call
        USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN NULL;
  END IF;
  RETURN b;
END $$;

-- A lease's posts handed back: due again at `due` (or each at its own of dues, in the order of
-- ids), unleased; only those the lease still holds. Returns how many.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.hand_back(lease bigint, ids bigint[], due timestamptz, dues timestamptz[] DEFAULT NULL)
  RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n integer;
BEGIN
  UPDATE tweetkeeper.tweets t SET due_at = coalesce(dues[array_position(ids, t.tweet_id)], due), lease_id = NULL
   WHERE t.tweet_id = ANY (ids) AND t.lease_id = lease;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;

-- Stores a batch's results in one transaction: metrics, history, next due time; per-id problems;
-- hands back the batch's tweets that appear in neither list. Only tweets still held by this
-- lease are touched (fencing), so a late worker cannot overwrite a newer claim's work.
--   observations: [{"id":1,"retweet_count":..,"reply_count":..,"like_count":..,"quote_count":..,
--                   "bookmark_count":..,"impression_count":..}, ...]; with tweetkeeper.payloads on,
--                   also "payload" (the post's object) and, for X, "author" (its user object);
--                   for an edited X post, "newest_id" (the last of its edit_history_tweet_ids);
--                   "content_hash": the payload's hex md5 by payload_content()'s rule (else computed)
--   problems:     [{"id":2,"type":"resource-not-found","detail":"..."}, ...]
--   rate:         the answer's x-rate-limit-* headers, {"limit":..,"remaining":..,"reset":epoch}
-- Returns how many tweets of the batch got a result stored.
CREATE OR REPLACE FUNCTION complete_batch(lease bigint, observations jsonb, problems jsonb DEFAULT '[]',
                               rate jsonb DEFAULT NULL)
  RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  recheck interval;
  b tweetkeeper.batches;
  observed record;   -- store_observations(): n_observed, n_billed, edited, newest
  n_problems integer;
  n_omitted integer := 0;
  missing_after integer;
  keep_all boolean;
  -- Below, now() is at_now and the age policy is read once and given (refresh_delay_at).
  at_now timestamptz := now();
  ages interval[];
  delays interval[];
  keep_payloads text := current_setting('tweetkeeper.payloads');  -- none, first, changed
  erase boolean := current_setting('tweetkeeper.deleted_payloads') = 'erase';
BEGIN
  IF lease IS NULL OR observations IS NULL OR problems IS NULL THEN
    RAISE EXCEPTION 'lease, observations and problems must not be NULL'
      USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF jsonb_typeof(observations) <> 'array' OR jsonb_typeof(problems) <> 'array' THEN
    RAISE EXCEPTION 'observations and problems must be JSON arrays'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- A batch has at most 100 tweets; anything far larger is a bug, not an answer.
  IF jsonb_array_length(observations) + jsonb_array_length(problems) > 1000 THEN
    RAISE EXCEPTION 'observations and problems hold % entries; a batch has at most 100 tweets',
      jsonb_array_length(observations) + jsonb_array_length(problems)
      USING ERRCODE = 'program_limit_exceeded';
  END IF;
  -- (Parsing every id first refuses a malformed one, 22P02, whatever the plans below.)
  PERFORM array_length(ARRAY(SELECT o.id FROM jsonb_to_recordset(observations) AS o(id bigint)), 1);
  -- Unknown, purged, or its session gone (handed back, as maintenance() would have): nothing of
  -- it is ours any more. Or finished already: a repeat (a worker whose connection broke as its
  -- first call committed calls again), or a batch handed back. (An expired lease still stores
  -- what no other claim has taken since: the reads are paid.)
  b := tweetkeeper_internal.fenced_batch(lease, NULL, ARRAY['completed', 'released', 'abandoned'], 'stored');
  IF b.lease_id IS NULL THEN
    RETURN 0;
  END IF;
  SELECT x.history_keep_unchanged, x.missing_after, x.unavailable_recheck
    INTO keep_all, missing_after, recheck FROM tweetkeeper.settings() x;
  SELECT array_agg(p.max_age ORDER BY p.max_age), array_agg(p.delay ORDER BY p.max_age)
    INTO ages, delays FROM tweetkeeper.age_policy p;

  -- (No tweet is read before the update of its row: store_observations() decides from the row
  -- as it was.)
  -- (Steps are called as expressions, x := f(): a query such as SELECT ... FROM f() would go
  -- through the executor, and these run on every completion.)
  -- (Stream counts: a read of a post the stream counts only reconciles it; sql/replaceable/38_stream.sql.)
  observations := tweetkeeper_internal.stream_observations(observations, b.tweet_ids);
  observed := tweetkeeper_internal.store_observations(lease, observations, b.tweet_ids, b.credential, keep_payloads,
                                      keep_all, at_now, ages, delays);
  PERFORM tweetkeeper_internal.stream_put_off(b.tweet_ids, at_now);
  IF observed.edited IS NOT NULL THEN
    -- (At most one per post of this lease, and only a newer id: observations_in(). Counted on
    -- the batch, as each is a read more per refresh from now on.)
    PERFORM tweetkeeper_internal.link_edits(observed.edited, observed.newest, at_now);
    b.edits_followed := cardinality(observed.edited);
  END IF;

  n_problems := CASE WHEN jsonb_array_length(problems) = 0 THEN 0
                     ELSE tweetkeeper_internal.store_problems(lease, problems, b.tweet_ids, erase, recheck,
                                                     at_now, ages, delays) END;

  IF observed.n_observed + n_problems < b.size THEN
    -- Ids the answer left out: neither found nor an error (put_off_omitted() says when to ask
    -- again).
    n_omitted := tweetkeeper_internal.put_off_omitted(lease, b.tweet_ids, missing_after, recheck, at_now,
                                             ages, delays);
  END IF;
  RETURN tweetkeeper_internal.settle_batch(b, observed.n_observed, n_problems, observed.n_billed, n_omitted, rate, at_now);
END $$;
COMMENT ON FUNCTION complete_batch(bigint, jsonb, jsonb, jsonb) IS
  'Stores a claimed batch''s results (metrics, history, reschedule) atomically; returns how many '
  'tweets were stored (fewer than claimed if the lease expired and was taken over).';

-- Hands a whole batch back (due again now), e.g. when the API call failed. `refusal` says what
-- the API said of the credential: rate-limited (429, waits for the window's reset),
-- usage-capped (429, monthly cap: until next month), rejected (401/403); of a Mastodon server,
-- single-status (older than 4.3: one status per request from then on); NULL for anything else.
-- `rate` as in complete_batch.
CREATE OR REPLACE FUNCTION release_batch(lease bigint, reason text DEFAULT NULL, refusal text DEFAULT NULL,
                              rate jsonb DEFAULT NULL) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  b tweetkeeper.batches;
  n integer;
BEGIN
  IF lease IS NULL THEN
    RAISE EXCEPTION 'lease must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF refusal IS NOT NULL AND refusal NOT IN ('rate-limited', 'usage-capped', 'rejected', 'single-status') THEN
    RAISE EXCEPTION 'refusal must be rate-limited, usage-capped, rejected, single-status or NULL, got %', refusal
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Released once: a batch already completed, released, handed back or expired keeps its
  -- record, and what the call says of the credential is not applied (it was, or its lease ended).
  b := tweetkeeper_internal.fenced_batch(lease, NULL, ARRAY['completed', 'released', 'expired', 'abandoned'], 'released');
  IF b.lease_id IS NULL THEN
    RETURN 0;
  END IF;
  n := tweetkeeper_internal.hand_back(lease, b.tweet_ids, now());
  UPDATE tweetkeeper.batches
     SET finished_at = now(), outcome = 'released', stored = 0, reason = release_batch.reason, billed = 0
   WHERE batches.lease_id = lease;
  -- A refused or failed request returned no posts, so it is billed nothing: give back the reads
  -- the claim reserved.
  UPDATE tweetkeeper.credentials c SET month_used = greatest(c.month_used - coalesce(b.billable, 0), 0)
   WHERE c.name = b.credential AND c.month_start = date_trunc('month', b.claimed_at, 'UTC');
  PERFORM tweetkeeper_internal.record_quota(b.credential, rate, refusal, reason);
  -- An answer came if it said something of the window or refused us; not if the request failed.
  PERFORM tweetkeeper_internal.record_endpoint_quota(b.endpoint, rate, refusal, reason,
                                            rate IS NOT NULL OR refusal IS NOT NULL);
  RETURN n;
END $$;
COMMENT ON FUNCTION release_batch(bigint, text, text, jsonb) IS
  'Hands a claimed batch back unharmed (its tweets are due again now); returns how many tweets '
  'were still held by the lease.';
