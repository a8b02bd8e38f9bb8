-- Datasets (issue 53): tweetkeeper-import --dataset loads a shared dataset's observations
-- (history.csv, which tweetkeeper-export --format dataset writes) as the history of the posts it
-- names, so that their curves survive the move to another database. The admin's alone (never a
-- worker's: a worker stores only what it read, through complete_batch()).

-- Observations of tracked posts, by URL (any network, any spelling; an X post's id as
-- https://x.com/i/status/ID), at observed_at, with counts: per observation its six counts
-- (retweets, replies, likes, quotes, bookmarks, impressions; NULL: not reported), a n x 6 array.
-- Stored as observations of lease 0 ("imported": no batch here read them) into
-- metric_history_hot, where housekeeping moves them into their partition and compacts them as
-- any (an observation older than tweetkeeper.history_retention goes at the next retention).
-- History stays exact: an observation of the same post at the same moment already there (any
-- lease: a dataset imported again, or into the database it came from) is skipped, one given twice
-- is stored once; nothing else is changed (the post's counts and schedule are what its reads
-- here say). All or nothing: 22004 for NULL, 22023 names the first bad element (a URL that is no
-- post's, a post not tracked here, a time in the future, a negative count, counts not n x 6),
-- 54000 past tweetkeeper.max_ids_per_call. Returns how many observations were stored.
CREATE OR REPLACE FUNCTION import_history(urls text[], observed_at timestamptz[], counts bigint[])
  RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n integer;
  ids bigint[];
  bad record;
  added bigint;
BEGIN
  PERFORM tweetkeeper_internal.array_arg('urls', urls);
  PERFORM tweetkeeper_internal.array_arg('observed_at', observed_at);
  PERFORM tweetkeeper_internal.refuse_null('counts', counts IS NULL);
  n := cardinality(urls);
  IF cardinality(observed_at) <> n THEN
    RAISE EXCEPTION 'observed_at has % elements, urls %: one time per observation', cardinality(observed_at), n
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF n = 0 THEN
    RETURN 0;
  END IF;
  IF array_ndims(counts) IS DISTINCT FROM 2 OR array_length(counts, 1) <> n OR array_length(counts, 2) <> 6
     OR array_lower(counts, 1) <> 1 OR array_lower(counts, 2) <> 1 THEN
    RAISE EXCEPTION 'counts must be a % x 6 array (retweets, replies, likes, quotes, bookmarks, impressions per observation), not %',
      n, coalesce(array_dims(counts), 'empty') USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM tweetkeeper_internal.check_urls(urls, false);
  SELECT a.i, a.t INTO bad FROM unnest(observed_at) WITH ORDINALITY AS a(t, i) WHERE a.t > now() + interval '1 minute'
   ORDER BY a.i LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'observed_at[%]: % is in the future', bad.i, bad.t USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT g.i, k.k INTO bad FROM generate_series(1, n) g(i), generate_series(1, 6) k(k)
   WHERE counts[g.i][k.k] < 0 ORDER BY g.i, k.k LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'counts[%][%] is negative (%)', bad.i, bad.k, counts[bad.i][bad.k] USING ERRCODE = 'invalid_parameter_value';
  END IF;
  ids := tweetkeeper_internal.url_post_ids(urls);
  SELECT a.i, a.url INTO bad FROM unnest(urls, ids) WITH ORDINALITY AS a(url, id, i)
   WHERE a.id IS NULL OR NOT EXISTS (SELECT FROM tweetkeeper.tweets t WHERE t.tweet_id = a.id) ORDER BY a.i LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'urls[%]: post % is not tracked here', bad.i, bad.url
      USING ERRCODE = 'invalid_parameter_value', HINT = 'Schedule it first (schedule_tweets, schedule_posts).';
  END IF;
  INSERT INTO tweetkeeper.metric_history_hot (tweet_id, lease_id, observed_at, retweet_count, reply_count,
                                              like_count, quote_count, bookmark_count, impression_count)
  SELECT DISTINCT ON (o.id, o.t) o.id, 0, o.t, counts[o.i][1], counts[o.i][2], counts[o.i][3], counts[o.i][4],
         counts[o.i][5], counts[o.i][6]
    FROM unnest(ids, observed_at) WITH ORDINALITY AS o(id, t, i)
   WHERE NOT EXISTS (SELECT FROM tweetkeeper.metric_history h WHERE h.tweet_id = o.id AND h.observed_at = o.t)
   ORDER BY o.id, o.t, o.i;  -- (in id order: calls that share posts lock them in the same order)
  GET DIAGNOSTICS added = ROW_COUNT;
  RETURN added;
END $$;
COMMENT ON FUNCTION import_history(text[], timestamptz[], bigint[]) IS
  'Stores a dataset''s observations (post URL, time, n x 6 counts) as history of tracked posts '
  '(lease 0), skipping those already there; all or nothing, 22023 names a bad element. Returns '
  'how many were stored. The admin''s only.';
