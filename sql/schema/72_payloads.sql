-- What was seen of each post beyond its counts (tweetkeeper.payloads = first or changed): the
-- post's own object as the API gave it, kept by complete_batch() in the statement that stores
-- the counts. Posts found deleted or unavailable leave a tombstone, and (unless
-- tweetkeeper.deleted_payloads = keep) their payloads are erased: X's terms require stored
-- content to follow deletions. An edited X post links to its newest version (edits), which is
-- refreshed from then on. All three are dumped by pg_dump.
-- Each tweet keeps the content hash of its last kept payload (tweets.payload_hash, set and
-- cleared by complete_batch()), which claim_batch() and claim_posts() hand the worker: a worker
-- that hashes an answer the same way (payload_content()) sends only the payloads whose hash
-- differs (changed) or that have none (first), so an unchanged post costs it one hash, and the
-- database no lookup; complete_batch() still decides, against payloads, under its locks. Payloads
-- deleted by hand leave that hash as it was: a post's next payload is kept when its content
-- changes (retention keeps each post's newest payload, so it never does this).

CREATE TABLE payloads (
  tweet_id bigint NOT NULL,
  seen_at timestamptz NOT NULL,  -- when the answer came (the batch's completion)
  lease_id bigint NOT NULL,      -- the batch whose answer it was
  content_hash bytea NOT NULL,   -- md5 of payload_content(payload, author): what "changed" compares
  payload jsonb NOT NULL,        -- X: the tweet object; Bluesky: the postView; Mastodon: the Status
  author jsonb,                  -- X: the author's user object from includes.users; NULL elsewhere
                                 --   (the postView and the Status carry their author themselves)
  CONSTRAINT payloads_pkey PRIMARY KEY (tweet_id, seen_at, lease_id)
);
SELECT pg_catalog.pg_extension_config_dump('payloads', '');
COMMENT ON TABLE payloads IS
  'Full post payloads as the API gave them (tweetkeeper.payloads: first, or each change of content).';

CREATE TABLE tombstones (
  tweet_id bigint NOT NULL,
  reason text NOT NULL,          -- the API's problem: resource-not-found, not-authorized-for-resource, ...
  observed_at timestamptz NOT NULL,
  payloads_erased integer NOT NULL DEFAULT 0,  -- how many stored payloads went (0 under keep)
  gone_since timestamptz NOT NULL,  -- when it was first found gone (observed_at: last), since it was last seen
  CONSTRAINT tombstones_pkey PRIMARY KEY (tweet_id)
);
SELECT pg_catalog.pg_extension_config_dump('tombstones', '');
COMMENT ON TABLE tombstones IS
  'Posts found deleted, unavailable or missing: since when, why, and how many payloads were erased. '
  'A post seen again loses its tombstone.';

CREATE TABLE edits (
  tweet_id bigint NOT NULL,      -- an X post that has a newer version
  newest_id bigint NOT NULL,     -- the last id of its edit_history_tweet_ids, scheduled in its place
  seen_at timestamptz NOT NULL,
  CONSTRAINT edits_pkey PRIMARY KEY (tweet_id)
);
SELECT pg_catalog.pg_extension_config_dump('edits', '');
COMMENT ON TABLE edits IS
  'Edited X posts: each version with the newest one, which is refreshed from then on.';
