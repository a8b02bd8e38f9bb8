-- Partitions (sql/schema/36_partitions.sql, docs/partitions.md; the hash that places a post is in
-- sql/replaceable/05_placing.sql): the slots this node holds, the refusal of a post that another node holds, and the hand-over of posts
-- that arrive here from inside the node's own work.

-- The slots this node holds: NULL when it is alone (no row), which holds them all.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.held_slots() RETURNS bit(64)
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN (SELECT p.slots FROM tweetkeeper.partition p);

-- What this node may spend of a window or cap of n requests (or reads) that it shares with the
-- other nodes (credentials, endpoints: docs/partitions.md): its slots' part of it, 64ths rounded
-- down, at least 1; all of it when it is alone. The nodes' parts add up to no more than n (unless
-- n is smaller than the number of nodes).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.node_share(n bigint) RETURNS bigint
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN (SELECT CASE WHEN p.slots IS NULL THEN n ELSE greatest(1, n * bit_count(p.slots) / 64) END
            FROM (SELECT tweetkeeper_internal.held_slots() AS slots) p);

-- On a partition, how much of the API's window that began at `since` this node may still spend:
-- its share of `lim` less the requests it claimed since then with this credential or endpoint
-- (the API's own count is the whole cluster's). NULL when alone: the API's word stands.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.node_window_left(lim bigint, since timestamptz, credential text, endpoint text)
  RETURNS integer LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN CASE WHEN tweetkeeper_internal.held_slots() IS NOT NULL AND lim IS NOT NULL
              THEN greatest(lim - (SELECT count(*) FROM tweetkeeper.batches b
                                    WHERE b.claimed_at >= since
                                      AND (b.credential = node_window_left.credential OR b.endpoint = node_window_left.endpoint)), 0) END;

-- A tracked post's hash, from its id: an X id itself, another network's from its post_refs row.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.post_partition_hash(id bigint) RETURNS integer
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN CASE WHEN id > 0 THEN tweetkeeper.partition_hash('x', '', id::text)
              ELSE (SELECT tweetkeeper.partition_hash(r.network, r.host, r.post_key)
                      FROM tweetkeeper.post_refs r WHERE r.tweet_id = id) END;

-- Refuses (TKP01) the first of posts (as the caller named them) whose hash's slot this node does
-- not hold. The callers ask only when held_slots() is not NULL: alone, nothing is computed.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.refuse_foreign(posts text[], hashes integer[]) RETURNS void
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  here tweetkeeper.partition;
  bad record;
BEGIN
  SELECT * INTO here FROM tweetkeeper.partition;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT x.post, x.h & 63 AS slot INTO bad
    FROM unnest(posts, hashes) AS x(post, h) WHERE get_bit(here.slots, x.h & 63) = 0 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'post % is in slot % of 64, which partition % does not hold', bad.post, bad.slot, here.node
      USING ERRCODE = 'TKP01',
            DETAIL = format('Partition %s holds slots %s.', here.node, tweetkeeper_internal.slot_list(here.slots)),
            HINT = 'Schedule posts through the proxy database (extension tweetkeeper_proxy), which sends each '
                   'post to the partition that holds it.';
  END IF;
END $$;

CREATE OR REPLACE FUNCTION tweetkeeper_internal.slot_list(slots bit(64)) RETURNS integer[]
  LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
  RETURN ARRAY(SELECT s FROM generate_series(0, 63) AS s WHERE get_bit(slots, s) = 1);

-- Whether the slot of a hash is held here (alone: always).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.holds(slots bit(64), h integer) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
  RETURN slots IS NULL OR get_bit(slots, h & 63) = 1;

-- Makes this node a partition holding the given slots (of 64), or alone again (slots NULL: every
-- slot). Refused while it tracks a post of a slot it would give up: posts move first.
CREATE OR REPLACE FUNCTION set_partition(node text, slots integer[]) RETURNS integer[]
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  bits bit(64);
  bad record;
  stranded bigint;
BEGIN
  IF slots IS NULL THEN
    DELETE FROM tweetkeeper.partition;
    RETURN ARRAY(SELECT generate_series(0, 63));
  END IF;
  PERFORM tweetkeeper_internal.refuse_null('node', node IS NULL);
  IF node !~ '^[A-Za-z0-9_.-]{1,63}$' THEN
    RAISE EXCEPTION 'partition name % is not 1 to 63 letters, digits, "_", "." or "-"', node
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT s.s, s.i INTO bad FROM unnest(slots) WITH ORDINALITY AS s(s, i)
   WHERE s.s IS NULL OR s.s NOT BETWEEN 0 AND 63 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'slots[%] is %: a slot is 0 to 63', bad.i, coalesce(bad.s::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  bits := (SELECT coalesce(bit_or(B'1'::bit(64) >> s.s), 0::bit(64)) FROM unnest(slots) AS s(s));
  SELECT count(*) INTO stranded FROM tweetkeeper.tweets t
   WHERE NOT tweetkeeper_internal.holds(bits, tweetkeeper_internal.post_partition_hash(t.tweet_id));
  IF stranded > 0 THEN
    RAISE EXCEPTION 'partition % tracks % post(s) of slots outside %', node, stranded, tweetkeeper_internal.slot_list(bits)
      USING ERRCODE = 'object_in_use',
            HINT = 'Move those slots to the nodes that will hold them first (docs/partitions.md).';
  END IF;
  INSERT INTO tweetkeeper.partition AS p (node, slots) VALUES (set_partition.node, bits)
  ON CONFLICT ON CONSTRAINT partition_pkey DO UPDATE SET node = excluded.node, slots = excluded.slots, set_at = now();
  RETURN tweetkeeper_internal.slot_list(bits);
END $$;
COMMENT ON FUNCTION set_partition(text, integer[]) IS
  'Makes this node the partition named node, holding these slots (0 to 63; partition_hash() & 63 '
  'places a post); NULL slots: alone again, holding all. Refused (55006) while it tracks posts of '
  'a slot it would give up. Returns the slots held.';

-- Posts found from inside this node's work (an edit's newest version, a followed account's new
-- post) that another node holds: noted for the proxy to deliver (handovers). Returns how many
-- were new here.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.hand_over(urls text[], created_ats timestamptz[], reason text) RETURNS bigint
  LANGUAGE sql SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  WITH n AS (
    INSERT INTO tweetkeeper.handovers (url, created_at, reason)
    SELECT h.url, h.created_at, reason FROM unnest(urls, created_ats) AS h(url, created_at)
    ON CONFLICT ON CONSTRAINT handovers_pkey DO NOTHING
    RETURNING 1)
  SELECT count(*) FROM n;
END;

-- The proxy's side of a hand-over: the oldest posts waiting (take_handovers), deleted once
-- scheduled where they belong (drop_handovers). Two calls, so that a crash between leaves them
-- here to be delivered again (scheduling is idempotent).
CREATE OR REPLACE FUNCTION take_handovers(max_posts integer DEFAULT 10000)
  RETURNS TABLE (url text, created_at timestamptz, reason text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  SELECT h.url, h.created_at, h.reason FROM tweetkeeper.handovers h ORDER BY h.noted_at, h.url LIMIT max_posts;
END;
COMMENT ON FUNCTION take_handovers(integer) IS
  'Posts this partition found but another holds (an edit''s newest version, a followed account''s '
  'post), oldest first: the proxy''s deliver_handovers() schedules them where they belong.';

CREATE OR REPLACE FUNCTION drop_handovers(urls text[]) RETURNS bigint
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  WITH d AS (DELETE FROM tweetkeeper.handovers h WHERE h.url = ANY (urls) RETURNING 1)
  SELECT count(*) FROM d;
END;
COMMENT ON FUNCTION drop_handovers(text[]) IS
  'Forgets hand-overs delivered (take_handovers). Returns how many.';
