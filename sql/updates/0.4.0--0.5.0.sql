-- 0.4.0 -> 0.5.0, what runs once before 0.5.0's replaceable definitions (scripts/build-sql.sh
-- appends them). The rest of 0.5.0's changes are in functions, views, triggers and grants, which
-- the replaceable part re-declares.

-- Held to the end of the update: the background worker takes it shared in each of its
-- transactions before it touches a table (extension/bgworker.cpp), so it waits for the update
-- instead of locking tables beside it in another order.
SELECT pg_catalog.pg_advisory_xact_lock(8388903688909320804);
