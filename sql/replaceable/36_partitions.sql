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

-- The slots this node holds, read under a share lock of the partition row, held to the end of the
-- caller's transaction: set_partition() waits for every transaction that placed posts by them
-- and is waited for (so that no post of a slot given up lands after its count of what is left).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.held_slots_locked() RETURNS bit(64)
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  RETURN (SELECT p.slots FROM tweetkeeper.partition p FOR SHARE);
END $$;

-- Refuses (TKP01) the first of posts (as the caller named them) whose hash's slot this node does
-- not hold (read under the lock of held_slots_locked()). The callers ask only when held_slots()
-- is not NULL: alone, nothing is computed or locked.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.refuse_foreign(posts text[], hashes integer[]) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  here tweetkeeper.partition;
  bad record;
BEGIN
  SELECT * INTO here FROM tweetkeeper.partition FOR SHARE;
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
  -- Every transaction that placed posts by the old slots is waited for, new ones wait for this.
  PERFORM FROM tweetkeeper.partition FOR UPDATE;
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
CREATE OR REPLACE FUNCTION tweetkeeper_internal.hand_over(urls text[], created_ats timestamptz[], reason text,
                                                         collection text) RETURNS bigint
  LANGUAGE sql SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  WITH n AS (
    INSERT INTO tweetkeeper.handovers (url, created_at, reason, collection)
    SELECT h.url, h.created_at, reason, collection FROM unnest(urls, created_ats) AS h(url, created_at)
    ON CONFLICT ON CONSTRAINT handovers_pkey DO NOTHING
    RETURNING 1)
  SELECT count(*) FROM n;
END;

-- The proxy's side of a hand-over: the oldest posts waiting (take_handovers), deleted once
-- scheduled where they belong (drop_handovers). Two calls, so that a crash between leaves them
-- here to be delivered again (scheduling is idempotent).
CREATE OR REPLACE FUNCTION take_handovers(max_posts integer DEFAULT 10000)
  RETURNS TABLE (url text, created_at timestamptz, reason text, collection text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  SELECT h.url, h.created_at, h.reason, h.collection FROM tweetkeeper.handovers h ORDER BY h.noted_at, h.url LIMIT max_posts;
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

-- Moving a slot to another node, in batches (the proxy's move_slot(), docs/partitions.md); each
-- batch a claim of its own: its posts, held on this node by the mark lease_id = -move_id and a due
-- time of 'infinity' (a claim takes a row whose due time has passed even when leased: a lease run
-- out; a worker's batch in flight is not taken), their rows sent to the other node, which keeps
-- them parked under the same mark, then deleted here and set free there with their due times.
-- The rows of a post: every table that keeps something of it.
-- (PL/pgSQL: the tables it names are made by later parts.)
CREATE OR REPLACE FUNCTION tweetkeeper_internal.post_rows(ids bigint[]) RETURNS jsonb
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  RETURN jsonb_build_object(
    'tweets', (SELECT coalesce(jsonb_agg(t), '[]') FROM tweetkeeper.tweets t WHERE t.tweet_id = ANY (ids)),
    'metric_history_hot', (SELECT coalesce(jsonb_agg(h), '[]') FROM tweetkeeper.metric_history_hot h WHERE h.tweet_id = ANY (ids)),
    'metric_history_compact', (SELECT coalesce(jsonb_agg(h), '[]') FROM tweetkeeper.metric_history_compact h WHERE h.tweet_id = ANY (ids)),
    'metric_daily', (SELECT coalesce(jsonb_agg(d), '[]') FROM tweetkeeper.metric_daily d WHERE d.tweet_id = ANY (ids)),
    'post_refs', (SELECT coalesce(jsonb_agg(r), '[]') FROM tweetkeeper.post_refs r WHERE r.tweet_id = ANY (ids)),
    'payloads', (SELECT coalesce(jsonb_agg(p), '[]') FROM tweetkeeper.payloads p WHERE p.tweet_id = ANY (ids)),
    'tombstones', (SELECT coalesce(jsonb_agg(x), '[]') FROM tweetkeeper.tombstones x WHERE x.tweet_id = ANY (ids)),
    'edits', (SELECT coalesce(jsonb_agg(e), '[]') FROM tweetkeeper.edits e WHERE e.tweet_id = ANY (ids)),
    'collection_posts', (SELECT coalesce(jsonb_agg(c), '[]') FROM tweetkeeper.collection_posts c WHERE c.tweet_id = ANY (ids)),
    'collections', (SELECT coalesce(jsonb_agg(c), '[]') FROM tweetkeeper.collections c
                     WHERE c.name IN (SELECT x.collection FROM tweetkeeper.collection_posts x WHERE x.tweet_id = ANY (ids))),
    'bluesky_handles', (SELECT coalesce(jsonb_agg(b), '[]') FROM tweetkeeper.bluesky_handles b
                         WHERE b.handle IN (SELECT lower(r.author) FROM tweetkeeper.post_refs r WHERE r.tweet_id = ANY (ids))));
END $$;

-- The source's step: up to max_posts posts of the slot after after_id (in id order; the proxy
-- passes the last id this returned, so a slot is read once through), not held by a batch, held
-- now by this move; returns their rows and the last id looked at (NULL: the slot was read to its
-- end). A move already made (a retry) returns what it holds.
CREATE OR REPLACE FUNCTION move_out(slot integer, move_id bigint, after_id bigint, max_posts integer,
                                    OUT rows jsonb, OUT posts integer, OUT last_id bigint)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  ids bigint[];
  dues jsonb;
  scan constant integer := 64 * max_posts;  -- rows looked at: about max_posts of one slot in 64
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('slot, move_id and max_posts', slot IS NULL OR move_id IS NULL OR max_posts IS NULL);
  IF move_id <= 0 OR max_posts NOT BETWEEN 1 AND 100000 OR slot NOT BETWEEN 0 AND 63 THEN
    RAISE EXCEPTION 'move_out: slot 0..63, move_id > 0, max_posts 1..100000' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT EXISTS (SELECT FROM tweetkeeper.moves m WHERE m.move_id = move_out.move_id AND m.side = 'out') THEN
    WITH looked AS (
      SELECT t.tweet_id FROM tweetkeeper.tweets t
       WHERE t.tweet_id > coalesce(after_id, (-9223372036854775807)::bigint - 1) ORDER BY t.tweet_id LIMIT scan
    ), mine AS (
      SELECT l.tweet_id FROM looked l
       WHERE tweetkeeper_internal.post_partition_hash(l.tweet_id) & 63 = slot
    ), held AS (
      UPDATE tweetkeeper.tweets t SET lease_id = -move_id, due_at = CASE WHEN t.due_at IS NOT NULL THEN 'infinity'::timestamptz END
        FROM (SELECT x.tweet_id, x.due_at FROM tweetkeeper.tweets x JOIN mine USING (tweet_id)
               WHERE x.lease_id IS NULL ORDER BY x.tweet_id LIMIT max_posts FOR UPDATE OF x SKIP LOCKED) s
       WHERE t.tweet_id = s.tweet_id
      RETURNING t.tweet_id, s.due_at AS was)
    SELECT array_agg(h.tweet_id ORDER BY h.tweet_id), coalesce(jsonb_object_agg(h.tweet_id, h.was), '{}'),
           CASE WHEN (SELECT count(*) FROM looked) < scan THEN NULL ELSE (SELECT max(l.tweet_id) FROM looked l) END
      INTO ids, dues, last_id FROM held h;
    -- (When max_posts were held before the scan's end, go on after the last one held.)
    IF cardinality(ids) = max_posts THEN
      last_id := ids[max_posts];
    END IF;
    INSERT INTO tweetkeeper.moves (move_id, side, slot, posts, due_ats)
    VALUES (move_id, 'out', slot, coalesce(cardinality(ids), 0), dues);
  ELSE
    ids := ARRAY(SELECT t.tweet_id FROM tweetkeeper.tweets t WHERE t.lease_id = -move_id ORDER BY t.tweet_id);
    dues := (SELECT m.due_ats FROM tweetkeeper.moves m WHERE m.move_id = move_out.move_id AND m.side = 'out');
    last_id := ids[cardinality(ids)];
  END IF;
  posts := coalesce(cardinality(ids), 0);
  -- (The rows as held, parked as they are on the other node; their due times beside them.)
  rows := tweetkeeper_internal.post_rows(coalesce(ids, '{}')) || jsonb_build_object('due_ats', dues);
END $$;

-- The destination's step: the rows move_out() returned, inserted parked (the posts keep the mark
-- -move_id until move_unpark()). Done once per move (a retry changes nothing). Returns how many
-- posts it holds parked.
CREATE OR REPLACE FUNCTION move_in(slot integer, move_id bigint, rows jsonb) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n integer;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('slot, move_id and rows', slot IS NULL OR move_id IS NULL OR rows IS NULL);
  IF EXISTS (SELECT FROM tweetkeeper.moves m WHERE m.move_id = move_in.move_id AND m.side = 'in') THEN
    RETURN (SELECT count(*) FROM tweetkeeper.tweets t WHERE t.lease_id = -move_id);
  END IF;
  INSERT INTO tweetkeeper.tweets SELECT * FROM jsonb_populate_recordset(NULL::tweetkeeper.tweets, rows -> 'tweets') x
   WHERE x.lease_id = -move_id;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n <> jsonb_array_length(rows -> 'tweets') THEN
    RAISE EXCEPTION 'move %: % posts sent, % held by the move', move_id, jsonb_array_length(rows -> 'tweets'), n
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO tweetkeeper.metric_history_hot SELECT * FROM jsonb_populate_recordset(NULL::tweetkeeper.metric_history_hot, rows -> 'metric_history_hot');
  INSERT INTO tweetkeeper.metric_history_compact SELECT * FROM jsonb_populate_recordset(NULL::tweetkeeper.metric_history_compact, rows -> 'metric_history_compact');
  INSERT INTO tweetkeeper.metric_daily SELECT * FROM jsonb_populate_recordset(NULL::tweetkeeper.metric_daily, rows -> 'metric_daily');
  INSERT INTO tweetkeeper.post_refs SELECT * FROM jsonb_populate_recordset(NULL::tweetkeeper.post_refs, rows -> 'post_refs');
  INSERT INTO tweetkeeper.payloads SELECT * FROM jsonb_populate_recordset(NULL::tweetkeeper.payloads, rows -> 'payloads');
  INSERT INTO tweetkeeper.tombstones SELECT * FROM jsonb_populate_recordset(NULL::tweetkeeper.tombstones, rows -> 'tombstones');
  INSERT INTO tweetkeeper.edits SELECT * FROM jsonb_populate_recordset(NULL::tweetkeeper.edits, rows -> 'edits');
  -- (A collection is the same by name on every node: made here if new.)
  INSERT INTO tweetkeeper.collections SELECT * FROM jsonb_populate_recordset(NULL::tweetkeeper.collections, rows -> 'collections')
  ON CONFLICT ON CONSTRAINT collections_pkey DO NOTHING;
  INSERT INTO tweetkeeper.collection_posts
  SELECT * FROM jsonb_populate_recordset(NULL::tweetkeeper.collection_posts, rows -> 'collection_posts');
  INSERT INTO tweetkeeper.bluesky_handles SELECT * FROM jsonb_populate_recordset(NULL::tweetkeeper.bluesky_handles, rows -> 'bluesky_handles')
  ON CONFLICT ON CONSTRAINT bluesky_handles_pkey DO NOTHING;
  INSERT INTO tweetkeeper.moves (move_id, side, slot, posts, due_ats) VALUES (move_id, 'in', slot, n, coalesce(rows -> 'due_ats', '{}'));
  RETURN n;
END $$;

-- The posts a move holds (on either side), deleted with every row they have: on the source once
-- they are parked on the destination, or on the destination when they never left the source.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.drop_moved(move_id bigint, side text) RETURNS integer
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  ids bigint[] := ARRAY(SELECT t.tweet_id FROM tweetkeeper.tweets t WHERE t.lease_id = -move_id);
BEGIN
  DELETE FROM tweetkeeper.metric_history_hot h WHERE h.tweet_id = ANY (ids);
  DELETE FROM tweetkeeper.metric_history_compact h WHERE h.tweet_id = ANY (ids);
  DELETE FROM tweetkeeper.metric_daily d WHERE d.tweet_id = ANY (ids);
  DELETE FROM tweetkeeper.payloads p WHERE p.tweet_id = ANY (ids);
  DELETE FROM tweetkeeper.tombstones x WHERE x.tweet_id = ANY (ids);
  DELETE FROM tweetkeeper.edits e WHERE e.tweet_id = ANY (ids);
  DELETE FROM tweetkeeper.collection_posts c WHERE c.tweet_id = ANY (ids);
  DELETE FROM tweetkeeper.post_refs r WHERE r.tweet_id = ANY (ids);
  DELETE FROM tweetkeeper.tweets t WHERE t.tweet_id = ANY (ids);
  DELETE FROM tweetkeeper.moves m WHERE m.move_id = drop_moved.move_id AND m.side = drop_moved.side;
  RETURN coalesce(cardinality(ids), 0);
END $$;

-- The destination's last step: the parked posts set free (claimable from their due times on), or
-- the source's when a move is undone (they never reached the destination).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.free_moved(move_id bigint, side text) RETURNS integer
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n integer;
BEGIN
  UPDATE tweetkeeper.tweets t SET lease_id = NULL, due_at = (m.due_ats ->> t.tweet_id::text)::timestamptz
    FROM tweetkeeper.moves m
   WHERE t.lease_id = -free_moved.move_id AND m.move_id = free_moved.move_id AND m.side = free_moved.side;
  GET DIAGNOSTICS n = ROW_COUNT;
  DELETE FROM tweetkeeper.moves m WHERE m.move_id = free_moved.move_id AND m.side = free_moved.side;
  IF n > 0 THEN
    PERFORM tweetkeeper_internal.wake_maintenance();
  END IF;
  RETURN n;
END $$;

-- A move's last steps, by name: 'done' (the source: its posts deleted once parked on the
-- destination), 'unpark' (the destination: set free), 'release' (the source: let go, they never
-- reached the destination), 'discard' (the destination: deleted, they never left the source).
CREATE OR REPLACE FUNCTION move_step(move_id bigint, step text) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF step IN ('done', 'discard') THEN
    RETURN tweetkeeper_internal.drop_moved(move_id, CASE step WHEN 'done' THEN 'out' ELSE 'in' END);
  ELSIF step IN ('unpark', 'release') THEN
    RETURN tweetkeeper_internal.free_moved(move_id, CASE step WHEN 'unpark' THEN 'in' ELSE 'out' END);
  END IF;
  RAISE EXCEPTION 'move_step: % is not done, unpark, release or discard', coalesce(quote_literal(step), 'NULL')
    USING ERRCODE = 'invalid_parameter_value';
END $$;

-- The moves this node is part of: which side, and how many posts each holds now.
CREATE OR REPLACE FUNCTION moves_here() RETURNS TABLE (move_id bigint, side text, slot integer, posts bigint)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  SELECT m.move_id, m.side, m.slot, (SELECT count(*) FROM tweetkeeper.tweets t WHERE t.lease_id = -m.move_id)
    FROM tweetkeeper.moves m ORDER BY m.move_id, m.side;
END;

-- A credential's share set again from its whole window and cap (after this node's slots
-- changed: the proxy's move_slot()); what is left of the current window shrinks with it.
CREATE OR REPLACE FUNCTION set_credential_share(name text, requests_per_window integer, monthly_cap bigint) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n integer;
BEGIN
  UPDATE tweetkeeper.credentials c
     SET requests_per_window = tweetkeeper_internal.node_share(set_credential_share.requests_per_window),
         monthly_cap = tweetkeeper_internal.node_share(set_credential_share.monthly_cap),
         remaining = least(c.remaining, tweetkeeper_internal.node_share(set_credential_share.requests_per_window))
   WHERE c.name = set_credential_share.name;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;

-- One of this database's tweetkeeper settings (ALTER DATABASE ... SET), as the proxy pushes it to
-- every node (its set_setting()): checked first as SET checks it (its range or words), and only
-- those a database may set (not the server's: tweetkeeper.database, the intervals read at start);
-- dry_run keeps nothing. New sessions (the workers' next connections, the background worker's next
-- tick) take it. Returns settings_digest(). The superuser's (no grant): ALTER DATABASE is.
CREATE OR REPLACE FUNCTION set_setting(name text, value text, dry_run boolean DEFAULT false) RETURNS text
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('name, value and dry_run', name IS NULL OR value IS NULL OR dry_run IS NULL);
  PERFORM tweetkeeper.settings();  -- (loads the module, which defines the settings)
  IF name !~ '^tweetkeeper\.[a-z_]+$'
     OR NOT EXISTS (SELECT FROM pg_settings s WHERE s.name = set_setting.name AND s.context IN ('superuser', 'user')) THEN
    RAISE EXCEPTION '% is not a tweetkeeper setting a database may set', name
      USING ERRCODE = 'invalid_parameter_value', HINT = 'See docs/sql-reference.md, Settings.';
  END IF;
  PERFORM set_config(name, value, true);  -- its own checks (22023 for a bad value), this transaction only
  IF NOT dry_run THEN
    EXECUTE format('ALTER DATABASE %I SET %s = %L', current_database(), name, value);
  END IF;
  RETURN tweetkeeper.settings_digest();
END $$;
COMMENT ON FUNCTION set_setting(text, text, boolean) IS
  'Sets a tweetkeeper setting for this database (ALTER DATABASE ... SET), checked first; dry_run: '
  'checks only. Returns settings_digest(). Superuser only.';

CREATE OR REPLACE FUNCTION settings_digest() RETURNS text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  RETURN (SELECT md5(coalesce(string_agg(c, ',' ORDER BY c), ''))
            FROM pg_db_role_setting s, unnest(s.setconfig) AS c
           WHERE s.setrole = 0 AND s.setdatabase = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
             AND c LIKE 'tweetkeeper.%');
COMMENT ON FUNCTION settings_digest() IS
  'An md5 of this database''s tweetkeeper settings (ALTER DATABASE ... SET): equal on nodes set alike.';
