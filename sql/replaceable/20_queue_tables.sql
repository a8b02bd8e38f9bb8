-- The queue tables' triggers and views (the tables: sql/schema/20_queue_tables.sql): claim heads
-- kept current on inserts and moves, and metric_history, the one view of the hot and the compacted
-- history, with the trigger that writes through it.

-- A tweet put below a claim's remembered head (claim_heads()): scheduled, due earlier than it
-- was (a release, an abandoned batch handed back, a delay shorter than the lease), or moved to
-- another delay with its due time passed. Claims and ordinary completions move tweets later and
-- do not fire it. AFTER, not BEFORE: a BEFORE row trigger makes PostgreSQL lock each row it
-- updates before its WHEN clause is even evaluated, a WAL record per row that no lock read took
-- already (every tweet of every completion: 8% of its WAL and a tenth of its time); an AFTER
-- row trigger reads its WHEN clause from the row versions at hand, and queues only rows it fires
-- for (a bulk reschedule to earlier times queues each of its rows until the statement ends).
CREATE OR REPLACE TRIGGER tweets_heads_moved AFTER UPDATE ON tweets FOR EACH ROW
  WHEN (NEW.tweet_id > 0 AND NEW.due_at IS NOT NULL
        AND (OLD.due_at IS NULL OR NEW.due_at < OLD.due_at
             OR (NEW.delay IS DISTINCT FROM OLD.delay AND NEW.due_at <= now())))
  EXECUTE FUNCTION heads_moved();
CREATE OR REPLACE TRIGGER tweets_heads_scheduled AFTER INSERT ON tweets FOR EACH STATEMENT
  EXECUTE FUNCTION heads_moved();

-- The span of compacted history an observation belongs to.
CREATE OR REPLACE FUNCTION history_span(observed_at timestamptz) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN date_trunc('week', observed_at, 'UTC');

-- Every observation, hot or compacted, with the columns and rows metric_history always had. A
-- post's history is read by its id from both tables' keys. Rows may be inserted (into the hot
-- table) and deleted (from either) as before 0.3.0, by metric_history_write().
CREATE OR REPLACE VIEW metric_history AS
SELECT h.tweet_id, h.lease_id, h.observed_at, h.retweet_count, h.reply_count, h.like_count,
       h.quote_count, h.bookmark_count, h.impression_count
  FROM metric_history_hot h
UNION ALL
SELECT c.tweet_id, u.lease_id, u.observed_at, u.retweet_count, u.reply_count, u.like_count,
       u.quote_count, u.bookmark_count, u.impression_count
  FROM metric_history_compact c CROSS JOIN LATERAL unpack_history(c.packed) u;
COMMENT ON VIEW metric_history IS
  'Observations of posts'' metrics, one row per refresh that changed a count (all of them with '
  'tweetkeeper.history_keep_unchanged): the recent ones (metric_history_hot, partitioned by '
  'observed_at) and the compacted ones (metric_history_compact). Read a post''s history with '
  'WHERE tweet_id = ... ORDER BY observed_at.';

CREATE OR REPLACE FUNCTION metric_history_write() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO tweetkeeper.metric_history_hot (tweet_id, lease_id, observed_at, retweet_count, reply_count,
                                                like_count, quote_count, bookmark_count, impression_count, bucket)
    VALUES (NEW.tweet_id, NEW.lease_id, NEW.observed_at, NEW.retweet_count, NEW.reply_count, NEW.like_count,
            NEW.quote_count, NEW.bookmark_count, NEW.impression_count,
            CASE WHEN tweetkeeper.shard_count() > 0 THEN tweetkeeper.bucket_of(NEW.tweet_id) END);
    RETURN NEW;
  END IF;
  DELETE FROM tweetkeeper.metric_history_hot h
   WHERE h.tweet_id = OLD.tweet_id AND h.observed_at = OLD.observed_at AND h.lease_id = OLD.lease_id;
  IF NOT FOUND THEN
    -- A compacted observation: its span packed again without it (and gone once empty).
    UPDATE tweetkeeper.metric_history_compact c
       SET packed = tweetkeeper.history_without(c.packed, OLD.observed_at, OLD.lease_id)
     WHERE c.tweet_id = OLD.tweet_id AND c.span_start = tweetkeeper.history_span(OLD.observed_at);
    DELETE FROM tweetkeeper.metric_history_compact c
     WHERE c.tweet_id = OLD.tweet_id AND c.span_start = tweetkeeper.history_span(OLD.observed_at)
       AND NOT EXISTS (SELECT FROM tweetkeeper.unpack_history(c.packed));
  END IF;
  RETURN OLD;
END $$;
CREATE OR REPLACE TRIGGER metric_history_write INSTEAD OF INSERT OR DELETE ON metric_history
  FOR EACH ROW EXECUTE FUNCTION metric_history_write();
