-- Followed accounts: every new post of each is tracked from its first seconds. A row per account,
-- named as its profile URL named it (a handle), or by the network's stable id (account_id: X's
-- user id, a Bluesky DID, the Mastodon server's account id), which a follower fills in once.
CREATE TABLE followed_accounts (
  network text NOT NULL,
  host text NOT NULL,              -- Mastodon: the account's own server; X and Bluesky: ''
  handle text,                     -- X: the user name (lower case); Bluesky: the handle; Mastodon: the user
  account_id text,                 -- the network's id of the account; NULL until resolved
  url text NOT NULL,               -- the profile, as parse_profile_url() spells it
  since timestamptz NOT NULL DEFAULT now(),
  status text NOT NULL DEFAULT 'resolving',
  reason text,                     -- why, in the service's words, when missing or private
  checked_at timestamptz,          -- every post of the account made before this was seen
  newest_post_id text,             -- the newest post found (X and Mastodon: the next poll's since_id)
  newest_post_at timestamptz,
  posts_found bigint NOT NULL DEFAULT 0,
  CONSTRAINT followed_accounts_handle_key UNIQUE (network, host, handle),
  CONSTRAINT followed_accounts_named CHECK (handle IS NOT NULL OR account_id IS NOT NULL),
  CONSTRAINT followed_accounts_network_known CHECK (network IN ('x', 'bluesky', 'mastodon')),
  CONSTRAINT followed_accounts_host_known CHECK ((network = 'mastodon') = (host <> '')),
  CONSTRAINT followed_accounts_status_known CHECK (status IN ('resolving', 'following', 'missing', 'private'))
);
CREATE UNIQUE INDEX followed_accounts_account_key ON followed_accounts (network, host, account_id)
  WHERE account_id IS NOT NULL;
SELECT pg_catalog.pg_extension_config_dump('followed_accounts', '');
COMMENT ON TABLE followed_accounts IS
  'Accounts followed (follow(), unfollow()): each new post of theirs is scheduled with its own '
  'creation time. Read the follows view.';
