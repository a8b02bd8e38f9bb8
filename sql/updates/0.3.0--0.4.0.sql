-- 0.3.0 -> 0.4.0, what runs once before 0.4.0's replaceable definitions (scripts/build-sql.sh
-- appends them). The rest of 0.4.0's changes are in functions, views, triggers and grants, which
-- the replaceable part re-declares.

-- Held to the end of the update: the background worker takes it shared in each of its
-- transactions before it touches a table (extension/bgworker.cpp), so it waits for the update
-- instead of locking tables beside it in another order (a distributed deadlock on Citus, seen
-- again in a clean-clone run when this script lacked it).
SELECT pg_catalog.pg_advisory_xact_lock(8388903688909320804);

-- tweets.endpoint names who answers for a post, and for Mastodon the host the worker sends its
-- requests to: only the values the scheduling functions write (a Mastodon host as parse_post_url()
-- reads it: a lower-case DNS name). Rows written by 0.3.0's functions all pass; the check refuses
-- a row written by hand with anything else (a path, a port, user info, an address).
-- (In a DO block: on Citus the ALTER TABLE goes to every shard as the text of its statement, and
-- a statement of an extension's script has the whole script as its text. On a Citus worker node
-- the coordinator's ALTER TABLE has added it already, before this script runs there.)
DO $do$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_constraint
                  WHERE conrelid = 'tweetkeeper.tweets'::pg_catalog.regclass AND conname = 'tweets_endpoint_known') THEN
    EXECUTE $q$ALTER TABLE tweetkeeper.tweets ADD CONSTRAINT tweets_endpoint_known CHECK (endpoint IN ('bluesky', 'bluesky-handle')
    OR endpoint ~ '^mastodon:(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$')$q$;
  END IF;
END $do$;

-- batches.edits_followed: how many of a batch's X posts its answer showed edited, each one's
-- newest version tracked from then on (batch_stats counts them: each is a read more per refresh).
-- (In a DO block, and only where the coordinator's propagation has not added it, as above.)
DO $do$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute
                  WHERE attrelid = 'tweetkeeper.batches'::pg_catalog.regclass AND attname = 'edits_followed') THEN
    EXECUTE 'ALTER TABLE tweetkeeper.batches ADD COLUMN edits_followed integer';
  END IF;
END $do$;

-- followed_accounts (follow(), unfollow(), the follows view), new in 0.4.0: its part as a fresh
-- install has it.
-- include sql/schema/37_follows.sql
