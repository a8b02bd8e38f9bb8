-- Posts past their last refresh (state done) are checked for deletion every
-- tweetkeeper.done_recheck (30 days; 0: never), as cheaply as each network allows (issue 53):
-- Bluesky's and Mastodon's by batch reads (getPosts 25 a request, statuses 20: due again for one
-- read, which stores their counts too and, left out, finds them missing), X's by batch compliance
-- jobs (one request creates a job of up to 100,000 ids, which X answers with the ids out of
-- compliance and why: no post read, none billed as a read). rechecks says what that costs.

-- Bluesky's and Mastodon's posts due for a check, at most max_posts (the longest unchecked first):
-- due now for one read. Their delay is 15 minutes, so that a post the answer leaves out is asked
-- again soon and found missing within the hour (put_off_omitted()), not a recheck later. Run by
-- maintenance(). Returns how many.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.recheck_done_posts(max_posts integer) RETURNS integer
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  recheck interval := current_setting('tweetkeeper.done_recheck')::interval;
  n integer;
BEGIN
  IF recheck <= interval '0' THEN
    RETURN 0;
  END IF;
  UPDATE tweetkeeper.tweets t
     SET state = 'scheduled', due_at = now(), delay = interval '15 minutes', omissions = 0
    FROM (SELECT d.tweet_id FROM tweetkeeper.tweets d
           WHERE d.state = 'done' AND d.tweet_id < 0 AND greatest(d.updated_at, d.rechecked_at, d.created_at) < now() - recheck
           ORDER BY greatest(d.updated_at, d.rechecked_at, d.created_at) LIMIT max_posts
           FOR UPDATE SKIP LOCKED) d
   WHERE t.tweet_id = d.tweet_id;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;

-- A compliance job this session holds (its row locked), else 55000.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.held_compliance_job(id bigint) RETURNS tweetkeeper.compliance_jobs
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  j tweetkeeper.compliance_jobs;
BEGIN
  SELECT * INTO j FROM tweetkeeper.compliance_jobs c WHERE c.job_id = id FOR UPDATE;
  IF NOT FOUND OR NOT tweetkeeper_internal.session_is(j.lease_pid, j.lease_started) THEN
    RAISE EXCEPTION 'compliance job % is not leased by this session', id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Take it with compliance_claim(); another worker may hold it now.';
  END IF;
  IF j.finished_at IS NOT NULL THEN
    RAISE EXCEPTION 'compliance job % is finished (%)', id, j.status USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  RETURN j;
END $$;

-- An X worker's claim of its credential's compliance job: the open one (its lease renewed, or taken
-- over once its holder's lease ran out or its session ended: the job is resumed from X's job id),
-- else a new one of up to max_ids X posts due for a check (the longest unchecked first), or no row
-- (nothing due, done_recheck 0, or another session runs this credential's job). A new job's posts
-- are not picked again for a day unless it completes (a job that fails leaves them due again then).
CREATE OR REPLACE FUNCTION compliance_claim(worker text, credential text, max_ids integer DEFAULT 100000,
                                            lease interval DEFAULT '10 minutes')
  RETURNS TABLE (job_id bigint, x_job_id text, status text, tweet_ids bigint[])
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  loaded record := tweetkeeper.settings();  -- (loads the module, which defines the settings)
  recheck interval := current_setting('tweetkeeper.done_recheck')::interval;
  j tweetkeeper.compliance_jobs;
  ids bigint[];
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('worker, credential, max_ids and lease',
                                    worker IS NULL OR credential IS NULL OR max_ids IS NULL OR lease IS NULL);
  IF max_ids NOT BETWEEN 1 AND 1000000 OR lease NOT BETWEEN interval '1 minute' AND interval '1 day' THEN
    RAISE EXCEPTION 'max_ids must be 1 to 1000000 and lease 1 minute to 1 day, got % and %', max_ids, lease
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- (The worker's name for its token: registered with add_credential() or not, as claims take it.)
  IF credential = '' OR length(credential) > 200 THEN
    RAISE EXCEPTION 'credential must be a name of 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- (One claim of a credential's job at a time.)
  PERFORM pg_advisory_xact_lock(hashtextextended('compliance_claim ' || credential, 0));
  SELECT * INTO j FROM tweetkeeper.compliance_jobs c
   WHERE c.credential = compliance_claim.credential AND c.finished_at IS NULL FOR UPDATE;
  IF FOUND THEN
    IF NOT tweetkeeper_internal.session_is(j.lease_pid, j.lease_started) AND j.lease_until >= now()
       AND tweetkeeper.backend_alive(j.lease_pid, j.lease_started) THEN
      RETURN;  -- another worker runs it
    END IF;
  ELSE
    IF recheck <= interval '0' THEN
      RETURN;
    END IF;
    SELECT array_agg(d.tweet_id ORDER BY d.tweet_id) INTO ids
      FROM (SELECT t.tweet_id FROM tweetkeeper.tweets t
             WHERE t.state = 'done' AND t.tweet_id > 0 AND greatest(t.updated_at, t.rechecked_at, t.created_at) < now() - recheck
             ORDER BY greatest(t.updated_at, t.rechecked_at, t.created_at) LIMIT max_ids) d;
    IF ids IS NULL THEN
      RETURN;
    END IF;
    UPDATE tweetkeeper.tweets t SET rechecked_at = now() - recheck + interval '1 day' WHERE t.tweet_id = ANY (ids);
    INSERT INTO tweetkeeper.compliance_jobs (credential, tweet_ids) VALUES (compliance_claim.credential, ids)
    RETURNING * INTO j;
  END IF;
  UPDATE tweetkeeper.compliance_jobs c
     SET lease_owner = worker, lease_pid = pg_backend_pid(), lease_started = tweetkeeper_internal.backend_start(),
         lease_until = now() + lease
   WHERE c.job_id = j.job_id;
  RETURN QUERY SELECT j.job_id, j.x_job_id, j.status, j.tweet_ids;
END $$;

-- Where a job stands at X: created (with X's job id, which never changes after), in_progress, or
-- finished without results (failed, expired: detail says why; its posts are due again within a
-- day). A job X would not create (x_job_id NULL) is failed too, so that the next is tried then.
-- Under the job's lease.
CREATE OR REPLACE FUNCTION compliance_update(job_id bigint, x_job_id text, status text, detail text DEFAULT NULL)
  RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  j tweetkeeper.compliance_jobs;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('job_id and status', job_id IS NULL OR status IS NULL);
  IF status NOT IN ('created', 'in_progress', 'failed', 'expired') OR x_job_id !~ '^[0-9]{1,19}$'
     OR (x_job_id IS NULL AND status <> 'failed') THEN
    RAISE EXCEPTION 'status must be created, in_progress, failed or expired and x_job_id X''s digits, got % and %',
                    status, left(x_job_id, 40) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  j := tweetkeeper_internal.held_compliance_job(compliance_update.job_id);
  IF j.x_job_id IS DISTINCT FROM x_job_id AND j.x_job_id IS NOT NULL AND x_job_id IS NOT NULL THEN
    RAISE EXCEPTION 'compliance job % is X''s job %, not %', j.job_id, j.x_job_id, x_job_id
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  UPDATE tweetkeeper.compliance_jobs c
     SET x_job_id = coalesce(compliance_update.x_job_id, c.x_job_id), status = compliance_update.status,
         detail = left(compliance_update.detail, 500),
         finished_at = CASE WHEN compliance_update.status IN ('failed', 'expired') THEN now() END
   WHERE c.job_id = j.job_id;
END $$;

-- A complete job's results: the ids X named out of compliance, each with its reason. Only the job's
-- own posts, and of those the ones still past their last refresh, change: deleted and bounced
-- ("failed compliance check") are deleted; protected, suspended and deactivated (and any reason X
-- adds) unavailable, looked at again after unavailable_recheck; each with reason
-- x-compliance:<reason> and its payloads erased (unless tweetkeeper.deleted_payloads = keep);
-- scrub_geo erases the location from its payloads and the post stays. Every other post of the job
-- was found there now (rechecked_at). The job is complete. Returns how many posts are gone.
CREATE OR REPLACE FUNCTION store_compliance_results(job_id bigint, tweet_ids bigint[], reasons text[]) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  loaded record := tweetkeeper.settings();  -- (loads the module, which defines the settings)
  j tweetkeeper.compliance_jobs;
  erase boolean := current_setting('tweetkeeper.deleted_payloads') = 'erase';
  recheck interval := current_setting('tweetkeeper.unavailable_recheck')::interval;
  gone_ids bigint[];
  gone_reasons text[];
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('job_id, tweet_ids and reasons', job_id IS NULL OR tweet_ids IS NULL OR reasons IS NULL);
  IF cardinality(tweet_ids) <> cardinality(reasons) THEN
    RAISE EXCEPTION 'tweet_ids and reasons must be as long as each other' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  j := tweetkeeper_internal.held_compliance_job(store_compliance_results.job_id);
  IF j.x_job_id IS NULL THEN
    RAISE EXCEPTION 'compliance job % was never created at X', j.job_id USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  WITH r AS (
    SELECT DISTINCT ON (x.id) x.id, lower(left(x.reason, 40)) AS reason
      FROM unnest(store_compliance_results.tweet_ids, reasons) AS x(id, reason)
     WHERE x.id = ANY (j.tweet_ids) AND x.reason IS NOT NULL AND x.reason <> 'scrub_geo'
     ORDER BY x.id
  ), g AS (
    UPDATE tweetkeeper.tweets t
       SET state = CASE WHEN r.reason IN ('deleted', 'bounced') THEN 'deleted' ELSE 'unavailable' END::tweetkeeper.tweet_state,
           due_at = CASE WHEN r.reason IN ('deleted', 'bounced') THEN NULL ELSE tweetkeeper_internal.after(now(), recheck) END,
           delay = CASE WHEN r.reason IN ('deleted', 'bounced') THEN t.delay ELSE recheck END,
           problem_type = 'x-compliance:' || r.reason, problem_detail = 'X compliance job ' || j.x_job_id,
           problem_at = now(), rechecked_at = now(),
           payload_hash = CASE WHEN erase THEN NULL ELSE t.payload_hash END
      FROM r
     WHERE t.tweet_id = r.id AND t.state = 'done' AND t.lease_id IS NULL
    RETURNING t.tweet_id, 'x-compliance:' || r.reason AS reason)
  SELECT array_agg(g.tweet_id), array_agg(g.reason) INTO gone_ids, gone_reasons FROM g;
  IF gone_ids IS NOT NULL THEN
    PERFORM tweetkeeper_internal.bury(gone_ids, gone_reasons, erase, now());
  END IF;
  -- (X's geo scrub: the location goes from what is kept; the post stays.)
  UPDATE tweetkeeper.payloads p SET payload = p.payload - 'geo'
   WHERE p.tweet_id IN (SELECT x.id FROM unnest(store_compliance_results.tweet_ids, reasons) AS x(id, reason)
                         WHERE x.reason = 'scrub_geo' AND x.id = ANY (j.tweet_ids))
     AND p.payload ? 'geo';
  UPDATE tweetkeeper.tweets t SET rechecked_at = now()
   WHERE t.tweet_id = ANY (j.tweet_ids) AND t.state = 'done';
  UPDATE tweetkeeper.compliance_jobs c
     SET status = 'complete', finished_at = now(), results = cardinality(store_compliance_results.tweet_ids),
         gone = coalesce(cardinality(gone_ids), 0)
   WHERE c.job_id = j.job_id;
  RETURN coalesce(cardinality(gone_ids), 0);
END $$;

-- What checking the posts past their last refresh costs, per network (and Mastodon server): how
-- many such posts there are, how many are due for a check now, and over 30 days at
-- tweetkeeper.done_recheck: the checks, the requests they take (Bluesky: 25 posts a getPosts,
-- Mastodon: 20 a statuses request, X: 100,000 ids a compliance job, plus a few polls each), and
-- X's price of them (tweetkeeper.compliance_price per id; X's price list names none).
CREATE OR REPLACE VIEW rechecks AS
WITH s AS (  -- (settings() first: it loads the module, which defines the settings)
  SELECT current_setting('tweetkeeper.done_recheck')::interval AS recheck,
         current_setting('tweetkeeper.compliance_price')::numeric AS price
    FROM tweetkeeper.settings() AS loaded
), d AS (
  SELECT CASE WHEN t.tweet_id > 0 THEN 'x' WHEN t.endpoint LIKE 'mastodon:%' THEN 'mastodon' ELSE 'bluesky' END AS network,
         CASE WHEN t.endpoint LIKE 'mastodon:%' THEN substr(t.endpoint, 10) ELSE '' END AS host,
         count(*) AS done_posts,
         count(*) FILTER (WHERE s.recheck > interval '0'
                            AND greatest(t.updated_at, t.rechecked_at, t.created_at) < now() - s.recheck) AS due_now
    FROM tweetkeeper.tweets t CROSS JOIN s
   WHERE t.state = 'done'
   GROUP BY 1, 2
), c AS (  -- each post's checks in 30 days (none when done_recheck is 0)
  SELECT d.*, s.recheck, s.price,
         d.done_posts * CASE WHEN s.recheck > interval '0'
                             THEN extract(epoch FROM interval '30 days') / extract(epoch FROM s.recheck) ELSE 0 END AS checks
    FROM d CROSS JOIN s
)
SELECT c.network, c.host, c.done_posts, c.due_now, c.recheck AS every, round(c.checks) AS checks_30d,
       ceil(c.checks / CASE c.network WHEN 'x' THEN 100000 WHEN 'bluesky' THEN 25 ELSE 20 END) AS requests_30d,
       CASE WHEN c.network = 'x' THEN round(c.checks * c.price, 2) END AS dollars_30d
  FROM c;
COMMENT ON VIEW rechecks IS
  'Posts past their last refresh, per network and Mastodon server, and what checking them for '
  'deletion every tweetkeeper.done_recheck costs over 30 days: checks, requests (X: compliance '
  'jobs) and X''s price.';
