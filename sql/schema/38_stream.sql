-- Stream counts (docs/workers.md, "Stream counts"): with tweetkeeper.bluesky_stream_counts on, one
-- reader (tweetkeeper-worker --stream-counts) reads every like, repost and post of Bluesky from
-- Jetstream and counts those of tracked posts as they happen; getPosts reads only reconcile them.
-- A post is counted by the stream from its first read the reader took in (adopted: a row in
-- stream_posts) until it is done, deleted, moved to another node, or the stream stopped (a read
-- then stores its counts again and the reader adopts it anew). All of these go with their post.

-- The stream's position and its reader's lease: one row, made by the first stream_take().
CREATE TABLE stream_state (
  stream text NOT NULL,                -- 'bluesky'
  position_us bigint,                  -- Jetstream's time_us up to which every event is counted (NULL: live next)
  events bigint NOT NULL DEFAULT 0,    -- events read, all of them
  counted bigint NOT NULL DEFAULT 0,   -- of them, counted for (or against) a post it counts
  behind interval,                     -- how far behind live the position was at the last flush
  flushed_at timestamptz,              -- the reader's last flush: the stream counts while this is recent
  gaps integer NOT NULL DEFAULT 0,     -- times the position was older than Jetstream replays
  gap_at timestamptz,                  -- the last of them (every counted post was read again then)
  lease_owner text,                    -- the reader, as it named itself ...
  lease_pid integer,                   -- ... in this database session (pid and start) ...
  lease_started timestamptz,
  lease_until timestamptz,             -- ... until then, unless it renews
  lease_length interval,               -- (each flush renews it for this long)
  CONSTRAINT stream_state_pkey PRIMARY KEY (stream),
  CONSTRAINT stream_state_stream_known CHECK (stream = 'bluesky')
);
SELECT pg_catalog.pg_extension_config_dump('stream_state', '');
COMMENT ON TABLE stream_state IS
  'The Jetstream reader''s position (time_us) and lease, and what it read: stream counts (tweetkeeper.bluesky_stream_counts).';

-- The posts the stream counts, and how their reads agreed with it.
CREATE TABLE stream_posts (
  tweet_id bigint NOT NULL,
  since timestamptz NOT NULL DEFAULT now(),  -- adopted then, from a read as of adopted_as_of
  adopted_as_of timestamptz NOT NULL,
  counted_at timestamptz,              -- the time of the last event counted for it
  observed bigint NOT NULL DEFAULT 0,  -- observations the stream stored of it (one per flush that moved it)
  reconciled integer NOT NULL DEFAULT 0,  -- reads compared with the stream's counts
  differed integer NOT NULL DEFAULT 0,    -- of them, reads that differed (the difference was taken)
  difference bigint NOT NULL DEFAULT 0,   -- the sum of the differences' absolute values, all counts
  reconciled_at timestamptz,           -- the last read compared, as of
  CONSTRAINT stream_posts_pkey PRIMARY KEY (tweet_id),
  CONSTRAINT stream_posts_tweet_fkey FOREIGN KEY (tweet_id) REFERENCES tweets (tweet_id) ON DELETE CASCADE
);
SELECT pg_catalog.pg_extension_config_dump('stream_posts', '');
COMMENT ON TABLE stream_posts IS
  'Bluesky posts whose counts the Jetstream reader keeps, and how their getPosts reads agreed (stream_accuracy).';

-- The records counted for a tracked post, by a 64-bit hash of who made them and their key
-- (stream_record_key()): Jetstream's delete names only the record, so these say what to subtract.
-- Three numbers a record (18 bytes of data in the row), kept while the post is tracked.
CREATE TABLE stream_records (
  record_key bigint NOT NULL,
  tweet_id bigint NOT NULL,
  kind smallint NOT NULL,              -- 1 repost, 2 reply, 3 like, 4 quote (the order of the counts)
  CONSTRAINT stream_records_pkey PRIMARY KEY (record_key),
  CONSTRAINT stream_records_tweet_fkey FOREIGN KEY (tweet_id) REFERENCES tweets (tweet_id) ON DELETE CASCADE,
  CONSTRAINT stream_records_kind_known CHECK (kind BETWEEN 1 AND 4)
);
CREATE INDEX stream_records_tweet_idx ON stream_records (tweet_id);
SELECT pg_catalog.pg_extension_config_dump('stream_records', '');
COMMENT ON TABLE stream_records IS
  'Likes, reposts, replies and quotes the stream counted for tracked posts, by record (to subtract when deleted).';

-- getPosts reads of Bluesky posts while the stream counts, as of the answer's Date (the AppView's
-- counts then): each waits for the reader to pass that moment, which adopts the post from it or
-- compares it with the stream's count at that moment.
CREATE TABLE stream_reads (
  tweet_id bigint NOT NULL,
  as_of timestamptz NOT NULL,
  read_at timestamptz NOT NULL DEFAULT now(),
  counts bigint[] NOT NULL,            -- reposts, replies, likes, quotes
  CONSTRAINT stream_reads_pkey PRIMARY KEY (tweet_id, as_of),
  CONSTRAINT stream_reads_tweet_fkey FOREIGN KEY (tweet_id) REFERENCES tweets (tweet_id) ON DELETE CASCADE,
  CONSTRAINT stream_reads_counts_four CHECK (cardinality(counts) = 4)
);
CREATE INDEX stream_reads_as_of_idx ON stream_reads (as_of);
SELECT pg_catalog.pg_extension_config_dump('stream_reads', '');
COMMENT ON TABLE stream_reads IS
  'getPosts reads waiting for the Jetstream reader to adopt their post or reconcile it.';

-- Each read that differed from the stream: by how much, per count (read minus stream).
CREATE TABLE stream_differences (
  tweet_id bigint NOT NULL,
  as_of timestamptz NOT NULL,
  differences bigint[] NOT NULL,       -- reposts, replies, likes, quotes
  CONSTRAINT stream_differences_pkey PRIMARY KEY (tweet_id, as_of),
  CONSTRAINT stream_differences_tweet_fkey FOREIGN KEY (tweet_id) REFERENCES tweets (tweet_id) ON DELETE CASCADE
);
SELECT pg_catalog.pg_extension_config_dump('stream_differences', '');
COMMENT ON TABLE stream_differences IS
  'Reads whose counts differed from the stream''s at the same moment (read minus stream); the stream took the read''s.';
