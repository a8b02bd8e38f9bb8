-- The proxy database's cluster (docs/partitions.md): the nodes, the slot each holds, and the
-- PL/Proxy cluster 'tweetkeeper' made from them (SQL/MED: a server of 64 partitions p0..p63, each
-- the connection string of the node holding that slot; PL/Proxy opens one connection per distinct
-- string, so RUN ON ALL runs once per node).

CREATE SCHEMA tweetkeeper_proxy;
REVOKE ALL ON SCHEMA tweetkeeper_proxy FROM PUBLIC;

CREATE TABLE tweetkeeper_proxy.nodes (
  node text NOT NULL,
  connstr text NOT NULL,               -- libpq's; no password (a user mapping, or .pgpass, holds it)
  added_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT nodes_pkey PRIMARY KEY (node),
  CONSTRAINT nodes_named CHECK (node ~ '^[A-Za-z0-9_.-]{1,63}$'),
  CONSTRAINT nodes_connstr_unique UNIQUE (connstr),
  CONSTRAINT nodes_no_password CHECK (connstr !~* 'password')
);
SELECT pg_catalog.pg_extension_config_dump('tweetkeeper_proxy.nodes', '');

CREATE TABLE tweetkeeper_proxy.slots (
  slot integer NOT NULL,
  node text NOT NULL,
  CONSTRAINT slots_pkey PRIMARY KEY (slot),
  CONSTRAINT slots_range CHECK (slot BETWEEN 0 AND 63),
  CONSTRAINT slots_node_fkey FOREIGN KEY (node) REFERENCES tweetkeeper_proxy.nodes (node)
);
SELECT pg_catalog.pg_extension_config_dump('tweetkeeper_proxy.slots', '');

-- A node's set_partition(), called on that node (CONNECT: the string is the proxy's own table's,
-- never a caller's).
CREATE FUNCTION tweetkeeper_proxy.node_set_partition(connstr text, node text, slots integer[]) RETURNS integer[]
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CONNECT connstr;
  SELECT tweetkeeper.set_partition(node, slots);
$$;

-- The SQL/MED server 'tweetkeeper' from the tables: p<slot> = its node's connection string.
CREATE FUNCTION tweetkeeper_proxy.publish() RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  opts text;
BEGIN
  SELECT string_agg(format('p%s %L', s.slot, n.connstr), ', ' ORDER BY s.slot) INTO opts
    FROM tweetkeeper_proxy.slots s JOIN tweetkeeper_proxy.nodes n USING (node);
  IF (SELECT count(*) FROM tweetkeeper_proxy.slots) <> 64 THEN
    RAISE EXCEPTION 'the cluster''s slots are not all held (% of 64)', (SELECT count(*) FROM tweetkeeper_proxy.slots)
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  IF EXISTS (SELECT FROM pg_foreign_server WHERE srvname = 'tweetkeeper') THEN
    -- (PL/Proxy sees the change at once: it watches the server's options.)
    SELECT string_agg(format('SET p%s %L', s.slot, n.connstr), ', ' ORDER BY s.slot) INTO opts
      FROM tweetkeeper_proxy.slots s JOIN tweetkeeper_proxy.nodes n USING (node);
    EXECUTE format('ALTER SERVER tweetkeeper OPTIONS (%s)', opts);
  ELSE
    EXECUTE format('CREATE SERVER tweetkeeper FOREIGN DATA WRAPPER plproxy OPTIONS (connection_lifetime %L, %s)', '1800', opts);
    CREATE USER MAPPING FOR PUBLIC SERVER tweetkeeper;
    GRANT USAGE ON FOREIGN SERVER tweetkeeper TO tweetkeeper_admin, tweetkeeper_reader;
  END IF;
END $$;

-- Makes the cluster of these nodes: slot s on node s % n (each node asked to hold its slots
-- first; a node still tracking posts of a slot it would give up refuses, 55006, and nothing of
-- the proxy changes). On a cluster of one node's data, that node first.
CREATE FUNCTION create_cluster(nodes text[], connstrs text[]) RETURNS TABLE (node text, slots integer[])
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n integer := cardinality(nodes);
  i integer;
BEGIN
  IF nodes IS NULL OR connstrs IS NULL OR n = 0 OR n <> cardinality(connstrs) OR n > 64 THEN
    RAISE EXCEPTION 'nodes and connstrs: 1 to 64 nodes, one connection string each'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  DELETE FROM tweetkeeper_proxy.slots;
  DELETE FROM tweetkeeper_proxy.nodes;
  INSERT INTO tweetkeeper_proxy.nodes (node, connstr) SELECT x.node, x.connstr FROM unnest(nodes, connstrs) AS x(node, connstr);
  INSERT INTO tweetkeeper_proxy.slots (slot, node) SELECT s, nodes[1 + s % n] FROM generate_series(0, 63) AS s;
  FOR i IN 1..n LOOP
    PERFORM tweetkeeper_proxy.node_set_partition(connstrs[i], nodes[i],
      ARRAY(SELECT s.slot FROM tweetkeeper_proxy.slots s WHERE s.node = nodes[i] ORDER BY s.slot));
  END LOOP;
  PERFORM tweetkeeper_proxy.publish();
  PERFORM tweetkeeper_proxy.build_reads();
  RETURN QUERY SELECT s.node, array_agg(s.slot ORDER BY s.slot) FROM tweetkeeper_proxy.slots s
                GROUP BY s.node ORDER BY min(s.slot);
END $$;
COMMENT ON FUNCTION create_cluster(text[], text[]) IS
  'Makes the proxy''s cluster of these nodes (names, and libpq connection strings without '
  'passwords): slot s on node s % n; each node is made a partition of its slots (set_partition) '
  'first. Returns each node''s slots.';

CREATE VIEW cluster AS
  SELECT n.node, n.connstr, array_agg(s.slot ORDER BY s.slot) AS slots, n.added_at
    FROM tweetkeeper_proxy.nodes n LEFT JOIN tweetkeeper_proxy.slots s USING (node)
   GROUP BY n.node, n.connstr, n.added_at;
COMMENT ON VIEW cluster IS 'The proxy''s nodes, their connection strings and the slots each holds.';
