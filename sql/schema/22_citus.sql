-- Past one machine, on Citus: which buckets each shard holds (the functions that distribute the
-- tables and route claims by shard: sql/replaceable/22_citus.sql).

-- Each shard of the distributed tweets table (1, 2, ... in the order of Citus's shard ids) with
-- the buckets it holds. Written by distribute(); empty on one node. claim_batch() claims from one
-- shard at a time; a lease id carries its shard in its high bits (new_lease()), so completion and
-- release find the batch's shard again. Not users' data (distribute() derives it); dumped all the same, as every table of the extension is.
CREATE TABLE shard_buckets (
  shard integer NOT NULL,
  buckets smallint[] NOT NULL,
  CONSTRAINT shard_buckets_pkey PRIMARY KEY (shard)
);
SELECT pg_catalog.pg_extension_config_dump('shard_buckets', '');
COMMENT ON TABLE shard_buckets IS
  'On Citus (tweetkeeper.distribute()): each shard of tweets and the buckets it holds. Empty on one node.';
