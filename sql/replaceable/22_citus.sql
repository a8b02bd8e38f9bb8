-- Past one machine: tweetkeeper on a Citus cluster (tweetkeeper.distribute()). Every table that
-- grows with the posts tracked (tweets, their history, batches, post_refs) is distributed by one
-- column, bucket, a hash of the post's id in 1024 values, and they are colocated: a post's rows,
-- history and batches live on one node. Not by tweet_id itself: Citus locks rows (FOR UPDATE)
-- only in a query routed to one shard, which needs an equality on the distribution column, and
-- a claim asks for "due tweets", not for ids; `bucket = ANY (a shard's buckets)` routes it.
-- On one node bucket stays NULL (every insert asks shard_count() first): not a byte of any row.

-- The bucket of a post: 1024 values, so that any shard count up to that splits them evenly.
CREATE OR REPLACE FUNCTION bucket_of(post_id bigint) RETURNS smallint
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (hashint8(post_id) & 1023)::smallint;
COMMENT ON FUNCTION bucket_of(bigint) IS
  'The bucket (0-1023) of a post id: the column tweetkeeper''s tables are distributed by on Citus.';

-- How many shards the claims go round: 0 on one node.
-- (This and lease_buckets() are PL/pgSQL, which keeps its statement's plan for the session: as
-- SQL functions whose body is a subquery they were not inlined, and every claim and completion
-- planned them again, 40 us a call, against 6 us for PL/pgSQL's call with its search_path.)
CREATE OR REPLACE FUNCTION shard_count() RETURNS integer
  LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  RETURN (SELECT count(*)::integer FROM tweetkeeper.shard_buckets);
END $$;

-- A new lease id: the sequence's next value, with the shard (0 on one node) in bits 48 and up.
-- On Citus every claim runs on the coordinator, whose sequence alone hands them out.
CREATE OR REPLACE FUNCTION new_lease(shard integer) RETURNS bigint
  LANGUAGE sql VOLATILE
  RETURN (shard::bigint << 48) | nextval('tweetkeeper.lease_id_seq');

-- The buckets of a lease's shard; NULL on one node, or for a lease from before distribute().
CREATE OR REPLACE FUNCTION lease_buckets(lease bigint) RETURNS smallint[]
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  RETURN (SELECT b.buckets FROM tweetkeeper.shard_buckets b WHERE b.shard = (lease >> 48)::integer);
END $$;

-- The shards a claim goes round on Citus, each with its buckets, in turn from the one after this
-- session's last batch (tweetkeeper_claim.next_shard, which claim_batch() and claim_posts() set).
CREATE OR REPLACE FUNCTION shards_in_turn(OUT shard integer, OUT buckets smallint[]) RETURNS SETOF record
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT b.shard, b.buckets
    FROM tweetkeeper.shard_buckets b, (SELECT count(*)::integer AS n FROM tweetkeeper.shard_buckets) c
   ORDER BY (b.shard + c.n - coalesce(nullif(current_setting('tweetkeeper_claim.next_shard', true), '')::integer,
                                      1 + pg_backend_pid() % c.n)) % c.n $$;

-- Spreads the queue over a Citus cluster: run on the coordinator once the worker nodes are added
-- (citus_add_node). Safe on a queue that holds data, and idempotent: a second call distributes
-- only what is not yet distributed and maps the shards again (after a shard split, say).
-- Distributed and colocated by bucket: tweets, batches, post_refs, metric_history_hot (and its
-- partitions), metric_history_compact, metric_daily. Everything else (policy, credentials,
-- endpoints, housekeeping) stays on the coordinator, where every claim and completion runs:
-- workers connect to the coordinator. Batches in flight are handed back first (their lease ids
-- carry no shard); a worker that completes one later stores nothing, as for an expired lease.
CREATE OR REPLACE FUNCTION distribute(shard_count integer DEFAULT NULL) RETURNS text
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n_workers integer;
  n_shards integer;
  tbl text;
  key text;
  done integer := 0;
  released integer := 0;
  part record;
BEGIN
  IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') THEN
    RAISE EXCEPTION 'tweetkeeper.distribute() needs Citus, and the citus extension is not in this database'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'On every node: shared_preload_libraries = ''citus,tweetkeeper''. Here: CREATE EXTENSION '
                   'citus, then SELECT citus_add_node(host, port) for each worker node.';
  END IF;
  IF (SELECT l.groupid FROM pg_dist_local_group l) <> 0 THEN
    RAISE EXCEPTION 'tweetkeeper.distribute() runs on the coordinator, and this is a worker node'
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  SELECT count(*) INTO n_workers FROM citus_get_active_worker_nodes();
  IF n_workers = 0 THEN
    RAISE EXCEPTION 'tweetkeeper.distribute() found no worker nodes in this Citus cluster'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Add them first: SELECT citus_add_node(host, port).';
  END IF;
  IF shard_count IS NOT NULL AND (shard_count < 1 OR shard_count > 1024) THEN
    RAISE EXCEPTION 'shard_count must be between 1 and 1024 (the buckets), got %', shard_count
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  n_shards := coalesce(shard_count, current_setting('citus.shard_count')::integer);
  -- All at once, before anything: the background worker's maintenance() must wait for this, not
  -- read a table that this then alters while maintenance() waits to write it (a deadlock, which
  -- Citus cancels).
  LOCK TABLE tweetkeeper.tweets, tweetkeeper.batches, tweetkeeper.post_refs, tweetkeeper.metric_history_hot,
             tweetkeeper.metric_history_compact, tweetkeeper.metric_daily IN ACCESS EXCLUSIVE MODE;
  -- The shards' row triggers (tweets_heads_moved) run on the worker nodes, where tweetkeeper is
  -- preloaded too: Citus asks for this to distribute a table with triggers.
  PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
  SELECT string_agg(format('%s:%s: %s', w.nodename, w.nodeport, w.result), '; ') INTO tbl
    FROM run_command_on_workers('SELECT tweetkeeper.shed_node_partitions()') w WHERE NOT w.success;
  IF tbl IS NOT NULL THEN
    RAISE EXCEPTION 'tweetkeeper.distribute(): a worker node is not ready: %', tbl
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = 'tweetkeeper.tweets'::regclass) THEN
    -- Batches in flight: handed back, due now (their lease ids name no shard).
    UPDATE tweetkeeper.tweets t SET due_at = now(), lease_id = NULL WHERE t.lease_id IS NOT NULL;
    UPDATE tweetkeeper.batches b SET outcome = 'released', finished_at = now(), stored = 0, billed = 0,
                                     reason = 'handed back by tweetkeeper.distribute()'
     WHERE b.outcome IS NULL;
    GET DIAGNOSTICS released = ROW_COUNT;
  END IF;
  FOREACH tbl IN ARRAY ARRAY['tweets', 'batches', 'post_refs', 'metric_history_hot', 'metric_history_compact',
                             'metric_daily', 'payloads', 'tombstones', 'edits'] LOOP
    CONTINUE WHEN EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = ('tweetkeeper.' || tbl)::regclass);
    -- Rows from before 0.3.0 have no bucket yet.
    IF tbl = 'batches' THEN
      UPDATE tweetkeeper.batches b SET bucket = tweetkeeper.bucket_of(coalesce(b.tweet_ids[1], 0))
       WHERE b.bucket IS NULL;
    ELSE
      EXECUTE format('UPDATE tweetkeeper.%I x SET bucket = tweetkeeper.bucket_of(x.tweet_id) WHERE x.bucket IS NULL', tbl);
    END IF;
    -- Citus's unique keys include the distribution column.
    key := CASE tbl WHEN 'tweets' THEN 'tweet_id' WHEN 'batches' THEN 'lease_id' WHEN 'post_refs' THEN 'tweet_id'
                    WHEN 'metric_history_compact' THEN 'tweet_id, span_start' WHEN 'metric_daily' THEN 'tweet_id, day'
                    WHEN 'payloads' THEN 'tweet_id, seen_at, lease_id' ELSE 'tweet_id' END;
    IF tbl = 'metric_history_hot' THEN
      FOR part IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                   WHERE i.inhparent = 'tweetkeeper.metric_history_hot'::regclass LOOP
        EXECUTE format('ALTER TABLE tweetkeeper.%1$I DROP CONSTRAINT %2$I, ADD CONSTRAINT %2$I PRIMARY KEY (tweet_id, observed_at, lease_id, bucket)',
                       part.relname, part.relname || '_pkey');
      END LOOP;
    ELSE
      EXECUTE format('ALTER TABLE tweetkeeper.%1$I DROP CONSTRAINT %2$I, ADD CONSTRAINT %2$I PRIMARY KEY (%3$s, bucket)',
                     tbl, tbl || '_pkey', key);
    END IF;
    IF tbl = 'tweets' THEN
      PERFORM create_distributed_table('tweetkeeper.tweets', 'bucket', shard_count => n_shards);
    ELSE
      PERFORM create_distributed_table('tweetkeeper.' || tbl, 'bucket', colocate_with => 'tweetkeeper.tweets');
    END IF;
    -- The rows now live in the shards; the coordinator's own copies would only take space.
    PERFORM truncate_local_data_after_distributing_table('tweetkeeper.' || tbl);
    done := done + 1;
  END LOOP;
  DELETE FROM tweetkeeper.shard_buckets;
  INSERT INTO tweetkeeper.shard_buckets (shard, buckets)
  SELECT row_number() OVER (ORDER BY x.shardid), array_agg(x.b ORDER BY x.b)
    FROM (SELECT g::smallint AS b, get_shard_id_for_distribution_column('tweetkeeper.tweets', g::smallint) AS shardid
            FROM generate_series(0, 1023) g) x
   GROUP BY x.shardid;
  RETURN format('%s tables distributed now, %s batches in flight handed back; tweets in %s shards on %s worker nodes',
                done, released, (SELECT count(*) FROM tweetkeeper.shard_buckets), n_workers);
END $$;
COMMENT ON FUNCTION distribute(integer) IS
  'On a Citus coordinator with worker nodes: distributes the queue, its history and batches by '
  'bucket (colocated), and maps the shards for claim_batch(). Idempotent.';

-- On a worker node, before distribute() creates the history's partitions there: the partitions
-- this node's own background worker made while it was not one yet (tweetkeeper 0.2.0 kept house
-- everywhere), which would clash with them. Only empty ones: a node that holds observations of
-- its own is refused, not emptied.
CREATE OR REPLACE FUNCTION shed_node_partitions() RETURNS integer
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  part record;
  has_rows boolean;
  n integer := 0;
BEGIN
  IF NOT tweetkeeper.citus_worker_node()
     OR EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = 'tweetkeeper.metric_history_hot'::regclass) THEN
    RETURN 0;
  END IF;
  FOR part IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
               WHERE i.inhparent = 'tweetkeeper.metric_history_hot'::regclass
                 AND c.relname <> 'metric_history_default' LOOP
    EXECUTE format('SELECT EXISTS (SELECT FROM tweetkeeper.%I)', part.relname) INTO has_rows;
    IF has_rows THEN
      RAISE EXCEPTION 'this worker node holds observations of its own in tweetkeeper.%', part.relname
        USING ERRCODE = 'object_not_in_prerequisite_state',
              HINT = 'A worker node''s tweetkeeper tables must be empty: move what it tracks to the coordinator first.';
    END IF;
    EXECUTE format('DROP TABLE tweetkeeper.%I', part.relname);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;

-- Whether this database is a Citus worker node: the coordinator keeps house for the whole cluster
-- (maintenance(), housekeeping()); a worker node's background worker leaves its tables, which
-- are Citus's shells and shards, alone.
CREATE OR REPLACE FUNCTION citus_worker_node() RETURNS boolean
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF to_regclass('pg_catalog.pg_dist_local_group') IS NULL THEN
    RETURN false;  -- no Citus (the statement below is planned only when it runs)
  END IF;
  RETURN coalesce((SELECT l.groupid > 0 FROM pg_dist_local_group l), false);
END $$;

-- Going back to one node: run once in the database a coordinator's dump was restored into (README
-- "Scaling out", going back). Citus 12.1 undistributes no table an extension owns, so the way back
-- is pg_dump of the coordinator's database, which reads every row through it; restored on a
-- server without Citus, the queue needs only this: the shard map emptied (claims no longer route),
-- and the history partitions the cluster made, which require a bucket (a column of their
-- distributed primary key), made to take rows without one again, as one node writes them.
CREATE OR REPLACE FUNCTION undistribute() RETURNS text
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n_shards integer;
  n_parts integer := 0;
  part regclass;
BEGIN
  IF EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') THEN
    RAISE EXCEPTION 'tweetkeeper.undistribute() runs in the database on one node that a coordinator''s dump was restored into, and this database has Citus'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'pg_dump the coordinator''s database and restore it on a server without Citus first (README: Scaling out).';
  END IF;
  DELETE FROM tweetkeeper.shard_buckets;
  GET DIAGNOSTICS n_shards = ROW_COUNT;
  FOR part IN
    SELECT a.attrelid::regclass FROM pg_inherits i JOIN pg_attribute a ON a.attrelid = i.inhrelid
     WHERE i.inhparent = 'tweetkeeper.metric_history_hot'::regclass AND a.attname = 'bucket' AND a.attnotnull
  LOOP
    EXECUTE format('ALTER TABLE %s ALTER COLUMN bucket DROP NOT NULL', part);
    n_parts := n_parts + 1;
  END LOOP;
  RETURN format('one node again: %s shards unmapped, %s history partitions take rows without a bucket',
                n_shards, n_parts);
END $$;
COMMENT ON FUNCTION undistribute() IS
  'Run once in a database on one node that a Citus coordinator''s dump was restored into: the '
  'queue is one node''s again.';
