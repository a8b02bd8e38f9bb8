#!/usr/bin/python3
"""Bluesky's lexicons that the mock's AppView answers are validated against (validate_bluesky.mjs):
the lexicon documents of app.bsky.feed.getPosts, app.bsky.actor.getProfile(s) and
app.bsky.feed.getAuthorFeed (a follower's reads), com.atproto.identity.resolveHandle and the
records a post holds (app.bsky.feed.post and its embeds), and every document they refer to,
copied byte for byte from the atproto repository's lexicons/ folder at a pinned commit.

    vendor_lexicons.py --write ATPROTO_LEXICONS_DIR OUT_DIR
        copies the documents into OUT_DIR (app/bsky/feed/getPosts.json, ...)
    vendor_lexicons.py --check OUT_DIR SOURCE_DIR
        exit 1 unless OUT_DIR holds exactly those documents (the closure of the roots, from its
        own files) and each is SOURCE_DIR's: byte for byte with --exact (an atproto checkout), or
        the same JSON once every ref is written in full ("#view" in app.bsky.embed.record is
        "app.bsky.embed.record#view"), as the npm package @atproto/api writes them back
        (lexicons_from_npm.cjs).
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


def closure(root_dir):
    seen, todo = set(), list(ROOTS)
    while todo:
        nsid = todo.pop()
        if nsid in seen:
            continue
        seen.add(nsid)
        with open(os.path.join(root_dir, rel(nsid)), encoding="utf-8") as f:
            doc = json.load(f)
        out = []
        refs_of(doc, out)
        todo.extend(r.split("#")[0] for r in out if not r.startswith("#"))
    return seen


def full_refs(nsid, value):
    """The document with every ref in full: "#x" and "<nsid>#x" alike become "<nsid>#x"."""
    def norm(r):
        return nsid + r if r.startswith("#") else r
    if isinstance(value, list):
        return [full_refs(nsid, v) for v in value]
    if isinstance(value, dict):
        return {k: (norm(v) if k == "ref" and isinstance(v, str)
                    else [norm(r) for r in v] if k == "refs" and isinstance(v, list)
                    else full_refs(nsid, v))
                for k, v in value.items()}
    return value


def listed(out_dir):
    found = set()
    for top, _, files in os.walk(out_dir):
        for name in files:
            if name.endswith(".json"):
                found.add(os.path.relpath(os.path.join(top, name), out_dir)[:-5].replace(os.sep, "."))
    return found


def check(out_dir, source_dir, exact):
    problems = []
    want = closure(out_dir)
    have = listed(out_dir)
    for nsid in sorted(want - have):
        problems.append(f"{nsid}: referred to, not vendored")
    for nsid in sorted(have - want):
        problems.append(f"{nsid}: vendored, referred to by nothing")
    for nsid in sorted(want & have):
        ours, theirs = os.path.join(out_dir, rel(nsid)), os.path.join(source_dir, rel(nsid))
        if not os.path.exists(theirs):
            problems.append(f"{nsid}: not in {source_dir}")
            continue
        if exact:
            with open(ours, "rb") as a, open(theirs, "rb") as b:
                same = a.read() == b.read()
        else:
            with open(ours, encoding="utf-8") as a, open(theirs, encoding="utf-8") as b:
                same = full_refs(nsid, json.load(a)) == full_refs(nsid, json.load(b))
        if not same:
            problems.append(f"{nsid}: differs from {theirs}")
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(want & have)} documents checked against {source_dir}, {len(problems)} problems")
    return 1 if problems else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "--write":
        for nsid in sorted(closure(argv[2])):
            dest = os.path.join(argv[3], rel(nsid))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(os.path.join(argv[2], rel(nsid)), dest)
        return 0
    if len(argv) in (4, 5) and argv[1] == "--check":
        exact = len(argv) == 5 and argv[4] == "--exact"
        return check(argv[2], argv[3], exact)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
