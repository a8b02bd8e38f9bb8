-- Watched tweets: refreshed on a fixed interval for a while, whatever their age (watch, unwatch,
-- the watches view), and the return to the age schedule when a watch ends.

-- Returns tweets to their age schedule (an ended or expired watch): the next refresh one age
-- delay after the last; done if past the last bucket and fetched before. A tweet in flight
-- keeps its lease; its completion schedules it by age.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.stop_watching(tweet_ids bigint[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n bigint;
  ages interval[];
  delays interval[];
  last interval;           -- for tweets past the last bucket, as age_delay()
  at_now timestamptz := now();
BEGIN
  -- The policy given, as complete_batch() does.
  SELECT array_agg(p.max_age ORDER BY p.max_age), array_agg(p.delay ORDER BY p.max_age), max(p.delay)
    INTO ages, delays, last FROM tweetkeeper.age_policy p;
  UPDATE tweetkeeper.tweets t
     SET watch_every = NULL, watch_until = NULL,
         delay = coalesce(tweetkeeper_internal.policy_delay(t.created_at, at_now, ages, delays), last),
         state = CASE WHEN t.lease_id IS NULL AND t.updated_at IS NOT NULL
                           AND tweetkeeper_internal.policy_delay(t.created_at, at_now, ages, delays) IS NULL
                      THEN 'done'::tweetkeeper.tweet_state ELSE t.state END,
         due_at = CASE WHEN t.lease_id IS NOT NULL OR t.updated_at IS NULL THEN t.due_at
                       ELSE tweetkeeper_internal.after(t.updated_at, tweetkeeper_internal.policy_delay(t.created_at, at_now, ages, delays)) END
   WHERE t.tweet_id = ANY (tweet_ids) AND t.watch_until IS NOT NULL;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;
COMMENT ON FUNCTION tweetkeeper_internal.stop_watching(bigint[]) IS
  'Ends the watches of these tweets (unwatch and expiry): back to their age schedule.';

CREATE OR REPLACE FUNCTION watch(tweet_ids bigint[], every interval DEFAULT interval '5 minutes',
                      for_how_long interval DEFAULT interval '1 day') RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  ids bigint[];
  max_ids integer;
  n bigint;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('tweet_ids, every and for_how_long',
                                    tweet_ids IS NULL OR every IS NULL OR for_how_long IS NULL);
  IF array_position(tweet_ids, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'tweet_ids contains a NULL element' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  -- Faster than every 10 s would spend requests on changes too small to see; longer than a day
  -- is what the age policy already does.
  IF every < interval '10 seconds' OR every > interval '1 day' THEN
    RAISE EXCEPTION 'every must be between 10 seconds and 1 day, got %', every
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF for_how_long <= interval '0' OR for_how_long > interval '30 days' THEN
    RAISE EXCEPTION 'for_how_long must be more than 0 and at most 30 days, got %', for_how_long
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF every > for_how_long THEN
    RAISE EXCEPTION 'every (%) is longer than the watch itself (%)', every, for_how_long
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  ids := ARRAY(SELECT DISTINCT x FROM unnest(tweet_ids) x);
  max_ids := current_setting('tweetkeeper.max_ids_per_call')::integer;
  IF cardinality(ids) > max_ids THEN
    RAISE EXCEPTION 'tweet_ids has % distinct elements, more than tweetkeeper.max_ids_per_call (%)',
      cardinality(ids), max_ids USING ERRCODE = 'program_limit_exceeded';
  END IF;
  -- Tracks those not tracked yet (refusing ids that are not Snowflake ids, as schedule_tweets does).
  PERFORM tweetkeeper.schedule_tweets(ARRAY(
    SELECT x FROM unnest(ids) x WHERE NOT EXISTS (SELECT 1 FROM tweetkeeper.tweets t WHERE t.tweet_id = x)));
  -- Deleted and unavailable tweets cannot be refreshed: they are not watched. A renewal extends
  -- the watch and takes the new interval; the next refresh is `every` after the last one.
  UPDATE tweetkeeper.tweets t
     SET watch_every = every, watch_until = greatest(t.watch_until, now() + for_how_long),
         delay = every, state = 'scheduled',
         due_at = CASE WHEN t.lease_id IS NOT NULL THEN t.due_at
                       ELSE least(coalesce(t.due_at, 'infinity'), coalesce(t.updated_at, now()) + every) END
   WHERE t.tweet_id = ANY (ids) AND t.state IN ('scheduled', 'done');
  GET DIAGNOSTICS n = ROW_COUNT;
  PERFORM tweetkeeper_internal.wake_maintenance();
  RETURN n;
END $$;
COMMENT ON FUNCTION watch(bigint[], interval, interval) IS
  'Refreshes these tweets every `every` (10 s to 1 day) for `for_how_long` (up to 30 days), '
  'whatever their age, ahead of everything else under a shortage; tracks them if they are not '
  'yet; a renewal extends the watch. Returns how many are watched (deleted and unavailable '
  'tweets are not).';

CREATE OR REPLACE FUNCTION unwatch(tweet_ids bigint[]) RETURNS bigint
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  RETURN tweetkeeper_internal.stop_watching(tweetkeeper_internal.array_arg('tweet_ids', tweet_ids));
COMMENT ON FUNCTION unwatch(bigint[]) IS
  'Ends the watches of these tweets: back to their age schedule. Returns how many were watched.';

-- The ids of the posts of URLs (any network, any spelling), in the URLs' order: X's from the URL,
-- the others' as schedule_post() keys them (a Bluesky handle resolved before is read as its DID).
-- A post not tracked gets the id it would have. 22023 (from parse_post_url) for a URL it refuses.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.url_post_ids(urls text[]) RETURNS bigint[]
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN ARRAY(
    SELECT CASE WHEN p.network = 'x' THEN p.post_key::bigint
                ELSE (tweetkeeper_internal.post_ref_id(p.network, coalesce(p.host, ''),
                        tweetkeeper_internal.post_author(p.network, p.author), p.post_key)).tweet_id END
      FROM unnest(urls) WITH ORDINALITY AS a(url, i), tweetkeeper.parse_post_url(a.url) AS p
     ORDER BY a.i);

-- watch() and unwatch() by URL, for posts of every network: a watched Bluesky or Mastodon post is
-- refreshed every `every` as an X tweet is, and claim_posts() takes an endpoint's watched posts
-- first.
CREATE OR REPLACE FUNCTION watch_posts(urls text[], every interval DEFAULT interval '5 minutes',
                            for_how_long interval DEFAULT interval '1 day') RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  -- Tracks those not tracked yet, all or nothing; a bad URL is refused with its position.
  PERFORM tweetkeeper.schedule_posts(urls);
  RETURN tweetkeeper.watch(tweetkeeper_internal.url_post_ids(urls), every, for_how_long);
END $$;
COMMENT ON FUNCTION watch_posts(text[], interval, interval) IS
  'watch() for the posts of URLs of any network (see parse_post_url for the forms): tracks those '
  'not tracked yet, then refreshes them every `every` for `for_how_long`. Returns how many are '
  'watched.';

CREATE OR REPLACE FUNCTION unwatch_posts(urls text[]) RETURNS bigint
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  RETURN tweetkeeper.unwatch(tweetkeeper_internal.url_post_ids(tweetkeeper_internal.array_arg('urls', urls)));
COMMENT ON FUNCTION unwatch_posts(text[]) IS
  'unwatch() for the posts of URLs of any network: back to their age schedule. Returns how many '
  'were watched.';

CREATE OR REPLACE VIEW watches AS
SELECT t.tweet_id, t.watch_every AS every, t.watch_until AS until, t.updated_at AS last_refreshed,
       t.due_at AS next_refresh, t.update_count, t.state,
       -- Since 0.3.0, last (SELECT * of 0.2.0 reads its columns where they were): the post's
       -- network and URL, as in the view posts.
       coalesce(r.network, 'x') AS network,
       coalesce(r.url, 'https://x.com/i/web/status/' || t.tweet_id) AS url
  FROM tweetkeeper.tweets t LEFT JOIN tweetkeeper.post_refs r ON r.tweet_id = t.tweet_id AND t.tweet_id < 0
 WHERE t.watch_until > now()
 ORDER BY t.watch_until, t.tweet_id;
COMMENT ON VIEW watches IS
  'Live watches (tweetkeeper.watch, watch_posts): what is refreshed how often, until when, of '
  'every network.';

-- Each post's own refresh policy: 'age' or 'adaptive', or NULL to follow its network's
-- (tweetkeeper.refresh_policy). It applies from the post's next read on.
CREATE OR REPLACE FUNCTION set_refresh_policy(post_ids bigint[], policy text) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n bigint;
BEGIN
  IF policy IS NOT NULL AND policy NOT IN ('age', 'adaptive') THEN
    RAISE EXCEPTION 'policy must be age, adaptive or NULL (its network''s), got %', policy
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  UPDATE tweetkeeper.tweets t SET refresh_policy = policy
   WHERE t.tweet_id = ANY (tweetkeeper_internal.array_arg('post_ids', post_ids))
     AND t.refresh_policy IS DISTINCT FROM policy;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;
COMMENT ON FUNCTION set_refresh_policy(bigint[], text) IS
  'Sets these posts'' own refresh policy: age (the age table), adaptive, or NULL to follow their '
  'network''s (tweetkeeper.refresh_policy); from each one''s next read on. Returns how many changed. '
  '22023 for another policy, 22004 for NULL ids.';

-- Why each tracked post (or each of post_ids) is due when it is. (A function, SECURITY DEFINER:
-- what the adaptive state says is read by internal functions, which no role may call.)
CREATE OR REPLACE FUNCTION why_due(post_ids bigint[] DEFAULT NULL)
  RETURNS TABLE (post_id bigint, network text, state tweetkeeper.tweet_state, due_at timestamptz, policy text,
                 reason text, gap interval, moved_at_age interval)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  SELECT p.post_id, p.network, p.state, p.due_at, w.policy,
         CASE WHEN p.in_flight THEN 'being read'
              WHEN p.state <> 'scheduled' THEN p.state::text
              WHEN w.policy = 'watch' THEN 'watched every ' || t.watch_every
              WHEN w.policy = 'age' OR t.adaptive_state IS NULL THEN 'age table'
              ELSE tweetkeeper_internal.adaptive_reason(t.adaptive_state) END,
         CASE WHEN t.due_at IS NULL THEN NULL  -- done or deleted: no next read
              WHEN p.state <> 'scheduled' THEN t.delay  -- unavailable or missing: its recheck
              WHEN w.policy = 'watch' THEN t.watch_every
              WHEN w.policy = 'adaptive' AND t.adaptive_state IS NOT NULL
                THEN tweetkeeper_internal.adaptive_gap(t.adaptive_state)
              ELSE t.delay END,
         CASE WHEN w.policy = 'adaptive' THEN tweetkeeper_internal.adaptive_quiet_since(t.adaptive_state) END
    FROM tweetkeeper.posts p
    JOIN tweetkeeper.tweets t ON t.tweet_id = p.post_id
   CROSS JOIN LATERAL (
      SELECT CASE WHEN t.watch_until > now() THEN 'watch'
                  WHEN tweetkeeper_internal.adaptive_for(t.endpoint, t.refresh_policy) THEN 'adaptive'
                  ELSE 'age' END AS policy) w
   WHERE post_ids IS NULL OR p.post_id = ANY (post_ids)
   ORDER BY p.due_at NULLS LAST, p.post_id;
END;
COMMENT ON FUNCTION why_due(bigint[]) IS
  'Why each tracked post (or each of post_ids) is due when it is: the policy it follows (age, '
  'adaptive, watch), the reason (age table; adaptive: moving slowly, quiet, revived, same UTC day, '
  'stopped: quiet, past the age table; watched every ...; being read; or its state when not '
  'scheduled), the gap to its next read (NULL: none), and (adaptive) its age when its counts last moved.';
