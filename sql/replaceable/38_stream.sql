-- Stream counts (sql/schema/38_stream.sql; docs/workers.md, "Stream counts"). The reader's side
-- (tweetkeeper_worker): it takes the stream's lease (stream_take()), loads the posts it counts and
-- their records (stream_held_posts(), stream_held_records()), and every few seconds stores, in one
-- transaction, the counts that moved with their history, the records to keep and forget, the
-- reads it adopted or reconciled, and its position (store_stream_counts()): exactly once, as the
-- position moves with the counts. Each acts only under the lease, and only on the posts the
-- stream counts or a read offered it (stream_reads): a worker cannot set another post's counts.

-- Whether the stream counts now: turned on, and its reader flushed within
-- tweetkeeper.stream_stale_after. A read of a counted post while it does not stores its counts as
-- before and lets the post go (the reader adopts it again from a later read).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.stream_live() RETURNS boolean
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN current_setting('tweetkeeper.bluesky_stream_counts')::boolean
     AND EXISTS (SELECT FROM tweetkeeper.stream_state s
                  WHERE s.stream = 'bluesky'
                    AND s.flushed_at > now() - current_setting('tweetkeeper.stream_stale_after')::interval);

-- The stream's row, locked, when this session holds its lease; else 55000.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.held_stream() RETURNS tweetkeeper.stream_state
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  s tweetkeeper.stream_state;
BEGIN
  SELECT * INTO s FROM tweetkeeper.stream_state x WHERE x.stream = 'bluesky' FOR UPDATE;
  IF NOT FOUND OR NOT tweetkeeper_internal.session_is(s.lease_pid, s.lease_started) THEN
    RAISE EXCEPTION 'the stream is not leased by this session'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Take it with stream_take(); another reader may hold it now.';
  END IF;
  RETURN s;
END $$;

-- A reader's claim of the stream, or its renewal: the position to read from (NULL: live), or no
-- row while another reader's lease runs. A position older than replay_window (Jetstream replays
-- 36 hours and silently starts later for an older cursor) is a gap: every counted post is read
-- again at once and adopted anew, and the reader starts live.
CREATE OR REPLACE FUNCTION stream_take(reader text, lease interval DEFAULT '30 seconds',
                                       replay_window interval DEFAULT '35 hours')
  RETURNS TABLE (position_us bigint, gap boolean)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  s tweetkeeper.stream_state;
  late boolean;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('reader, lease and replay_window',
                                           reader IS NULL OR lease IS NULL OR replay_window IS NULL);
  IF lease NOT BETWEEN interval '1 second' AND interval '1 hour'
     OR replay_window NOT BETWEEN interval '1 minute' AND interval '30 days' THEN
    RAISE EXCEPTION 'lease must be 1 second to 1 hour and replay_window 1 minute to 30 days, got % and %',
      lease, replay_window USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT current_setting('tweetkeeper.bluesky_stream_counts')::boolean THEN
    RAISE EXCEPTION 'stream counts are off'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'ALTER SYSTEM SET tweetkeeper.bluesky_stream_counts = on; SELECT pg_reload_conf();';
  END IF;
  INSERT INTO tweetkeeper.stream_state (stream) VALUES ('bluesky') ON CONFLICT DO NOTHING;
  SELECT * INTO s FROM tweetkeeper.stream_state x WHERE x.stream = 'bluesky' FOR UPDATE;
  -- (Free when its lease ran out or its session is gone: a killed reader's successor need not
  -- wait for the lease.)
  IF NOT (s.lease_until IS NULL OR s.lease_until < now() OR tweetkeeper_internal.session_is(s.lease_pid, s.lease_started)
          OR NOT tweetkeeper.backend_alive(s.lease_pid, s.lease_started)) THEN
    RETURN;
  END IF;
  late := s.position_us IS NOT NULL AND s.position_us < (extract(epoch FROM now() - replay_window) * 1e6)::bigint;
  IF late THEN
    UPDATE tweetkeeper.tweets t SET due_at = now()
      FROM tweetkeeper.stream_posts p
     WHERE t.tweet_id = p.tweet_id AND t.state = 'scheduled' AND t.lease_id IS NULL AND t.due_at > now();
    DELETE FROM tweetkeeper.stream_posts;
    DELETE FROM tweetkeeper.stream_reads;
  END IF;
  -- Posts done or deleted since the last reader leave the stream, and their records go.
  DELETE FROM tweetkeeper.stream_posts p
   USING tweetkeeper.tweets t WHERE t.tweet_id = p.tweet_id AND t.state <> 'scheduled';
  DELETE FROM tweetkeeper.stream_records x
   USING tweetkeeper.tweets t WHERE t.tweet_id = x.tweet_id AND t.state <> 'scheduled';
  UPDATE tweetkeeper.stream_state x
     SET lease_owner = reader, lease_pid = pg_backend_pid(), lease_started = tweetkeeper_internal.backend_start(),
         lease_until = now() + lease, lease_length = lease,
         position_us = CASE WHEN late THEN NULL ELSE x.position_us END,
         gaps = x.gaps + late::integer, gap_at = CASE WHEN late THEN now() ELSE x.gap_at END
   WHERE x.stream = 'bluesky'
  RETURNING x.position_us, late INTO position_us, gap;
  RETURN NEXT;
END $$;
COMMENT ON FUNCTION stream_take(text, interval, interval) IS
  'A Jetstream reader''s lease of the stream (renewed by each store_stream_counts()): the position to '
  'read from, NULL to start live; no row while another live session holds it. A position older than '
  'replay_window is a gap: every post the stream counted is read again at once (gap true).';

-- The posts the stream counts, with their counts, for the lease holder to load.
CREATE OR REPLACE FUNCTION stream_held_posts()
  RETURNS TABLE (tweet_id bigint, did text, rkey text, counts bigint[])
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.held_stream();
  RETURN QUERY
  SELECT t.tweet_id, r.author, r.post_key, ARRAY[t.retweet_count, t.reply_count, t.like_count, t.quote_count]
    FROM tweetkeeper.stream_posts p
    JOIN tweetkeeper.tweets t ON t.tweet_id = p.tweet_id
    JOIN tweetkeeper.post_refs r ON r.tweet_id = p.tweet_id;
END $$;

-- The records counted (for posts counted now, or before a gap), with their post's name, for the
-- lease holder to load.
CREATE OR REPLACE FUNCTION stream_held_records()
  RETURNS TABLE (record_key bigint, tweet_id bigint, kind smallint, did text, rkey text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.held_stream();
  RETURN QUERY SELECT x.record_key, x.tweet_id, x.kind, r.author, r.post_key
                 FROM tweetkeeper.stream_records x JOIN tweetkeeper.post_refs r ON r.tweet_id = x.tweet_id;
END $$;

-- The reads waiting for the reader, as of `upto` at the latest (the reader's position: it has
-- seen every event before), oldest first, with the post's name and whether the stream counts it.
CREATE OR REPLACE FUNCTION stream_reads_due(upto timestamptz, max_reads integer DEFAULT 1000)
  RETURNS TABLE (tweet_id bigint, did text, rkey text, as_of timestamptz, counts bigint[], counted boolean)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('upto and max_reads', upto IS NULL OR max_reads IS NULL);
  PERFORM tweetkeeper_internal.held_stream();
  RETURN QUERY
  SELECT x.tweet_id, r.author, r.post_key, x.as_of, x.counts, p.tweet_id IS NOT NULL
    FROM tweetkeeper.stream_reads x
    JOIN tweetkeeper.post_refs r ON r.tweet_id = x.tweet_id
    LEFT JOIN tweetkeeper.stream_posts p ON p.tweet_id = x.tweet_id
   WHERE x.as_of <= upto
   ORDER BY x.as_of, x.tweet_id
   LIMIT greatest(least(max_reads, 10000), 1);
END $$;

-- store_stream_counts()'s reads (its arguments): adopted posts join the stream (only from a read
-- waiting for it, of a post still scheduled); compared ones count their difference; 'again' ones
-- are due now; every read handled stops waiting.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.stream_handle_reads(read_ids bigint[], read_as_ofs timestamptz[],
                                                                    read_results text[], read_differences bigint[])
  RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  WITH r AS (
    DELETE FROM tweetkeeper.stream_reads x
     USING unnest(read_ids, read_as_ofs, read_results) WITH ORDINALITY AS u(id, as_of, result, i)
     WHERE x.tweet_id = u.id AND x.as_of = u.as_of
    RETURNING u.id, u.as_of, u.result, u.i),
  adopted AS (
    INSERT INTO tweetkeeper.stream_posts (tweet_id, adopted_as_of)
    SELECT r.id, r.as_of FROM r JOIN tweetkeeper.tweets t ON t.tweet_id = r.id
     WHERE r.result = 'adopt' AND t.state = 'scheduled'
    ON CONFLICT (tweet_id) DO NOTHING
    RETURNING tweet_id),
  compared AS (
    SELECT r.id, r.as_of, read_differences[4 * r.i - 3 : 4 * r.i] AS d FROM r WHERE r.result = 'compared'),
  differed AS (
    INSERT INTO tweetkeeper.stream_differences (tweet_id, as_of, differences)
    SELECT c.id, c.as_of, c.d FROM compared c
      JOIN tweetkeeper.stream_posts p ON p.tweet_id = c.id
     WHERE c.d <> '{0,0,0,0}'
    ON CONFLICT DO NOTHING),
  tallied AS (
    UPDATE tweetkeeper.stream_posts p
       SET reconciled = p.reconciled + 1, differed = p.differed + (c.d <> '{0,0,0,0}')::integer,
           difference = p.difference + (SELECT sum(abs(v)) FROM unnest(c.d) v),
           reconciled_at = greatest(p.reconciled_at, c.as_of)
      FROM compared c WHERE p.tweet_id = c.id)
  UPDATE tweetkeeper.tweets t SET due_at = now()
    FROM r WHERE r.result = 'again' AND t.tweet_id = r.id AND t.state = 'scheduled' AND t.lease_id IS NULL;
END $$;

-- store_stream_counts()'s arguments, checked (the same names): 22004, 22023 or 54000 saying what.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.stream_check_flush(position_us bigint, events bigint, counted bigint,
                                               ids bigint[], ats timestamptz[], counts bigint[],
                                               keys bigint[], key_ids bigint[], kinds smallint[], gone bigint[],
                                               read_ids bigint[], read_as_ofs timestamptz[], read_results text[],
                                               read_differences bigint[])
  RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('every argument',
    position_us IS NULL OR events IS NULL OR counted IS NULL OR ids IS NULL OR ats IS NULL OR counts IS NULL OR keys IS NULL
    OR key_ids IS NULL OR kinds IS NULL OR gone IS NULL OR read_ids IS NULL OR read_as_ofs IS NULL
    OR read_results IS NULL OR read_differences IS NULL);
  IF cardinality(ids) <> cardinality(ats) OR cardinality(counts) <> 4 * cardinality(ids)
     OR cardinality(keys) <> cardinality(key_ids) OR cardinality(keys) <> cardinality(kinds)
     OR cardinality(read_ids) <> cardinality(read_as_ofs) OR cardinality(read_ids) <> cardinality(read_results)
     OR cardinality(read_differences) <> 4 * cardinality(read_ids) THEN
    RAISE EXCEPTION 'the arrays of one entry must align (counts and read_differences: four per entry)'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF cardinality(ids) + cardinality(keys) + cardinality(gone) + cardinality(read_ids) > 1000000 THEN
    RAISE EXCEPTION 'a flush holds at most 1,000,000 entries' USING ERRCODE = 'program_limit_exceeded';
  END IF;
  IF EXISTS (SELECT FROM unnest(kinds) k WHERE k IS NULL OR k NOT BETWEEN 1 AND 4)
     OR EXISTS (SELECT FROM unnest(read_results) r WHERE r IS NULL OR r NOT IN ('adopt', 'again', 'compared', 'skipped')) THEN
    RAISE EXCEPTION 'kinds are 1 to 4 and read results adopt, again, compared or skipped'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF EXISTS (SELECT FROM unnest(counts) c WHERE c IS NULL OR c < 0) THEN
    RAISE EXCEPTION 'counts must not be NULL or negative' USING ERRCODE = 'invalid_parameter_value';
  END IF;
END $$;

-- The reader's flush, one transaction (all arrays of the same post's entries aligned):
--   position_us, events, counted: where it has counted to, how many events it read since its last
--     flush, and how many of them it counted for (or against) a post;
--   ids, ats, counts: each post whose counts moved, the time of its last event, its four counts
--     (reposts, replies, likes, quotes, flattened: four per post);
--   keys, key_ids, kinds: records to keep (counted for a post); gone: records deleted;
--   read_ids, read_as_ofs, read_results: the reads handled: 'adopt' (the stream counts the post from
--     it), 'again' (read it again: the reader could not place it) or 'compared', with the
--     differences read minus stream, four per read, in read_differences (0s: it agreed; the
--     reader took the read's counts where not), or 'skipped' (too old to compare: the reader
--     started after it).
-- Counts are stored only for posts the stream counts; the ids of the others come back (the reader
-- forgets them). A post moved is stored with its history (an observation at its last event's time).
CREATE OR REPLACE FUNCTION store_stream_counts(position_us bigint, events bigint, counted bigint,
                                               ids bigint[], ats timestamptz[], counts bigint[],
                                               keys bigint[], key_ids bigint[], kinds smallint[], gone bigint[],
                                               read_ids bigint[], read_as_ofs timestamptz[], read_results text[],
                                               read_differences bigint[])
  RETURNS bigint[]
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  s tweetkeeper.stream_state;
  forgotten bigint[];
  ages interval[];
  delays interval[];
BEGIN
  PERFORM tweetkeeper_internal.stream_check_flush(position_us, events, counted, ids, ats, counts, keys, key_ids, kinds,
                                                  gone, read_ids, read_as_ofs, read_results, read_differences);
  s := tweetkeeper_internal.held_stream();
  IF s.position_us IS NOT NULL AND position_us < s.position_us THEN
    RAISE EXCEPTION 'position % is before the stored one, %', position_us, s.position_us
      USING ERRCODE = 'invalid_parameter_value', HINT = 'Take the stream again (stream_take()) and read from there.';
  END IF;

  PERFORM tweetkeeper_internal.stream_handle_reads(read_ids, read_as_ofs, read_results, read_differences);
  SELECT array_agg(a.max_age ORDER BY a.max_age), array_agg(a.delay ORDER BY a.max_age)
    INTO ages, delays FROM tweetkeeper.age_policy a;

  -- Records: kept only for posts the stream counts; a deleted one forgotten.
  INSERT INTO tweetkeeper.stream_records (record_key, tweet_id, kind)
  SELECT u.k, u.id, u.kind FROM unnest(keys, key_ids, kinds) AS u(k, id, kind)
    JOIN tweetkeeper.stream_posts p ON p.tweet_id = u.id
  ON CONFLICT (record_key) DO NOTHING;
  DELETE FROM tweetkeeper.stream_records x WHERE x.record_key = ANY (gone);

  -- Counts: of posts the stream counts and that are still scheduled, with their history (lease 0:
  -- the stream's observations). The others leave the stream.
  WITH u AS (
    SELECT u.id, u.at, counts[4 * u.i - 3 : 4 * u.i] AS c
      FROM unnest(ids, ats) WITH ORDINALITY AS u(id, at, i)),
  upd AS (
    UPDATE tweetkeeper.tweets t
       SET retweet_count = u.c[1], reply_count = u.c[2], like_count = u.c[3], quote_count = u.c[4],
           -- The adaptive policy sees the stream's moves as a read's (its reads see none: they
           -- store no counts of the post).
           adaptive_state = CASE WHEN tweetkeeper_internal.adaptive_on(t, u.at) THEN tweetkeeper_internal.adaptive_step(
               u.at, t.created_at, CASE WHEN t.update_count > 0 THEN greatest(t.updated_at, p.counted_at) END,
               tweetkeeper_internal.policy_delay(t.created_at, u.at, ages, delays),
               ARRAY[t.retweet_count, t.reply_count, t.like_count, t.quote_count, t.bookmark_count, t.impression_count],
               u.c || ARRAY[t.bookmark_count, t.impression_count], t.adaptive_state, false)
             ELSE t.adaptive_state END
      FROM u, tweetkeeper.stream_posts p
     WHERE t.tweet_id = u.id AND p.tweet_id = u.id AND t.state = 'scheduled'
    RETURNING t.tweet_id, u.at, u.c),
  posts AS (
    UPDATE tweetkeeper.stream_posts p SET counted_at = greatest(p.counted_at, upd.at), observed = p.observed + 1
      FROM upd WHERE p.tweet_id = upd.tweet_id),
  kept AS (
    INSERT INTO tweetkeeper.metric_history_hot (tweet_id, lease_id, observed_at, retweet_count, reply_count,
                                                like_count, quote_count)
    SELECT upd.tweet_id, 0, upd.at, upd.c[1], upd.c[2], upd.c[3], upd.c[4] FROM upd
    ON CONFLICT DO NOTHING
    RETURNING tweet_id)
  SELECT array_agg(u.id) FILTER (WHERE upd.tweet_id IS NULL)
    INTO forgotten
    FROM u LEFT JOIN upd ON upd.tweet_id = u.id;
  DELETE FROM tweetkeeper.stream_posts p WHERE p.tweet_id = ANY (forgotten);
  DELETE FROM tweetkeeper.stream_records x WHERE x.tweet_id = ANY (forgotten);

  UPDATE tweetkeeper.stream_state x
     SET position_us = store_stream_counts.position_us, events = x.events + store_stream_counts.events,
         counted = x.counted + store_stream_counts.counted, flushed_at = now(),
         behind = now() - to_timestamp(store_stream_counts.position_us / 1e6),
         lease_until = now() + x.lease_length
   WHERE x.stream = 'bluesky';
  RETURN coalesce(forgotten, '{}');
END $$;
COMMENT ON FUNCTION store_stream_counts(bigint, bigint, bigint, bigint[], timestamptz[], bigint[], bigint[], bigint[], smallint[],
                                        bigint[], bigint[], timestamptz[], text[], bigint[]) IS
  'The Jetstream reader''s flush, under its lease: counts that moved (with their history), records to keep '
  'and forget, reads adopted or compared, and the position, in one transaction. Returns the posts '
  'whose counts were not stored (no longer counted by the stream).';

-- A completion's side (complete_batch()): with the stream counting, each Bluesky read with an
-- as_of (the answer's Date) waits for the reader in stream_reads, and the counts of the posts the
-- stream counts are taken out of the observations (a read stores them no more: the reader
-- reconciles them). Otherwise the batch's posts leave the stream. Returns the observations to store.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.stream_observations(observations jsonb, batch_ids bigint[])
  RETURNS jsonb LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  counted bigint[];
BEGIN
  IF batch_ids[1] > 0 THEN  -- X
    RETURN observations;
  END IF;
  IF NOT tweetkeeper_internal.stream_live() THEN
    DELETE FROM tweetkeeper.stream_posts p WHERE p.tweet_id = ANY (batch_ids);
    RETURN observations;
  END IF;
  INSERT INTO tweetkeeper.stream_reads (tweet_id, as_of, counts)
  SELECT o.id, o.as_of, ARRAY[o.retweet_count, o.reply_count, o.like_count, o.quote_count]
    FROM jsonb_to_recordset(observations) AS o(id bigint, as_of timestamptz, retweet_count bigint, reply_count bigint,
                                               like_count bigint, quote_count bigint)
    JOIN tweetkeeper.tweets t ON t.tweet_id = o.id AND t.endpoint IN ('bluesky', 'bluesky-handle')
   WHERE o.id = ANY (batch_ids) AND o.as_of IS NOT NULL
     AND o.retweet_count >= 0 AND o.reply_count >= 0 AND o.like_count >= 0 AND o.quote_count >= 0
  ON CONFLICT DO NOTHING;
  SELECT array_agg(p.tweet_id) INTO counted FROM tweetkeeper.stream_posts p WHERE p.tweet_id = ANY (batch_ids);
  IF counted IS NULL THEN
    RETURN observations;
  END IF;
  RETURN (SELECT jsonb_agg(CASE WHEN (e ->> 'id')::bigint = ANY (counted)
                                THEN e - ARRAY['retweet_count', 'reply_count', 'like_count', 'quote_count']
                                ELSE e END)
            FROM jsonb_array_elements(observations) e);
END $$;

-- The delay to a counted post's next read: its policy's, tweetkeeper.stream_reconcile_factor times
-- longer (reads only reconcile the stream's counts). Run by complete_batch() after the store.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.stream_put_off(batch_ids bigint[], at_now timestamptz)
  RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF batch_ids[1] > 0 OR NOT tweetkeeper_internal.stream_live() THEN
    RETURN;
  END IF;
  UPDATE tweetkeeper.tweets t
     SET due_at = tweetkeeper_internal.after(at_now, (t.due_at - at_now) * current_setting('tweetkeeper.stream_reconcile_factor')::integer)
    FROM tweetkeeper.stream_posts p
   WHERE p.tweet_id = t.tweet_id AND t.tweet_id = ANY (batch_ids) AND t.state = 'scheduled' AND t.lease_id IS NULL
     AND t.due_at > at_now;
END $$;

-- What the stream does: its position, how far behind live, what it counted, and how reads agreed.
CREATE OR REPLACE VIEW stream_stats AS
SELECT s.stream, to_timestamp(s.position_us / 1e6) AS position, s.behind, s.events, s.counted, s.flushed_at,
       -- (stream_live(), spelt out: a function a view calls is checked against its reader.)
       current_setting('tweetkeeper.bluesky_stream_counts')::boolean
         AND coalesce(s.flushed_at > now() - current_setting('tweetkeeper.stream_stale_after')::interval, false) AS live,
       s.lease_owner AS reader, s.gaps, s.gap_at,
       (SELECT count(*) FROM tweetkeeper.stream_posts) AS posts,
       (SELECT count(*) FROM tweetkeeper.stream_records) AS records,
       (SELECT count(*) FROM tweetkeeper.stream_reads) AS reads_waiting,
       (SELECT sum(p.reconciled) FROM tweetkeeper.stream_posts p) AS reconciled,
       (SELECT sum(p.differed) FROM tweetkeeper.stream_posts p) AS differed,
       (SELECT sum(p.difference) FROM tweetkeeper.stream_posts p) AS difference
  FROM tweetkeeper.stream_state s;
COMMENT ON VIEW stream_stats IS
  'The Jetstream reader''s stream counts: position, how far behind live, events read and counted, '
  'posts counted, and how their getPosts reads agreed (reconciled, differed, sum of differences).';

-- Per post: how its reads agreed with the stream.
CREATE OR REPLACE VIEW stream_accuracy AS
SELECT p.tweet_id, r.url, p.since, p.counted_at, p.observed, p.reconciled, p.differed, p.difference, p.reconciled_at,
       (SELECT d.differences FROM tweetkeeper.stream_differences d WHERE d.tweet_id = p.tweet_id
         ORDER BY d.as_of DESC LIMIT 1) AS last_differences
  FROM tweetkeeper.stream_posts p
  JOIN tweetkeeper.post_refs r ON r.tweet_id = p.tweet_id;
COMMENT ON VIEW stream_accuracy IS
  'Each post the stream counts: observations stored, reads reconciled, how many differed and by how much '
  '(last_differences: read minus stream, reposts, replies, likes, quotes).';

-- The account events of the whole network the stream's reader saw (Jetstream sends them whatever
-- the collections asked for), in their order: a deleted, taken down, suspended or deactivated
-- account's tracked posts are gone at once, an account active again brings its posts back
-- (mark_account_posts()). Bluesky posts only, by their author's DID; under the stream's lease.
-- Returns how many posts changed.
CREATE OR REPLACE FUNCTION store_stream_accounts(dids text[], actives boolean[], statuses text[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('dids, actives and statuses', dids IS NULL OR actives IS NULL OR statuses IS NULL);
  PERFORM tweetkeeper_internal.held_stream();
  RETURN tweetkeeper_internal.mark_account_posts(dids, actives, statuses);
END $$;
