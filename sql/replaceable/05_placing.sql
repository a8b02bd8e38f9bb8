-- What places a post, pure functions only: the node and the proxy database (extension
-- tweetkeeper_proxy, whose script includes this part whole) read URLs and place posts alike.
-- URLs as people paste them, read into the network and the key that names the post there by the
-- library's C++ parser (extension/post_url.cpp, which tweetkeeper-import shares: the database,
-- the proxy and the importer accept and refuse the same URLs); and the hash that places a post on
-- a partition (docs/partitions.md).

CREATE OR REPLACE FUNCTION parse_post_url(
    url text,
    OUT network text,      -- x, bluesky or mastodon
    OUT host text,         -- the Mastodon server
    OUT author text,
    OUT post_key text,
    OUT created_at timestamptz,
    OUT canonical text)
  RETURNS record
  AS 'MODULE_PATHNAME', 'tk_parse_post_url'
  LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION parse_post_url(text) IS
  'Reads a post URL: X (https://x.com/<user>/status/<id>, twitter.com, /i/web/status/<id>), '
  'Bluesky (https://bsky.app/profile/<handle or DID>/post/<rkey>, at://<handle or DID>/'
  'app.bsky.feed.post/<rkey>) or Mastodon (https://<host>/@<user>/<id>, https://<host>/users/'
  '<user>/statuses/<id>). Returns the network (x, bluesky, mastodon), the host (Mastodon), the '
  'author, the post''s key, its creation time where the key encodes one (for Bluesky an estimate) '
  'and one canonical spelling. 22023, naming the value and the fault, for anything else.';

-- Profile URLs as people paste them (the same parser's): follow() reads them, and the proxy routes
-- follows by them.
CREATE OR REPLACE FUNCTION parse_profile_url(url text, OUT network text, OUT host text, OUT handle text,
                                             OUT account_id text, OUT canonical text)
  RETURNS record AS 'MODULE_PATHNAME', 'tk_parse_profile_url' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION parse_profile_url(text) IS
  'Reads a profile URL as people paste it: https://x.com/<user> (twitter.com too) or '
  'https://x.com/i/user/<id>; https://bsky.app/profile/<handle or DID> or at://<DID>; '
  'https://<server>/@<user>, https://<server>/users/<user>, @<user>@<server>. The scheme may be '
  'left out. Returns the network, the Mastodon server the account lives on, its handle (lower case '
  'on X and Bluesky) or its id where the URL names it, and one spelling of the URL; 22023 naming '
  'the value otherwise.';

-- The hash that places a post, from its network and key only: an X post's id, a Bluesky post's
-- record key (whatever names its author: a post scheduled by handle and re-keyed by its DID keeps
-- its slot), a Mastodon status id with its server. PostgreSQL's own hashint8 and hashtext, which
-- hash indexes keep on disk (so stable across PostgreSQL's releases). The proxy routes by it
-- (PL/Proxy: partition hash & 63); a node holds slot partition_hash() & 63.
CREATE OR REPLACE FUNCTION partition_hash(network text, host text, post_key text) RETURNS integer
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE network WHEN 'x' THEN pg_catalog.hashint8(post_key::bigint)
                      WHEN 'bluesky' THEN pg_catalog.hashtext('bluesky ' || post_key)
                      WHEN 'mastodon' THEN pg_catalog.hashtext('mastodon ' || coalesce(host, '') || ' ' || post_key) END;
COMMENT ON FUNCTION partition_hash(text, text, text) IS
  'The hash that places a post on a partition: its slot is partition_hash() & 63. From the '
  'network and key only (an X id; a Bluesky record key; a Mastodon server and status id).';

CREATE OR REPLACE FUNCTION url_partition_hash(url text) RETURNS integer
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (SELECT tweetkeeper.partition_hash(p.network, p.host, p.post_key) FROM tweetkeeper.parse_post_url(url) AS p);
COMMENT ON FUNCTION url_partition_hash(text) IS
  'partition_hash() of the post of a URL (any form parse_post_url reads; 22023 for others).';
