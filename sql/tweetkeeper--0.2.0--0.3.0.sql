\echo Use "ALTER EXTENSION tweetkeeper UPDATE TO '0.3.0'" to load this file. \quit

-- 0.2.0 -> 0.3.0. 0.3.0's install script is built from the parts in sql/src/ instead of one
-- file, with the same statements in the same order except for what is changed below. Each
-- change to the extension's SQL in 0.3.0 adds its statements here.
--  * create_partitions() locks metric_history EXCLUSIVE (not SHARE UPDATE EXCLUSIVE) while it
--    attaches a partition, so a completion can no longer fail with SQLSTATE 23514 on
--    metric_history_default when a partition for now is created while it stores.
--  * parse_post_url(): X, Bluesky and Mastodon post URLs read into network, author and key.

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
  PERFORM pg_advisory_xact_lock(hashtext('tweetkeeper.housekeeping'));
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
      LOCK TABLE tweetkeeper.metric_history IN EXCLUSIVE MODE;  -- no completion in flight across the ATTACH
      locked := true;
    END IF;
    part := 'metric_history_' || to_char(lo, 'YYYYMMDD_HH24MISS');
    EXECUTE format('CREATE TABLE tweetkeeper.%1$I (LIKE tweetkeeper.metric_history,
                      CONSTRAINT %2$I PRIMARY KEY (tweet_id, observed_at, lease_id))', part, part || '_pkey');
    EXECUTE format('WITH m AS (DELETE FROM tweetkeeper.metric_history_default
                                WHERE observed_at >= $1 AND observed_at < $2 RETURNING *)
                    INSERT INTO tweetkeeper.%I SELECT * FROM m', part) USING lo, hi;
    GET DIAGNOSTICS n = ROW_COUNT;
    moved := moved + n;
    EXECUTE format('ALTER TABLE tweetkeeper.metric_history ATTACH PARTITION tweetkeeper.%I FOR VALUES FROM (%L) TO (%L)',
                   part, lo, hi);
    created := created + 1;
  END LOOP;
  PERFORM tweetkeeper.record_housekeeping('partitions',
    format('%s partitions created, %s rows moved out of the default partition', created, moved));
  RETURN created;
END $$;

CREATE FUNCTION parse_post_url(url text, OUT network text, OUT host text, OUT author text,
                               OUT post_key text, OUT created_at timestamptz, OUT canonical text)
  RETURNS record AS 'MODULE_PATHNAME', 'tk_parse_post_url' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION parse_post_url(text) IS
  'Reads a post URL: X (https://x.com/<user>/status/<id>, twitter.com, /i/web/status/<id>), '
  'Bluesky (https://bsky.app/profile/<handle or DID>/post/<rkey>, at://<handle or DID>/'
  'app.bsky.feed.post/<rkey>) or Mastodon (https://<host>/@<user>/<id>, https://<host>/users/'
  '<user>/statuses/<id>). Returns the network (x, bluesky, mastodon), the host (Mastodon), the '
  'author, the post''s key, its creation time where the key encodes one (for Bluesky an estimate) '
  'and one canonical spelling. 22023, naming the value and the fault, for anything else.';
REVOKE ALL ON FUNCTION parse_post_url(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION parse_post_url(text) TO tweetkeeper_reader;
