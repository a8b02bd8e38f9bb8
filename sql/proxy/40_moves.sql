-- Growing (docs/partitions.md): a node added with no slots, then slots moved to it, online, in
-- batches, while workers run. A batch is a claim of its own on the node the slot leaves (its
-- posts held there by the mark -move_id, which no worker claims), its rows copied to the node it
-- goes to and kept parked there under the same mark, then deleted where they were and set free
-- where they are: a post is never on two nodes unparked, never lost, never refreshed twice. Each
-- step is a call of its own on one node (PL/Proxy commits each): a move cut short anywhere is
-- finished or undone by the next (reconcile(), from what the nodes' moves tables say).

CREATE TABLE tweetkeeper_proxy.moves (
  slot integer NOT NULL,
  from_node text NOT NULL,
  to_node text NOT NULL,
  state text NOT NULL DEFAULT 'moving',
  posts_moved bigint NOT NULL DEFAULT 0,
  batches integer NOT NULL DEFAULT 0,
  started_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT moves_pkey PRIMARY KEY (slot, started_at),
  CONSTRAINT moves_state_known CHECK (state IN ('moving', 'done', 'resumed'))
);
SELECT pg_catalog.pg_extension_config_dump('tweetkeeper_proxy.moves', '');
CREATE SEQUENCE tweetkeeper_proxy.move_id_seq;
SELECT pg_catalog.pg_extension_config_dump('tweetkeeper_proxy.move_id_seq', '');

-- Credentials as registered through the proxy (their whole windows and caps): after a move the
-- nodes' shares are set again from them.
CREATE TABLE tweetkeeper_proxy.credentials (
  name text NOT NULL,
  requests_per_window integer NOT NULL,
  monthly_cap bigint,
  CONSTRAINT credentials_pkey PRIMARY KEY (name)
);
SELECT pg_catalog.pg_extension_config_dump('tweetkeeper_proxy.credentials', '');

-- Each node's step, on that node (CONNECT: the string is the proxy's own table's).
CREATE FUNCTION tweetkeeper_proxy.node_move_out(connstr text, slot integer, move_id bigint, after_id bigint, max_posts integer,
                                                OUT rows jsonb, OUT posts integer, OUT last_id bigint)
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CONNECT connstr;
  SELECT * FROM tweetkeeper.move_out(slot, move_id, after_id, max_posts);
$$;
CREATE FUNCTION tweetkeeper_proxy.node_move_in(connstr text, slot integer, move_id bigint, rows jsonb) RETURNS integer
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CONNECT connstr;
  SELECT tweetkeeper.move_in(slot, move_id, rows);
$$;
CREATE FUNCTION tweetkeeper_proxy.node_move_step(connstr text, step text, move_id bigint) RETURNS integer
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CONNECT connstr;
  SELECT tweetkeeper.move_step(move_id, step);
$$;
CREATE FUNCTION tweetkeeper_proxy.node_moves(connstr text, OUT move_id bigint, OUT side text, OUT slot integer, OUT posts bigint)
  RETURNS SETOF record
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CONNECT connstr;
  SELECT * FROM tweetkeeper.moves_here();
$$;
CREATE FUNCTION tweetkeeper_proxy.node_set_credential(connstr text, name text, requests_per_window integer, monthly_cap bigint)
  RETURNS integer
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CONNECT connstr;
  SELECT tweetkeeper.set_credential_share(name, requests_per_window, monthly_cap);
$$;

CREATE FUNCTION tweetkeeper_proxy.connstr(node text) RETURNS text
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN (SELECT n.connstr FROM tweetkeeper_proxy.nodes n WHERE n.node = connstr.node);

-- Every move cut short, between two nodes, finished or undone: parked on the destination and
-- still held on the source: delete there, free here; parked and gone from the source: free;
-- held on the source and never parked: let go there.
CREATE FUNCTION tweetkeeper_proxy.reconcile(from_node text, to_node text) RETURNS integer
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  src text := tweetkeeper_proxy.connstr(from_node);
  dst text := tweetkeeper_proxy.connstr(to_node);
  m record;
  n integer := 0;
BEGIN
  FOR m IN SELECT coalesce(o.move_id, i.move_id) AS move_id, o.move_id IS NOT NULL AS held, i.move_id IS NOT NULL AS parked
             FROM (SELECT * FROM tweetkeeper_proxy.node_moves(src) x WHERE x.side = 'out') o
             FULL JOIN (SELECT * FROM tweetkeeper_proxy.node_moves(dst) y WHERE y.side = 'in') i USING (move_id) LOOP
    IF m.held AND m.parked THEN
      PERFORM tweetkeeper_proxy.node_move_step(src, 'done', m.move_id);
      PERFORM tweetkeeper_proxy.node_move_step(dst, 'unpark', m.move_id);
    ELSIF m.parked THEN
      PERFORM tweetkeeper_proxy.node_move_step(dst, 'unpark', m.move_id);
    ELSE
      PERFORM tweetkeeper_proxy.node_move_step(src, 'release', m.move_id);
    END IF;
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;

-- One pass over a slot's posts on the source, batch by batch, each committed here as it is done
-- (the moves table shows the progress); moved: how many. Posts a worker's batch holds are passed
-- over: the next pass takes them. (A procedure, to commit between batches: so it cannot pin its
-- search_path with SET; it sets it itself, again after each COMMIT, and names everything in full.)
CREATE PROCEDURE tweetkeeper_proxy.move_pass(slot integer, from_node text, to_node text, batch integer, started timestamptz,
                                             INOUT moved bigint)
  LANGUAGE plpgsql AS $$
DECLARE
  src text;
  dst text;
  after_id bigint;
  o record;
  id bigint;
BEGIN
  PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
  src := tweetkeeper_proxy.connstr(from_node);
  dst := tweetkeeper_proxy.connstr(to_node);
  moved := 0;
  LOOP
    id := nextval('tweetkeeper_proxy.move_id_seq');
    o := tweetkeeper_proxy.node_move_out(src, slot, id, after_id, batch);
    IF o.posts > 0 THEN
      PERFORM tweetkeeper_proxy.node_move_in(dst, slot, id, o.rows);
      PERFORM tweetkeeper_proxy.node_move_step(src, 'done', id);
      PERFORM tweetkeeper_proxy.node_move_step(dst, 'unpark', id);
      moved := moved + o.posts;
      UPDATE tweetkeeper_proxy.moves m SET posts_moved = m.posts_moved + o.posts, batches = m.batches + 1, updated_at = now()
       WHERE m.slot = move_pass.slot AND m.started_at = started;
    ELSE
      PERFORM tweetkeeper_proxy.node_move_step(src, 'release', id);  -- (forgets the empty move)
    END IF;
    COMMIT;
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    EXIT WHEN o.last_id IS NULL;
    after_id := o.last_id;
  END LOOP;
END $$;

-- The node's slots as the proxy's table says, with or without one.
CREATE FUNCTION tweetkeeper_proxy.slots_of(node text, plus integer, minus integer) RETURNS integer[]
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN ARRAY(SELECT s FROM (SELECT x.slot AS s FROM tweetkeeper_proxy.slots x WHERE x.node = slots_of.node
                              UNION SELECT plus) y
                WHERE s IS NOT NULL AND s IS DISTINCT FROM minus ORDER BY s);

-- Each credential registered through the proxy, its share set again on a node (its slots' 64ths).
CREATE FUNCTION tweetkeeper_proxy.reshare(node text) RETURNS void
  LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
  SELECT count(tweetkeeper_proxy.node_set_credential(tweetkeeper_proxy.connstr(node), c.name, c.requests_per_window, c.monthly_cap))
    FROM tweetkeeper_proxy.credentials c $$;

-- Moves a slot to another node, online: its posts in batches of `batch` (moves shows how far);
-- then the node takes the slot, the proxy routes it there, and the posts that arrived on the old
-- node meanwhile (or were in a worker's batch) follow until the old node gives the slot up (it
-- refuses while it still tracks one of its posts: no post is left behind); last, the credentials'
-- shares follow the slots (the old node's shrink first: never more than the whole).
CREATE PROCEDURE move_slot(slot integer, to_node text, batch integer DEFAULT 1000)
  LANGUAGE plpgsql AS $$
DECLARE
  from_node text;
  started timestamptz;
  moved bigint := 0;
  passes integer := 0;
BEGIN
  PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
  -- (A move cut short after the proxy routed the slot to its new node still has posts to take
  -- from the old one: its row says which.)
  from_node := coalesce((SELECT m.from_node FROM tweetkeeper_proxy.moves m WHERE m.slot = move_slot.slot AND m.state = 'moving'
                          ORDER BY m.started_at DESC LIMIT 1),
                        (SELECT s.node FROM tweetkeeper_proxy.slots s WHERE s.slot = move_slot.slot));
  IF from_node IS NULL OR tweetkeeper_proxy.connstr(to_node) IS NULL OR batch NOT BETWEEN 1 AND 100000 THEN
    RAISE EXCEPTION 'move_slot: a slot 0..63 of the cluster, a node of it (tweetkeeper.cluster), a batch of 1 to 100000'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- A move of this slot cut short (its session ended) is resumed, to the same node only: its
  -- posts moved so far are there.
  IF EXISTS (SELECT FROM tweetkeeper_proxy.moves m WHERE m.slot = move_slot.slot AND m.state = 'moving' AND m.to_node <> move_slot.to_node) THEN
    RAISE EXCEPTION 'slot % is being moved to %: finish that move first', slot,
      (SELECT m.to_node FROM tweetkeeper_proxy.moves m WHERE m.slot = move_slot.slot AND m.state = 'moving' LIMIT 1)
      USING ERRCODE = 'object_in_use', HINT = 'CALL tweetkeeper.move_slot(slot, that node): it goes on where it stopped.';
  END IF;
  IF from_node = to_node THEN
    RETURN;
  END IF;
  PERFORM tweetkeeper_proxy.reconcile(from_node, to_node);
  UPDATE tweetkeeper_proxy.moves m SET state = 'resumed', updated_at = now() WHERE m.slot = move_slot.slot AND m.state = 'moving';
  started := clock_timestamp();
  INSERT INTO tweetkeeper_proxy.moves (slot, from_node, to_node, started_at) VALUES (slot, from_node, to_node, started);
  COMMIT;
  CALL tweetkeeper_proxy.move_pass(slot, from_node, to_node, batch, started, moved);
  -- The new node takes the slot, the proxy routes it there.
  PERFORM tweetkeeper_proxy.node_set_partition(tweetkeeper_proxy.connstr(to_node), to_node, tweetkeeper_proxy.slots_of(to_node, slot, NULL));
  UPDATE tweetkeeper_proxy.slots s SET node = to_node WHERE s.slot = move_slot.slot;
  PERFORM tweetkeeper_proxy.publish();
  COMMIT;
  -- What came meanwhile follows, until the old node gives the slot up.
  LOOP
    CALL tweetkeeper_proxy.move_pass(slot, from_node, to_node, batch, started, moved);
    passes := passes + 1;
    -- (Giving the slot up counts what is left of it there: one walk of the node's posts.)
    EXIT WHEN tweetkeeper_proxy.try_give_up(from_node, slot);
    IF passes >= 600 THEN
      RAISE EXCEPTION 'slot % still has posts on % after % passes (a worker''s batch holding them?)', slot, from_node, passes
        USING ERRCODE = 'object_in_use', HINT = 'CALL tweetkeeper.move_slot again: it goes on where it stopped.';
    END IF;
    PERFORM pg_catalog.pg_sleep(0.1);  -- (a worker's batch still holds some: it ends within its lease)
  END LOOP;
  PERFORM tweetkeeper_proxy.reshare(from_node);
  PERFORM tweetkeeper_proxy.reshare(to_node);
  UPDATE tweetkeeper_proxy.moves m SET state = 'done', updated_at = now() WHERE m.slot = move_slot.slot AND m.started_at = started;
  COMMIT;
END $$;
COMMENT ON PROCEDURE move_slot(integer, text, integer) IS
  'Moves a slot''s posts to another node of the cluster, online, in batches (view moves: how far); '
  'CALL it again after an interruption: it finishes or undoes what was cut short first.';

-- The old node gives the slot up, unless a post of it landed there meanwhile (55006: then the
-- mover's next pass takes it).
CREATE FUNCTION tweetkeeper_proxy.try_give_up(node text, slot integer) RETURNS boolean
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_proxy.node_set_partition(tweetkeeper_proxy.connstr(node), node, tweetkeeper_proxy.slots_of(node, NULL, slot));
  RETURN true;
EXCEPTION WHEN object_in_use THEN
  RETURN false;
END $$;

-- A node joins the cluster holding no slot (rebalance() moves some to it).
CREATE FUNCTION add_node(node text, connstr text) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO tweetkeeper_proxy.nodes (node, connstr) VALUES (node, connstr);
  PERFORM tweetkeeper_proxy.node_set_partition(connstr, node, '{}');
  PERFORM tweetkeeper_proxy.reshare(node);
  PERFORM tweetkeeper_proxy.build_reads();
END $$;
COMMENT ON FUNCTION add_node(text, text) IS
  'Adds a node (a complete tweetkeeper database) to the cluster, holding no slot yet: CALL '
  'tweetkeeper.rebalance() moves slots to it.';

-- Slots moved, one at a time, from the node holding the most to the one holding the fewest, until
-- no node holds two more than another.
CREATE PROCEDURE rebalance(batch integer DEFAULT 1000)
  LANGUAGE plpgsql AS $$
DECLARE
  most record;
  fewest record;
  cut record;
BEGIN
  PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
  -- Moves cut short first (their posts moved so far are on the node they were going to).
  FOR cut IN SELECT DISTINCT m.slot, m.to_node FROM tweetkeeper_proxy.moves m WHERE m.state = 'moving' LOOP
    CALL tweetkeeper.move_slot(cut.slot, cut.to_node, batch);
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
  END LOOP;
  LOOP
    SELECT n.node, count(s.slot) AS k, max(s.slot) AS top INTO most
      FROM tweetkeeper_proxy.nodes n LEFT JOIN tweetkeeper_proxy.slots s USING (node) GROUP BY n.node ORDER BY 2 DESC, 1 LIMIT 1;
    SELECT n.node, count(s.slot) AS k INTO fewest
      FROM tweetkeeper_proxy.nodes n LEFT JOIN tweetkeeper_proxy.slots s USING (node) GROUP BY n.node ORDER BY 2, 1 LIMIT 1;
    EXIT WHEN most.k - fewest.k <= 1;
    CALL tweetkeeper.move_slot(most.top::integer, fewest.node, batch);
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
  END LOOP;
END $$;
COMMENT ON PROCEDURE rebalance(integer) IS
  'Moves slots (move_slot) from the fullest node to the emptiest until they differ by one at most.';

CREATE VIEW moves AS
  SELECT m.slot, m.from_node, m.to_node, m.state, m.posts_moved, m.batches, m.started_at, m.updated_at
    FROM tweetkeeper_proxy.moves m;
COMMENT ON VIEW moves IS 'Slots moved between nodes: how many posts, in how many batches, and whether done.';
