#!/usr/bin/python3
"""Asks a running mock for a sample of every kind of answer it gives as Bluesky's AppView and
checks each against the lexicons (the extract in lexicons-d6296a1c.json) and FACTS.md section 1:

- a 200 of getPosts is the method's output schema: `posts`, each an app.bsky.feed.defs#postView
  (required uri, cid, author (profileViewBasic: did, handle), record, indexedAt; integer counts;
  formats at-uri, did, handle, datetime; labels as com.atproto.label.defs#label);
- a 200 of resolveHandle is its output schema (`did`, format did);
- an error is XRPC's envelope {"error": name, "message": text}, with the names and messages
  FACTS.md quotes (25 URIs at most, a malformed URI by index, an unresolvable handle);
- every answer has RateLimit-Limit, -Remaining, -Reset (epoch seconds) and -Policy.

    validate_bluesky.py LEXICONS_JSON BASE_URL

Prints one "ok - ..." or "not ok - ..." line per check; exits 1 if any failed.
"""
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

FORMATS = {
    "at-uri": re.compile(r"^at://[A-Za-z0-9._:%-]+(/[a-zA-Z0-9.-]+(/[A-Za-z0-9._~:-]+)?)?$"),
    "did": re.compile(r"^did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]$"),
    "handle": re.compile(r"^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$"),
    "datetime": re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"),
    # (A CID v1 in base32, as the AppView writes record CIDs: 'b' and 58 characters.
    # client_check.mjs parses it with multiformats and recomputes it from the record.)
    "cid": re.compile(r"^b[a-z2-7]{58}$"),
    "uri": re.compile(r"^[a-z][a-z0-9+.-]*:\S+$"),
    "language": re.compile(r"^[a-zA-Z]{2,3}(-[a-zA-Z0-9]+)*$"),
}

failures = 0


def report(ok, what, detail=""):
    global failures
    print(("ok - " if ok else "not ok - ") + what + ("" if ok or not detail else f": {detail}"))
    if not ok:
        failures += 1


def check(value, schema, lex, where, errors):
    """A small lexicon validator: the types and constraints these defs use."""
    t = schema.get("type")
    if t == "ref":
        ref = schema["ref"]
        return check(value, lex[ref], lex, where, errors) if ref in lex else None
    if t in ("unknown", "union"):
        if t == "unknown" and not isinstance(value, dict):
            errors.append(f"{where}: unknown must be an object")
        return None
    if t == "object":
        if not isinstance(value, dict):
            errors.append(f"{where}: not an object")
            return None
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{where}: required {name} missing")
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                check(value[name], sub, lex, f"{where}.{name}", errors)
        return None
    if t == "array":
        if not isinstance(value, list):
            errors.append(f"{where}: not an array")
            return None
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{where}: more than {schema['maxLength']} items")
        for i, item in enumerate(value):
            check(item, schema.get("items", {}), lex, f"{where}[{i}]", errors)
        return None
    if t == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append(f"{where}: not an integer")
        elif "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: below {schema['minimum']}")
        return None
    if t == "boolean":
        if not isinstance(value, bool):
            errors.append(f"{where}: not a boolean")
        return None
    if t == "string":
        if not isinstance(value, str):
            errors.append(f"{where}: not a string")
        elif "format" in schema and schema["format"] in FORMATS and not FORMATS[schema["format"]].match(value):
            errors.append(f"{where}: {value!r} is not a {schema['format']}")
        return None
    return None


def get(base, path, params):
    url = base + path + "?" + urllib.parse.urlencode(params, doseq=True)
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def check_headers(headers, what):
    h = {k.lower(): v for k, v in headers.items()}
    ok = all(re.fullmatch(r"\d+", h.get(k, "")) for k in ("ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"))
    ok = ok and re.fullmatch(r"\d+;w=\d+", h.get("ratelimit-policy", "")) is not None
    report(ok, f"{what}: RateLimit-Limit, -Remaining, -Reset and -Policy", json.dumps(h))


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        lex = json.load(f)
    base = argv[2].rstrip("/")
    did = "did:plc:z72i7hdynmk6r22z27h6tvur"
    chars = "234567abcdefghijklmnopqrstuvwxyz"
    # Record keys with clock ids 0..24: the mock deletes 7 (% 53), takes down 11 (% 61), leaves out 13 (% 97).
    uris = [f"at://{did}/app.bsky.feed.post/3l6oveex3ia{chars[k // 32]}{chars[k % 32]}" for k in range(25)]
    out = lex["app.bsky.feed.getPosts"]["output"]["schema"]

    status, headers, body = get(base, "/xrpc/app.bsky.feed.getPosts", {"uris": uris})
    doc = json.loads(body)
    errors = []
    check(doc, out, lex, "getPosts", errors)
    for i, post in enumerate(doc.get("posts", [])):
        check(post, lex["app.bsky.feed.defs#postView"], lex, f"posts[{i}]", errors)
    report(status == 200 and not errors and len(doc["posts"]) > 0,
           f"getPosts of 25 URIs: {len(doc.get('posts', []))} postViews valid against the lexicon", "; ".join(errors[:5]))
    counts = ["likeCount", "repostCount", "replyCount", "quoteCount", "bookmarkCount"]
    report(all(all(c in p for c in counts) for p in doc["posts"]),
           "every postView has all five counts (the reference AppView fills them)")
    report(all(p["uri"] in uris for p in doc["posts"]) and len({p["uri"] for p in doc["posts"]}) == len(doc["posts"]),
           "only requested posts, each once")
    report([p["uri"] for p in doc["posts"]] != [u for u in uris if u in {p["uri"] for p in doc["posts"]}],
           "not in the request's order (clients match by uri)")
    report(len(doc["posts"]) == 22, f"3 of 25 left out silently ({25 - len(doc['posts'])}), no error entries",
           json.dumps(list(doc)))
    check_headers(headers, "getPosts")

    status, headers, body = get(base, "/xrpc/app.bsky.feed.getPosts",
                                {"uris": uris + [f"at://{did}/app.bsky.feed.post/3l6oveex3iff2"]})
    report(status == 400 and json.loads(body) == {"error": "InvalidRequest",
                                                  "message": "Error: uris must not have more than 25 elements"},
           "26 URIs: 400 InvalidRequest, uris must not have more than 25 elements", body.decode())
    check_headers(headers, "a 400")
    status, _, body = get(base, "/xrpc/app.bsky.feed.getPosts", {"uris": [uris[0], "https://bsky.app/x"]})
    report(status == 400 and json.loads(body) == {"error": "InvalidRequest",
                                                  "message": "Error: uris/1 must be a valid at-uri"},
           "a malformed URI: 400 naming its index", body.decode())
    status, _, body = get(base, "/xrpc/app.bsky.feed.getPosts",
                          {"uris": [f"at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l"]})
    report(status == 200 and json.loads(body) == {"posts": []}, "a URI with a handle finds nothing", body.decode())
    # (A URI sent twice is answered once: the mock's own dedupe is unit-tested; over HTTP, the
    # server library already drops a repeated identical query parameter.)

    rh = lex["com.atproto.identity.resolveHandle"]
    status, headers, body = get(base, "/xrpc/com.atproto.identity.resolveHandle", {"handle": "alice.bsky.social"})
    errors = []
    check(json.loads(body), rh["output"]["schema"], lex, "resolveHandle", errors)
    report(status == 200 and not errors, "resolveHandle: a DID, valid against its output schema", "; ".join(errors))
    check_headers(headers, "resolveHandle")
    status, _, body = get(base, "/xrpc/com.atproto.identity.resolveHandle", {"handle": "gone.example.com"})
    report(status == 400 and json.loads(body) == {"error": "InvalidRequest", "message": "Unable to resolve handle"},
           "an unresolvable handle: 400 InvalidRequest, Unable to resolve handle (the AppView's words)", body.decode())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
