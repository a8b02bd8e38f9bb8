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

-- Per post and count: its latest value, and the ages at which it reached half and nine tenths of
-- it (interpolated between the observations around the crossing, from 0 at the creation), and
-- whether it is still changing (its post is still refreshed, and its latest observation changed
-- it). A count of 0, or one the network does not report, has no ages.
CREATE OR REPLACE VIEW lifespans AS
SELECT t.tweet_id AS post_id,
       CASE WHEN t.endpoint IS NULL THEN 'x' WHEN t.endpoint LIKE 'bluesky%' THEN 'bluesky' ELSE 'mastodon' END AS network,
       c.metric, c.latest, t.updated_at AS latest_at, c.age_50, c.age_90,
       t.state NOT IN ('done', 'deleted') AND c.changed_at = t.updated_at AS still_changing
  FROM tweets t
  CROSS JOIN LATERAL (
    WITH o AS (
      SELECT h.observed_at, m.metric, m.value,
             lag(m.value, 1, 0::bigint) OVER w AS prev_value, lag(h.observed_at, 1, t.created_at) OVER w AS prev_at,
             last_value(m.value) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS latest
        FROM metric_history h
        CROSS JOIN LATERAL (VALUES ('retweet_count', h.retweet_count), ('reply_count', h.reply_count),
                                   ('like_count', h.like_count), ('quote_count', h.quote_count),
                                   ('bookmark_count', h.bookmark_count), ('impression_count', h.impression_count)) m(metric, value)
       WHERE h.tweet_id = t.tweet_id AND m.value IS NOT NULL
      WINDOW w AS (PARTITION BY m.metric ORDER BY h.observed_at, h.lease_id)
    ), crossing AS (
      -- The first observation at or above each share of the latest value, and the age at which the
      -- line from the observation before it (or from 0 at the creation) reached that share.
      SELECT o.metric, q.share,
             min(extract(epoch FROM o.prev_at - t.created_at)
                 + extract(epoch FROM o.observed_at - o.prev_at)
                   * (q.share * o.latest - o.prev_value) / nullif(o.value - o.prev_value, 0)) AS seconds
        FROM o CROSS JOIN (VALUES (0.5), (0.9)) q(share)
       WHERE o.latest > 0 AND o.value >= q.share * o.latest AND o.prev_value < q.share * o.latest
       GROUP BY o.metric, q.share
    )
    SELECT o.metric, max(o.latest) AS latest,
           max(o.observed_at) FILTER (WHERE o.value IS DISTINCT FROM o.prev_value) AS changed_at,
           (SELECT make_interval(secs => x.seconds) FROM crossing x WHERE x.metric = o.metric AND x.share = 0.5) AS age_50,
           (SELECT make_interval(secs => x.seconds) FROM crossing x WHERE x.metric = o.metric AND x.share = 0.9) AS age_90
      FROM o GROUP BY o.metric
  ) c;
COMMENT ON VIEW lifespans IS
  'Per post and count: its latest value, the ages at which it reached 50% and 90% of it '
  '(interpolated between observations) and whether it is still changing.';
