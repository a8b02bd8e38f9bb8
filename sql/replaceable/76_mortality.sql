-- How a collection decays: each post's availability (post_availability), and the share of a
-- collection's posts still available by age (mortality_by_age) and by calendar date
-- (mortality_by_date), with why the others are gone. (The two read only post_availability and
-- collection_posts: the proxy makes them again over every node's.) As tweetkeeper observed it: a
-- post is gone from the first read that found it gone (tombstones.gone_since); available at a
-- moment when it was seen then or after (its last observation, tweets.updated_at), or seen and
-- never found gone; unknown otherwise (seen last before a moment and found gone after it, or
-- never read yet: an import of old posts is mostly that until it is read).

CREATE OR REPLACE VIEW post_availability AS
SELECT t.tweet_id AS post_id,
       coalesce(r.network, 'x') AS network,
       t.created_at,
       t.updated_at AS last_seen,
       g.gone_since,
       -- Why, from what the network said: deleted; hidden (private or suspended, the network does
       -- not say which: X's reads); missing (left out of answers: Bluesky and Mastodon leave deleted
       -- and hidden posts out alike). (In the view, not a function of tweetkeeper_internal: a
       -- function a view calls is checked against its reader.)
       CASE WHEN g.gone_since IS NULL THEN NULL
            WHEN g.detail IN ('resource-not-found', 'x-compliance:deleted', 'x-compliance:bounced') THEN 'deleted'
            -- (Bluesky's account events and X's compliance results say why.)
            WHEN g.detail IN ('account:deleted', 'account:deactivated', 'x-compliance:deactivated') THEN 'account gone'
            WHEN g.detail IN ('account:takendown', 'account:suspended', 'x-compliance:suspended') THEN 'suspended'
            WHEN g.detail = 'x-compliance:protected' THEN 'private'
            WHEN g.detail IN ('not-authorized-for-resource', 'resource-unavailable', 'disallowed-resource') THEN 'hidden'
            ELSE 'missing' END AS reason,
       CASE WHEN g.gone_since IS NOT NULL THEN g.detail END AS detail
  FROM tweetkeeper.tweets t
  LEFT JOIN tweetkeeper.post_refs r ON r.tweet_id = t.tweet_id
  LEFT JOIN tweetkeeper.tombstones x ON x.tweet_id = t.tweet_id
 CROSS JOIN LATERAL (
   -- (Gone: deleted, unavailable or missing. Named by the states that are not: 'missing' is a
   -- value an update from 0.1.0 adds in the same transaction, which a view may not name then.)
   SELECT CASE WHEN t.state NOT IN ('scheduled', 'done') THEN coalesce(x.gone_since, t.problem_at, t.updated_at, t.created_at) END
            AS gone_since,
          coalesce(x.reason, t.problem_type) AS detail) g;
COMMENT ON VIEW post_availability IS
  'Each tracked post: when last seen, since when gone and why (deleted, private, suspended, '
  'account gone, hidden, missing), as observed.';

-- At each age (1 hour, 1 day, 7, 30, 90 and 365 days), the posts that have reached it: available
-- then, gone then (by reason), or unknown.
CREATE OR REPLACE VIEW mortality_by_age AS
WITH a AS (  -- every post once per collection it is in, and once more under collection NULL (all posts)
  SELECT p.collection, a.created_at, a.last_seen, a.gone_since, a.reason
    FROM tweetkeeper.post_availability a JOIN tweetkeeper.collection_posts p ON p.tweet_id = a.post_id
  UNION ALL
  SELECT NULL::text, a.created_at, a.last_seen, a.gone_since, a.reason FROM tweetkeeper.post_availability a
), s AS (
  SELECT a.collection, g.age,
         CASE WHEN a.gone_since <= a.created_at + g.age THEN a.reason
              WHEN a.last_seen >= a.created_at + g.age OR (a.gone_since IS NULL AND a.last_seen IS NOT NULL) THEN 'available'
              ELSE 'unknown' END AS status
    FROM a
   CROSS JOIN unnest(ARRAY[interval '1 hour', '1 day', '7 days', '30 days', '90 days', '365 days']) AS g(age)
   WHERE a.created_at + g.age <= now()
)
SELECT s.collection, s.age,
       count(*) AS posts,
       count(*) FILTER (WHERE s.status = 'available') AS available,
       count(*) FILTER (WHERE s.status NOT IN ('available', 'unknown')) AS gone,
       count(*) FILTER (WHERE s.status = 'unknown') AS unknown,
       round(count(*) FILTER (WHERE s.status = 'available')::numeric
             / nullif(count(*) FILTER (WHERE s.status <> 'unknown'), 0), 4) AS share_available,
       count(*) FILTER (WHERE s.status = 'deleted') AS deleted,
       count(*) FILTER (WHERE s.status = 'private') AS private,
       count(*) FILTER (WHERE s.status = 'suspended') AS suspended,
       count(*) FILTER (WHERE s.status = 'account gone') AS account_gone,
       count(*) FILTER (WHERE s.status = 'hidden') AS hidden,
       count(*) FILTER (WHERE s.status = 'missing') AS missing
  FROM s
 GROUP BY s.collection, s.age;
COMMENT ON VIEW mortality_by_age IS
  'Per collection (NULL: all posts) and age, the posts that reached it: available, gone (by '
  'reason), unknown, and the share available of those known.';

-- At the end of each UTC day (today: now), from a collection's first post on: its posts made by
-- then, available, gone (by reason) or unknown. Counted from each post's few moments (made, last
-- seen, found gone) as running sums: one pass over the posts, however many days.
CREATE OR REPLACE VIEW mortality_by_date AS
WITH a AS (  -- every post once per collection it is in, and once more under collection NULL (all posts)
  SELECT p.collection, a.created_at, a.last_seen, a.gone_since, a.reason
    FROM tweetkeeper.post_availability a JOIN tweetkeeper.collection_posts p ON p.tweet_id = a.post_id
  UNION ALL
  SELECT NULL::text, a.created_at, a.last_seen, a.gone_since, a.reason FROM tweetkeeper.post_availability a
), e AS (
  SELECT a.collection, m.at, m.posts, m.unknown, m.reason
    FROM a
   CROSS JOIN LATERAL (
     SELECT a.created_at AS at, 1 AS posts, 0 AS unknown, NULL::text AS reason
     UNION ALL  -- unknown from its last sight (or its making) to the read that found it gone
     SELECT coalesce(a.last_seen, a.created_at), 0, 1, NULL WHERE a.gone_since > coalesce(a.last_seen, a.created_at)
     UNION ALL
     SELECT a.gone_since, 0, -1, NULL WHERE a.gone_since > coalesce(a.last_seen, a.created_at)
     UNION ALL  -- never seen, never found gone: unknown from its making
     SELECT a.created_at, 0, 1, NULL WHERE a.gone_since IS NULL AND a.last_seen IS NULL
     UNION ALL
     SELECT a.gone_since, 0, 0, a.reason WHERE a.gone_since IS NOT NULL) m
), d AS (
  SELECT e.collection, (e.at AT TIME ZONE 'UTC')::date AS day, sum(e.posts) AS posts, sum(e.unknown) AS unknown,
         count(*) FILTER (WHERE e.reason = 'deleted') AS deleted,
         count(*) FILTER (WHERE e.reason = 'private') AS private,
         count(*) FILTER (WHERE e.reason = 'suspended') AS suspended,
         count(*) FILTER (WHERE e.reason = 'account gone') AS account_gone,
         count(*) FILTER (WHERE e.reason = 'hidden') AS hidden,
         count(*) FILTER (WHERE e.reason = 'missing') AS missing
    FROM e GROUP BY 1, 2
), days AS (
  SELECT d.collection, generate_series(min(d.day), (now() AT TIME ZONE 'UTC')::date, interval '1 day')::date AS day
    FROM d GROUP BY d.collection
), c AS (
  SELECT days.collection, days.day,
         sum(coalesce(d.posts, 0)) OVER w AS posts, sum(coalesce(d.unknown, 0)) OVER w AS unknown,
         sum(coalesce(d.deleted, 0)) OVER w AS deleted, sum(coalesce(d.private, 0)) OVER w AS private,
         sum(coalesce(d.suspended, 0)) OVER w AS suspended, sum(coalesce(d.account_gone, 0)) OVER w AS account_gone,
         sum(coalesce(d.hidden, 0)) OVER w AS hidden, sum(coalesce(d.missing, 0)) OVER w AS missing
    -- ('' for NULL, all posts: no collection is named '', and an equality joins by hash)
    FROM days LEFT JOIN d ON coalesce(d.collection, '') = coalesce(days.collection, '') AND d.day = days.day
  WINDOW w AS (PARTITION BY days.collection ORDER BY days.day)
)
SELECT c.collection, c.day,
       c.posts::bigint AS posts,
       (c.posts - c.unknown - g.gone)::bigint AS available,
       g.gone::bigint AS gone,
       c.unknown::bigint AS unknown,
       round((c.posts - c.unknown - g.gone) / nullif(c.posts - c.unknown, 0), 4) AS share_available,
       c.deleted::bigint AS deleted, c.private::bigint AS private, c.suspended::bigint AS suspended,
       c.account_gone::bigint AS account_gone, c.hidden::bigint AS hidden, c.missing::bigint AS missing
  FROM c CROSS JOIN LATERAL (SELECT c.deleted + c.private + c.suspended + c.account_gone + c.hidden + c.missing AS gone) g;
COMMENT ON VIEW mortality_by_date IS
  'Per collection (NULL: all posts) and UTC day, from its first post: its posts by the end of '
  'the day, available, gone (by reason), unknown, and the share available of those known.';
