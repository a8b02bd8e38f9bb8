#!/usr/bin/env python3
"""A second engagement model, shaped unlike the mock's own (tests/mock_api/engagement.cpp), written
as an --engagement FILE: make bench-adaptive replays both policies on these curves too, so that a
policy tuned to one model shows it.

How it differs: final counts from a Zipf law (pdf exponent 2.0) with 30% of posts unliked and no
lognormal body; arrival from an exponential kernel (a Hawkes process's shape: rate ~ exp(-t/tau),
tau per post lognormal around 2 hours) instead of a power law, so activity stops sharply; replies
late rather than early; and late bursts for any post with engagement (5%, even a single like),
starting 2 to 25 days in and lasting an exponential tau of 6 hours, so that a policy that stops
small quiet posts misses some. Deterministic (seeded).

    second_model.py POSTS_PER_NETWORK > FILE

Keys are those tests/bench/adaptive_replay.cpp reads for a file: X ids 1000000 + i, Bluesky
at://did:plc:bench/app.bsky.feed.post/i, Mastodon bench.example/i. A row is written at each of
64 ages (30 s to 30 days, log-spaced, and through each burst) where a count changed.
"""
import math
import random
import sys

DAY = 86400
AGES = sorted({int(30 * (30 * DAY / 30) ** (i / 63)) for i in range(64)})
RATIOS = {  # per like: reposts, replies, quotes, bookmarks, views (None: the network has none)
    "x": (0.2, 0.15, 0.05, 0.1, 50.0),
    "bluesky": (0.2, 0.15, 0.05, 0.05, None),
    "mastodon": (0.6, 0.1, 0.02, None, None),
}


def zipf_likes(rng):
    if rng.random() < 0.30:
        return 0
    # Inverse CDF of a Pareto of pdf exponent 2.0 from 1, floored, cut at 10^6.
    return min(int(1.0 / (1.0 - rng.random())), 1_000_000)


def share(t, tau):
    return 0.0 if t <= 0 else 1.0 - math.exp(-t / tau)


def whole(x):
    """Rounded to the nearest (a single like arrives when half of its chance has come)."""
    return int(x + 0.5)


def key(network, i):
    if network == "x":
        return str(1000000 + i)
    if network == "bluesky":
        return f"at://did:plc:bench/app.bsky.feed.post/{i}"
    return f"bench.example/{i}"


def post_rows(network, i, rng, out):
    likes = zipf_likes(rng)
    ratios = RATIOS[network]
    totals = [likes * r * rng.lognormvariate(0, 0.5) if r is not None else 0.0 for r in ratios[:4]]
    views = (likes + 1) * ratios[4] * rng.lognormvariate(0, 0.7) if ratios[4] is not None else 0.0
    tau = 7200 * rng.lognormvariate(0, 1.0)
    burst = None
    if likes > 0 and rng.random() < 0.05:
        start = rng.uniform(2 * DAY, 25 * DAY)
        burst = (start, rng.uniform(0.3, 2.0), 6 * 3600 * rng.lognormvariate(0, 0.5))
    ages = AGES
    if burst:
        ages = sorted(set(AGES) | {int(burst[0] + burst[2] * f) for f in (0.05, 0.2, 0.5, 1, 2, 4)})
    last = None
    for age in ages:
        if age > 30 * DAY:
            continue
        first = share(age, tau)
        late = share(age - burst[0], burst[2]) * burst[1] if burst else 0.0
        replies_share = share(age, tau * 2)  # replies come later here
        row = (
            whole(totals[0] * (first + late)),
            whole(totals[1] * (replies_share + late)),
            whole(likes * (first + late)),
            whole(totals[2] * (first + late)),
            whole(totals[3] * (share(age, tau * 3) + late)),
            min(whole(views * (share(age, tau / 2) + late)), 2**31 - 1),
        )
        if row != last:
            out.append(f"{network},{key(network, i)},{age},{','.join(map(str, row))}")
            last = row


def main(argv):
    if len(argv) != 2 or not argv[1].isdigit() or int(argv[1]) <= 0:
        sys.stderr.write("usage: second_model.py POSTS_PER_NETWORK > FILE\n")
        return 2
    n = int(argv[1])
    rng = random.Random(20261129)
    sys.stdout.write("network,key,age_seconds,reposts,replies,likes,quotes,bookmarks,views\n")
    for network in ("x", "bluesky", "mastodon"):
        out = []
        for i in range(n):
            post_rows(network, i, rng, out)
            if len(out) > 100000:
                sys.stdout.write("\n".join(out) + "\n")
                out = []
        if out:
            sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
