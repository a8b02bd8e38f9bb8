#!/usr/bin/python3
"""Extracts from Bluesky's lexicons (the atproto repository's lexicons/ folder) the definitions
the mock's Bluesky answers are checked against: app.bsky.feed.getPosts and
com.atproto.identity.resolveHandle (their main defs, whole), app.bsky.feed.defs#postView,
app.bsky.actor.defs#profileViewBasic and com.atproto.label.defs#label, as the lexicons give them.

    extract_lexicons.py ATPROTO_LEXICONS_DIR > lexicons.json
    extract_lexicons.py --check lexicons.json ATPROTO_LEXICONS_DIR   (exit 1 if it differs)
"""
import json
import os
import sys

WANTED = [
    ("app/bsky/feed/getPosts.json", "main", "app.bsky.feed.getPosts"),
    ("com/atproto/identity/resolveHandle.json", "main", "com.atproto.identity.resolveHandle"),
    ("app/bsky/feed/defs.json", "postView", "app.bsky.feed.defs#postView"),
    ("app/bsky/actor/defs.json", "profileViewBasic", "app.bsky.actor.defs#profileViewBasic"),
    ("com/atproto/label/defs.json", "label", "com.atproto.label.defs#label"),
]


def extract(root):
    out = {}
    for path, name, key in WANTED:
        with open(os.path.join(root, path), encoding="utf-8") as f:
            out[key] = json.load(f)["defs"][name]
    return json.dumps(out, indent=1, sort_keys=True) + "\n"


def main(argv):
    if len(argv) == 4 and argv[1] == "--check":
        with open(argv[2], encoding="utf-8") as f:
            if f.read() != extract(argv[3]):
                print(f"{argv[2]} differs from what {argv[3]} gives", file=sys.stderr)
                return 1
        return 0
    if len(argv) == 2:
        sys.stdout.write(extract(argv[1]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
