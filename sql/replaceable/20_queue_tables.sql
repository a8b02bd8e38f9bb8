-- The history's view and what writes through it (the tables: sql/schema/20_queue_tables.sql;
-- the triggers: sql/schema/95_triggers.sql): metric_history, the one view of the hot and the
-- compacted history, and the function its INSTEAD OF trigger calls.

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

CREATE OR REPLACE FUNCTION tweetkeeper_internal.metric_history_write() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO tweetkeeper.metric_history_hot (tweet_id, lease_id, observed_at, retweet_count, reply_count,
                                                like_count, quote_count, bookmark_count, impression_count)
    VALUES (NEW.tweet_id, NEW.lease_id, NEW.observed_at, NEW.retweet_count, NEW.reply_count, NEW.like_count,
            NEW.quote_count, NEW.bookmark_count, NEW.impression_count);
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
