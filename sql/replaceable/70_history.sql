-- History housekeeping: partitions of metric_history_hot ahead of time, retention by whole
-- partitions (and whole weeks of compacted history) with daily rollups, compaction of closed
-- partitions into metric_history_compact, the housekeeping() entry that runs them, and the
-- pg_cron jobs that may run them instead of the background worker.

-- Partition bounds as times (pg_get_expr prints them in this session's TimeZone and DateStyle,
-- and reads back the same in the same session). The default partition has none.
CREATE OR REPLACE VIEW history_partitions AS
SELECT c.oid::regclass AS partition,
       CASE WHEN m[1] = 'MINVALUE' THEN '-infinity' ELSE btrim(m[1], '''')::timestamptz END AS starts,
       CASE WHEN m[2] = 'MAXVALUE' THEN 'infinity' ELSE btrim(m[2], '''')::timestamptz END AS ends,
       greatest(c.reltuples, 0)::bigint AS rows_estimate,
       pg_total_relation_size(c.oid) AS bytes
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \((.*)\) TO \((.*)\)') AS m
 WHERE i.inhparent = 'tweetkeeper.metric_history_hot'::regclass AND m IS NOT NULL;
COMMENT ON VIEW history_partitions IS
  'The partitions of metric_history_hot with their time range [starts, ends), estimated rows and '
  'bytes (the default partition, which has no range, is not listed).';

CREATE OR REPLACE FUNCTION tweetkeeper_internal.record_housekeeping(task text, result text) RETURNS void
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  INSERT INTO tweetkeeper.housekeeping_runs AS r (task, last_run, result)
  VALUES (task, clock_timestamp(), result)
  ON CONFLICT ON CONSTRAINT housekeeping_runs_pkey
  DO UPDATE SET last_run = excluded.last_run, result = excluded.result;
$$;
COMMENT ON FUNCTION tweetkeeper_internal.record_housekeeping(text, text) IS
  'Records that a housekeeping task ran and what it did (tweetkeeper.housekeeping_runs).';

-- One housekeeping task at a time: pg_cron starts its jobs side by side each minute, and the
-- task that comes last waits for the others. The wait is for this lock alone, which no completion
-- or reader takes, so it may be long (a minute) where the tasks' table locks may not (their
-- lock_timeout, 2 s, restored here): under load the partitions and compaction tasks together
-- outlast 2 s, and retention, started last, timed out every minute (seen in make check).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.housekeeping_lock() RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  table_timeout text := current_setting('lock_timeout');
BEGIN
  PERFORM set_config('lock_timeout', '1min', true);
  PERFORM pg_advisory_xact_lock(hashtext('tweetkeeper.housekeeping'));
  PERFORM set_config('lock_timeout', table_timeout, true);
END $$;

-- Partitions ahead: every slot of tweetkeeper.history_partition from now to a little ahead, and
-- every slot that holds rows of the default partition (housekeeping stopped for a while: they
-- move into their own partitions). Slots are aligned to the epoch in UTC and clipped to the gaps
-- between existing partitions, so a changed partition length never overlaps old partitions.
-- The parent is locked EXCLUSIVE once a partition is needed: readers go on, completions wait the
-- few milliseconds this takes. A weaker lock (ATTACH's own, SHARE UPDATE EXCLUSIVE) lets a
-- completion route its row to the default partition just before the ATTACH and then fail its
-- partition check just after (SQLSTATE 23514), wasting the request it stores. CREATE + ATTACH
-- rather than CREATE ... PARTITION OF, whose ACCESS EXCLUSIVE lock would stop readers too;
-- lock_timeout keeps it from queueing behind a long writer (and everything else behind it).
CREATE OR REPLACE FUNCTION create_partitions() RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD'
  SET lock_timeout = '2s' AS $$
DECLARE
  s record := tweetkeeper.settings();
  len double precision := extract(epoch FROM s.history_partition);
  ahead interval := greatest(2 * s.history_partition, 2 * s.housekeeping_interval, interval '1 hour');
  slot timestamptz;
  lo timestamptz;
  hi timestamptz;
  bound timestamptz;
  part text;
  created integer := 0;
  moved bigint := 0;
  n bigint;
  locked boolean := false;
BEGIN
  -- One housekeeping task at a time (pg_cron runs its jobs side by side), and the parent locked
  -- before any partition, as readers and completions lock them: no lock cycle, no deadlock.
  PERFORM tweetkeeper_internal.housekeeping_lock();
  FOR slot IN
    SELECT DISTINCT to_timestamp(floor(extract(epoch FROM d.observed_at) / len) * len)
      FROM tweetkeeper.metric_history_default d
    UNION
    SELECT to_timestamp(floor(extract(epoch FROM g) / len) * len)
      FROM generate_series(now(), now() + ahead, s.history_partition) g
    ORDER BY 1
  LOOP
    lo := slot;
    hi := to_timestamp(extract(epoch FROM slot) + len);
    LOOP  -- a partition covering lo: start after it
      SELECT p.ends INTO bound FROM tweetkeeper.history_partitions p WHERE p.starts <= lo AND p.ends > lo;
      EXIT WHEN NOT FOUND;
      lo := bound;
    END LOOP;
    SELECT min(p.starts) INTO bound FROM tweetkeeper.history_partitions p WHERE p.starts > lo AND p.starts < hi;
    hi := least(hi, bound);
    CONTINUE WHEN lo >= hi;
    IF NOT locked THEN
      LOCK TABLE tweetkeeper.metric_history_hot IN EXCLUSIVE MODE;  -- no completion in flight across the ATTACH
      locked := true;
    END IF;
    part := 'metric_history_' || to_char(lo, 'YYYYMMDD_HH24MISS');
    EXECUTE format('CREATE TABLE tweetkeeper.%1$I (LIKE tweetkeeper.metric_history_hot,
                      CONSTRAINT %2$I PRIMARY KEY (tweet_id, observed_at, lease_id))', part, part || '_pkey');
    EXECUTE format('WITH m AS (DELETE FROM tweetkeeper.metric_history_default
                                WHERE observed_at >= $1 AND observed_at < $2 RETURNING *)
                    INSERT INTO tweetkeeper.%I SELECT * FROM m', part) USING lo, hi;
    GET DIAGNOSTICS n = ROW_COUNT;
    EXECUTE format('ALTER TABLE tweetkeeper.metric_history_hot ATTACH PARTITION tweetkeeper.%I FOR VALUES FROM (%L) TO (%L)',
                   part, lo, hi);
    moved := moved + n;
    created := created + 1;
  END LOOP;
  PERFORM tweetkeeper_internal.record_housekeeping('partitions',
    format('%s partitions created, %s rows moved out of the default partition', created, moved));
  RETURN created;
END $$;
COMMENT ON FUNCTION create_partitions() IS
  'Creates the partitions of metric_history_hot for now and a little ahead (and for rows waiting in '
  'the default partition, which move into them); returns how many it created. Idempotent.';

-- The daily rollup of observations about to be dropped (source: a partition, or a query over
-- compacted history): per post and UTC day, the day's last counts and how many observations it
-- had, merged with what an earlier source gave the same day.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.rollup_history(source text) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD' AS $$
DECLARE
  n bigint;
BEGIN
  EXECUTE format($q$
    INSERT INTO tweetkeeper.metric_daily AS d (tweet_id, day, observations, last_observed_at,
           retweet_count, reply_count, like_count, quote_count, bookmark_count, impression_count)
    SELECT DISTINCT ON (h.tweet_id, h.observed_at::date) h.tweet_id, h.observed_at::date,
           count(*) OVER (PARTITION BY h.tweet_id, h.observed_at::date), h.observed_at,
           h.retweet_count, h.reply_count, h.like_count, h.quote_count, h.bookmark_count, h.impression_count
      FROM %s h
     ORDER BY h.tweet_id, h.observed_at::date, h.observed_at DESC
    ON CONFLICT ON CONSTRAINT metric_daily_pkey DO UPDATE
       SET observations = d.observations + excluded.observations,
           last_observed_at = greatest(d.last_observed_at, excluded.last_observed_at),
           retweet_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.retweet_count ELSE d.retweet_count END,
           reply_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.reply_count ELSE d.reply_count END,
           like_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.like_count ELSE d.like_count END,
           quote_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.quote_count ELSE d.quote_count END,
           bookmark_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.bookmark_count ELSE d.bookmark_count END,
           impression_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.impression_count ELSE d.impression_count END
  $q$, source);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;

-- Retention: whole partitions whose every row is older than tweetkeeper.history_retention are
-- dropped, and whole weeks of compacted history likewise; before that, with
-- tweetkeeper.history_rollup, their rows are summed up per post and UTC day into metric_daily.
CREATE OR REPLACE FUNCTION apply_retention() RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD'
  SET lock_timeout = '2s' AS $$
DECLARE
  s record := tweetkeeper.settings();
  cutoff timestamptz := now() - s.history_retention;
  -- The compacted weeks that end by the cutoff.
  weeks text := format('(SELECT c.tweet_id, u.* FROM tweetkeeper.metric_history_compact c
                          CROSS JOIN LATERAL tweetkeeper.unpack_history(c.packed) u
                         WHERE c.span_start <= %L)', cutoff - interval '7 days');
  p record;
  dropped integer := 0;
  rolled bigint := 0;
  weeks_dropped bigint := 0;
  payloads_dropped bigint := 0;
BEGIN
  IF s.history_retention = interval '0' THEN
    PERFORM tweetkeeper_internal.record_housekeeping('retention', 'keeping everything (tweetkeeper.history_retention = 0)');
    RETURN 0;
  END IF;
  PERFORM tweetkeeper_internal.housekeeping_lock();
  -- Payloads older than the cutoff go too, except each post's newest: what it looks like now.
  DELETE FROM tweetkeeper.payloads o
   WHERE o.seen_at < cutoff
     AND EXISTS (SELECT 1 FROM tweetkeeper.payloads n WHERE n.tweet_id = o.tweet_id AND n.seen_at > o.seen_at);
  GET DIAGNOSTICS payloads_dropped = ROW_COUNT;
  IF NOT EXISTS (SELECT FROM tweetkeeper.history_partitions h WHERE h.ends <= cutoff)
     AND NOT EXISTS (SELECT 1 FROM tweetkeeper.metric_history_default d WHERE d.observed_at < cutoff)
     -- (the oldest week, from metric_history_compact_span_idx: an EXISTS over the weeks before the
     -- cutoff may be planned as a scan of every compacted row when there is none)
     AND NOT coalesce((SELECT min(c.span_start) FROM tweetkeeper.metric_history_compact c) <= cutoff - interval '7 days',
                      false) THEN
    PERFORM tweetkeeper_internal.record_housekeeping('retention', format('nothing older than %s (%s old payloads dropped)',
                                                                 cutoff, payloads_dropped));
    RETURN 0;
  END IF;
  -- DROP takes this lock on the parent; taken first, before create_partitions() locks any
  -- partition, so that no reader holding the parent waits for a partition held here.
  LOCK TABLE tweetkeeper.metric_history_hot IN ACCESS EXCLUSIVE MODE;
  PERFORM tweetkeeper.create_partitions();  -- rows in the default partition get a partition, so they age out too
  FOR p IN SELECT h.partition FROM tweetkeeper.history_partitions h WHERE h.ends <= cutoff ORDER BY h.starts LOOP
    IF s.history_rollup THEN
      rolled := rolled + tweetkeeper_internal.rollup_history(p.partition::text);
    END IF;
    EXECUTE format('DROP TABLE %s', p.partition);
    dropped := dropped + 1;
  END LOOP;
  IF s.history_rollup THEN
    rolled := rolled + tweetkeeper_internal.rollup_history(weeks);
  END IF;
  DELETE FROM tweetkeeper.metric_history_compact c WHERE c.span_start <= cutoff - interval '7 days';
  GET DIAGNOSTICS weeks_dropped = ROW_COUNT;
  PERFORM tweetkeeper_internal.record_housekeeping('retention',
    format('%s partitions and %s compacted post-weeks older than %s dropped, %s daily rows rolled up, '
           '%s old payloads dropped', dropped, weeks_dropped, cutoff, rolled, payloads_dropped));
  RETURN dropped;
END $$;
COMMENT ON FUNCTION apply_retention() IS
  'Drops the partitions of metric_history_hot, and the weeks of metric_history_compact, older than '
  'tweetkeeper.history_retention (0: none), first rolling them up into metric_daily '
  '(tweetkeeper.history_rollup); returns how many partitions it dropped.';

-- Compaction: the partitions of metric_history_hot of the UTC weeks that ended an hour ago or
-- more (an observation's time is its completion's, so none can land there any more) are merged
-- into metric_history_compact, one row per post and week, and dropped. The partitions of a run
-- go in one statement, so each row is written once (merge_history joins a week's row with what a
-- later run adds: a week split by max_partitions). All in one transaction: a run killed at any point loses nothing, and the next one
-- does the work again (a partition is either still there, or merged and gone). The partitions
-- are read under SHARE locks (no writer); the parent is locked only for the DROPs, at the end.
-- With a retention shorter than two weeks nothing is compacted: retention drops the history
-- soon anyway, and it drops compacted history only by whole weeks.
CREATE OR REPLACE FUNCTION compact_history(max_partitions integer DEFAULT 48) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD'
  SET lock_timeout = '2s' AS $$
DECLARE
  s record := tweetkeeper.settings();
  parts regclass[];
  part regclass;
  source text;
  observations bigint := 0;
BEGIN
  IF max_partitions IS NULL OR max_partitions < 1 THEN
    RAISE EXCEPTION 'max_partitions must be at least 1, got %', coalesce(max_partitions::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF s.history_retention > interval '0' AND s.history_retention < interval '14 days' THEN
    PERFORM tweetkeeper_internal.record_housekeeping('compaction',
      format('not compacting: tweetkeeper.history_retention (%s) is shorter than two weeks', s.history_retention));
    RETURN 0;
  END IF;
  PERFORM tweetkeeper_internal.housekeeping_lock();
  SELECT array_agg(h.partition ORDER BY h.starts) INTO parts
    FROM (SELECT h.partition, h.starts FROM tweetkeeper.history_partitions h
           WHERE h.ends <= tweetkeeper.history_span(now() - interval '1 hour')
           ORDER BY h.starts LIMIT max_partitions) h;
  IF parts IS NULL THEN
    PERFORM tweetkeeper_internal.record_housekeeping('compaction', 'no partition of a week past');
    RETURN 0;
  END IF;
  FOREACH part IN ARRAY parts LOOP
    EXECUTE format('LOCK TABLE %s IN SHARE MODE', part);
  END LOOP;
  -- One statement over all of them: each partition read once, each post's week packed once.
  SELECT string_agg(format('SELECT * FROM %s', x), ' UNION ALL ') INTO source FROM unnest(parts) x;
  EXECUTE format($q$
    WITH g AS (
      SELECT h.tweet_id, tweetkeeper.history_span(h.observed_at) AS span_start, count(*) AS n,
             tweetkeeper.pack_history(array_agg(h.observed_at ORDER BY h.observed_at, h.lease_id),
               array_agg(h.lease_id ORDER BY h.observed_at, h.lease_id),
               array_agg(h.retweet_count ORDER BY h.observed_at, h.lease_id),
               array_agg(h.reply_count ORDER BY h.observed_at, h.lease_id),
               array_agg(h.like_count ORDER BY h.observed_at, h.lease_id),
               array_agg(h.quote_count ORDER BY h.observed_at, h.lease_id),
               array_agg(h.bookmark_count ORDER BY h.observed_at, h.lease_id),
               array_agg(h.impression_count ORDER BY h.observed_at, h.lease_id)) AS packed
        FROM (%s) h
       GROUP BY 1, 2
    ), ins AS (
      INSERT INTO tweetkeeper.metric_history_compact AS c (tweet_id, span_start, packed)
      SELECT g.tweet_id, g.span_start, g.packed FROM g ORDER BY 1, 2
      ON CONFLICT ON CONSTRAINT metric_history_compact_pkey
      DO UPDATE SET packed = tweetkeeper.merge_history(c.packed, excluded.packed)
    )
    SELECT coalesce(sum(g.n), 0) FROM g$q$, source) INTO observations;
  LOCK TABLE tweetkeeper.metric_history_hot IN ACCESS EXCLUSIVE MODE;
  FOREACH part IN ARRAY parts LOOP
    EXECUTE format('DROP TABLE %s', part);
  END LOOP;
  PERFORM tweetkeeper_internal.record_housekeeping('compaction',
    format('%s partitions compacted (%s observations)', cardinality(parts), observations));
  RETURN cardinality(parts);
END $$;
COMMENT ON FUNCTION compact_history(integer) IS
  'Moves up to max_partitions partitions of metric_history_hot of UTC weeks past into '
  'metric_history_compact (one row per post and week) and drops them; returns how many. '
  'Idempotent and safe to interrupt. Nothing with a tweetkeeper.history_retention under 14 days.';

-- Each task that has not run for if_older_than (by anyone: pg_cron, an operator, this), in a
-- subtransaction of its own: a task that fails (a lock not granted in time) is recorded as such
-- and tried again next time, and does not stop the other. Run by the background worker every
-- tweetkeeper.housekeeping_interval.
CREATE OR REPLACE FUNCTION housekeeping(if_older_than interval DEFAULT interval '0') RETURNS text
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  job text;
  done text[] := '{}';
BEGIN
  IF if_older_than IS NULL OR if_older_than < interval '0' THEN
    RAISE EXCEPTION 'if_older_than must be zero or more, not %', if_older_than
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Retention first: it takes the strongest lock (see apply_retention), before any other.
  FOREACH job IN ARRAY ARRAY['retention', 'partitions', 'compaction'] LOOP
    CONTINUE WHEN if_older_than > interval '0' AND EXISTS (
                    SELECT FROM tweetkeeper.housekeeping_runs r
                     WHERE r.task = job AND r.last_run > clock_timestamp() - if_older_than
                             AND r.result NOT LIKE 'failed:%');
    BEGIN
      CASE job
        WHEN 'partitions' THEN PERFORM tweetkeeper.create_partitions();
        WHEN 'compaction' THEN PERFORM tweetkeeper.compact_history();
        ELSE PERFORM tweetkeeper.apply_retention();
      END CASE;
      done := done || (job || ': ' || (SELECT r.result FROM tweetkeeper.housekeeping_runs r WHERE r.task = job));
    EXCEPTION WHEN OTHERS THEN
      PERFORM tweetkeeper_internal.record_housekeeping(job, 'failed: ' || SQLERRM);
      done := done || (job || ': failed: ' || SQLERRM);
    END;
  END LOOP;
  RETURN array_to_string(done, '; ');
END $$;
COMMENT ON FUNCTION housekeeping(interval) IS
  'Runs the housekeeping tasks (apply_retention, create_partitions, compact_history) that have '
  'not run for if_older_than; a failed task is recorded in housekeeping_runs and does not stop '
  'the others. '
  'Returns what was done.';

-- pg_cron, when it is installed in this database, instead of the background worker: the jobs run
-- the tasks more often than tweetkeeper.housekeeping_interval, so the worker finds them done.
-- Jobs belong to the user who calls this (cron.schedule); by name, so calling again updates them.
CREATE OR REPLACE FUNCTION schedule_housekeeping(partitions text DEFAULT '*/10 * * * *',
                                      retention text DEFAULT '17 * * * *',
                                      compaction text DEFAULT '37 * * * *') RETURNS bigint[]
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  -- (Its own NULL check: it runs as its caller, who may not call tweetkeeper_internal's.)
  IF partitions IS NULL OR retention IS NULL OR compaction IS NULL THEN
    RAISE EXCEPTION 'the schedules must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_cron') THEN
    RAISE EXCEPTION 'pg_cron is not installed in database %', current_database()
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Add pg_cron to shared_preload_libraries, set cron.database_name to this database '
                   'and CREATE EXTENSION pg_cron; without it the background worker does the housekeeping.';
  END IF;
  RETURN ARRAY[cron.schedule('tweetkeeper-partitions', partitions, 'SELECT tweetkeeper.create_partitions()'),
               cron.schedule('tweetkeeper-retention', retention, 'SELECT tweetkeeper.apply_retention()'),
               cron.schedule('tweetkeeper-compaction', compaction, 'SELECT tweetkeeper.compact_history()')];
END $$;
COMMENT ON FUNCTION schedule_housekeeping(text, text, text) IS
  'Registers (or updates) the pg_cron jobs tweetkeeper-partitions, tweetkeeper-retention and '
  'tweetkeeper-compaction with these cron schedules; returns their job ids. Needs pg_cron in this '
  'database.';

CREATE OR REPLACE FUNCTION unschedule_housekeeping() RETURNS integer
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n integer := 0;
  job text;
BEGIN
  IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_cron') THEN
    RETURN 0;  -- nothing can be scheduled
  END IF;
  FOR job IN EXECUTE 'SELECT jobname FROM cron.job
                       WHERE jobname IN (''tweetkeeper-partitions'', ''tweetkeeper-retention'', ''tweetkeeper-compaction'')
                         AND username = current_user' LOOP
    PERFORM cron.unschedule(job);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;
COMMENT ON FUNCTION unschedule_housekeeping() IS
  'Removes the pg_cron jobs of schedule_housekeeping() (the background worker takes over); '
  'returns how many it removed.';
