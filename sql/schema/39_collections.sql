-- Collections: the groups a user reports and shares posts by. A tag given at scheduling (or
-- later, collect()), an import (tweetkeeper-import --collection) or a followed account (its
-- posts, as its follower finds them: the collection named by the profile's URL). A post may be in
-- many; leaving a collection or dropping one never stops tracking a post. Both tables are
-- dumped by pg_dump. The name is the key on every node of a partitioned cluster (a moved post
-- takes its memberships along, by name).
CREATE TABLE collections (
  name text NOT NULL,
  kind text NOT NULL DEFAULT 'tag',  -- tag, import or follow: how its posts came in
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT collections_pkey PRIMARY KEY (name),
  CONSTRAINT collections_kind_known CHECK (kind IN ('tag', 'import', 'follow')),
  CONSTRAINT collections_name_sane CHECK (length(name) BETWEEN 1 AND 400 AND name !~ '[[:cntrl:]]'
                                          AND name = btrim(name))
);
SELECT pg_catalog.pg_extension_config_dump('collections', '');
COMMENT ON TABLE collections IS
  'Groups of tracked posts (a tag, an import, a followed account), which mortality and datasets '
  'are reported by.';

CREATE TABLE collection_posts (
  collection text NOT NULL,
  tweet_id bigint NOT NULL,
  added_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT collection_posts_pkey PRIMARY KEY (collection, tweet_id),
  CONSTRAINT collection_posts_collection_fkey FOREIGN KEY (collection) REFERENCES collections (name)
    ON UPDATE CASCADE ON DELETE CASCADE,
  CONSTRAINT collection_posts_tweet_fkey FOREIGN KEY (tweet_id) REFERENCES tweets (tweet_id) ON DELETE CASCADE
);
-- (A post's collections, and the foreign key's own lookups when a post is deleted.)
CREATE INDEX collection_posts_tweet_idx ON collection_posts (tweet_id);
SELECT pg_catalog.pg_extension_config_dump('collection_posts', '');
COMMENT ON TABLE collection_posts IS 'Which tracked posts each collection holds, and since when.';
