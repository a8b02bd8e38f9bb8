-- Triggers: which table calls which function, on what. Each is declared once, like an index,
-- and changed by a version's delta (sql/updates); the functions they call are replaceable
-- (sql/replaceable), so an upgrade changes what a trigger does without touching the trigger.
-- Last, so that every function they call exists; the default policy's rows
-- (sql/schema/10_policy.sql) are inserted before any of them, as since 0.1.0.

-- The age policy (sql/schema/10_policy.sql): every session's cached copy dropped when it changes
-- (age_policy_changed, in the library), and pg_dump keeping it exactly when it is the user's
-- (age_policy_before_insert, age_policy_adopt: sql/replaceable/10_policy.sql says how).
CREATE TRIGGER age_policy_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON age_policy
  FOR EACH STATEMENT EXECUTE FUNCTION tweetkeeper_internal.age_policy_changed();
CREATE TRIGGER age_policy_before_insert
  BEFORE INSERT ON age_policy FOR EACH ROW EXECUTE FUNCTION tweetkeeper_internal.age_policy_before_insert();
CREATE TRIGGER age_policy_adopt
  AFTER INSERT OR UPDATE OR DELETE ON age_policy
  FOR EACH STATEMENT EXECUTE FUNCTION tweetkeeper_internal.age_policy_adopt();

-- A tweet put below a claim's remembered head (claim_heads()): scheduled, due earlier than it
-- was (a release, an abandoned batch handed back, a delay shorter than the lease), or moved to
-- another delay with its due time passed. Claims and ordinary completions move tweets later and
-- do not fire it; heads_moved() itself lets pass a row due a second or more after its
-- transaction began (a completion of a delay shorter than the lease), which the full look every
-- claiming session makes at least once a second finds before it is due. AFTER, not BEFORE: a BEFORE row trigger makes PostgreSQL lock each row it
-- updates before its WHEN clause is even evaluated, a WAL record per row that no lock read took
-- already (every tweet of every completion: 8% of its WAL and a tenth of its time); an AFTER
-- row trigger reads its WHEN clause from the row versions at hand, and queues only rows it fires
-- for (a bulk reschedule to earlier times queues each of its rows until the statement ends).
CREATE TRIGGER tweets_heads_moved AFTER UPDATE ON tweets FOR EACH ROW
  WHEN (NEW.tweet_id > 0 AND NEW.due_at IS NOT NULL
        AND (OLD.due_at IS NULL OR NEW.due_at < OLD.due_at
             OR (NEW.delay IS DISTINCT FROM OLD.delay AND NEW.due_at <= now())))
  EXECUTE FUNCTION tweetkeeper_internal.heads_moved();
CREATE TRIGGER tweets_heads_scheduled AFTER INSERT ON tweets FOR EACH STATEMENT
  EXECUTE FUNCTION tweetkeeper_internal.heads_moved();
-- Writes through the view metric_history (sql/replaceable/20_queue_tables.sql) to the hot and
-- compacted history.
CREATE TRIGGER metric_history_write INSTEAD OF INSERT OR DELETE ON metric_history
  FOR EACH ROW EXECUTE FUNCTION tweetkeeper_internal.metric_history_write();
