-- Posts of other networks on the wire: each endpoint's request window (Bluesky's AppView, each
-- Mastodon server), learned from its answers, and claim_posts(), the claim of one endpoint's due
-- posts. The lease, fencing, completion and release are X's (40_claim.sql): one queue, one lease
-- sequence, one batches table, complete_batch() and release_batch() for every network.

-- One row per endpoint a claim has used: 'bluesky' (getPosts), 'mastodon:<host>'.
CREATE TABLE endpoints (
  endpoint text NOT NULL,
  requests_per_window integer,   -- the API's last word (RateLimit-Limit, X-RateLimit-Limit); NULL: never said
  remaining integer,             -- requests left in the current window, as we count them
  window_reset_at timestamptz,   -- its end, from the API
  status text NOT NULL DEFAULT 'active',
  status_reason text,
  status_until timestamptz,      -- waiting: until then; needs-token: NULL (until a token is given)
  single_status boolean NOT NULL DEFAULT false,  -- Mastodon before 4.3: one status per request
  requests bigint NOT NULL DEFAULT 0,
  last_used_at timestamptz,
  answered_at timestamptz,       -- its first answer; NULL: none yet, so one request at a time
  CONSTRAINT endpoints_pkey PRIMARY KEY (endpoint),
  CONSTRAINT endpoints_status_known CHECK (status IN ('active', 'waiting', 'needs-token'))
);
SELECT pg_catalog.pg_extension_config_dump('endpoints', '');
COMMENT ON TABLE endpoints IS
  'Each endpoint of Bluesky and Mastodon that posts are read from: its request window as its '
  'answers said (rate-limit headers, 429), and whether it needs a token (401).';

-- A busy endpoint's window, spread over lanes so that its claims do not all queue on its one
-- row (Bluesky has one endpoint: every claim of every Bluesky worker counts a request of it, and
-- a row lock is held to the commit). A claim takes one request from any lane that holds some and
-- that no other claim holds (SKIP LOCKED). Only when none does is the endpoint's row counted on,
-- locked, as before lanes; that claim also moves a share of what the window has left (a 64th,
-- at least 1: the 8 lanes hold at most an eighth of it) into a free lane, for the claims after it.
-- A lane's requests are of one window (valid_until: its end) and lapse with it; an endpoint
-- whose answers state no window gets requests without end (until one does). Exact whatever
-- the number of workers: what the endpoint's row has left plus what its lanes hold is what the
-- window has left by our count. An answer that changes what we know of the window, a 429 and a
-- 401 take the lanes' requests back (record_endpoint_quota). Lock order: the endpoint's row,
-- then its lanes (a claim holding a lane never waits for the row).
CREATE TABLE endpoint_lanes (
  endpoint text NOT NULL,
  lane smallint NOT NULL,
  granted integer NOT NULL DEFAULT 0,  -- requests of the window this lane still holds
  valid_until timestamptz,             -- the end of the window they are of ('infinity': none stated)
  requests bigint NOT NULL DEFAULT 0,  -- requests counted in this lane (endpoints.requests: the others)
  last_used_at timestamptz,
  CONSTRAINT endpoint_lanes_pkey PRIMARY KEY (endpoint, lane)
);
SELECT pg_catalog.pg_extension_config_dump('endpoint_lanes', '');
COMMENT ON TABLE endpoint_lanes IS
  'Requests of an endpoint''s window handed out in lanes, so that its claims need not queue on '
  'one row; endpoint_stats adds them up.';

-- Bluesky handles and the DIDs they resolved to (com.atproto.identity.resolveHandle), once per
-- handle: a post scheduled by a handle already resolved gets its DID at once; posts waiting for
-- their handle (endpoint bluesky-handle) are handed to a Bluesky worker by claim_posts() like any
-- batch, and complete_handles() re-keys them under their DIDs (or marks them missing).
CREATE TABLE bluesky_handles (
  handle text NOT NULL,          -- lower case
  did text,                      -- NULL: did not resolve (problem says why)
  problem text,
  resolved_at timestamptz NOT NULL,
  CONSTRAINT bluesky_handles_pkey PRIMARY KEY (handle),
  CONSTRAINT bluesky_handles_did_or_problem CHECK ((did IS NULL) <> (problem IS NULL))
);
SELECT pg_catalog.pg_extension_config_dump('bluesky_handles', '');
COMMENT ON TABLE bluesky_handles IS
  'Bluesky handles resolved to DIDs (or not, and why), remembered so each is asked once.';
