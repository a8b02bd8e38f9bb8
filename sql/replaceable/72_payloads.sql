-- Payloads (the tables and what they mean: sql/schema/72_payloads.sql): the content a payload is
-- compared by, which tweetkeeper.payloads = changed and the workers' hashes rest on.

-- A payload without what changes on every refresh: counts (the history keeps them), the reader's
-- own state (viewer, favourited, ...) and authors' counts, wherever they are in it: a quoted
-- post's counts in a Bluesky embed, a boosted status's in a Mastodon reblog, a poll's votes. What
-- tweetkeeper.payloads = changed compares, so that a new version is stored when the text, edits,
-- author's public fields, entities or withheld state change, and not when a like comes in. In C
-- (extension/payload_sql.cpp): one pass of the jsonb iterator, linear in the document's size
-- however wide or deep (a PL/pgSQL walk copies the document at every step); its keys are
-- extension/count_keys.hpp's, the list the worker's content_hash.cpp removes too.
CREATE OR REPLACE FUNCTION payload_without_counts(doc jsonb) RETURNS jsonb
  AS 'MODULE_PATHNAME', 'tk_payload_without_counts' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION payload_without_counts(jsonb) IS
  'A payload (or an author) without its counts and viewer state, at any depth: what '
  'payload_content() compares.';

CREATE OR REPLACE FUNCTION payload_content(payload jsonb, author jsonb) RETURNS jsonb
  LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
  SELECT jsonb_build_array(tweetkeeper.payload_without_counts(payload), tweetkeeper.payload_without_counts(author))
$$;
COMMENT ON FUNCTION payload_content(jsonb, jsonb) IS
  'A payload (and its X author) without counts and viewer state: what tweetkeeper.payloads = '
  'changed compares.';

-- The observations of a completion as complete_batch() stores them (sql/replaceable/40_claim.sql),
-- here because it hashes payloads by payload_content() above: one per id of the batch (the first
-- of repeats), each count kept only when it is one (below 0 or above 10^12, a thousand times the
-- views of the most viewed post, it is no count: not stored, and `invalid` says so, with what the
-- worker found wrong itself), a post of another network's creation time from its answer, the
-- payload's content hash, and whether an X post was edited since. A SQL function the planner
-- inlines into complete_batch()'s statement: no call, no plan of its own. (A body in SQL's own
-- form, BEGIN ATOMIC: its names are resolved once, when the extension's script creates it, so it
-- needs no SET search_path, which would keep it from being inlined.)
CREATE OR REPLACE FUNCTION tweetkeeper_internal.observations_in(observations jsonb, batch_ids bigint[], keep_payloads text)
  RETURNS TABLE (id bigint, retweet_count bigint, reply_count bigint, like_count bigint, quote_count bigint,
                 bookmark_count bigint, impression_count bigint, created_at timestamptz, invalid text,
                 payload jsonb, author jsonb, content_hash bytea, edited boolean, newest_id bigint)
  LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT r.id,
         CASE WHEN r.retweet_count BETWEEN 0 AND 1000000000000 THEN r.retweet_count END AS retweet_count,
         CASE WHEN r.reply_count BETWEEN 0 AND 1000000000000 THEN r.reply_count END AS reply_count,
         CASE WHEN r.like_count BETWEEN 0 AND 1000000000000 THEN r.like_count END AS like_count,
         CASE WHEN r.quote_count BETWEEN 0 AND 1000000000000 THEN r.quote_count END AS quote_count,
         CASE WHEN r.bookmark_count BETWEEN 0 AND 1000000000000 THEN r.bookmark_count END AS bookmark_count,
         CASE WHEN r.impression_count BETWEEN 0 AND 1000000000000 THEN r.impression_count END AS impression_count,
         -- A post of another network: its creation time as its answer says (X's id says it).
         CASE WHEN r.id < 0 AND r.created_at BETWEEN timestamptz '2006-03-21 20:50:14+00'
                                                 AND now() + interval '1 minute' THEN r.created_at END AS created_at,
         nullif(concat_ws(', ', nullif(r.invalid, ''),
           'retweet_count ' || CASE WHEN r.retweet_count NOT BETWEEN 0 AND 1000000000000 THEN r.retweet_count END,
           'reply_count ' || CASE WHEN r.reply_count NOT BETWEEN 0 AND 1000000000000 THEN r.reply_count END,
           'like_count ' || CASE WHEN r.like_count NOT BETWEEN 0 AND 1000000000000 THEN r.like_count END,
           'quote_count ' || CASE WHEN r.quote_count NOT BETWEEN 0 AND 1000000000000 THEN r.quote_count END,
           'bookmark_count ' || CASE WHEN r.bookmark_count NOT BETWEEN 0 AND 1000000000000 THEN r.bookmark_count END,
           'impression_count ' || CASE WHEN r.impression_count NOT BETWEEN 0 AND 1000000000000 THEN r.impression_count END),
           '') AS invalid,
         CASE WHEN keep_payloads <> 'none' AND jsonb_typeof(r.payload) = 'object' THEN r.payload END AS payload,
         CASE WHEN jsonb_typeof(r.author) = 'object' THEN r.author END AS author,
         -- A payload's content hash: the worker's (hex md5 by payload_content()'s rule), or computed.
         CASE WHEN keep_payloads <> 'none' AND jsonb_typeof(r.payload) = 'object'
              THEN coalesce(CASE WHEN r.content_hash ~ '^[0-9a-f]{32}$' THEN decode(r.content_hash, 'hex') END,
                            decode(md5(tweetkeeper.payload_content(
                              r.payload, CASE WHEN jsonb_typeof(r.author) = 'object' THEN r.author END)::text), 'hex'))
         END AS content_hash,
         -- An X post edited since: the answer's edit_history_tweet_ids ends in a newer id.
         -- (A newer id whose time is in the future is no version we could track: ignored.)
         coalesce(r.id > 0 AND r.newest_id > r.id
                  AND tweetkeeper.snowflake_time(r.newest_id) <= now() + interval '1 minute', false) AS edited,
         r.newest_id
    FROM (SELECT DISTINCT ON (o.id) o.*
            FROM jsonb_to_recordset(observations) AS o(id bigint, retweet_count bigint,
                   reply_count bigint, like_count bigint, quote_count bigint, bookmark_count bigint,
                   impression_count bigint, invalid text, created_at timestamptz, payload jsonb,
                   author jsonb, newest_id bigint, content_hash text)
           WHERE o.id = ANY (batch_ids)) r;
END;
