-- Post URLs: posts of X, Bluesky and Mastodon as people paste them, read into the network and the
-- key that names the post there, by the library's C++ parser (extension/post_url.cpp), which
-- tweetkeeper-import shares: the database and the importer accept and refuse the same URLs.

CREATE FUNCTION parse_post_url(url text, OUT network text, OUT host text, OUT author text,
                               OUT post_key text, OUT created_at timestamptz, OUT canonical text)
  RETURNS record AS 'MODULE_PATHNAME', 'tk_parse_post_url' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION parse_post_url(text) IS
  'Reads a post URL: X (https://x.com/<user>/status/<id>, twitter.com, /i/web/status/<id>), '
  'Bluesky (https://bsky.app/profile/<handle or DID>/post/<rkey>, at://<handle or DID>/'
  'app.bsky.feed.post/<rkey>) or Mastodon (https://<host>/@<user>/<id>, https://<host>/users/'
  '<user>/statuses/<id>). Returns the network (x, bluesky, mastodon), the host (Mastodon), the '
  'author, the post''s key, its creation time where the key encodes one (for Bluesky an estimate) '
  'and one canonical spelling. 22023, naming the value and the fault, for anything else.';

