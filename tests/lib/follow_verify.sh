# tk_follow_verify MIN_MADE: after a run of followers against the mock's posting accounts (the
# suite's $dir, the mock at TK_MOCK_URL, Mastodon's at TK_MOCK_URL_MASTODON if another, the
# database the suite's), checks with tk_ok that every
# post the mock made while its account was followed, up to the account's last complete read, is
# tracked, once, with its creation time to the millisecond and its first refresh due at that
# time plus the first delay; that no other post is; that the posts found add up; and that every
# tracked Bluesky post the mock deleted is marked deleted with a tombstone (when the mock deletes
# some). MIN_MADE: fewer posts made than this fails (the run proves nothing). Leaves public.made
# and public.made_keys (each post's account: its id, a Mastodon account's username) for the
# suite's own checks.
tk_follow_verify() {
  # What the mock made, per followed account, from its follow to its last complete read: the posts
  # /mock/follow/posts lists for that span, those of that account (Mastodon: its @user in the URL;
  # Bluesky: its DID; X: the author_id /2/tweets gives, as the refreshing worker would read it).
  tk_psql -F ' ' -c "SELECT network, coalesce(nullif(host, ''), '-'), account_id, coalesce(handle, '-'),
                            (extract(epoch FROM since) * 1000)::bigint, (extract(epoch FROM checked_at) * 1000)::bigint - 1
                       FROM tweetkeeper.followed_accounts WHERE status = 'following' AND checked_at IS NOT NULL" >"$dir/ranges"
  python3 - "$TK_MOCK_URL" "$dir/ranges" "${TK_MOCK_URL_MASTODON:-$TK_MOCK_URL}" >"$dir/made" <<'PY'
import json, sys, urllib.request
from collections import defaultdict
base, mastodon_base = sys.argv[1], sys.argv[3]
def get(path, token=None, at=None):
    req = urllib.request.Request((at or base) + path, headers={"Authorization": "Bearer " + token} if token else {})
    return json.load(urllib.request.urlopen(req))
ranges = [line.split() for line in open(sys.argv[2])]
# Each network's (each server's) posts once, from the earliest follow on, told apart by account.
by_account = defaultdict(list)
for network, host in sorted({(r[0], r[1]) for r in ranges}):
    start = min(int(r[4]) for r in ranges if (r[0], r[1]) == (network, host))
    posts = get(f"/mock/follow/posts?network={network}" + ("" if host == "-" else f"&host={host}") +
                f"&from_ms={start}", at=mastodon_base if network == "mastodon" else None)["posts"]
    if network == "mastodon":
        for p in posts: by_account[(network, host, p["url"].split("/@")[1].split("/")[0])].append(p)
    elif network == "bluesky":
        for p in posts: by_account[(network, host, p["url"].split("/")[2])].append(p)
    else:
        ids = {p["url"].rsplit("/", 1)[1]: p for p in posts}
        keys = list(ids)
        for i in range(0, len(keys), 100):
            answer = get(f"/2/tweets?ids={','.join(keys[i:i + 100])}&tweet.fields=author_id", "the-tests-own-token")
            for t in answer.get("data", []): by_account[(network, host, t["author_id"])].append(ids[t["id"]])
for network, host, account, handle, start, end in ranges:
    key = handle if network == "mastodon" else account
    # Up to now: a post found after the last complete read is no extra; one before it must be there.
    for p in by_account[(network, host, key)]:
        if p["created_ms"] >= int(start):
            print(f"{p['url']}\t{p['created_ms']}\t{p.get('deleted_ms', 0)}\t{'t' if p['created_ms'] <= int(end) else 'f'}\t{key}")
PY
  tk_psql -c "CREATE TABLE public.made (url text, created_ms bigint, deleted_ms bigint, read boolean, account text)"
  tk_psql -c "COPY public.made FROM STDIN" <"$dir/made"
  n_made=$(tk_psql -c "SELECT count(*) FROM public.made WHERE read")
  echo "# $n_made posts made by the followed accounts while followed"
  tk_ok "the followed accounts made posts meanwhile" "$([ "$n_made" -gt "$1" ]; echo $?)" "$n_made"
  # Each post's key as the extension reads its URL, and its row in tweets if it is tracked (an X
  # post's id is its row's; the others' through post_refs).
  tk_psql -c "CREATE TABLE public.made_keys AS
    SELECT m.url, m.created_ms, m.deleted_ms, m.read, m.account, p.network, coalesce(p.host, '') AS host, p.author,
           p.post_key, CASE WHEN p.network = 'x' THEN (SELECT t.tweet_id FROM tweetkeeper.tweets t WHERE t.tweet_id = p.post_key::bigint)
                            ELSE r.tweet_id END AS tweet_id
      FROM public.made m CROSS JOIN LATERAL tweetkeeper.parse_post_url(m.url) p
      LEFT JOIN tweetkeeper.post_refs r ON (r.network, r.host, r.author, r.post_key) = (p.network, coalesce(p.host, ''), p.author, p.post_key);
    CREATE INDEX ON public.made_keys (tweet_id); ANALYZE public.made_keys"
  missing=$(tk_psql -c "SELECT CASE WHEN count(*) = 0 THEN 'none made' ELSE count(*) FILTER (WHERE m.read AND m.tweet_id IS NULL
    -- (a post deleted before its account was subscribed and its gap read cannot be found)
    AND NOT (m.deleted_ms > 0 AND m.deleted_ms < (SELECT extract(epoch FROM since) * 1000 + 10000
                                                    FROM tweetkeeper.followed_accounts LIMIT 1)))::text END
    FROM public.made_keys m")
  tk_ok "every post made while followed is tracked" "$([ "$missing" = 0 ]; echo $?)" "$missing missing"
  extra=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets t WHERE NOT EXISTS (SELECT FROM public.made_keys m WHERE m.tweet_id = t.tweet_id)")
  tk_ok "no post from before its account's follow, or of an account not followed" "$([ "$extra" = 0 ]; echo $?)" "$extra extra"
  wrong_time=$(tk_psql -c "SELECT count(*) FROM public.made_keys m JOIN tweetkeeper.tweets t USING (tweet_id)
   WHERE t.created_at <> to_timestamp(m.created_ms / 1000.0)")
  tk_ok "each post's creation time is the mock's, to the millisecond" "$([ "$wrong_time" = 0 ]; echo $?)" "$wrong_time differ"
  wrong_due=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets
                           WHERE due_at <> created_at + tweetkeeper.first_delay() AND update_count = 0")
  tk_ok "each post's first refresh is due at its creation plus the first delay" "$([ "$wrong_due" = 0 ]; echo $?)" "$wrong_due"
  counted=$(tk_psql -c "SELECT (SELECT sum(posts_found) FROM tweetkeeper.follows) = (SELECT count(*) FROM tweetkeeper.tweets)")
  tk_ok "posts found add up to the posts tracked: none counted twice" "$([ "$counted" = t ]; echo $?)" \
    "$(tk_psql -c "SELECT (SELECT sum(posts_found) FROM tweetkeeper.follows), (SELECT count(*) FROM tweetkeeper.tweets)")"

  # Deletes seen on the stream: each tracked post the mock deleted by the last read is deleted.
  deleted=$(tk_psql -c "SELECT count(*) FILTER (WHERE t.state = 'deleted' AND x.tweet_id IS NOT NULL) || ' ' || count(*)
    FROM public.made_keys m JOIN tweetkeeper.tweets t USING (tweet_id) LEFT JOIN tweetkeeper.tombstones x USING (tweet_id)
    JOIN tweetkeeper.followed_accounts f ON f.network = 'bluesky' AND f.account_id = m.author
   WHERE m.network = 'bluesky' AND m.deleted_ms > 0 AND m.deleted_ms < extract(epoch FROM f.checked_at) * 1000")
  tk_ok "every tracked Bluesky post deleted while followed is marked deleted, with a tombstone (of $deleted)" \
    "$(set -- $deleted; [ "$1" = "$2" ] && [ "$2" -gt 0 ]; echo $?)"
}
