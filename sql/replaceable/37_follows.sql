-- Following accounts: follow(), follow_accounts(), unfollow() and the follows view. The
-- follower processes read and write followed_accounts through their own functions.

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

-- The profile URL argument of follow() and unfollow(), read: 22004 for NULL, 22023 for no profile.
CREATE OR REPLACE FUNCTION profile_arg(profile_url text, OUT network text, OUT host text, OUT handle text,
                                       OUT account_id text, OUT canonical text)
  LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF profile_url IS NULL THEN
    RAISE EXCEPTION 'profile_url must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  SELECT * INTO network, host, handle, account_id, canonical FROM tweetkeeper.parse_profile_url(profile_url);
  host := coalesce(host, '');
END $$;

-- Whether an account is followed, by its handle or its id (as parse_profile_url gives them).
CREATE OR REPLACE FUNCTION is_followed(network text, host text, handle text, account_id text) RETURNS boolean
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT EXISTS (SELECT FROM tweetkeeper.followed_accounts f
                  WHERE f.network = is_followed.network AND f.host = is_followed.host
                    AND (f.handle = is_followed.handle OR f.account_id = is_followed.account_id)) $$;

CREATE OR REPLACE FUNCTION follow(profile_url text) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  p record := tweetkeeper.profile_arg(profile_url);
BEGIN
  IF tweetkeeper.is_followed(p.network, p.host, p.handle, p.account_id) THEN
    RETURN false;
  END IF;
  INSERT INTO tweetkeeper.followed_accounts (network, host, handle, account_id, url)
  VALUES (p.network, p.host, p.handle, p.account_id, p.canonical)
  ON CONFLICT DO NOTHING;  -- another session followed it first
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION follow(text) IS
  'Follows the account of a profile URL (see parse_profile_url for the forms): each post it makes '
  'from now on is to be tracked from its creation, by a follower process that resolves the account '
  'first. Returns false, changing nothing, if the account is followed already (by its handle or its '
  'id).';

-- Many URLs, all or nothing; a bad one is named by its position.
CREATE OR REPLACE FUNCTION follow_accounts(urls text[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  a record;
  msg text;
  state text;
  added bigint := 0;
  max_ids integer := current_setting('tweetkeeper.max_ids_per_call')::integer;
BEGIN
  IF urls IS NULL THEN
    RAISE EXCEPTION 'urls must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF cardinality(urls) > max_ids THEN
    RAISE EXCEPTION 'urls has % elements, more than tweetkeeper.max_ids_per_call (%)', cardinality(urls), max_ids
      USING ERRCODE = 'program_limit_exceeded', HINT = 'Split the array into several calls.';
  END IF;
  FOR a IN SELECT u.url, u.i FROM unnest(urls) WITH ORDINALITY AS u(url, i) LOOP
    BEGIN
      IF tweetkeeper.follow(a.url) THEN
        added := added + 1;
      END IF;
    EXCEPTION WHEN invalid_parameter_value OR null_value_not_allowed THEN
      GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
      RAISE EXCEPTION 'urls[%]: %', a.i, msg USING ERRCODE = state;
    END;
  END LOOP;
  RETURN added;
END $$;
COMMENT ON FUNCTION follow_accounts(text[]) IS
  'Follows the account of each profile URL (as follow()); all or nothing, a bad URL named by its '
  'position. Returns how many accounts were newly followed.';

CREATE OR REPLACE FUNCTION unfollow(profile_url text) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  p record := tweetkeeper.profile_arg(profile_url);
BEGIN
  DELETE FROM tweetkeeper.followed_accounts f
   WHERE f.network = p.network AND f.host = p.host AND (f.handle = p.handle OR f.account_id = p.account_id);
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION unfollow(text) IS
  'Stops following the account of a profile URL (by its handle or its id). Its posts found so far '
  'stay tracked. Returns whether it was followed.';

CREATE OR REPLACE VIEW follows AS
SELECT f.network, f.account_id AS account, f.handle, nullif(f.host, '') AS host, f.url, f.since, f.posts_found, f.newest_post_at,
       CASE WHEN f.status = 'following' THEN now() - coalesce(f.checked_at, f.since) END AS behind,
       f.status, f.reason
  FROM tweetkeeper.followed_accounts f;
COMMENT ON VIEW follows IS
  'One row per followed account: its id on the network (NULL until a follower resolved it), handle, '
  'server (Mastodon), since when followed, posts found, the newest one''s time, how far behind the '
  'follower is (now minus the moment up to which every post of the account was seen), and its '
  'status: resolving, following, missing (no such account) or private, with the service''s reason.';
