-- Payloads (the tables and what they mean: sql/schema/72_payloads.sql): the content a payload is
-- compared by, which tweetkeeper.payloads = changed and the workers' hashes rest on.

-- A payload without what changes on every refresh: counts (the history keeps them), the reader's
-- own state (viewer, favourited, ...) and the author's counts. What tweetkeeper.payloads =
-- changed compares, so that a new version is stored when the text, edits, author's public
-- fields, entities or withheld state change, and not when a like comes in.
CREATE OR REPLACE FUNCTION payload_content(payload jsonb, author jsonb) RETURNS jsonb
  LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
  SELECT jsonb_build_array(
    (payload - ARRAY['public_metrics', 'non_public_metrics', 'organic_metrics', 'promoted_metrics',
                     'edit_controls', 'likeCount', 'repostCount', 'replyCount', 'quoteCount',
                     'bookmarkCount', 'viewer', 'favourites_count', 'reblogs_count', 'replies_count',
                     'quotes_count', 'favourited', 'reblogged', 'muted', 'bookmarked', 'pinned'])
      #- '{author,viewer}' #- '{account,followers_count}' #- '{account,following_count}'
      #- '{account,statuses_count}' #- '{account,last_status_at}',
    author - ARRAY['public_metrics', 'followers_count', 'following_count', 'statuses_count'])
$$;
COMMENT ON FUNCTION payload_content(jsonb, jsonb) IS
  'A payload (and its X author) without counts and viewer state: what tweetkeeper.payloads = '
  'changed compares.';
