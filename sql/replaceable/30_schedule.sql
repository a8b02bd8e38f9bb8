-- Scheduling: every way a tweet comes in (schedule_tweet, schedule_tweets in bulk, a trigger on
-- the user's table), the checks they share, and the delays the age policy gives a tweet.

CREATE OR REPLACE FUNCTION snowflake_time(tweet_id bigint) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN to_timestamp(((tweet_id >> 22) + 1288834974657) / 1000.0);
COMMENT ON FUNCTION snowflake_time(bigint) IS
  'The creation time encoded in a Snowflake tweet id: (id >> 22) + 1288834974657 ms.';

-- Checks one tweet's input; raises the error a caller should see. Shared by every way in.
CREATE OR REPLACE FUNCTION check_tweet(tweet_id bigint, created_at timestamptz) RETURNS void
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('tweet_id', tweet_id IS NULL);
  IF tweet_id <= 0 THEN
    RAISE EXCEPTION 'tweet_id must be positive, got %', tweet_id
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM tweetkeeper_internal.refuse_null('created_at', created_at IS NULL);
  -- One minute of grace for clocks that disagree with Twitter's.
  IF created_at > now() + interval '1 minute' THEN
    RAISE EXCEPTION 'tweet % has created_at % in the future', tweet_id, created_at
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Check the id (a Snowflake id encodes its creation time) or the created_at.';
  END IF;
  IF created_at < timestamptz '2006-03-21 20:50:14+00' THEN
    RAISE EXCEPTION 'tweet % has created_at % before the first tweet (2006-03-21)',
      tweet_id, created_at USING ERRCODE = 'invalid_parameter_value';
  END IF;
END $$;

-- The delay before a new tweet's first refresh: the youngest bucket's (spec: delay I1).
CREATE OR REPLACE FUNCTION first_delay() RETURNS interval LANGUAGE plpgsql
  STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  d interval := tweetkeeper.next_delay(now());
BEGIN
  IF d IS NULL THEN
    RAISE EXCEPTION 'tweetkeeper.age_policy is empty: no tweet would ever be refreshed'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'INSERT INTO tweetkeeper.age_policy (max_age, delay) VALUES (...).';
  END IF;
  RETURN d;
END $$;

-- The delay a tweet created then has now: its age bucket's, or for a tweet past the last bucket
-- (fetched once more, then done) the longest delay of the policy. What lateness is measured by.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.age_delay(created_at timestamptz) RETURNS interval
  LANGUAGE sql STABLE
  RETURN coalesce(tweetkeeper.next_delay(created_at),
                  (SELECT max(p.delay) FROM tweetkeeper.age_policy p));

-- How long until a tweet's next refresh after this one: its watch's interval while the watch
-- lasts, else its age bucket's delay; NULL when it is past the last bucket (done).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.refresh_delay(created_at timestamptz, watch_every interval, watch_until timestamptz)
  RETURNS interval LANGUAGE sql STABLE
  RETURN CASE WHEN watch_until > now() THEN watch_every ELSE tweetkeeper.next_delay(created_at) END;

-- refresh_delay() with the time and the age policy given, not read: a completion reads the policy
-- once and passes age_policy's max_age and delay columns as arrays.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.policy_delay(created_at timestamptz, at timestamptz, max_ages interval[], delays interval[])
  RETURNS interval AS 'MODULE_PATHNAME', 'tk_policy_delay' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tweetkeeper_internal.policy_delay(timestamptz, timestamptz, interval[], interval[]) IS
  'next_delay() at a given time under a given age policy (its max_age and delay columns as arrays).';
CREATE OR REPLACE FUNCTION tweetkeeper_internal.refresh_delay_at(created_at timestamptz, watch_every interval, watch_until timestamptz,
                                 at timestamptz, max_ages interval[], delays interval[])
  RETURNS interval LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE WHEN watch_until > at THEN watch_every
              ELSE tweetkeeper_internal.policy_delay(created_at, at, max_ages, delays) END;
-- The adaptive refresh policy (extension/adaptive.cpp decides; README.md, "The adaptive policy").
CREATE OR REPLACE FUNCTION tweetkeeper_internal.adaptive_for(endpoint text, post_policy text) RETURNS boolean
  AS 'MODULE_PATHNAME', 'tk_adaptive_for' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tweetkeeper_internal.adaptive_for(text, text) IS
  'Whether a post follows the adaptive policy: its own (set_refresh_policy()) if it has one, else '
  'its network''s (tweetkeeper.refresh_policy; endpoint NULL: X).';
CREATE OR REPLACE FUNCTION tweetkeeper_internal.adaptive_step(at timestamptz, created_at timestamptz, previous_at timestamptz,
                                                     floor interval, before bigint[], after bigint[], state bigint,
                                                     x boolean) RETURNS bigint
  AS 'MODULE_PATHNAME', 'tk_adaptive_step' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tweetkeeper_internal.adaptive_step(timestamptz, timestamptz, timestamptz, interval, bigint[], bigint[], bigint, boolean) IS
  'The adaptive policy''s decision after an observation at `at` (counts before and after: reposts, '
  'replies, likes, quotes, bookmarks, views; previous_at NULL: the first; floor: the age table''s '
  'delay, NULL past its last bucket): the post''s new state, whose gap (adaptive_gap()) is the delay '
  'to its next read, NULL when it is done.';
CREATE OR REPLACE FUNCTION tweetkeeper_internal.adaptive_gap(state bigint) RETURNS interval
  AS 'MODULE_PATHNAME', 'tk_adaptive_gap' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION tweetkeeper_internal.adaptive_reason(state bigint) RETURNS text
  AS 'MODULE_PATHNAME', 'tk_adaptive_reason' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION tweetkeeper_internal.adaptive_quiet_since(state bigint) RETURNS interval
  AS 'MODULE_PATHNAME', 'tk_adaptive_quiet_since' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
-- Whether a post follows the adaptive policy at `at`: its own or its network's, unless a watch
-- holds it then (a watch wins while it lasts).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.adaptive_on(t tweetkeeper.tweets, at timestamptz) RETURNS boolean
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN NOT coalesce(t.watch_until > at, false) AND tweetkeeper_internal.adaptive_for(t.endpoint, t.refresh_policy);
-- A completion's step for one post: its adaptive state after this observation, or NULL when it
-- does not follow the adaptive policy now (adaptive_on()).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.adaptive_after(t tweetkeeper.tweets, created_at timestamptz, counts bigint[],
                                                      at timestamptz, max_ages interval[], delays interval[])
  RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE WHEN tweetkeeper_internal.adaptive_on(t, at)
              THEN tweetkeeper_internal.adaptive_step(at, created_at, CASE WHEN t.update_count > 0 THEN t.updated_at END,
                     tweetkeeper_internal.policy_delay(created_at, at, max_ages, delays),
                     ARRAY[t.retweet_count, t.reply_count, t.like_count, t.quote_count, t.bookmark_count, t.impression_count],
                     counts, t.adaptive_state, t.tweet_id > 0) END;

-- The delay from an observation at `at` to a post's next read: the adaptive policy's gap if it
-- follows that policy now (NULL: done), else its watch's or its age table's (refresh_delay_at()).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.next_gap(t tweetkeeper.tweets, created_at timestamptz, counts bigint[],
                                                at timestamptz, max_ages interval[], delays interval[])
  RETURNS interval LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE WHEN tweetkeeper_internal.adaptive_on(t, at)
              THEN tweetkeeper_internal.adaptive_gap(tweetkeeper_internal.adaptive_after(t, created_at, counts, at, max_ages, delays))
              ELSE tweetkeeper_internal.refresh_delay_at(created_at, t.watch_every, t.watch_until, at, max_ages, delays) END;

-- A time plus a delay, in UTC (so IMMUTABLE, unlike timestamptz + interval, which counts a day
-- in the session's time zone): where a refresh is due.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.after(t timestamptz, delay interval) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN ((t AT TIME ZONE 'UTC') + delay) AT TIME ZONE 'UTC';

-- Ids from before Snowflake (November 2010) encode no time: their derived time falls within a
-- day of Twitter's epoch, where no Snowflake id exists.
CREATE OR REPLACE FUNCTION derived_created_at(tweet_id bigint) RETURNS timestamptz
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF tweet_id IS NOT NULL AND tweet_id > 0 AND (tweet_id >> 22) < 86400000 THEN
    RAISE EXCEPTION 'tweet id % predates Snowflake ids and encodes no creation time', tweet_id
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass created_at: tweetkeeper.schedule_tweet(id, created_at).';
  END IF;
  RETURN tweetkeeper.snowflake_time(tweet_id);
END $$;

-- The one way a post enters the queue by itself (schedule_tweet(): X's, by id; schedule_post():
-- the others', by reference, post_refs, under their negative ids): its first refresh one
-- first-bucket delay after its creation, on the endpoint that answers for it (NULL: X). Returns
-- false, changing nothing, if it is tracked already. (schedule_tweets() and schedule_posts() do
-- the same for many posts in one statement.)
CREATE OR REPLACE FUNCTION tweetkeeper_internal.enqueue_post(id bigint, created_at timestamptz, endpoint text) RETURNS boolean
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay, endpoint)
  VALUES (id, created_at, created_at + tweetkeeper.first_delay(), tweetkeeper_internal.age_delay(created_at), endpoint)
  ON CONFLICT ON CONSTRAINT tweets_pkey DO NOTHING;
  IF FOUND THEN
    -- (the background worker, woken at commit, tells the network's workers when it is claimable)
    PERFORM tweetkeeper_internal.wake_maintenance();
  END IF;
  RETURN FOUND;
END $$;

CREATE OR REPLACE FUNCTION schedule_tweet(tweet_id bigint, created_at timestamptz DEFAULT NULL)
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  c timestamptz := coalesce(created_at, tweetkeeper.derived_created_at(tweet_id));
BEGIN
  PERFORM tweetkeeper.check_tweet(tweet_id, c);
  IF tweetkeeper_internal.held_slots() IS NOT NULL THEN
    PERFORM tweetkeeper_internal.refuse_foreign(ARRAY[tweet_id::text], ARRAY[tweetkeeper.partition_hash('x', '', tweet_id::text)]);
  END IF;
  RETURN tweetkeeper_internal.enqueue_post(tweet_id, c, NULL);
END $$;
COMMENT ON FUNCTION schedule_tweet(bigint, timestamptz) IS
  'Starts tracking a tweet: first refresh one first-bucket delay after created_at (derived from '
  'the Snowflake id when NULL). Returns false, changing nothing, if it is tracked already.';

CREATE OR REPLACE FUNCTION schedule_tweets(tweet_ids bigint[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  first interval;
  last interval;
  n_distinct bigint;
  lo bigint;
  hi bigint;
  dup bigint;
  dup_count bigint;
  added bigint;
BEGIN
  PERFORM tweetkeeper_internal.array_arg('tweet_ids', tweet_ids);
  first := tweetkeeper.first_delay();
  last := (SELECT max(p.delay) FROM tweetkeeper.age_policy p);  -- for tweets past the last bucket
  -- Validate the whole array first, in one pass: nothing is scheduled if any id is bad. Derived
  -- times grow with the id, so checking the smallest and the largest id checks them all.
  SELECT count(DISTINCT id), min(id), max(id) INTO n_distinct, lo, hi FROM unnest(tweet_ids) AS id;
  IF lo IS NULL THEN
    RETURN 0;
  END IF;
  -- A repeated id in one call is most likely a mistake upstream (a join that fanned out): say so
  -- rather than guess.
  IF n_distinct < cardinality(tweet_ids) THEN
    SELECT id, count(*) INTO dup, dup_count FROM unnest(tweet_ids) AS id
     GROUP BY id HAVING count(*) > 1 ORDER BY id LIMIT 1;
    RAISE EXCEPTION 'tweet_ids contains % duplicate element(s), e.g. % appears % times',
      cardinality(tweet_ids) - n_distinct, dup, dup_count
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass each id once, e.g. ARRAY(SELECT DISTINCT unnest(ids)).';
  END IF;
  PERFORM tweetkeeper.check_tweet(lo, tweetkeeper.derived_created_at(lo));
  PERFORM tweetkeeper.check_tweet(hi, tweetkeeper.derived_created_at(hi));
  -- A partition (sql/schema/36_partitions.sql) refuses the call if one id is another's.
  IF tweetkeeper_internal.held_slots() IS NOT NULL THEN
    PERFORM tweetkeeper_internal.refuse_foreign(tweet_ids::text[],
      ARRAY(SELECT tweetkeeper.partition_hash('x', '', id::text) FROM unnest(tweet_ids) WITH ORDINALITY AS a(id, i) ORDER BY a.i));
  END IF;
  INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay)
  SELECT id, c, c + first, coalesce(tweetkeeper.next_delay(c), last)
    FROM unnest(tweet_ids) AS id,
         LATERAL (SELECT tweetkeeper.snowflake_time(id) AS c) AS t
  ON CONFLICT ON CONSTRAINT tweets_pkey DO NOTHING;
  GET DIAGNOSTICS added = ROW_COUNT;
  IF added > 0 THEN
    PERFORM tweetkeeper_internal.wake_maintenance();
    -- A bulk load outgrows the statistics long before autovacuum comes by, and with them the
    -- plans every session cached while the queue was small: a worker or the background worker
    -- that started on an empty queue would read the whole table at every claim and tick (a
    -- sequential scan is right for a few pages). Once the table is twice the size its statistics
    -- say, ANALYZE it: at commit every session replans. About log2(growth) times per import, a
    -- sample of at most 30,000 rows each; SKIP_LOCKED: never wait for a running (auto)vacuum.
    -- (Its SHARE UPDATE EXCLUSIVE lock lasts until the caller commits: it keeps only vacuum and
    -- other ANALYZEs of tweets waiting; tweetkeeper-import commits every chunk.)
    IF pg_relation_size('tweetkeeper.tweets') / current_setting('block_size')::bigint
       > 2 * (SELECT c.relpages FROM pg_class c WHERE c.oid = 'tweetkeeper.tweets'::regclass) + 64 THEN
      ANALYZE (SKIP_LOCKED) tweetkeeper.tweets;
    END IF;
  END IF;
  RETURN added;
END $$;
COMMENT ON FUNCTION schedule_tweets(bigint[]) IS
  'schedule_tweet for many Snowflake ids in one statement (each id once, at most '
  'tweetkeeper.max_ids_per_call); returns how many were new.';

-- For a trigger on the user's own table: AFTER INSERT ... FOR EACH ROW EXECUTE FUNCTION
-- tweetkeeper.schedule_from_trigger('id_column'[, 'created_at_column']).
CREATE OR REPLACE FUNCTION schedule_from_trigger() RETURNS trigger LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  row jsonb := to_jsonb(NEW);
  id_column text := coalesce(TG_ARGV[0], 'tweet_id');
BEGIN
  IF NOT row ? id_column THEN
    RAISE EXCEPTION 'schedule_from_trigger: table %.% has no column "%"',
      TG_TABLE_SCHEMA, TG_TABLE_NAME, id_column USING ERRCODE = 'undefined_column';
  END IF;
  PERFORM tweetkeeper.schedule_tweet((row ->> id_column)::bigint,
                                     (row ->> TG_ARGV[1])::timestamptz);
  RETURN NULL;
END $$;
