-- Roles and privileges on the proxy database: the node's roles (made where missing: the proxy
-- may be a PostgreSQL cluster of its own), the admin scheduling and following, the reader
-- reading. A call runs on the nodes as its caller (PL/Proxy connects as the current user, unless
-- the server's user mapping names another): give the same login roles the same roles there.
DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['tweetkeeper_reader', 'tweetkeeper_admin'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
      EXECUTE format('CREATE ROLE %I NOLOGIN', r);
    END IF;
  END LOOP;
END $$;
GRANT tweetkeeper_reader TO tweetkeeper_admin;
-- (Routines: procedures too. Changing the cluster, create_cluster, add_node, move_slot and
-- rebalance, is the superuser's: it connects to the nodes by the proxy's own strings.)
REVOKE ALL ON ALL ROUTINES IN SCHEMA tweetkeeper FROM PUBLIC;
REVOKE ALL ON ALL ROUTINES IN SCHEMA tweetkeeper_proxy FROM PUBLIC;
GRANT USAGE ON SCHEMA tweetkeeper TO tweetkeeper_reader;
GRANT USAGE ON SCHEMA tweetkeeper_proxy TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION parse_post_url(text), parse_profile_url(text), partition_hash(text, text, text),
  url_partition_hash(text) TO tweetkeeper_reader;
GRANT SELECT ON cluster TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION schedule_tweet(bigint, timestamptz), schedule_post(text, timestamptz),
  schedule_tweets(bigint[]), schedule_posts(text[]), watch(bigint[], interval, interval), unwatch(bigint[]),
  watch_posts(text[], interval, interval), unwatch_posts(text[]), set_refresh_policy(bigint[], text),
  follow(text), unfollow(text), follow_accounts(text[]), deliver_handovers(integer),
  tweetkeeper_proxy.array_arg(text, anyarray), tweetkeeper_proxy.schedule_tweets(bigint[]),
  tweetkeeper_proxy.schedule_posts(text[]), tweetkeeper_proxy.watch(bigint[], interval, interval),
  tweetkeeper_proxy.unwatch(bigint[]), tweetkeeper_proxy.watch_posts(text[], interval, interval),
  tweetkeeper_proxy.unwatch_posts(text[]), tweetkeeper_proxy.set_refresh_policy(bigint[], text),
  tweetkeeper_proxy.take_handovers(integer), tweetkeeper_proxy.drop_handovers(text[]),
  tweetkeeper_proxy.create_collection(text, text, text),
  collect_posts(text, text[]), uncollect(text, bigint[]), tweetkeeper_proxy.collect_posts(text, text[]),
  tweetkeeper_proxy.uncollect(text, bigint[]), collect(text, bigint[]), tweetkeeper_proxy.collect(text, bigint[]),
  create_collection(text, text), tweetkeeper_proxy.create_collection(text, text)
  TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION forecast(interval), tweetkeeper_proxy.forecast(interval), tweetkeeper_proxy.digests()
  TO tweetkeeper_reader;
GRANT SELECT ON policy_status, settings_status TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION add_credential(text, integer, interval, bigint, text, numeric), reset_credential(text),
  tweetkeeper_proxy.add_credential(text, integer, interval, bigint, text, numeric),
  tweetkeeper_proxy.reset_credential(text) TO tweetkeeper_admin;
GRANT SELECT ON moves TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION replace_age_policy(interval[], interval[]),
  tweetkeeper_proxy.replace_age_policy(interval[], interval[], boolean),
  tweetkeeper_proxy.push(text, interval[], interval[], text, text) TO tweetkeeper_admin;
