-- Posts of every network (their URLs are read by parse_post_url(), sql/replaceable/05_placing.sql):
-- the names behind the ids of Bluesky and Mastodon posts (post_refs); scheduling by URL
-- (schedule_post, schedule_posts); and the view of every tracked post (posts).

-- What names a post on its network, whatever URL it came in: the DID (or handle) and record key
-- on Bluesky, the server and status id on Mastodon (ids are per server; the user is not needed).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.post_identity(network text, host text, author text, post_key text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE network WHEN 'bluesky' THEN 'bluesky ' || author || ' ' || post_key
                      WHEN 'mastodon' THEN 'mastodon ' || host || ' ' || post_key END;

-- The id of a post of another network: a 63-bit hash of its identity, negative. A different post
-- already holding that id (a collision: about one in 10^10 among a million posts) moves the later
-- one to the next seed; post_ref_id() probes the seeds in order.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.post_id(identity text, seed integer) RETURNS bigint
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN -1 - (hashtextextended(identity, seed) & 9223372036854775807);

-- The id of the post named by (network, host, author, post_key): the first seed whose id is free
-- or this post's; known: post_refs has it; tracked: tweets has it too (an operator may have
-- deleted the tweets row).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.post_ref_id(network text, host text, author text, post_key text,
                            OUT tweet_id bigint, OUT known boolean, OUT tracked boolean)
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  identity text := tweetkeeper_internal.post_identity(network, host, author, post_key);
  other text;
BEGIN
  FOR seed IN 0..1000 LOOP
    tweet_id := tweetkeeper_internal.post_id(identity, seed);
    SELECT tweetkeeper_internal.post_identity(r.network, r.host, r.author, r.post_key) INTO other
      FROM tweetkeeper.post_refs r WHERE r.tweet_id = post_ref_id.tweet_id;
    known := FOUND;
    IF NOT FOUND OR other = identity THEN
      tracked := known AND EXISTS (SELECT 1 FROM tweetkeeper.tweets t
                                    WHERE t.tweet_id = post_ref_id.tweet_id);
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'no free id for post %', identity USING ERRCODE = 'internal_error';
END $$;

-- Where the post's refreshes go: tweets.endpoint.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.post_endpoint(network text, host text, author text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE network WHEN 'bluesky' THEN CASE WHEN author LIKE 'did:%' THEN 'bluesky' ELSE 'bluesky-handle' END
                      WHEN 'mastodon' THEN 'mastodon:' || host END;

-- The URL post_refs keeps of a post: Bluesky's by its author as named (a DID once known), the
-- others' as parse_post_url() spelled it.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.post_ref_url(network text, author text, post_key text, canonical text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE network WHEN 'bluesky' THEN format('https://bsky.app/profile/%s/post/%s', author, post_key)
                      ELSE canonical END;

-- The one way a post of another network gets its reference (post_refs): its id (post_ref_id()),
-- its row inserted unless there. Returns the id and whether the post is tracked already.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.enter_post_ref(network text, host text, author text, post_key text, canonical text,
                                          OUT tweet_id bigint, OUT tracked boolean)
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  r record;
BEGIN
  LOOP
    r := tweetkeeper_internal.post_ref_id(network, host, author, post_key);
    tweet_id := r.tweet_id;
    tracked := r.tracked;
    EXIT WHEN r.known;
    -- Another session may take the id first (the same post: then it is known; another one
    -- hashed alike: then the next seed is this post's): look again.
    INSERT INTO tweetkeeper.post_refs (tweet_id, network, host, author, post_key, url)
    VALUES (r.tweet_id, network, host, author, post_key, tweetkeeper_internal.post_ref_url(network, author, post_key, canonical))
    ON CONFLICT ON CONSTRAINT post_refs_pkey DO NOTHING;
    EXIT WHEN FOUND;
  END LOOP;
END $$;

-- Starts tracking the post of a URL; see the COMMENT. The creation time: the caller's, else the
-- key's (X's and Mastodon's ids; Bluesky's record key, an estimate, no later than now), else
-- now (a post whose key tells nothing is treated as new until its first answer says its age).
CREATE OR REPLACE FUNCTION schedule_post(url text, created_at timestamptz DEFAULT NULL)
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  p record;
  r record;
  c timestamptz;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('url', url IS NULL);
  p := tweetkeeper.parse_post_url(url);
  IF p.network = 'x' THEN
    RETURN tweetkeeper.schedule_tweet(p.post_key::bigint, created_at);
  END IF;
  IF created_at > now() + interval '1 minute' THEN
    RAISE EXCEPTION 'post % has created_at % in the future', url, created_at
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  c := coalesce(created_at, least(p.created_at, now()), now());
  IF tweetkeeper_internal.held_slots() IS NOT NULL THEN
    PERFORM tweetkeeper_internal.refuse_foreign(ARRAY[url], ARRAY[tweetkeeper.partition_hash(p.network, p.host, p.post_key)]);
  END IF;
  -- A Bluesky handle resolved before: the post is named by its DID at once.
  p.author := tweetkeeper_internal.post_author(p.network, p.author);
  r := tweetkeeper_internal.enter_post_ref(p.network, coalesce(p.host, ''), p.author, p.post_key, p.canonical);
  IF r.tracked THEN
    RETURN false;
  END IF;
  RETURN tweetkeeper_internal.enqueue_post(r.tweet_id, c, tweetkeeper_internal.post_endpoint(p.network, p.host, p.author));
END $$;
COMMENT ON FUNCTION schedule_post(text, timestamptz) IS
  'Starts tracking the post of a URL (see parse_post_url for the forms): an X post as '
  'schedule_tweet, a Bluesky or Mastodon post under a negative id (post_refs). Returns false, '
  'changing nothing, if the post is tracked already, whatever URL it came by.';

-- The posts of other networks among urls, each once (its first spelling), a handle resolved
-- before named by its DID, with its identity and seed-0 id: what schedule_posts() inserts. (A SQL
-- function of one query: the planner inlines it into the statement that reads it.)
CREATE OR REPLACE FUNCTION tweetkeeper_internal.posts_wanted(urls text[])
  RETURNS TABLE (i bigint, url text, network text, host text, author text, post_key text, canonical text,
                 created_at timestamptz, identity text, id0 bigint)
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT DISTINCT ON (x.identity) x.*, tweetkeeper_internal.post_id(x.identity, 0) AS id0
    FROM (SELECT a.i, a.url, p.network, coalesce(p.host, '') AS host, au.author, p.post_key, p.canonical,
                 coalesce(least(p.created_at, now()), now()) AS created_at,
                 tweetkeeper_internal.post_identity(p.network, coalesce(p.host, ''), au.author, p.post_key) AS identity
            FROM unnest(urls) WITH ORDINALITY AS a(url, i), tweetkeeper.parse_post_url(a.url) AS p,
                 LATERAL (SELECT tweetkeeper_internal.post_author(p.network, p.author) AS author) au
           WHERE p.network <> 'x') x
   ORDER BY x.identity, x.i $$;

-- The argument urls of schedule_posts() (post URLs) or follow_accounts() (profile URLs, profiles
-- true), checked: as every array argument (array_arg()), and every one a URL of its kind. Every
-- URL is read first, in one statement (no exception block per URL: a million URLs take seconds),
-- so that nothing is done if any is bad; on a refusal, the first bad one is read again alone, to
-- name its position (22023).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.check_urls(urls text[], profiles boolean) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  bad record;
  msg text;
BEGIN
  PERFORM tweetkeeper_internal.array_arg('urls', urls);
  BEGIN
    IF profiles THEN
      PERFORM count(*) FROM unnest(urls) AS a(url), tweetkeeper.parse_profile_url(a.url) AS p;
    ELSE
      PERFORM count(*) FROM unnest(urls) AS a(url), tweetkeeper.parse_post_url(a.url) AS p;
    END IF;
  EXCEPTION WHEN invalid_parameter_value THEN
    FOR bad IN SELECT a.url, a.i FROM unnest(urls) WITH ORDINALITY AS a(url, i) LOOP
      BEGIN
        IF profiles THEN
          PERFORM tweetkeeper.parse_profile_url(bad.url);
        ELSE
          PERFORM tweetkeeper.parse_post_url(bad.url);
        END IF;
      EXCEPTION WHEN invalid_parameter_value THEN
        GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
        RAISE EXCEPTION 'urls[%]: %', bad.i, msg USING ERRCODE = 'invalid_parameter_value';
      END;
    END LOOP;
    RAISE;
  END;
END $$;

-- Many URLs in one statement, all or nothing; a repeated post (in any spelling) counts once.
-- Each pass reads the URLs again (parse_post_url is a few microseconds): nothing to keep between.
CREATE OR REPLACE FUNCTION schedule_posts(urls text[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  bad record;
  added bigint := 0;
  u text;
  rest text[];
BEGIN
  PERFORM tweetkeeper_internal.check_urls(urls, false);
  PERFORM tweetkeeper.first_delay();  -- refuses an empty policy
  -- X: ids that schedule_tweets would refuse, named with their position; then the ids, each once.
  SELECT a.i, p.post_key, p.created_at INTO bad
    FROM unnest(urls) WITH ORDINALITY AS a(url, i), tweetkeeper.parse_post_url(a.url) AS p
   WHERE p.network = 'x' AND (p.created_at IS NULL OR p.created_at > now() + interval '1 minute')
   ORDER BY a.i LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'urls[%]: tweet %', bad.i,
      CASE WHEN bad.created_at IS NULL
           THEN bad.post_key || ' predates Snowflake ids and encodes no creation time'
           ELSE format('%s has created_at %s in the future', bad.post_key, bad.created_at) END
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Schedule it alone with its creation time: tweetkeeper.schedule_post(url, created_at).';
  END IF;
  -- A partition (sql/schema/36_partitions.sql) refuses the call if one post is another's.
  IF tweetkeeper_internal.held_slots() IS NOT NULL THEN
    PERFORM tweetkeeper_internal.refuse_foreign(urls,
      ARRAY(SELECT tweetkeeper.partition_hash(p.network, p.host, p.post_key)
              FROM unnest(urls) WITH ORDINALITY AS a(url, i), tweetkeeper.parse_post_url(a.url) AS p ORDER BY a.i));
  END IF;
  added := tweetkeeper.schedule_tweets(ARRAY(
    SELECT DISTINCT p.post_key::bigint
      FROM unnest(urls) AS a(url), tweetkeeper.parse_post_url(a.url) AS p WHERE p.network = 'x'));
  -- Other networks, set-based (a million URLs take seconds, not a statement per post): each post
  -- once (its first spelling), a handle resolved before named by its DID, under its seed-0 id
  -- when that is free or its own, inserted in id order (one pass over the indexes' pages). The
  -- rare rest (a collision, or a race with another session) goes through schedule_post, which
  -- probes the next seeds.
  WITH want AS (
    SELECT * FROM tweetkeeper_internal.posts_wanted(urls)
  ), cand AS (
    SELECT want.*, (SELECT tweetkeeper_internal.post_identity(r.network, r.host, r.author, r.post_key)
                   FROM tweetkeeper.post_refs r WHERE r.tweet_id = want.id0) AS holder
      FROM want
  ), refs AS (
    INSERT INTO tweetkeeper.post_refs (tweet_id, network, host, author, post_key, url)
    SELECT cand.id0, cand.network, cand.host, cand.author, cand.post_key,
           tweetkeeper_internal.post_ref_url(cand.network, cand.author, cand.post_key, cand.canonical)
      FROM cand WHERE cand.holder IS NULL ORDER BY cand.id0
    ON CONFLICT ON CONSTRAINT post_refs_pkey DO NOTHING
    RETURNING tweet_id
  ), added_rows AS (
    INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay, endpoint)
    SELECT cand.id0, cand.created_at, cand.created_at + tweetkeeper.first_delay(), tweetkeeper_internal.age_delay(cand.created_at),
           tweetkeeper_internal.post_endpoint(cand.network, nullif(cand.host, ''), cand.author)
      FROM cand
     WHERE cand.holder = cand.identity OR cand.id0 IN (SELECT refs.tweet_id FROM refs)
     ORDER BY cand.id0
    ON CONFLICT ON CONSTRAINT tweets_pkey DO NOTHING
    RETURNING 1
  )
  SELECT added + (SELECT count(*) FROM added_rows),
         ARRAY(SELECT cand.url FROM cand
                WHERE cand.holder IS DISTINCT FROM cand.identity AND cand.id0 NOT IN (SELECT refs.tweet_id FROM refs)
                ORDER BY cand.i)
    INTO added, rest;
  -- The rest: posts whose seed-0 id another post holds (or took meanwhile).
  FOREACH u IN ARRAY rest LOOP
    IF tweetkeeper.schedule_post(u) THEN
      added := added + 1;
    END IF;
  END LOOP;
  IF added > 0 THEN
    PERFORM tweetkeeper_internal.wake_maintenance();  -- (as schedule_post's)
  END IF;
  RETURN added;
END $$;
COMMENT ON FUNCTION schedule_posts(text[]) IS
  'schedule_post for many URLs in one statement, all or nothing (at most '
  'tweetkeeper.max_ids_per_call); a post given twice, in any spelling, counts once. Returns how '
  'many were new. 22023 names the first bad URL and its position.';

-- Every tracked post of every network, as people name them.
CREATE OR REPLACE VIEW posts AS
SELECT t.tweet_id AS post_id,
       coalesce(r.network, 'x') AS network,
       coalesce(r.url, 'https://x.com/i/web/status/' || t.tweet_id) AS url,
       r.author,
       t.state,
       t.created_at,
       t.like_count, t.retweet_count, t.reply_count, t.quote_count, t.bookmark_count,
       t.impression_count,
       t.update_count,
       t.updated_at,
       CASE WHEN t.lease_id IS NULL THEN t.due_at END AS due_at,
       t.lease_id IS NOT NULL AS in_flight,
       t.problem_type,
       t.problem_detail
  FROM tweets t LEFT JOIN post_refs r ON r.tweet_id = t.tweet_id AND t.tweet_id < 0;
COMMENT ON VIEW posts IS
  'Every tracked post of every network (x, bluesky, mastodon): its URL, state, latest counts '
  '(NULL: not reported by its network) and refresh times. due_at is NULL while a batch holds it.';
