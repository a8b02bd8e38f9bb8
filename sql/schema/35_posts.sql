-- Posts of other networks: what names each on its network, under the negative id that keys it in
-- tweets (see the key's comment in 20_queue_tables.sql). X's tweets have no row here: their id
-- says everything.
CREATE TABLE post_refs (
  tweet_id bigint NOT NULL,      -- tweetkeeper_internal.post_id(identity, seed), negative
  network text NOT NULL,         -- bluesky, mastodon
  host text NOT NULL,            -- Mastodon: the server that holds the status; Bluesky: ''
  author text NOT NULL,          -- Bluesky: the DID, or the handle until it is resolved; Mastodon: the user
  post_key text NOT NULL,        -- Bluesky: the record key; Mastodon: the status id on host
  url text NOT NULL,             -- where a person sees it
  CONSTRAINT post_refs_pkey PRIMARY KEY (tweet_id),
  CONSTRAINT post_refs_id_negative CHECK (tweet_id < 0),
  CONSTRAINT post_refs_network_known CHECK (network IN ('bluesky', 'mastodon'))
);
SELECT pg_catalog.pg_extension_config_dump('post_refs', '');
-- An author's posts: those a Bluesky account event (deleted, taken down, active again) speaks for.
CREATE INDEX post_refs_author_idx ON post_refs (network, host, author);
COMMENT ON TABLE post_refs IS
  'Posts of Bluesky and Mastodon: the author, key and URL behind the negative tweet_id that keys '
  'them in tweets.';
