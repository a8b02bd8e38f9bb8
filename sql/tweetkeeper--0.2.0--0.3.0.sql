\echo Use "ALTER EXTENSION tweetkeeper UPDATE TO '0.3.0'" to load this file. \quit

-- 0.2.0 -> 0.3.0. So far 0.3.0 changes no object: its install script is built from the parts in
-- sql/src/ instead of one file, with the same statements in the same order. Each change to the
-- extension's SQL in 0.3.0 adds its statements here.
