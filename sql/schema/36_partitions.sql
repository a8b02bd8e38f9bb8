-- Partitions (docs/partitions.md): past one machine, tweetkeeper runs as several complete nodes
-- behind a proxy database (PL/Proxy; the tweetkeeper_proxy extension), each post on exactly one
-- node. A post's place is one of 64 slots, the low six bits of partition_hash() of its network and
-- key (the proxy's SQL/MED server lists 64 partitions, p0..p63, each the node that holds that
-- slot: PL/Proxy picks partition hash & 63). The row below says which slots this node holds; no
-- row: the node is alone and holds them all.
CREATE TABLE partition (
  one boolean NOT NULL DEFAULT true,
  node text NOT NULL,                  -- this node's name, as the proxy's cluster names it
  slots bit(64) NOT NULL,              -- bit s (from the left, get_bit(slots, s)) set: slot s is here
  set_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT partition_pkey PRIMARY KEY (one),
  CONSTRAINT partition_one CHECK (one),
  CONSTRAINT partition_node_named CHECK (node ~ '^[A-Za-z0-9_.-]{1,63}$')
);
SELECT pg_catalog.pg_extension_config_dump('partition', '');

-- Posts that came in on this node from inside its own work (an X post's edit: its newest version
-- has an id of its own; a followed account's new post) but whose slot another node holds: kept
-- here, by URL, until the proxy's deliver_handovers() schedules them where they belong and
-- deletes them here. Never refused inside a completion: the batch's paid reads would be lost.
CREATE TABLE handovers (
  url text NOT NULL,                   -- as schedule_post() takes it
  created_at timestamptz,              -- the post's creation time, when known
  reason text NOT NULL,                -- 'edit' or 'follow'
  noted_at timestamptz NOT NULL DEFAULT now(),
  collection text,                     -- a follow's: its collection (the profile's URL), joined where it lands
  CONSTRAINT handovers_pkey PRIMARY KEY (url),
  CONSTRAINT handovers_reason_known CHECK (reason IN ('edit', 'follow'))
);
SELECT pg_catalog.pg_extension_config_dump('handovers', '');

-- Posts in transit between two nodes (a slot moving to another node, moved in batches by the
-- proxy's move_slot()): a batch's posts are held on the node they leave, and kept parked on the
-- node they go to, by the same mark (tweets.lease_id = -move_id, due_at 'infinity': no claim takes
-- them, not even as a lease run out, and nothing else lets go of them), until they are deleted
-- where they were and set free where they are, their due times given back (due_ats). A row per
-- move and side says which this node is; a move cut short is finished or undone from them
-- (move_slot() begins with it).
CREATE TABLE moves (
  move_id bigint NOT NULL,
  side text NOT NULL,                  -- 'out': its posts leave this node; 'in': they arrive here
  slot integer NOT NULL,
  posts integer NOT NULL,
  due_ats jsonb NOT NULL DEFAULT '{}',  -- each post's due time before the move held it (by id)
  at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT moves_pkey PRIMARY KEY (move_id, side),
  CONSTRAINT moves_side_known CHECK (side IN ('out', 'in')),
  CONSTRAINT moves_slot_range CHECK (slot BETWEEN 0 AND 63)
);
SELECT pg_catalog.pg_extension_config_dump('moves', '');
