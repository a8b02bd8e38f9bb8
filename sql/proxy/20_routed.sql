-- The user's API on the proxy, under the same names as on a node: each call goes to the node that
-- holds its post (RUN ON partition_hash(): PL/Proxy takes the slot hash & 63), arrays split by
-- post (SPLIT), follows to the node of slot 0, which keeps what is global (the follows, the
-- credentials). Arrays are checked here first (no NULL; URLs read), so that a bad one is refused
-- before any node is asked; each node's share of a call is all or nothing there, and a node's
-- failure after others took theirs leaves their share scheduled: calling again is safe (scheduling
-- an X post or a URL twice changes nothing). PL/Proxy runs each remote call in its own transaction.

-- NULL, or NULL elements, refused as a node does (22004).
CREATE FUNCTION tweetkeeper_proxy.array_arg(arg text, elements anyarray) RETURNS anyarray
  LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF elements IS NULL OR array_position(elements, NULL) IS NOT NULL THEN
    RAISE EXCEPTION '% must not be NULL or hold NULL (element %)', arg, array_position(elements, NULL)
      USING ERRCODE = 'null_value_not_allowed';
  END IF;
  RETURN elements;
END $$;

CREATE FUNCTION schedule_tweet(tweet_id bigint, created_at timestamptz DEFAULT NULL) RETURNS boolean
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON tweetkeeper.partition_hash('x', '', tweet_id::text);
$$;

CREATE FUNCTION schedule_post(url text, created_at timestamptz DEFAULT NULL) RETURNS boolean
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON tweetkeeper.url_partition_hash(url);
$$;

-- The calls of many posts, split by post: for each, tweetkeeper_proxy.<name>(...) sends each
-- node its share (PL/Proxy SPLIT, RUN ON each element's hash, the node's tweetkeeper.<name>) and
-- tweetkeeper.<name>(...) checks the array first (URLs: every one read by the nodes' parser, a bad
-- one refused, naming it, before any node is asked) and sums what the nodes return. Made from
-- this list: name, arguments (with the user's defaults), the array split, what an element is.
DO $do$
DECLARE
  f record;
BEGIN
  FOR f IN
    SELECT * FROM (VALUES
      ('schedule_tweets', 'tweet_ids bigint[]', 'tweet_ids', 'id'),
      ('schedule_posts', 'urls text[]', 'urls', 'url'),
      -- (Collections: the same by name on every node; each node puts its own posts in.)
      ('collect_posts', 'collection text, urls text[]', 'urls', 'url'),
      -- (By X id: another network's id names no slot; collect_posts takes their URLs.)
      ('collect', 'collection text, post_ids bigint[]', 'post_ids', 'id'),
      ('watch', 'tweet_ids bigint[], every interval DEFAULT interval ''5 minutes'', for_how_long interval DEFAULT interval ''1 day''',
       'tweet_ids', 'id'),
      ('unwatch', 'tweet_ids bigint[]', 'tweet_ids', 'id'),
      ('watch_posts', 'urls text[], every interval DEFAULT interval ''5 minutes'', for_how_long interval DEFAULT interval ''1 day''',
       'urls', 'url'),
      ('unwatch_posts', 'urls text[]', 'urls', 'url')) AS v(name, args, arr, kind)
  LOOP
    EXECUTE format($f$
      CREATE FUNCTION tweetkeeper_proxy.%1$I(%2$s) RETURNS SETOF bigint
        LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $p$
        CLUSTER 'tweetkeeper';
        SPLIT %3$I;
        RUN ON %4$s;
        TARGET tweetkeeper.%1$I;
      $p$ $f$, f.name, regexp_replace(f.args, ' DEFAULT [^,]*', '', 'g'), f.arr,
      CASE f.kind WHEN 'id' THEN format('tweetkeeper.partition_hash(''x'', '''', %I::text)', f.arr)
                  ELSE format('tweetkeeper.url_partition_hash(%I)', f.arr) END);
    EXECUTE format($f$
      CREATE FUNCTION tweetkeeper.%1$I(%2$s) RETURNS bigint
        LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $p$
      BEGIN
        PERFORM tweetkeeper_proxy.array_arg(%3$L, %3$I);
        %4$s
        RETURN (SELECT coalesce(sum(n), 0)::bigint FROM tweetkeeper_proxy.%1$I(%5$s) AS n);
      END $p$ $f$, f.name, f.args, f.arr,
      CASE f.kind WHEN 'url' THEN format('PERFORM count(*) FROM unnest(%I) AS a(u), tweetkeeper.parse_post_url(a.u) AS p;', f.arr)
                  ELSE '' END,
      (SELECT string_agg(quote_ident(split_part(trim(a), ' ', 1)), ', ') FROM unnest(string_to_array(f.args, ',')) AS a
        WHERE trim(a) ~ '^[a-z_]+ '));
  END LOOP;
END $do$;

-- By post id: an id of another network names no slot by itself (its node gave it), so every node
-- is asked and each changes the posts it has.
CREATE FUNCTION tweetkeeper_proxy.set_refresh_policy(post_ids bigint[], policy text) RETURNS SETOF bigint
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON ALL;
  TARGET tweetkeeper.set_refresh_policy;
$$;
CREATE FUNCTION set_refresh_policy(post_ids bigint[], policy text) RETURNS bigint
  LANGUAGE sql SET search_path = pg_catalog, pg_temp
  RETURN (SELECT coalesce(sum(n), 0)::bigint
            FROM tweetkeeper_proxy.set_refresh_policy(tweetkeeper_proxy.array_arg('post_ids', post_ids), policy) AS n);

-- A collection made on every node (each puts its own posts in).
CREATE FUNCTION tweetkeeper_proxy.create_collection(name text, kind text) RETURNS SETOF boolean
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON ALL;
  TARGET tweetkeeper.create_collection;
$$;
CREATE FUNCTION create_collection(name text, kind text DEFAULT 'tag') RETURNS boolean
  LANGUAGE sql SET search_path = pg_catalog, pg_temp
  RETURN (SELECT bool_or(made) FROM tweetkeeper_proxy.create_collection(name, kind) AS made);

-- A collection's posts taken out: every node takes out those it has.
CREATE FUNCTION tweetkeeper_proxy.uncollect(collection text, post_ids bigint[]) RETURNS SETOF bigint
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON ALL;
  TARGET tweetkeeper.uncollect;
$$;
CREATE FUNCTION uncollect(collection text, post_ids bigint[]) RETURNS bigint
  LANGUAGE sql SET search_path = pg_catalog, pg_temp
  RETURN (SELECT coalesce(sum(n), 0)::bigint
            FROM tweetkeeper_proxy.uncollect(collection, tweetkeeper_proxy.array_arg('post_ids', post_ids)) AS n);

-- Follows are global: they live on the node of slot 0 (its followers read them there and hand
-- each post over to the node that holds it).
CREATE FUNCTION follow(profile_url text) RETURNS boolean
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON 0;
$$;
CREATE FUNCTION unfollow(profile_url text) RETURNS boolean
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON 0;
$$;
CREATE FUNCTION follow_accounts(urls text[]) RETURNS bigint
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON 0;
$$;

-- Hand-overs: the posts nodes found from inside their work (an edit's newest version, a followed
-- account's post) that other nodes hold, scheduled where they belong, then forgotten where they
-- were noted. A crash between the two leaves them noted: delivered again, harmlessly.
CREATE FUNCTION tweetkeeper_proxy.take_handovers(max_posts integer)
  RETURNS TABLE (url text, created_at timestamptz, reason text, collection text)
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON ALL;
  TARGET tweetkeeper.take_handovers;
$$;
CREATE FUNCTION tweetkeeper_proxy.drop_handovers(urls text[]) RETURNS SETOF bigint
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON ALL;
  TARGET tweetkeeper.drop_handovers;
$$;
-- A followed account's post joins the account's collection on the node that holds it (made there
-- as a follow's collection if new).
CREATE FUNCTION tweetkeeper_proxy.create_collection(url text, name text, kind text) RETURNS boolean
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON tweetkeeper.url_partition_hash(url);
  SELECT tweetkeeper.create_collection(name, kind);
$$;
CREATE FUNCTION deliver_handovers(max_posts integer DEFAULT 10000) RETURNS bigint
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  h record;
  urls text[] := '{}';
BEGIN
  FOR h IN SELECT * FROM tweetkeeper_proxy.take_handovers(max_posts) LOOP
    PERFORM tweetkeeper.schedule_post(h.url, h.created_at);
    IF h.collection IS NOT NULL THEN
      PERFORM tweetkeeper_proxy.create_collection(h.url, h.collection, CASE h.reason WHEN 'follow' THEN 'follow' ELSE 'tag' END);
      PERFORM tweetkeeper.collect_posts(h.collection, ARRAY[h.url]);
    END IF;
    urls := urls || h.url;
  END LOOP;
  IF cardinality(urls) > 0 THEN
    PERFORM sum(n) FROM tweetkeeper_proxy.drop_handovers(urls) AS n;
  END IF;
  RETURN cardinality(urls);
END $$;
COMMENT ON FUNCTION deliver_handovers(integer) IS
  'Schedules, on the node that holds each, the posts nodes found but do not hold (an X edit''s '
  'newest version, a followed account''s post), then forgets them where they were noted. Run it '
  'every minute (pg_cron on the proxy database). Returns how many were delivered.';

-- The age policy and the settings, the same on every node: checked by every node first (a dry
-- run, which keeps nothing: any refusal refuses the call with nothing changed anywhere), then
-- changed on each, and the nodes' digests compared after. (PL/Proxy commits each node's call on
-- its own: a node lost between the two steps leaves the nodes differing, which the call says,
-- naming them; calling again mends it.) policy_status and settings_status show each node's digest.
CREATE FUNCTION tweetkeeper_proxy.replace_age_policy(max_ages interval[], delays interval[], dry_run boolean)
  RETURNS SETOF text
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON ALL;
  TARGET tweetkeeper.replace_age_policy;
$$;
CREATE FUNCTION tweetkeeper_proxy.set_setting(name text, value text, dry_run boolean) RETURNS SETOF text
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON ALL;
  TARGET tweetkeeper.set_setting;
$$;
CREATE FUNCTION tweetkeeper_proxy.digests(OUT node text, OUT policy text, OUT settings text) RETURNS SETOF record
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON ALL;
  SELECT p.node, tweetkeeper.policy_digest() AS policy, tweetkeeper.settings_digest() AS settings FROM tweetkeeper.partition p;
$$;
CREATE VIEW policy_status AS SELECT d.node, d.policy AS digest FROM tweetkeeper_proxy.digests() AS d;
COMMENT ON VIEW policy_status IS 'Each node''s age policy digest: one value when the nodes agree.';
CREATE VIEW settings_status AS SELECT d.node, d.settings AS digest FROM tweetkeeper_proxy.digests() AS d;
COMMENT ON VIEW settings_status IS 'Each node''s digest of its tweetkeeper settings: one value when the nodes agree.';

-- A change of the policy or of a setting pushed to every node: the dry run on all of them first,
-- then the change on each; returns the digest every node has of what changed, or TKP03 naming the
-- nodes' digests when they differ.
CREATE FUNCTION tweetkeeper_proxy.push(what text, max_ages interval[], delays interval[], name text, value text) RETURNS text
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  dry boolean;
  d record;
BEGIN
  FOREACH dry IN ARRAY ARRAY[true, false] LOOP
    IF what = 'policy' THEN
      PERFORM count(*) FROM tweetkeeper_proxy.replace_age_policy(max_ages, delays, dry);
    ELSE
      PERFORM count(*) FROM tweetkeeper_proxy.set_setting(name, value, dry);
    END IF;
  END LOOP;
  SELECT count(DISTINCT x.v) AS n, min(x.v) AS v, string_agg(x.node || ' ' || x.v, ', ' ORDER BY x.node) AS each INTO d
    FROM (SELECT g.node, CASE what WHEN 'policy' THEN g.policy ELSE g.settings END AS v FROM tweetkeeper_proxy.digests() g) x;
  IF d.n <> 1 THEN
    RAISE EXCEPTION 'the nodes'' % differ after the change: %', what, d.each
      USING ERRCODE = 'TKP03', HINT = 'Make the change again once every node is reachable.';
  END IF;
  RETURN d.v;
END $$;

CREATE FUNCTION replace_age_policy(max_ages interval[], delays interval[]) RETURNS text
  LANGUAGE sql SET search_path = pg_catalog, pg_temp
  RETURN tweetkeeper_proxy.push('policy', max_ages, delays, NULL, NULL);
COMMENT ON FUNCTION replace_age_policy(interval[], interval[]) IS
  'Replaces the age policy of every node with these (max_age, delay) rows: each node checks them '
  'first, and a refusal refuses the call with nothing changed. Returns the policy''s digest.';

CREATE FUNCTION set_setting(name text, value text) RETURNS text
  LANGUAGE sql SET search_path = pg_catalog, pg_temp
  RETURN tweetkeeper_proxy.push('settings', NULL, NULL, name, value);
COMMENT ON FUNCTION set_setting(text, text) IS
  'Sets a tweetkeeper setting on every node (ALTER DATABASE ... SET there): each node checks it '
  'first, and a refusal refuses the call with nothing changed. Superuser only.';

-- Credentials: registered on every node, each keeping its share of the window and the monthly
-- cap (its slots' 64ths, rounded down: together never more than the credential's), so that the
-- nodes spend a token's window and cap without exceeding them and without asking each other.
CREATE FUNCTION tweetkeeper_proxy.add_credential(name text, requests_per_window integer, window_length interval,
                                                 monthly_cap bigint, provider text, price_per_read numeric)
  RETURNS SETOF integer
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON ALL;
  SELECT 1 FROM tweetkeeper.add_credential(name, requests_per_window, window_length, monthly_cap, provider, price_per_read);
$$;
CREATE FUNCTION add_credential(name text, requests_per_window integer, window_length interval DEFAULT interval '15 minutes',
                               monthly_cap bigint DEFAULT NULL, provider text DEFAULT 'x-v2',
                               price_per_read numeric DEFAULT 0.005) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF requests_per_window < (SELECT count(*) FROM tweetkeeper_proxy.nodes)
     OR monthly_cap < (SELECT count(*) FROM tweetkeeper_proxy.nodes) THEN
    RAISE EXCEPTION 'a credential of % requests a window and a cap of % cannot be shared by % nodes',
      requests_per_window, coalesce(monthly_cap::text, 'none'), (SELECT count(*) FROM tweetkeeper_proxy.nodes)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM count(*) FROM tweetkeeper_proxy.add_credential(name, requests_per_window, window_length, monthly_cap, provider,
                                                         price_per_read);
  -- (Kept whole: a node's share is set again from it when its slots change, move_slot().)
  INSERT INTO tweetkeeper_proxy.credentials (name, requests_per_window, monthly_cap)
  VALUES (add_credential.name, add_credential.requests_per_window, add_credential.monthly_cap);
END $$;
COMMENT ON FUNCTION add_credential(text, integer, interval, bigint, text, numeric) IS
  'Registers a credential on every node, each with its share of the window and the monthly cap.';

CREATE FUNCTION tweetkeeper_proxy.reset_credential(name text) RETURNS SETOF integer
  LANGUAGE plproxy SET search_path = pg_catalog, pg_temp AS $$
  CLUSTER 'tweetkeeper';
  RUN ON ALL;
  SELECT 1 FROM tweetkeeper.reset_credential(name);
$$;
CREATE FUNCTION reset_credential(name text) RETURNS void
  LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
  SELECT count(*) FROM tweetkeeper_proxy.reset_credential(name) $$;
