-- Collections (sql/schema/39_collections.sql): made, filled (by id, by URL, at scheduling, by a
-- follower), emptied and dropped. Tracking is never changed by them.

-- A collection's name checked (22023 says the rule), and the collection made if it is new.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.ensure_collection(name text, kind text) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('collection', name IS NULL);
  IF length(name) NOT BETWEEN 1 AND 400 OR name ~ '[[:cntrl:]]' OR name <> btrim(name) THEN
    RAISE EXCEPTION 'collection name %: 1 to 400 characters, no control characters, no spaces at either end',
      quote_literal(left(regexp_replace(name, '[[:cntrl:]]', '?', 'g'), 410))
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO tweetkeeper.collections (name, kind) VALUES (ensure_collection.name, ensure_collection.kind)
  ON CONFLICT ON CONSTRAINT collections_pkey DO NOTHING;
END $$;

CREATE OR REPLACE FUNCTION create_collection(name text, kind text DEFAULT 'tag') RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('kind', kind IS NULL);
  IF kind NOT IN ('tag', 'import', 'follow') THEN
    RAISE EXCEPTION 'collection kind %: tag, import or follow', quote_literal(kind) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF EXISTS (SELECT FROM tweetkeeper.collections c WHERE c.name = create_collection.name) THEN
    RETURN false;
  END IF;
  PERFORM tweetkeeper_internal.ensure_collection(name, kind);
  RETURN true;
END $$;
COMMENT ON FUNCTION create_collection(text, text) IS
  'Makes a collection (kind: tag, import or follow, how its posts come in); false if it exists.';

-- Posts into a collection (made as a tag if new), all or nothing, as watch() takes them: X ids not
-- tracked yet are scheduled (as schedule_tweets() does); a post of another network must be
-- tracked here (its id comes from tracking it: 22023 names the first that is not). Returns how
-- many were not in it yet.
CREATE OR REPLACE FUNCTION collect(collection text, post_ids bigint[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  bad record;
  added bigint;
BEGIN
  PERFORM tweetkeeper_internal.array_arg('post_ids', post_ids);
  PERFORM tweetkeeper_internal.ensure_collection(collection, 'tag');
  SELECT a.id, a.i INTO bad FROM unnest(post_ids) WITH ORDINALITY AS a(id, i)
   WHERE a.id <= 0 AND NOT EXISTS (SELECT FROM tweetkeeper.tweets t WHERE t.tweet_id = a.id) ORDER BY a.i LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'post_ids[%]: post % is not tracked here', bad.i, bad.id
      USING ERRCODE = 'invalid_parameter_value', HINT = 'Schedule it by its URL (collect_posts, schedule_posts).';
  END IF;
  PERFORM tweetkeeper.schedule_tweets(ARRAY(SELECT DISTINCT a.id FROM unnest(post_ids) AS a(id)
                                             WHERE a.id > 0 AND NOT EXISTS (SELECT FROM tweetkeeper.tweets t WHERE t.tweet_id = a.id)));
  -- A post moving to another node (partitions: held by the move, its rows already sent) would
  -- leave its new membership behind: refused, to be asked again once it has moved (55006).
  SELECT a.id, a.i, -t.lease_id AS move_id INTO bad FROM unnest(post_ids) WITH ORDINALITY AS a(id, i)
    JOIN tweetkeeper.tweets t ON t.tweet_id = a.id WHERE t.lease_id < 0 ORDER BY a.i LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'post_ids[%]: post % is moving to another node (move %)', bad.i, bad.id, bad.move_id
      USING ERRCODE = 'object_in_use', HINT = 'Call again once it has moved (the proxy routes the call to its node).';
  END IF;
  INSERT INTO tweetkeeper.collection_posts (collection, tweet_id)
  -- (In id order: calls that share posts lock them in the same order, as schedule_tweets' do.)
  SELECT DISTINCT collect.collection, a.id FROM unnest(post_ids) AS a(id) ORDER BY a.id
  ON CONFLICT ON CONSTRAINT collection_posts_pkey DO NOTHING;
  GET DIAGNOSTICS added = ROW_COUNT;
  RETURN added;
END $$;
COMMENT ON FUNCTION collect(text, bigint[]) IS
  'Puts posts (by post_id) into a collection, made as a tag if new; X ids not tracked yet are '
  'scheduled; all or nothing. Returns how many were not in it yet.';

-- collect() by URL, as watch_posts() takes them: posts not tracked yet are scheduled first (as
-- schedule_posts() does: all or nothing, a bad URL named with its position); a tag given at
-- scheduling is this call.
CREATE OR REPLACE FUNCTION collect_posts(collection text, urls text[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.ensure_collection(collection, 'tag');
  PERFORM tweetkeeper.schedule_posts(urls);
  RETURN tweetkeeper.collect(collection, tweetkeeper_internal.url_post_ids(urls));
END $$;
COMMENT ON FUNCTION collect_posts(text, text[]) IS
  'collect() by URL (any network, any spelling): tracks those not tracked yet, then puts them all '
  'into the collection; all or nothing. Returns how many were not in it yet.';

CREATE OR REPLACE FUNCTION uncollect(collection text, post_ids bigint[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n bigint;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('collection', collection IS NULL);
  PERFORM tweetkeeper_internal.array_arg('post_ids', post_ids);
  DELETE FROM tweetkeeper.collection_posts c WHERE c.collection = uncollect.collection AND c.tweet_id = ANY (post_ids);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;
COMMENT ON FUNCTION uncollect(text, bigint[]) IS
  'Takes posts out of a collection (they stay tracked). Returns how many were in it.';

CREATE OR REPLACE FUNCTION drop_collection(collection text) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n bigint;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('collection', collection IS NULL);
  SELECT count(*) INTO n FROM tweetkeeper.collection_posts c WHERE c.collection = drop_collection.collection;
  DELETE FROM tweetkeeper.collections c WHERE c.name = drop_collection.collection;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no collection %', quote_literal(collection) USING ERRCODE = 'undefined_object';
  END IF;
  RETURN n;
END $$;
COMMENT ON FUNCTION drop_collection(text) IS
  'Drops a collection (its posts stay tracked). Returns how many posts it held.';
