-- Curves (issue 39): each post's counts at the ages one asks for, and how long its engagement
-- lasted, from its observations (metric_history: the recent and the compacted alike). Nothing is
-- guessed past a post's last observation (tweets.updated_at). History keeps the observations that
-- changed a count (and the first): between two of them the counts stood at the earlier one's until
-- some moment before the later one, which is why both observations' times come with every value.

-- Each post's counts at each age: the last observation at or before the moment (created_at + age),
-- and the value interpolated linearly between it and the next one; at an age between the last
-- change and the last observation, the counts stood (the interpolated value is the last one's).
-- Before the first observation only the interpolated value is given, from the creation, when a
-- post has no engagement yet (0). NULL past the last observation, for a post not tracked, and for
-- a count the network does not report.
CREATE OR REPLACE FUNCTION metrics_at(posts bigint[], ages interval[])
  RETURNS TABLE (post_id bigint, age interval, at timestamptz, observed_before timestamptz,
                 observed_after timestamptz, retweet_count bigint, reply_count bigint, like_count bigint,
                 quote_count bigint, bookmark_count bigint, impression_count bigint,
                 retweet_interpolated double precision, reply_interpolated double precision,
                 like_interpolated double precision, quote_interpolated double precision,
                 bookmark_interpolated double precision, impression_interpolated double precision)
  LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  bad interval;
BEGIN
  IF posts IS NULL THEN
    RAISE EXCEPTION 'posts must not be NULL' USING ERRCODE = '22004';
  END IF;
  IF ages IS NULL OR cardinality(ages) = 0 THEN
    RAISE EXCEPTION 'ages must hold at least one age' USING ERRCODE = '22023';
  END IF;
  IF array_position(ages, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'ages must not hold NULL' USING ERRCODE = '22023';
  END IF;
  SELECT u INTO bad FROM unnest(ages) u WHERE u < interval '0' LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'an age must not be negative: %', bad USING ERRCODE = '22023';
  END IF;
  RETURN QUERY
  WITH p AS (
    SELECT t.tweet_id, t.created_at, t.updated_at FROM tweetkeeper.tweets t WHERE t.tweet_id = ANY (posts)
  ), a AS (
    SELECT DISTINCT u AS age FROM unnest(ages) u
  ), o AS (
    -- The creation (no engagement yet) and every observation, in time order.
    SELECT p.tweet_id, p.created_at AS observed_at, true AS made, 0::bigint AS lease_id,
           0::bigint AS rt, 0::bigint AS re, 0::bigint AS li, 0::bigint AS qu, 0::bigint AS bo, 0::bigint AS im
      FROM p
    UNION ALL
    SELECT h.tweet_id, h.observed_at, false, h.lease_id, h.retweet_count, h.reply_count, h.like_count,
           h.quote_count, h.bookmark_count, h.impression_count
      FROM tweetkeeper.metric_history h WHERE h.tweet_id = ANY (posts)
  ), s AS (
    -- Each with the next one: the span in which the counts went from the one to the other.
    SELECT o.*, lead(o.observed_at) OVER w AS next_at, lead(o.rt) OVER w AS n_rt, lead(o.re) OVER w AS n_re,
           lead(o.li) OVER w AS n_li, lead(o.qu) OVER w AS n_qu, lead(o.bo) OVER w AS n_bo, lead(o.im) OVER w AS n_im
      FROM o
    WINDOW w AS (PARTITION BY o.tweet_id ORDER BY o.observed_at, o.made DESC, o.lease_id)
  )
  SELECT p.tweet_id, a.age, p.created_at + a.age,
         CASE WHEN NOT s.made THEN s.observed_at END, CASE WHEN s.tweet_id IS NOT NULL THEN coalesce(s.next_at, p.updated_at) END,
         CASE WHEN NOT s.made THEN s.rt END, CASE WHEN NOT s.made THEN s.re END,
         CASE WHEN NOT s.made THEN s.li END, CASE WHEN NOT s.made THEN s.qu END,
         CASE WHEN NOT s.made THEN s.bo END, CASE WHEN NOT s.made THEN s.im END,
         -- (Where there is no next observation the counts stood until the last, updated_at.)
         CASE WHEN s.next_at IS NULL THEN s.rt ELSE s.rt + (s.n_rt - s.rt) * f.x END,
         CASE WHEN s.next_at IS NULL THEN s.re ELSE s.re + (s.n_re - s.re) * f.x END,
         CASE WHEN s.next_at IS NULL THEN s.li ELSE s.li + (s.n_li - s.li) * f.x END,
         CASE WHEN s.next_at IS NULL THEN s.qu ELSE s.qu + (s.n_qu - s.qu) * f.x END,
         CASE WHEN s.next_at IS NULL THEN s.bo ELSE s.bo + (s.n_bo - s.bo) * f.x END,
         CASE WHEN s.next_at IS NULL THEN s.im ELSE s.im + (s.n_im - s.im) * f.x END
    FROM p CROSS JOIN a
    LEFT JOIN s ON s.tweet_id = p.tweet_id AND s.observed_at <= p.created_at + a.age
               AND (s.next_at > p.created_at + a.age OR s.next_at IS NULL)
               AND p.created_at + a.age <= p.updated_at
               AND NOT (s.made AND s.next_at IS NULL)  -- (a post with no observation at all)
    -- How far into the span from the one observation to the next the moment is.
    CROSS JOIN LATERAL (SELECT extract(epoch FROM p.created_at + a.age - s.observed_at)::double precision
                               / nullif(extract(epoch FROM s.next_at - s.observed_at), 0)::double precision) f(x)
   ORDER BY p.tweet_id, a.age;
END
$$;
COMMENT ON FUNCTION metrics_at(bigint[], interval[]) IS
  'Each post''s counts at each age: the last observation at or before it (observed_before) and '
  'the value interpolated between it and the next (observed_after); NULL past the last '
  'observation. 22023 for no ages, a NULL or a negative one.';

-- The age (seconds) at which a count reached `share` of its latest value, in the span from the
-- observation before (prev_value at prev_at; 0 at the creation) to this one, or NULL when it did
-- not cross there. Inlined where it is used (a body in SQL's own form needs no search_path).
CREATE OR REPLACE FUNCTION crossing_seconds(share numeric, latest bigint, value bigint, prev_value bigint,
                                            observed_at timestamptz, prev_at timestamptz, created_at timestamptz)
  RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE WHEN latest > 0 AND value >= share * latest AND prev_value < share * latest
              THEN extract(epoch FROM prev_at - created_at)::double precision
                   + extract(epoch FROM observed_at - prev_at)::double precision
                     * ((share * latest - prev_value) / (value - prev_value))::double precision END;

-- Per post and count: its latest value, and the ages at which it reached half and nine tenths of
-- it (interpolated between the observations around the crossing, from 0 at the creation), and
-- whether it is still changing (its post is still refreshed, and its latest observation changed
-- it). A count of 0, or one the network does not report, has no ages. Set-based: each post's
-- observations are read once, in time order, all six counts side by side (a million posts in
-- one pass, make bench); a condition on post_id reaches the history's index.
CREATE OR REPLACE VIEW lifespans AS
WITH o AS (
  -- Each observation with the one before it and the latest, per count.
  SELECT h.tweet_id, t.created_at, t.updated_at, t.state, t.endpoint, h.observed_at,
         lag(h.observed_at, 1, t.created_at) OVER w AS prev_at,
         h.retweet_count AS rt, lag(h.retweet_count, 1, 0::bigint) OVER w AS p_rt, last_value(h.retweet_count) OVER a AS l_rt,
         h.reply_count AS re, lag(h.reply_count, 1, 0::bigint) OVER w AS p_re, last_value(h.reply_count) OVER a AS l_re,
         h.like_count AS li, lag(h.like_count, 1, 0::bigint) OVER w AS p_li, last_value(h.like_count) OVER a AS l_li,
         h.quote_count AS qu, lag(h.quote_count, 1, 0::bigint) OVER w AS p_qu, last_value(h.quote_count) OVER a AS l_qu,
         h.bookmark_count AS bo, lag(h.bookmark_count, 1, 0::bigint) OVER w AS p_bo, last_value(h.bookmark_count) OVER a AS l_bo,
         h.impression_count AS im, lag(h.impression_count, 1, 0::bigint) OVER w AS p_im, last_value(h.impression_count) OVER a AS l_im
    FROM metric_history h JOIN tweets t ON t.tweet_id = h.tweet_id
  WINDOW w AS (PARTITION BY h.tweet_id ORDER BY h.observed_at, h.lease_id),
         a AS (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
), c AS (
  -- Per post and count, over its observations: the latest value, when it last changed, and the
  -- first crossings of half and nine tenths of the latest.
  SELECT o.tweet_id, o.created_at, o.updated_at, o.state, o.endpoint, m.metric,
         max(m.latest) AS latest,
         max(o.observed_at) FILTER (WHERE m.value IS DISTINCT FROM m.prev) AS changed_at,
         min(crossing_seconds(0.5, m.latest, m.value, m.prev, o.observed_at, o.prev_at, o.created_at)) AS s50,
         min(crossing_seconds(0.9, m.latest, m.value, m.prev, o.observed_at, o.prev_at, o.created_at)) AS s90
    FROM o CROSS JOIN LATERAL (VALUES ('retweet_count', o.rt, o.p_rt, o.l_rt), ('reply_count', o.re, o.p_re, o.l_re),
                                      ('like_count', o.li, o.p_li, o.l_li), ('quote_count', o.qu, o.p_qu, o.l_qu),
                                      ('bookmark_count', o.bo, o.p_bo, o.l_bo),
                                      ('impression_count', o.im, o.p_im, o.l_im)) m(metric, value, prev, latest)
   WHERE m.value IS NOT NULL
   GROUP BY o.tweet_id, o.created_at, o.updated_at, o.state, o.endpoint, m.metric
)
SELECT c.tweet_id AS post_id,
       CASE WHEN c.endpoint IS NULL THEN 'x' WHEN c.endpoint LIKE 'bluesky%' THEN 'bluesky' ELSE 'mastodon' END AS network,
       c.metric, c.latest, c.updated_at AS latest_at, make_interval(secs => c.s50) AS age_50,
       make_interval(secs => c.s90) AS age_90,
       c.state NOT IN ('done', 'deleted') AND c.changed_at = c.updated_at AS still_changing
  FROM c;
COMMENT ON VIEW lifespans IS
  'Per post and count: its latest value, the ages at which it reached 50% and 90% of it '
  '(interpolated between observations) and whether it is still changing.';
