-- Following accounts: follow(), follow_accounts(), unfollow() and the follows view. The
-- follower processes read and write followed_accounts through their own functions.

-- The profile URL argument of follow() and unfollow(), read: 22004 for NULL, 22023 for no profile.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.profile_arg(profile_url text, OUT network text, OUT host text, OUT handle text,
                                       OUT account_id text, OUT canonical text)
  LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('profile_url', profile_url IS NULL);
  SELECT * INTO network, host, handle, account_id, canonical FROM tweetkeeper.parse_profile_url(profile_url);
  host := coalesce(host, '');
END $$;

-- The followed account a profile URL names, by its handle or its id (as profile_arg gives them):
-- what follow() looks for and unfollow() removes.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.followed_ids(network text, host text, handle text, account_id text) RETURNS SETOF bigint
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT f.follow_id FROM tweetkeeper.followed_accounts f
   WHERE f.network = followed_ids.network AND f.host = followed_ids.host
     AND (f.handle = followed_ids.handle OR f.account_id = followed_ids.account_id) $$;

CREATE OR REPLACE FUNCTION follow(profile_url text) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  p record := tweetkeeper_internal.profile_arg(profile_url);
BEGIN
  IF EXISTS (SELECT FROM tweetkeeper_internal.followed_ids(p.network, p.host, p.handle, p.account_id)) THEN
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

-- Many URLs, all or nothing; a bad one is named by its position (check_urls(), as
-- schedule_posts() does). Every URL is read first, then each account is followed.
CREATE OR REPLACE FUNCTION follow_accounts(urls text[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  added bigint := 0;
  url text;
BEGIN
  PERFORM tweetkeeper_internal.check_urls(urls, true);
  FOREACH url IN ARRAY urls LOOP
    IF tweetkeeper.follow(url) THEN
      added := added + 1;
    END IF;
  END LOOP;
  RETURN added;
END $$;
COMMENT ON FUNCTION follow_accounts(text[]) IS
  'Follows the account of each profile URL (as follow()); all or nothing, a bad URL named by its '
  'position. Returns how many accounts were newly followed.';

CREATE OR REPLACE FUNCTION unfollow(profile_url text) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  p record := tweetkeeper_internal.profile_arg(profile_url);
BEGIN
  DELETE FROM tweetkeeper.followed_accounts f
   WHERE f.follow_id IN (SELECT tweetkeeper_internal.followed_ids(p.network, p.host, p.handle, p.account_id));
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION unfollow(text) IS
  'Stops following the account of a profile URL (by its handle or its id). Its posts found so far '
  'stay tracked. Returns whether it was followed.';

CREATE OR REPLACE VIEW follows AS
SELECT f.network, f.account_id AS account, f.handle, nullif(f.host, '') AS host, f.url, f.since, f.posts_found, f.newest_post_at,
       CASE WHEN f.status IN ('resolving', 'following')
            THEN now() - least(coalesce(f.checked_at, f.since), now()) END AS behind,
       f.status, f.reason, CASE WHEN f.lease_until > now() THEN f.lease_owner END AS follower
  FROM tweetkeeper.followed_accounts f;
COMMENT ON VIEW follows IS
  'One row per followed account: its id on the network (NULL until a follower resolved it), handle, '
  'server (Mastodon), since when followed, posts found, the newest one''s time, how far behind the '
  'follower is (now minus the moment up to which every post of the account was seen, or since it '
  'was followed while it is resolving), and its '
  'status: resolving, following, missing (no such account) or private, with the service''s reason; '
  'and the follower process that holds it now, if any.';

-- The followers' side (tweetkeeper_worker). A follower claims accounts under a lease held by its
-- database session, as a batch is: it reads their new posts, and stores what it found with
-- store_follow_posts() in the transaction that schedules them; a lease that runs out (a killed
-- follower) lets another follower take the account.

-- The followed account a follower's call names, its row locked, when this session holds its lease
-- (session_is(), the owner test of every lease); else 55000, naming it.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.held_follow(id bigint) RETURNS tweetkeeper.followed_accounts
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f tweetkeeper.followed_accounts;
BEGIN
  SELECT * INTO f FROM tweetkeeper.followed_accounts a WHERE a.follow_id = id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no followed account with that follow_id (unfollowed meanwhile?)'
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  IF NOT tweetkeeper_internal.session_is(f.lease_pid, f.lease_started) THEN
    RAISE EXCEPTION 'followed account % (%) is not leased by this session', f.follow_id, f.url
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Claim it again with claim_follows(); another follower may hold it now.';
  END IF;
  RETURN f;
END $$;

-- Whether a follower session may take a followed account: its lease is free (never held, ended)
-- or this session's own. (Bound when created and inlined, as session_is().)
CREATE OR REPLACE FUNCTION tweetkeeper_internal.follow_free(lease_until timestamptz, pid integer, started timestamptz)
  RETURNS boolean LANGUAGE sql STABLE
  RETURN lease_until IS NULL OR lease_until < pg_catalog.now() OR tweetkeeper_internal.session_is(pid, started);

-- Whether this session may take the free accounts read through one window: a Mastodon server's
-- (host), or X's with the credential the claim reads with (host ''). A window is one budget, so
-- one follower holds all of its accounts (two that split a server by chance each read with a part
-- of the window: the one holding its busiest accounts fell 100 s behind, make bench-follow, issue
-- 49). Not while another session leases one of them (its holder takes them at its next renewal),
-- unless they have waited longer than a lease (the holder has no room: max_accounts); and not
-- while another claim is taking them (a transaction's advisory lock: two followers started at
-- once do not split a window). X followers with other credentials read through other windows.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.follow_window_open(network text, host text, credential text, waiting boolean)
  RETURNS boolean LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
  SELECT CASE WHEN NOT waiting AND EXISTS (
                SELECT FROM tweetkeeper.followed_accounts f
                 WHERE f.network = follow_window_open.network AND f.host = follow_window_open.host
                   AND f.lease_credential IS NOT DISTINCT FROM follow_window_open.credential
                   AND f.lease_until >= now() AND NOT tweetkeeper_internal.session_is(f.lease_pid, f.lease_started))
              THEN false
              ELSE pg_try_advisory_xact_lock(hashtextextended(concat_ws(' ', 'claim_follows', network, host, credential), 0)) END $$;

CREATE OR REPLACE FUNCTION claim_follows(follower text, network text, max_accounts integer,
                                         lease interval DEFAULT '15 seconds', due_only boolean DEFAULT true,
                                         credential text DEFAULT NULL)
  RETURNS TABLE (follow_id bigint, host text, handle text, account_id text, status text, since timestamptz,
                 checked_at timestamptz, newest_post_id text, posts_found bigint, poll_after timestamptz)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('follower, network, max_accounts, lease and due_only',
                                    follower IS NULL OR network IS NULL OR max_accounts IS NULL OR lease IS NULL OR due_only IS NULL);
  IF network NOT IN ('x', 'bluesky', 'mastodon') THEN
    RAISE EXCEPTION 'network must be x, bluesky or mastodon, got %', network USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF max_accounts NOT BETWEEN 1 AND 10000 OR lease NOT BETWEEN interval '1 second' AND interval '1 hour' THEN
    RAISE EXCEPTION 'max_accounts must be 1 to 10000 and lease 1 second to 1 hour, got % and %', max_accounts, lease
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN QUERY
  WITH g AS (  -- the free or own accounts, by window: a Mastodon server's, X's (this credential's) and
               -- Bluesky's one by one (a stream has no window to share)
    SELECT CASE WHEN f.network = 'bluesky' THEN f.follow_id::text ELSE f.host END AS grp, f.host, count(*) AS n,
           min(f.poll_after) AS first, bool_or(tweetkeeper_internal.session_is(f.lease_pid, f.lease_started)) AS mine,
           min(coalesce(f.lease_until, f.since)) < now() - lease AS waiting  -- free for longer than a lease
      FROM tweetkeeper.followed_accounts f
     WHERE f.network = claim_follows.network AND tweetkeeper_internal.follow_free(f.lease_until, f.lease_pid, f.lease_started)
       AND (NOT due_only OR f.poll_after <= now())
     GROUP BY 1, 2),
  o AS (  -- those this claim may take, own ones first, with how many accounts it holds up to each
    SELECT g.grp, sum(g.n) OVER w AS upto, row_number() OVER w AS i FROM g
     WHERE claim_follows.network = 'bluesky' OR g.mine
        OR tweetkeeper_internal.follow_window_open(claim_follows.network, g.host, claim_follows.credential, g.waiting)
    WINDOW w AS (ORDER BY g.mine DESC, g.first, g.grp)),
  c AS (  -- whole servers while they fit (the first one in any case, as far as it fits)
    SELECT f.follow_id FROM tweetkeeper.followed_accounts f
      JOIN o ON o.grp = CASE WHEN f.network = 'bluesky' THEN f.follow_id::text ELSE f.host END
     WHERE f.network = claim_follows.network AND tweetkeeper_internal.follow_free(f.lease_until, f.lease_pid, f.lease_started)
       AND (NOT due_only OR f.poll_after <= now()) AND (o.upto <= max_accounts OR o.i = 1)
     ORDER BY o.i, tweetkeeper_internal.session_is(f.lease_pid, f.lease_started) DESC, f.poll_after, f.follow_id
     LIMIT max_accounts FOR UPDATE OF f SKIP LOCKED)
  UPDATE tweetkeeper.followed_accounts f
     SET lease_owner = follower, lease_pid = pg_backend_pid(), lease_started = tweetkeeper_internal.backend_start(),
         lease_until = now() + lease, lease_credential = claim_follows.credential
    FROM c WHERE f.follow_id = c.follow_id
  RETURNING f.follow_id, nullif(f.host, ''), f.handle, f.account_id, f.status, f.since, f.checked_at, f.newest_post_id,
            f.posts_found, f.poll_after;
END $$;
COMMENT ON FUNCTION claim_follows(text, text, integer, interval, boolean, text) IS
  'A follower''s claim: up to max_accounts followed accounts of a network, free (or already this '
  'session''s: their leases are renewed, first), and with due_only due to be read (poll_after: a missing or '
  'private account after tweetkeeper.unavailable_recheck), the longest waiting first, a Mastodon server''s '
  'whole or not at all (none of a server another session reads, unless left free longer than lease), leased to this '
  'database session for lease; X: with the credential the follower reads them with, the only one '
  'record_follow_read() takes for them.';

-- How many accounts of a network the followers hold now (leased, resolving or followed), per
-- Mastodon server ('' for X and Bluesky), of those leased with this credential (X's; NULL elsewhere):
-- each window a follower reads through, and how many accounts all followers read through it. A
-- follower spends of a window it shares with other followers its part of their accounts
-- (worker/follow: Follower::Repace), not half: a follower holding 1 of a server's 100 accounts
-- read that one every 2 s with half the window, while the other's 99 fell minutes behind (make
-- bench-follow on a slow machine, issue 49). Read-only and counts only: no other row's account,
-- handle, follower or lease is shown (a worker acts only on what its leases hold).
CREATE OR REPLACE FUNCTION follow_shares(network text, credential text DEFAULT NULL)
  RETURNS TABLE (host text, accounts bigint)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT f.host, count(*) FROM tweetkeeper.followed_accounts f
   WHERE f.network = follow_shares.network AND f.lease_until > now() AND f.status IN ('resolving', 'following')
     AND f.lease_credential IS NOT DISTINCT FROM follow_shares.credential
   GROUP BY f.host
$$;
COMMENT ON FUNCTION follow_shares(text, text) IS
  'How many accounts of a network the followers hold now, per Mastodon server ('''' elsewhere; X: of '
  'those read with the credential): what a follower weighs its part of a shared window by. Counts only.';

-- A follower's answer on who an account is: its id and current handle, or that it is missing
-- (no such account, or suspended) or private; a missing or private one is asked about again after
-- tweetkeeper.unavailable_recheck. One row per account: when another row has the same id (the
-- account followed under another name), that row stays and this one goes (false is returned); a
-- row of no id under the same handle names the same account and goes too; a resolved row of
-- another account under that handle (an old name, taken since) loses it. Other rows are changed
-- only where this session holds their leases too (their own followers answer for them
-- otherwise): the other row of the same id then takes this answer, and a handle another row
-- holds is not taken from it (this row keeps its own until that one is resolved).
CREATE OR REPLACE FUNCTION resolve_follow(follow_id bigint, account_id text, handle text, status text,
                                          reason text DEFAULT NULL) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f tweetkeeper.followed_accounts;
  other record;  -- another row of the same account, and whether this session leases it
  keep bigint;
  name text := lower(handle);  -- every network's handles are kept in lower case
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('follow_id and status', follow_id IS NULL OR status IS NULL);
  IF status NOT IN ('following', 'missing', 'private') OR (status = 'following' AND account_id IS NULL) THEN
    RAISE EXCEPTION 'status must be following (with an account_id), missing or private, got %', status
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  f := tweetkeeper_internal.held_follow(resolve_follow.follow_id);
  IF account_id IS NOT NULL AND f.account_id IS NOT NULL AND f.account_id <> account_id THEN
    RAISE EXCEPTION 'followed account % is % on %, not %', f.follow_id, f.account_id, f.network, account_id
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- (Two rows of one account resolved at once: the second waits for the first.)
  IF account_id IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(f.network || ' ' || f.host || ' ' || account_id, 0));
  END IF;
  SELECT a.follow_id, tweetkeeper_internal.session_is(a.lease_pid, a.lease_started) AS mine INTO other FROM tweetkeeper.followed_accounts a
   WHERE a.network = f.network AND a.host = f.host AND a.account_id = resolve_follow.account_id
     AND a.follow_id <> f.follow_id FOR UPDATE;
  keep := coalesce(other.follow_id, f.follow_id);
  IF keep <> f.follow_id THEN
    DELETE FROM tweetkeeper.followed_accounts a WHERE a.follow_id = f.follow_id;
    IF NOT other.mine THEN
      RETURN false;  -- (the row that stays is another follower's to answer for)
    END IF;
  END IF;
  IF name IS NOT NULL AND EXISTS (SELECT FROM tweetkeeper.followed_accounts a
                                   WHERE a.network = f.network AND a.host = f.host AND a.handle = name
                                     AND a.follow_id <> keep AND NOT tweetkeeper_internal.session_is(a.lease_pid, a.lease_started)) THEN
    name := NULL;  -- held by a row this session does not lease: it keeps it
  ELSIF name IS NOT NULL THEN
    DELETE FROM tweetkeeper.followed_accounts a
     WHERE a.network = f.network AND a.host = f.host AND a.handle = name AND a.follow_id <> keep
       AND a.account_id IS NULL AND resolve_follow.account_id IS NOT NULL;
    UPDATE tweetkeeper.followed_accounts a SET handle = NULL
     WHERE a.network = f.network AND a.host = f.host AND a.handle = name AND a.follow_id <> keep;
  END IF;
  UPDATE tweetkeeper.followed_accounts a
     SET account_id = coalesce(resolve_follow.account_id, a.account_id), handle = coalesce(name, a.handle),
         status = resolve_follow.status, reason = resolve_follow.reason,
         poll_after = CASE WHEN resolve_follow.status = 'following' THEN now()
                           ELSE now() + current_setting('tweetkeeper.unavailable_recheck')::interval END
   WHERE a.follow_id = keep;
  RETURN keep = f.follow_id;
END $$;

-- What a follower found of one account: its new posts (URLs and creation times), scheduled here
-- with their own creation times in the caller's transaction, and how far it has read (every post
-- made before checked_until seen; newest_post_id, the next read's since_id). Returns how many
-- posts were new. The lease is kept; poll_after says when to read the account next.
CREATE OR REPLACE FUNCTION store_follow_posts(follow_id bigint, urls text[], created_ats timestamptz[],
                                              newest_post_id text, checked_until timestamptz,
                                              poll_after timestamptz) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f tweetkeeper.followed_accounts;
  added bigint := 0;
  p record;
  r record;
  msg text;
  slots bit(64);
  here text[] := '{}';  -- the posts tracked on this node
  here_ids bigint[];    -- and their ids
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('follow_id, urls, created_ats, checked_until and poll_after',
                                    follow_id IS NULL OR urls IS NULL OR created_ats IS NULL OR checked_until IS NULL OR poll_after IS NULL);
  IF cardinality(urls) <> cardinality(created_ats) THEN
    RAISE EXCEPTION 'urls has % elements and created_ats %: one creation time per post', cardinality(urls),
      cardinality(created_ats) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  f := tweetkeeper_internal.held_follow(store_follow_posts.follow_id);
  IF f.account_id IS NULL OR f.status <> 'following' THEN
    RAISE EXCEPTION 'followed account % (%) is %: resolve it first', f.follow_id, f.url, f.status
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  FOR p IN SELECT u.url, u.created_at, u.i FROM unnest(urls, created_ats) WITH ORDINALITY AS u(url, created_at, i) LOOP
    IF p.url IS NULL OR p.created_at IS NULL THEN
      RAISE EXCEPTION 'urls[%] or created_ats[%] is NULL', p.i, p.i USING ERRCODE = 'null_value_not_allowed';
    END IF;
    BEGIN
      r := tweetkeeper.parse_post_url(p.url);
    EXCEPTION WHEN invalid_parameter_value THEN
      GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
      RAISE EXCEPTION 'urls[%]: %', p.i, msg USING ERRCODE = 'invalid_parameter_value';
    END;
    -- Only the account's own posts, as far as the URL tells: its network, its server, its DID.
    IF r.network <> f.network OR coalesce(r.host, '') <> f.host
       OR (f.network = 'bluesky' AND r.author <> f.account_id)
       OR (f.network = 'mastodon' AND lower(r.author) <> f.handle) THEN
      RAISE EXCEPTION 'urls[%]: % is not a post of % (%)', p.i, p.url, f.url, f.network
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END LOOP;
  -- The posts this node holds are tracked here; the others are handed over to the node that
  -- holds them (sql/schema/36_partitions.sql), and count as found.
  -- (Read under the lock a slot's move waits for: none is given up meanwhile.)
  slots := CASE WHEN tweetkeeper_internal.held_slots() IS NOT NULL THEN tweetkeeper_internal.held_slots_locked() END;
  FOR p IN SELECT u.url, u.created_at FROM unnest(urls, created_ats) AS u(url, created_at) LOOP
    IF NOT tweetkeeper_internal.holds(slots, tweetkeeper.url_partition_hash(p.url)) THEN
      added := added + tweetkeeper_internal.hand_over(ARRAY[p.url], ARRAY[p.created_at], 'follow', f.url);
    ELSE
      IF tweetkeeper.schedule_post(p.url, p.created_at) THEN
        added := added + 1;
      END IF;
      here := here || p.url;
    END IF;
  END LOOP;
  -- The account's posts tracked here are its collection's (named by its profile URL), found now
  -- or tracked before; one moving to another node (held by the move, its rows already sent) is
  -- handed over with its collection instead, to join it where it lands.
  IF cardinality(here) > 0 THEN
    here_ids := tweetkeeper_internal.url_post_ids(here);  -- (each URL read once)
    PERFORM tweetkeeper_internal.ensure_collection(f.url, 'follow');
    INSERT INTO tweetkeeper.collection_posts (collection, tweet_id)
    SELECT DISTINCT f.url, u.id FROM unnest(here_ids) AS u(id)
     WHERE EXISTS (SELECT FROM tweetkeeper.tweets t WHERE t.tweet_id = u.id AND (t.lease_id IS NULL OR t.lease_id > 0))
     ORDER BY u.id
    ON CONFLICT ON CONSTRAINT collection_posts_pkey DO NOTHING;
    PERFORM tweetkeeper_internal.hand_over(array_agg(m.url), array_agg(m.created_at), 'follow', f.url)
       FROM (SELECT u.url, t.created_at FROM unnest(here, here_ids) AS u(url, id)
               JOIN tweetkeeper.tweets t ON t.tweet_id = u.id WHERE t.lease_id < 0) m
     HAVING count(*) > 0;
  END IF;
  UPDATE tweetkeeper.followed_accounts a
     SET posts_found = a.posts_found + added,
         newest_post_id = coalesce(store_follow_posts.newest_post_id, a.newest_post_id),
         newest_post_at = greatest(a.newest_post_at, (SELECT max(c) FROM unnest(created_ats) AS c)),
         checked_at = greatest(a.checked_at, least(checked_until, now())), poll_after = store_follow_posts.poll_after
   WHERE a.follow_id = f.follow_id;
  RETURN added;
END $$;

-- A follower stopping: its leases end now, so that another takes its accounts at once.
CREATE OR REPLACE FUNCTION release_follows() RETURNS bigint
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  WITH r AS (
    UPDATE tweetkeeper.followed_accounts f SET lease_owner = NULL, lease_pid = NULL, lease_started = NULL,
                                              lease_until = NULL
     WHERE tweetkeeper_internal.session_is(f.lease_pid, f.lease_started)
    RETURNING 1)
  SELECT count(*) FROM r;
END;

-- X bills every post a timeline returns, once per UTC day and credential, as it bills refreshes:
-- what an X follower read of one account (its request, the posts it returned) is counted where a
-- refresh is (daily_usage, the credential's monthly use, each tweet's billed_on/billed_by, so
-- that a refresh the same day with the same credential is not counted billed again). Called in
-- the transaction that stores the posts (they are tracked by then). A refusal that concerns the
-- credential as a whole (usage-capped, rejected) marks it as a refresh's would; the timeline's
-- own window is not the credential's /2/tweets window, and is the follower's to keep. Returns the
-- billed reads.
CREATE OR REPLACE FUNCTION record_follow_read(follow_id bigint, credential text, tweet_ids bigint[],
                                              refusal text DEFAULT NULL, detail text DEFAULT NULL) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f tweetkeeper.followed_accounts;
  -- A token of no registered credential (TWEETKEEPER_BEARER_TOKEN's "default") counts as '', as
  -- a refresh with it does.
  cred text := CASE WHEN EXISTS (SELECT FROM tweetkeeper.credentials c WHERE c.name = credential) THEN credential ELSE '' END;
  today date := (now() AT TIME ZONE 'UTC')::date;
  ids bigint[];
  billed integer;
  known integer;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('follow_id and tweet_ids', follow_id IS NULL OR tweet_ids IS NULL);
  IF refusal IS NOT NULL AND refusal NOT IN ('usage-capped', 'rejected', 'rate-limited') THEN
    RAISE EXCEPTION 'refusal must be usage-capped, rejected or rate-limited, got %', refusal
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  f := tweetkeeper_internal.held_follow(record_follow_read.follow_id);
  IF f.network <> 'x' THEN
    RAISE EXCEPTION 'followed account % is on %: only X bills reads', f.follow_id, f.network
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Only the credential the lease was taken with (claim_follows(credential)): no follower reports
  -- reads or refusals of another's.
  IF coalesce(credential, '') <> coalesce(f.lease_credential, '') THEN
    RAISE EXCEPTION 'followed account % is leased to read with credential %, not %', f.follow_id,
      coalesce(quote_literal(f.lease_credential), 'none'), coalesce(quote_literal(credential), 'NULL')
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'Claim it with the credential its follower reads with: claim_follows(..., credential => ...).';
  END IF;
  -- A timeline page holds at most 100 posts (X's max_results).
  IF cardinality(tweet_ids) > 100 THEN
    RAISE EXCEPTION 'tweet_ids has % elements: a timeline read returns at most 100 posts', cardinality(tweet_ids)
      USING ERRCODE = 'program_limit_exceeded';
  END IF;
  IF refusal IN ('usage-capped', 'rejected') THEN
    PERFORM tweetkeeper_internal.record_quota(credential, NULL, refusal, detail);
  END IF;
  IF refusal IS NOT NULL THEN
    RETURN 0;  -- a refusal returns no posts: billed nothing, and not an answered request
  END IF;
  ids := ARRAY(SELECT DISTINCT i FROM unnest(tweet_ids) AS i WHERE i IS NOT NULL);
  WITH u AS (
    UPDATE tweetkeeper.tweets t
       SET billed_on = today, billed_by = tweetkeeper_internal.billed_by_after(t.billed_on, t.billed_by, cred, today)
     WHERE t.tweet_id = ANY (ids) AND tweetkeeper_internal.bills(t.billed_on, t.billed_by, cred, today)
    RETURNING 1)
  SELECT count(*) INTO billed FROM u;
  -- A returned post not tracked (not stored: not the account's, or unfollowed meanwhile) was billed all the same.
  SELECT count(*) INTO known FROM tweetkeeper.tweets t WHERE t.tweet_id = ANY (ids);
  billed := billed + cardinality(ids) - known;
  PERFORM tweetkeeper_internal.count_usage(jsonb_build_array(jsonb_build_array(today, 'x-v2', cred, 1, cardinality(ids), billed)));
  UPDATE tweetkeeper.credentials c
     SET month_used = c.month_used + billed, requests = c.requests + 1, last_used_at = now()
   WHERE c.name = cred;
  RETURN billed;
END $$;

-- Whether an X follower may read a timeline with this credential now: not capped or rejected,
-- and its monthly cap leaves room for a full page (100 posts, billed). NULL credential: the
-- single token of TWEETKEEPER_BEARER_TOKEN, which has no registered cap.
CREATE OR REPLACE FUNCTION follow_read_allowed(credential text, OUT allowed boolean, OUT until timestamptz,
                                               OUT reason text)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  c tweetkeeper.credentials;
BEGIN
  allowed := true;
  SELECT * INTO c FROM tweetkeeper.credentials x WHERE x.name = credential;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF c.status IN ('capped', 'rejected') AND (c.status_until IS NULL OR c.status_until > now()) THEN
    allowed := false;
    until := c.status_until;
    reason := format('credential %s is %s: %s', c.name, c.status, coalesce(c.status_reason, ''));
  ELSIF c.monthly_cap IS NOT NULL AND c.month_used + 100 > c.monthly_cap THEN
    allowed := false;
    until := tweetkeeper.next_month_utc();
    reason := format('credential %s: %s of its monthly cap of %s billed reads used, no room for a page of 100',
                     c.name, c.month_used, c.monthly_cap);
  END IF;
END $$;

-- A stream's follower (Bluesky's Jetstream) has seen every event up to checked_until for these
-- accounts (all its subscription's, this session's leases): their read position moves there in
-- one statement, so that a reconnection resumes from it without a gap. Returns how many moved.
CREATE OR REPLACE FUNCTION mark_follows_read(follow_ids bigint[], checked_until timestamptz) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  moved bigint;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('follow_ids and checked_until',
                                    follow_ids IS NULL OR checked_until IS NULL);
  UPDATE tweetkeeper.followed_accounts a
     SET checked_at = greatest(a.checked_at, least(checked_until, now()))
   WHERE a.follow_id = ANY (follow_ids) AND a.status = 'following'
     AND tweetkeeper_internal.session_is(a.lease_pid, a.lease_started);
  GET DIAGNOSTICS moved = ROW_COUNT;
  RETURN moved;
END $$;

-- Posts of a followed account that its stream says were deleted (Jetstream's delete events): each
-- tracked one is marked deleted at once, as a refresh that found it gone would (no read spent to
-- learn it): its payloads erased unless tweetkeeper.deleted_payloads = keep, a tombstone that says
-- when. A post in a batch in flight is left to that batch's answer. Returns how many were marked.
CREATE OR REPLACE FUNCTION delete_followed_posts(follow_id bigint, urls text[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f tweetkeeper.followed_accounts;
  erase boolean := current_setting('tweetkeeper.deleted_payloads') = 'erase';
  gone bigint[];
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('follow_id and urls', follow_id IS NULL OR urls IS NULL);
  f := tweetkeeper_internal.held_follow(delete_followed_posts.follow_id);
  WITH k AS (
    SELECT r.tweet_id
      FROM unnest(urls) AS u(url), tweetkeeper.parse_post_url(u.url) p
      JOIN tweetkeeper.post_refs r ON (r.network, r.host, r.author, r.post_key) = (p.network, coalesce(p.host, ''), p.author, p.post_key)
     -- only the account's own posts, as store_follow_posts() takes them: its network, its server,
     -- its DID or user name (X's post URLs name no author: none of them)
     WHERE p.network = f.network AND r.host = f.host
       AND CASE f.network WHEN 'bluesky' THEN p.author = f.account_id
                          WHEN 'mastodon' THEN lower(p.author) = f.handle ELSE false END),
  d AS (
    UPDATE tweetkeeper.tweets t
       SET state = 'deleted', due_at = NULL, watch_every = NULL, watch_until = NULL, omissions = 0,
           problem_type = 'resource-not-found', problem_detail = 'deleted (seen on the network''s stream)',
           problem_at = now(), payload_hash = CASE WHEN erase THEN NULL ELSE t.payload_hash END
      FROM k WHERE t.tweet_id = k.tweet_id AND t.lease_id IS NULL AND t.state <> 'deleted'
    RETURNING t.tweet_id)
  SELECT array_agg(d.tweet_id) INTO gone FROM d;
  IF gone IS NULL THEN
    RETURN 0;
  END IF;
  PERFORM tweetkeeper_internal.bury(gone, array_fill('resource-not-found'::text, ARRAY[cardinality(gone)]), erase, now());
  RETURN cardinality(gone);
END $$;

-- A followed Bluesky account's status from the network's stream (Jetstream's account events): not
-- active (deleted, taken down, suspended, deactivated) marks its tracked posts gone at once, and
-- active again brings them back (mark_account_posts()). Only the posts of the account this session
-- leases. Returns how many posts changed.
CREATE OR REPLACE FUNCTION store_account_status(follow_id bigint, active boolean, status text DEFAULT NULL) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f tweetkeeper.followed_accounts;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null('follow_id and active', follow_id IS NULL OR active IS NULL);
  f := tweetkeeper_internal.held_follow(store_account_status.follow_id);
  IF f.network IS DISTINCT FROM 'bluesky' OR f.account_id IS NULL THEN
    RETURN 0;  -- (only Bluesky's stream says so, of an account resolved to its DID)
  END IF;
  RETURN tweetkeeper_internal.mark_account_posts(ARRAY[f.account_id], ARRAY[active], ARRAY[left(status, 40)]);
END $$;
