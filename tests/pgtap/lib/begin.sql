-- How every pgTAP file opens (\ir lib/begin.sql): one transaction, which the file rolls back at
-- its end, with pgTAP and this tree's tweetkeeper created in it (a fresh schema per file).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION tweetkeeper;
