#!/usr/bin/python3
"""The Bluesky lexicons the mock's AppView answers are validated against (validate_bluesky.mjs,
jetstream/client_check.mjs): the lexicon documents of app.bsky.feed.getPosts,
app.bsky.actor.getProfile(s) and app.bsky.feed.getAuthorFeed (a follower's reads),
com.atproto.identity.resolveHandle, the records a post holds (app.bsky.feed.post and its
embeds) and the records of engagement the mock's Jetstream streams (app.bsky.feed.like and
app.bsky.feed.repost), com.atproto.sync.subscribeRepos (whose #account Jetstream's account
events carry), and every document they refer to, taken at test time from the documents the pinned npm
package @atproto/api carries (lexicons_from_npm.cjs writes them out; none are kept in this
repository).

    needed_lexicons.py NPM_LEXICONS_DIR OUT_DIR
        copies those documents from NPM_LEXICONS_DIR into OUT_DIR (app/bsky/feed/getPosts.json,
        ...), each checked to be a lexicon document (lexicon 1) whose id is its path; exit 1,
        naming each, when one is missing or is not. Prints how many it copied.
"""
import json
import os
import shutil
import sys

ROOTS = [
    "app.bsky.feed.getPosts",
    "app.bsky.actor.getProfile",
    "app.bsky.actor.getProfiles",
    "app.bsky.feed.getAuthorFeed",
    "com.atproto.identity.resolveHandle",
    "app.bsky.feed.post",
    "app.bsky.embed.external",
    "app.bsky.embed.images",
    "app.bsky.embed.record",
    "app.bsky.embed.recordWithMedia",
    "app.bsky.feed.like",
    "app.bsky.feed.repost",
    "com.atproto.sync.subscribeRepos",  # Jetstream's account events carry its #account
]


def rel(nsid):
    return os.path.join(*nsid.split(".")) + ".json"


def refs_of(value, out):
    """Every ref of a document (iteratively: lexicons nest deeply enough to be walked without recursion)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "ref" and isinstance(x, str):
                    out.append(x)
                elif k == "refs" and isinstance(x, list):
                    out.extend(r for r in x if isinstance(r, str))
                else:
                    stack.append(x)
        elif isinstance(v, list):
            stack.extend(v)


def copy_closure(src_dir, out_dir):
    problems, seen, todo = [], set(), list(ROOTS)
    while todo:
        nsid = todo.pop()
        if nsid in seen:
            continue
        seen.add(nsid)
        path = os.path.join(src_dir, rel(nsid))
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            problems.append(f"{nsid}: needed, not readable in {src_dir} ({e})")
            continue
        if doc.get("lexicon") != 1 or doc.get("id") != nsid or not isinstance(doc.get("defs"), dict):
            problems.append(f"{nsid}: not a lexicon document with that id")
            continue
        dest = os.path.join(out_dir, rel(nsid))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(path, dest)
        out = []
        refs_of(doc, out)
        todo.extend(r.split("#")[0] for r in out if not r.startswith("#"))
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(seen) - len(problems)} documents copied (the {len(ROOTS)} roots and every document they refer to), "
          f"{len(problems)} problems")
    return 1 if problems else 0


def main(argv):
    if len(argv) == 3:
        return copy_closure(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
