-- The quota, in one place: which credential a claim of X's tweets may use, and what that spends
-- (choose_credential()); why and until when none may (quota_wait()); what each answer says of a
-- credential's window (record_quota()) or of a Bluesky or Mastodon endpoint's (share_window(),
-- record_endpoint_quota()); and a completion's settling of what the claim reserved
-- (settle_batch(), with the batch). The tables: credentials and daily_usage
-- (sql/schema/25_credentials.sql), endpoints and endpoint_lanes
-- (sql/schema/42_claim_bluesky_mastodon.sql); the stats of it: credential_stats, endpoint_stats,
-- usage_stats (80_stats.sql), capacity (85_cost.sql). The worker's side: worker/runner (waits) and
-- worker/provider/answer_status.cpp (what an answer says).

-- The least recently used of the provider's credentials (of those named, when credentials is not
-- NULL) that has quota for a batch of n_posts posts (read_today: per read of them this UTC day,
-- the credential that read it), with one request of its window and the batch's billable reads
-- of its monthly cap spent on it; NULL when none has.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.choose_credential(provider text, credentials text[], n_posts integer,
                                             read_today text[], burst boolean)
  RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  cred text;
  turned text[];           -- credentials whose window has ended, when it began and ended,
  turned_since timestamptz[];
  turned_until timestamptz[];
  flying_names text[];     -- and those of them with requests of it in flight, how many
  flying bigint[];
BEGIN
  -- A request still in flight when a window ends may reach the API in its next window (a slow
  -- answer, a paused worker): a credential's next window starts with its requests in flight
  -- counted in it, so that the API never sees more than its limit in one of its windows (a
  -- late one did, once: a 429). Looked up only when a window has ended.
  SELECT coalesce(array_agg(x.name), '{}'),
         coalesce(array_agg(coalesce(x.window_started_at, x.window_reset_at - x.window_length)), '{}'),
         coalesce(array_agg(x.window_reset_at), '{}')
    INTO turned, turned_since, turned_until
    FROM tweetkeeper.credentials x WHERE x.provider = choose_credential.provider AND x.window_reset_at <= now();
  IF cardinality(turned) > 0 THEN
    SELECT array_agg(f.credential), array_agg(f.n) INTO flying_names, flying
      FROM (SELECT b.credential, count(*) AS n FROM tweetkeeper.batches b
             WHERE b.outcome IS NULL AND b.credential = ANY (turned)
               AND b.claimed_at >= turned_since[array_position(turned, b.credential)]
               AND b.claimed_at < turned_until[array_position(turned, b.credential)]
             GROUP BY b.credential) f;
  END IF;
  -- The least recently used credential with quota, so that all of them are used. The row
  -- lock serialises claims on one credential; the WHERE clause is rechecked under it. The
  -- monthly cap counts billed reads, reserved here and settled by complete or release. Even
  -- spending (tweetkeeper.spending) also waits for the credential's pace, one request every
  -- window_length / requests_per_window whichever worker sends it (paced_until).
  UPDATE tweetkeeper.credentials c
     SET remaining = CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
                          THEN c.requests_per_window - coalesce(flying[array_position(flying_names, c.name)], 0)
                          ELSE c.remaining END - 1,
         window_reset_at = CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
                                THEN now() + c.window_length ELSE c.window_reset_at END,
         window_started_at = CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
                                  THEN now() ELSE c.window_started_at END,
         month_used = CASE WHEN c.month_start < date_trunc('month', now(), 'UTC') THEN 0
                           ELSE c.month_used END
                      + tweetkeeper_internal.billable_reads(n_posts, read_today, c.name),
         month_start = date_trunc('month', now(), 'UTC'),
         status = 'active', status_reason = NULL, status_until = NULL,
         requests = c.requests + 1, last_used_at = clock_timestamp(),
         -- The k-th request of a window goes no earlier than k paces after our first request
         -- of it (window_started_at, never later than the API's start, unlike its reset,
         -- which the API rounds up), so a busy credential sends exactly its limit in every
         -- window; one that fell behind catches up at no more than twice the pace.
         paced_until = greatest(
           CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
                THEN now() + c.window_length / c.requests_per_window
                ELSE coalesce(c.window_started_at, c.window_reset_at - c.window_length)
                     + (c.requests_per_window - c.remaining + 1) * (c.window_length / c.requests_per_window) END,
           now() + c.window_length / c.requests_per_window / 2)
   WHERE c.name = (
     SELECT x.name FROM tweetkeeper.credentials x
      WHERE x.provider = choose_credential.provider
        AND (choose_credential.credentials IS NULL OR x.name = ANY (choose_credential.credentials))
        -- (A rejection without an end, of 0.4.0 or an operator's, waits for reset_credential.)
        AND (x.status = 'active' OR (x.status IN ('waiting', 'capped', 'rejected') AND x.status_until <= now()))
        AND (x.remaining > 0
             OR (x.window_reset_at <= now()
                 AND coalesce(flying[array_position(flying_names, x.name)], 0) < x.requests_per_window))
        AND (x.monthly_cap IS NULL
             OR CASE WHEN x.month_start < date_trunc('month', now(), 'UTC') THEN 0 ELSE x.month_used END
                + tweetkeeper_internal.billable_reads(n_posts, read_today, x.name) <= x.monthly_cap)
        AND (burst OR x.paced_until IS NULL OR x.paced_until <= now())
      ORDER BY x.last_used_at NULLS FIRST
      LIMIT 1
      FOR UPDATE)
     AND (c.remaining > 0
          OR (c.window_reset_at <= now()
              AND coalesce(flying[array_position(flying_names, c.name)], 0) < c.requests_per_window))
     AND (burst OR c.paced_until IS NULL OR c.paced_until <= now())
  RETURNING c.name INTO cred;
  RETURN cred;
END $$;

-- No credential may send a batch of n_posts now: those whose monthly cap is used up are marked
-- capped, and the answer says until when the first one is free again and why each is not.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.quota_wait(provider text, credentials text[], n_posts integer, read_today text[],
                                      OUT until timestamptz, OUT why text)
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  res_names text[];        -- credentials with reads reserved by batches in flight, and how many
  res_counts bigint[];
BEGIN
  -- A credential whose monthly cap is used up (by settled reads, not reservations of
  -- batches in flight) is capped until next month, as X blocks it, and credential_stats says so.
  -- (The reservations are summed first, and only when a cap may be reached.)
  IF EXISTS (SELECT FROM tweetkeeper.credentials x
              WHERE x.provider = quota_wait.provider AND x.status = 'active'
                AND x.month_start = date_trunc('month', now(), 'UTC') AND x.month_used >= x.monthly_cap) THEN
    SELECT coalesce(array_agg(r.credential), '{}'), coalesce(array_agg(r.n), '{}') INTO res_names, res_counts
      FROM (SELECT b.credential, sum(b.billable) AS n FROM tweetkeeper.batches b
             WHERE b.outcome IS NULL AND b.credential IS NOT NULL GROUP BY b.credential) r;
    UPDATE tweetkeeper.credentials x
       SET status = 'capped', status_until = tweetkeeper.next_month_utc(),
           status_reason = format('monthly cap reached: %s of %s billed reads used', x.month_used,
                                  x.monthly_cap)
     WHERE x.provider = quota_wait.provider AND x.status = 'active'
       AND x.month_start = date_trunc('month', now(), 'UTC')
       AND x.month_used - coalesce(res_counts[array_position(res_names, x.name)], 0) >= x.monthly_cap;
  END IF;
  -- Due tweets, no quota: say until when and why, so the worker can sleep that long. A
  -- reason starting with "paced:" means the first credential free again waits only for
  -- its even pace: normal work, not a shortage.
  SELECT min(v.until) AS until,
         CASE WHEN (array_agg(v.paced ORDER BY v.until))[1] THEN 'paced: ' ELSE '' END
           || string_agg(v.why, ', ' ORDER BY v.name) AS why
    INTO until, why
    FROM tweetkeeper.credentials x
    CROSS JOIN LATERAL (
      SELECT tweetkeeper_internal.billable_reads(n_posts, read_today, x.name) AS need,
             x.status = 'active' AND x.monthly_cap IS NOT NULL
               AND x.month_start = date_trunc('month', now(), 'UTC') AS capped_month) n
    CROSS JOIN LATERAL (
      SELECT x.name,
             CASE WHEN x.status <> 'active' THEN x.status_until
                  WHEN n.capped_month AND x.month_used + n.need > x.monthly_cap
                    THEN tweetkeeper.next_month_utc()
                  WHEN x.remaining <= 0 AND x.window_reset_at > now() THEN x.window_reset_at
                  ELSE greatest(x.paced_until, now()) END AS until,
             x.status = 'active' AND NOT (n.capped_month AND x.month_used + n.need > x.monthly_cap)
               AND NOT (x.remaining <= 0 AND x.window_reset_at > now()) AS paced,
             format('%s %s%s', x.name, x.status,
                    CASE WHEN x.status <> 'active' THEN ': ' || coalesce(x.status_reason, '')
                         WHEN n.capped_month AND x.month_used + n.need > x.monthly_cap
                           THEN format(' (monthly cap: %s of %s billed reads left, the batch needs %s)',
                                       x.monthly_cap - x.month_used, x.monthly_cap, n.need)
                         WHEN x.remaining <= 0 AND x.window_reset_at > now() THEN ' (window used up)'
                         ELSE format(' (one request every %s)', x.window_length / x.requests_per_window)
                    END) AS why) v
   WHERE x.provider = quota_wait.provider
     AND (quota_wait.credentials IS NULL OR x.name = ANY (quota_wait.credentials));
END $$;

-- "Record an answer", the rule every budget (X's credentials, Bluesky's and Mastodon's endpoints)
-- follows, in three parts that record_quota() and record_endpoint_quota() share:
-- What an answer said of its window, as the worker read its headers: {"limit":15,"remaining":3,
-- "reset":1700000000}. A reset is at most `longest` away: a later one, from a confused or hostile
-- answer, would park the credential or endpoint for as long as it said.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.answer_window(rate jsonb, longest interval, OUT lim integer, OUT remaining integer,
                                         OUT reset timestamptz)
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  lim := (rate ->> 'limit')::integer;
  remaining := (rate ->> 'remaining')::integer;
  reset := to_timestamp((rate ->> 'reset')::double precision);
  IF reset > now() + longest THEN
    reset := now() + longest;
  END IF;
END $$;

-- What a refusal makes of a credential (kind credential) or an endpoint (kind endpoint): its
-- status, until when, and why (detail, the answer's words, else the refusal's). Every refusal
-- state ends on a schedule: rate-limited (429) at the window's reset (`reset`, NULL: unknown),
-- usage-capped (X's monthly cap) at the next UTC month, rejected (401/403: a credential
-- rejected, a server that wants a token) after tweetkeeper.rejected_recheck (a token renewed
-- meanwhile works again; a worker that reports a refusal falsely parks it that long, not for
-- good). NULLs for no refusal, or one that is not of this kind.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.refusal_state(kind text, refusal text, reset timestamptz, detail text,
                                         OUT status text, OUT until timestamptz, OUT reason text)
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF refusal = 'rate-limited' THEN
    status := 'waiting';
    until := reset;
    reason := coalesce(detail, 'Too Many Requests');
  ELSIF refusal = 'usage-capped' AND kind = 'credential' THEN
    status := 'capped';
    until := tweetkeeper.next_month_utc();
    reason := coalesce(detail, 'Usage cap exceeded');
  ELSIF refusal = 'rejected' THEN
    status := CASE kind WHEN 'credential' THEN 'rejected' ELSE 'needs-token' END;
    until := now() + current_setting('tweetkeeper.rejected_recheck')::interval;
    reason := coalesce(detail, 'rejected');
  END IF;
END $$;

-- An answer whose window resets later than the one we hold (or when we hold none: an endpoint
-- whose reset passed, until an answer says when the next ends) speaks of a window of the API's
-- that began after ours (our window starts at our first claim, the API's at the first request it
-- receives, and a request of our window's end can reach it once its window is over): that window
-- is the one our requests now go to, so it becomes ours, and what it has left is the API's count
-- less our requests still in flight (batches of this credential or endpoint claimed and not
-- answered; the answering one is settled before), which it may not have counted yet: taking its
-- count whole could send that many requests over its window (a 429); taking only its reset,
-- with what our old window had left (nothing, at its end), held every request back for a whole
-- window the API had open (make bench-shortage, issue 49). NULL: the answer is not of a later
-- window (or says nothing of what is left), and the caller compares it with ours.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.later_window_left(held_reset timestamptz, api_remaining integer,
                                             api_reset timestamptz, credential text, endpoint text)
  RETURNS integer LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN CASE WHEN api_remaining IS NOT NULL AND (held_reset IS NULL OR api_reset > held_reset)
              THEN greatest(api_remaining - (SELECT count(*) FROM tweetkeeper.batches b
                                            WHERE b.outcome IS NULL
                                              AND (b.credential = later_window_left.credential
                                                   OR b.endpoint = later_window_left.endpoint)), 0) END;

-- Applies what the API said about a credential's quota: the x-rate-limit-* headers
-- (answer_window(), later_window_left()), and what kind of refusal, if any (refusal_state()).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.record_quota(credential text, rate jsonb, refusal text, detail text)
  RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  a record;
  r record;
  cur record;
  later_left integer;  -- an answer of a later window than ours: what it has left for us
  aligned boolean;     -- on a partition: the API's window taken as ours
  part_left integer;   -- ... and what is left of this node's share of it
BEGIN
  IF credential IS NULL THEN
    RETURN;
  END IF;
  SELECT x.window_reset_at, x.window_length, x.requests_per_window INTO cur FROM tweetkeeper.credentials x WHERE x.name = credential;
  -- (A reset is at most one window away.)
  a := tweetkeeper_internal.answer_window(rate, cur.window_length);
  r := tweetkeeper_internal.refusal_state('credential', refusal, a.reset, detail);
  -- The API's word wins where it is stricter than ours: a smaller remaining, a later reset.
  -- A larger remaining does not: other requests of this window may still be in flight, not
  -- yet counted by the API (taking it made one 429 per window in tests/integration/quota.sh).
  -- An answer from a window older than ours says nothing about ours.
  -- One of a later window makes it ours (later_window_left()), its start no later than the
  -- API's (its reset is rounded up to the second), for the pace.
  later_left := tweetkeeper_internal.later_window_left(cur.window_reset_at, a.remaining, a.reset, credential, NULL);
  -- On a partition (docs/partitions.md) the API's window and limit are the whole cluster's: the
  -- node takes its share of the limit (node_share()) and the API's window as its own, whenever it
  -- began (another node's first request may have started it before ours did: two windows out of
  -- step would let a node spend its share twice in one of the API's), with what is left of its
  -- share: less what it claimed since the window began (node_window_left(), a second early, as
  -- the API rounds its reset up). Once per window: when the API's window is ours already, our
  -- count of what is left is exact and the answers are read as on one node.
  aligned := tweetkeeper_internal.held_slots() IS NOT NULL AND a.reset IS NOT NULL AND a.remaining IS NOT NULL
             AND r.status IS DISTINCT FROM 'waiting' AND a.reset IS DISTINCT FROM cur.window_reset_at
             AND (cur.window_reset_at IS NULL OR a.reset > cur.window_reset_at - cur.window_length);
  IF aligned THEN
    part_left := tweetkeeper_internal.node_window_left(least(cur.requests_per_window, tweetkeeper_internal.node_share(a.lim)),
                                                      a.reset - cur.window_length - interval '1 second', credential, NULL);
  END IF;
  -- A limit smaller than the registered one is the API's to set: kept, so that the pace (one
  -- request every window_length / requests_per_window, counted from remaining) follows it. With
  -- the registered one, the requests the API counts as used would look like thousands and hold
  -- the credential back until the window's end (found by tests/integration/prometheus.sh).
  -- A 429 ends the window: nothing remains until its reset (ours, or a window from now when
  -- neither is known). (A rejection without an end, 0.4.0's or one an operator sets, waits for
  -- reset_credential().)
  UPDATE tweetkeeper.credentials c
     SET requests_per_window = CASE WHEN a.lim > 0 AND tweetkeeper_internal.node_share(a.lim) < c.requests_per_window
                                    THEN tweetkeeper_internal.node_share(a.lim) ELSE c.requests_per_window END,
         remaining = CASE WHEN r.status = 'waiting' THEN 0
                          WHEN aligned THEN least(part_left, coalesce(later_left, a.remaining))
                          WHEN a.remaining IS NULL THEN c.remaining
                          WHEN a.reset IS NOT NULL AND c.window_reset_at IS NOT NULL
                               AND a.reset <= c.window_reset_at - c.window_length THEN c.remaining
                          WHEN later_left IS NOT NULL THEN later_left
                          ELSE least(c.remaining, a.remaining) END,
         window_started_at = CASE WHEN aligned THEN a.reset - c.window_length - interval '1 second'
                                  WHEN later_left IS NOT NULL
                                  THEN greatest(c.window_started_at, a.reset - c.window_length - interval '1 second')
                                  ELSE c.window_started_at END,
         window_reset_at = CASE WHEN r.status = 'waiting' THEN coalesce(a.reset, c.window_reset_at, now() + c.window_length)
                                WHEN aligned THEN a.reset
                                ELSE greatest(c.window_reset_at, a.reset) END,
         status = coalesce(r.status::tweetkeeper.credential_status, c.status),
         status_until = CASE WHEN r.status = 'waiting' THEN coalesce(a.reset, c.window_reset_at, now() + c.window_length)
                             WHEN r.status IS NOT NULL THEN r.until ELSE c.status_until END,
         status_reason = CASE WHEN r.status IS NOT NULL THEN r.reason ELSE c.status_reason END
   WHERE c.name = credential;
END $$;

-- Moves a share of what an endpoint's window has left into a free lane (endpoint_lanes), for the
-- claims after the one that calls it (claim_posts(), holding the endpoint's row lock): all of it
-- without a stated window; else a 64th (the 8 lanes together hold at most an eighth of what is
-- left), at least 1; none while the window's end is unknown (after a reset, until an answer says).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.share_window(ep text) RETURNS void LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  lanes constant integer := 8;  -- more than claims of one endpoint at once, on this machine
  x record;
  share integer;
BEGIN
  SELECT * INTO x FROM tweetkeeper.endpoints e WHERE e.endpoint = ep;
  share := CASE WHEN x.requests_per_window IS NULL THEN 2147483647
                WHEN x.window_reset_at > now() AND x.remaining > 0 THEN greatest(1, x.remaining / (8 * lanes))
                ELSE 0 END;
  IF share = 0 THEN
    RETURN;
  END IF;
  INSERT INTO tweetkeeper.endpoint_lanes (endpoint, lane)
  SELECT ep, k FROM generate_series(0, lanes - 1) k
   WHERE NOT EXISTS (SELECT FROM tweetkeeper.endpoint_lanes l WHERE l.endpoint = ep)
  ON CONFLICT DO NOTHING;
  UPDATE tweetkeeper.endpoint_lanes l
     SET granted = share,
         valid_until = CASE WHEN x.requests_per_window IS NULL THEN 'infinity' ELSE x.window_reset_at END
   WHERE l.endpoint = ep
     AND l.lane = (SELECT f.lane FROM tweetkeeper.endpoint_lanes f
                    WHERE f.endpoint = ep AND NOT (f.granted > 0 AND f.valid_until > now())
                    ORDER BY f.lane LIMIT 1 FOR UPDATE SKIP LOCKED);
  IF FOUND AND x.requests_per_window IS NOT NULL THEN
    UPDATE tweetkeeper.endpoints e SET remaining = e.remaining - share WHERE e.endpoint = ep;
  END IF;
END $$;

-- Applies what an endpoint's answer said of its window, as record_quota() does for X's
-- credentials: rate {"limit":..,"remaining":..,"reset":epoch}; refusal rate-limited (429: wait
-- for the reset), rejected (401: the server wants a token; no request until one is given).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.record_endpoint_quota(endpoint text, rate jsonb, refusal text, detail text,
                                      answered boolean)
  RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  -- (A reset at most an hour away: both networks' read windows are 5 minutes.)
  a record := tweetkeeper_internal.answer_window(rate, interval '1 hour');
  api_remaining integer := a.remaining;
  -- (On a partition, its share of the API's limit, which is the cluster's: node_share().)
  api_limit integer := CASE WHEN a.lim > 0 THEN tweetkeeper_internal.node_share(a.lim) ELSE a.lim END;
  api_reset timestamptz := a.reset;
  -- (A 429 without a reset waits a minute.)
  r record := tweetkeeper_internal.refusal_state('endpoint', refusal, coalesce(a.reset, now() + interval '1 minute'), detail);
  cur record;
  held integer;  -- requests of the current window the lanes hold
  later_left integer;  -- an answer of a later window than ours: what it has left for us
BEGIN
  IF endpoint IS NULL THEN
    RETURN;
  END IF;
  -- The API's word wins where it is stricter (as for credentials): a smaller remaining than
  -- ours (what the row has left plus what its lanes hold), a later reset (its window becomes
  -- ours, later_window_left()); an answer of an older window says nothing about this one. Most
  -- answers say nothing new (the claims count requests down before the API does): then the rows
  -- are left alone, not even locked, so that completions do not queue on them behind each other
  -- and the claims.
  SELECT e.*, (SELECT coalesce(sum(l.granted), 0) FROM tweetkeeper.endpoint_lanes l
                WHERE l.endpoint = e.endpoint AND l.granted > 0 AND l.valid_until > now()
                  AND l.valid_until < 'infinity') AS held
    INTO cur FROM tweetkeeper.endpoints e WHERE e.endpoint = record_endpoint_quota.endpoint;
  IF NOT FOUND OR NOT coalesce((answered AND cur.answered_at IS NULL)
                       OR (api_limit > 0 AND api_limit IS DISTINCT FROM cur.requests_per_window)
                       OR api_reset > coalesce(cur.window_reset_at, '-infinity')
                       OR (api_remaining IS NOT NULL AND (cur.window_reset_at IS NULL OR api_reset IS NULL OR cur.remaining IS NULL))
                       OR (api_reset = cur.window_reset_at AND api_remaining < cur.remaining + cur.held)
                       OR refusal IN ('rate-limited', 'rejected'), false) THEN
    RETURN;
  END IF;
  -- Something new: the row locked (whether the answer is of a later window read from its newest
  -- version), then its lanes emptied (the lock order of claim_posts), and what they held of the
  -- current window counted back before the answer is compared.
  SELECT tweetkeeper_internal.later_window_left(e.window_reset_at, api_remaining, api_reset, NULL, e.endpoint)
    INTO later_left FROM tweetkeeper.endpoints e WHERE e.endpoint = record_endpoint_quota.endpoint FOR UPDATE;
  -- On a partition, of a later window no more than its share less what it claimed since the
  -- window began (both networks' read windows are 5 minutes).
  IF later_left IS NOT NULL THEN
    later_left := least(later_left, tweetkeeper_internal.node_window_left(coalesce(api_limit, cur.requests_per_window),
                                                                          api_reset - interval '5 minutes', NULL, endpoint));
  END IF;
  WITH taken AS (
    UPDATE tweetkeeper.endpoint_lanes l SET granted = 0
      FROM (SELECT f.lane, f.granted, f.valid_until FROM tweetkeeper.endpoint_lanes f
             WHERE f.endpoint = record_endpoint_quota.endpoint AND f.granted > 0 FOR UPDATE) o
     WHERE l.endpoint = record_endpoint_quota.endpoint AND l.lane = o.lane
    RETURNING o.granted, o.valid_until)
  SELECT coalesce(sum(t.granted) FILTER (WHERE t.valid_until > now() AND t.valid_until < 'infinity'), 0)
    INTO held FROM taken t;
  -- A refusal (refusal_state()) sets the status; a 429 ends the window until its reset. A
  -- Mastodon server older than 4.3 (no GET /api/v1/statuses, refusal single-status): its batches
  -- hold one status from now on (GET /api/v1/statuses/:id), within the same window.
  UPDATE tweetkeeper.endpoints x
     SET requests_per_window = coalesce(CASE WHEN api_limit > 0 THEN api_limit END, x.requests_per_window),
         remaining = CASE WHEN r.status = 'waiting' THEN 0
                          WHEN api_remaining IS NULL THEN x.remaining + held
                          WHEN later_left IS NOT NULL THEN later_left
                          WHEN api_reset < x.window_reset_at THEN x.remaining + held
                          ELSE least(x.remaining + held, api_remaining) END,
         window_reset_at = CASE WHEN r.status = 'waiting' THEN r.until ELSE greatest(x.window_reset_at, api_reset) END,
         answered_at = CASE WHEN answered AND x.answered_at IS NULL THEN now() ELSE x.answered_at END,
         status = coalesce(r.status, x.status),
         status_until = CASE WHEN r.status IS NOT NULL THEN r.until ELSE x.status_until END,
         status_reason = CASE WHEN r.status IS NOT NULL THEN r.reason
                              WHEN refusal = 'single-status' THEN detail ELSE x.status_reason END,
         single_status = CASE WHEN refusal = 'single-status' THEN true ELSE x.single_status END
   WHERE x.endpoint = record_endpoint_quota.endpoint;
END $$;

-- The batch's record settled (completed, or left abandoned), and its credential's or endpoint's
-- quota from what the claim reserved and the answer said. Returns how many of its posts got a
-- result stored (complete_batch()'s answer).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.settle_batch(b tweetkeeper.batches, n_observed integer,
                               n_problems integer, n_billed integer, n_omitted integer, rate jsonb,
                               at_now timestamptz)
  RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  lease bigint := b.lease_id;
BEGIN
  IF b.outcome IS NOT NULL THEN
    -- A late answer (the batch expired or was abandoned meanwhile): the API read and billed the
    -- posts, but nothing was stored here. Count what the claim reserved.
    n_billed := coalesce(b.billable, 0);
  END IF;
  -- An abandoned batch stays abandoned: its tweets were handed back, nothing was stored. Either
  -- way the request was answered, for usage_stats (and daily_usage once the batch is purged):
  -- kept on the batch, not added to a shared row, on which concurrent completions would queue.
  UPDATE tweetkeeper.batches
     SET finished_at = CASE WHEN outcome = 'abandoned' THEN finished_at ELSE at_now END,
         outcome = CASE WHEN outcome = 'abandoned' THEN outcome ELSE 'completed' END,
         stored = CASE WHEN outcome = 'abandoned' THEN stored ELSE n_observed + n_problems END,
         billed = n_billed,
         tweets_read = CASE WHEN b.outcome IS NULL THEN n_observed ELSE coalesce(b.billable, 0) END,
         omitted = n_omitted,
         edits_followed = b.edits_followed
   WHERE batches.lease_id = lease;
  IF b.credential IS NOT NULL THEN
    -- The claim reserved b.billable reads of the monthly cap; settle to what was billed.
    UPDATE tweetkeeper.credentials c
       SET month_used = greatest(c.month_used + n_billed - coalesce(b.billable, 0), 0)
     WHERE c.name = b.credential AND c.month_start = date_trunc('month', b.claimed_at, 'UTC');
    PERFORM tweetkeeper_internal.record_quota(b.credential, rate, NULL, NULL);
  END IF;
  PERFORM tweetkeeper_internal.record_endpoint_quota(b.endpoint, rate, NULL, NULL, true);
  RETURN n_observed + n_problems;
END $$;

-- Whether an endpoint may be asked now, as its row says (read without a lock; the claim's count
-- of the request checks again under one): its row (created for an endpoint never heard from,
-- which is asked once at a time until it answers), or why not (why) and until when (until, NULL
-- when only another worker can ask it: one holding its token).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.endpoint_hold(ep text, tokens text[], OUT answered_at timestamptz,
                                         OUT single_status boolean, OUT why text, OUT until timestamptz)
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  q record;
BEGIN
  -- The endpoint's row is read without a lock: every claim of a busy endpoint (Bluesky has
  -- one) would otherwise queue on it from here to its commit. It is locked below, by the
  -- update that counts the request, which checks the window again on the row's newest version.
  SELECT * INTO q FROM tweetkeeper.endpoints x WHERE x.endpoint = ep;
  IF NOT FOUND OR q.answered_at IS NULL THEN
    -- An endpoint that never answered is asked once at a time until it does: its first answer
    -- says whether it wants a token, how many requests it takes, whether it is older than 4.3.
    -- Concurrent first requests would each be refused alike (each a request spent for
    -- nothing). Its row is locked first, so that of two such claims the second sees the
    -- first's batch. A probe whose worker died is handed back (abandoned, expired), and
    -- another goes.
    INSERT INTO tweetkeeper.endpoints AS x (endpoint) VALUES (ep) ON CONFLICT DO NOTHING;
    SELECT * INTO q FROM tweetkeeper.endpoints x WHERE x.endpoint = ep FOR UPDATE;
    IF q.answered_at IS NULL THEN
      PERFORM FROM tweetkeeper.batches b WHERE b.outcome IS NULL AND b.endpoint = ep LIMIT 1;
      IF FOUND THEN
        why := format('%s: its first request is in flight', ep);
        RETURN;
      END IF;
    END IF;
  END IF;
  IF q.status = 'needs-token' AND coalesce(q.status_until > now(), true) AND NOT substr(ep, 10) = ANY (coalesce(tokens, '{}')) THEN
    why := format('%s needs a token: %s', ep, q.status_reason);
    RETURN;
  END IF;
  IF q.status = 'waiting' AND q.status_until > now() THEN
    why := format('%s waiting: %s', ep, q.status_reason);
    until := q.status_until;
    RETURN;
  END IF;
  IF q.remaining <= 0 AND q.window_reset_at > now()
     AND NOT EXISTS (SELECT FROM tweetkeeper.endpoint_lanes l
                      WHERE l.endpoint = ep AND l.granted > 0 AND l.valid_until > now()) THEN
    why := format('%s window used up', ep);
    until := q.window_reset_at;
    RETURN;
  END IF;
  answered_at := q.answered_at;
  single_status := q.single_status;
END $$;

-- One request of an endpoint's window counted for a claim (last in the claim: a lock taken here
-- is held to the commit), from a lane when one holds requests, else on the endpoint's row under
-- its lock; false when the window was taken meanwhile or the endpoint refused (a 429 or 401
-- recorded meanwhile).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.count_endpoint_request(ep text, tokens text[], answered_at timestamptz)
  RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  was_answered timestamptz;
BEGIN
  -- One request of the window, counted last: a lock taken here is held to the commit. First
  -- from a lane (endpoint_lanes): one that holds requests of the window and that no other
  -- claim holds. A 429 or 401 recorded meanwhile emptied the lanes (under their locks), so
  -- one found here still holds.
  UPDATE tweetkeeper.endpoint_lanes l
     SET granted = l.granted - 1, requests = l.requests + 1, last_used_at = clock_timestamp()
   WHERE count_endpoint_request.answered_at IS NOT NULL AND l.endpoint = ep
     AND l.lane = (SELECT f.lane FROM tweetkeeper.endpoint_lanes f
                    WHERE f.endpoint = ep AND f.granted > 0 AND f.valid_until > now()
                    ORDER BY f.lane LIMIT 1 FOR UPDATE SKIP LOCKED);
  IF NOT FOUND THEN
    -- Else on the endpoint's row, under its lock, on its newest version: the checks above are
    -- made again there, so no two claims take the window's last request, and a 429 or 401
    -- recorded meanwhile holds.
    UPDATE tweetkeeper.endpoints x
       -- A window whose reset has passed starts again at its limit; its end is unknown until an
       -- answer says (record_endpoint_quota), and requests are counted down meanwhile.
       SET remaining = CASE WHEN x.window_reset_at <= now() THEN x.requests_per_window ELSE x.remaining END - 1,
           window_reset_at = CASE WHEN x.window_reset_at <= now() THEN NULL ELSE x.window_reset_at END,
           -- A server that wants a token keeps saying so: only workers holding one claim its
           -- statuses (a worker without would spend a request on another 401 each time).
           status = CASE WHEN x.status = 'needs-token' AND coalesce(x.status_until > now(), true) THEN x.status ELSE 'active' END,
           status_reason = CASE WHEN x.status = 'needs-token' AND coalesce(x.status_until > now(), true) THEN x.status_reason END,
           status_until = CASE WHEN x.status = 'needs-token' AND x.status_until > now() THEN x.status_until END,
           requests = x.requests + 1, last_used_at = clock_timestamp()
     WHERE x.endpoint = ep
       AND (x.status <> 'needs-token' OR x.status_until <= now() OR substr(x.endpoint, 10) = ANY (coalesce(tokens, '{}')))
       AND NOT coalesce(x.status = 'waiting' AND x.status_until > now(), false)
       AND NOT coalesce(x.remaining <= 0 AND x.window_reset_at > now(), false)
    RETURNING x.answered_at INTO was_answered;
    IF NOT FOUND THEN
      RETURN false;
    END IF;
    IF was_answered IS NOT NULL THEN
      PERFORM tweetkeeper_internal.share_window(ep);
    END IF;
  END IF;
  RETURN true;
END $$;
