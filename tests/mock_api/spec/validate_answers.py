#!/usr/bin/python3
"""Asks a running mock API for a sample of every kind of answer it gives on GET /2/tweets and
GET /2/tweets/{id}, a follower's user reads and the batch compliance jobs (their whole flow through
the storage host, down to the results' lines), and checks each against X's official OpenAPI
description (the extract in x-api-tweets-2.159.json), X's documentation and FACTS.md:

- the body validates against the schema the spec gives for it: Get2TweetsResponse,
  Get2TweetsIdResponse, CreateComplianceJobResponse, ... for a 200, Problem for anything else, and every Problem (per-id errors
  in a 200 too) against the subtype its `type` maps to (the validator ignores the spec's
  discriminator, so the subtype is picked here);
- the content type is the one the spec pairs with that schema (application/json for a 200,
  application/problem+json for a Problem);
- every answer has the x-rate-limit-* headers (FACTS.md) and a Date header;
- where the spec is lax, FACTS.md: a tweet has id, text and edit_history_tweet_ids; asked-for
  public_metrics has all six counts, the two the spec types int32 within int32; created_at is
  RFC 3339 with milliseconds; no empty `data`, `errors` or `includes` lists.

    validate_answers.py SPEC_JSON BASE_URL     (the mock must run with the options spec.sh gives it)

Prints one "ok - ..." or "not ok - ..." line per check; exits 1 if any failed.
Uses Debian's python3-jsonschema (Draft 4, which OpenAPI 3.0 schemas are close to).
"""
import email.utils
import json
import re
import sys
import time
import urllib.error
import urllib.request

import jsonschema

SPEC_PATH, BASE = sys.argv[1], sys.argv[2].rstrip("/")
with open(SPEC_PATH) as f:
    SPEC = json.load(f)
RESOLVER = jsonschema.RefResolver.from_schema(SPEC)
MAPPING = SPEC["components"]["schemas"]["Problem"]["discriminator"]["mapping"]
failures = 0


def check(name, ok, detail=""):
    global failures
    if ok:
        print(f"ok - {name}")
    else:
        failures += 1
        print(f"not ok - {name}")
        for line in str(detail).splitlines()[:6]:
            print(f"#   {line}")


def errors_against(schema_name, instance):
    validator = jsonschema.Draft4Validator({"$ref": f"#/components/schemas/{schema_name}"}, resolver=RESOLVER)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(instance)]


def problem_errors(problem):
    """The base Problem, then the subtype its type maps to (e.g. resource-not-found)."""
    found = errors_against("Problem", problem)
    target = MAPPING.get(problem.get("type")) if isinstance(problem, dict) else None
    if target is None:
        found.append(f"type {problem.get('type')!r} is none the spec maps to a Problem subtype")
    else:
        found += errors_against(target.rsplit("/", 1)[1], problem)
    return found


def fetch(path, token, method="GET", data=None, content_type="application/json"):
    """A request to the mock (or, for a URL, anywhere): data is JSON (a dict) or text (a str)."""
    body = None if data is None else (data if isinstance(data, str) else json.dumps(data)).encode()
    request = urllib.request.Request(path if "://" in path else BASE + path, method=method, data=body)
    if body is not None:
        request.add_header("Content-Type", content_type)
    if token is not None:
        request.add_header("Authorization", token if " " in token else f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
COUNTS = ["retweet_count", "reply_count", "like_count", "quote_count", "bookmark_count", "impression_count"]


def facts_errors(tweet, want_metrics):
    found = [f"tweet lacks {k}" for k in ("id", "text", "edit_history_tweet_ids") if k not in tweet]
    if want_metrics:
        metrics = tweet.get("public_metrics", {})
        found += [f"public_metrics lacks {c}" for c in COUNTS if c not in metrics]
        found += [f"{c} {metrics[c]} is not int32" for c in ("impression_count", "bookmark_count")
                  if isinstance(metrics.get(c), int) and not -2**31 <= metrics[c] < 2**31]
    if "created_at" in tweet and not RFC3339_MS.match(str(tweet["created_at"])):
        found.append(f"created_at {tweet['created_at']!r} is not like 2020-02-14T19:00:55.000Z")
    return found


calls = 0


def answer(name, path, status, schema, token="", want_metrics=False, method="GET", expect=None, data=None):
    """One request (a token of its own unless given: the mock allows 3 per window and token);
    checks status, content type, headers and body. Returns the body."""
    global calls
    calls += 1
    got, headers, raw = fetch(path, token if token != "" else f"spec-token-{calls}", method, data)
    check(f"{name}: HTTP {status}", got == status, f"got {got}: {raw[:300]!r}")
    media = (headers.get("Content-Type") or "").split(";")[0].strip()
    wanted = "application/problem+json" if schema == "Problem" else "application/json"
    check(f"{name}: content type {wanted}", media == wanted, f"got {headers.get('Content-Type')!r}")
    missing = [h for h in ("x-rate-limit-limit", "x-rate-limit-remaining", "x-rate-limit-reset")
               if not (headers.get(h) or "").isdigit()]
    check(f"{name}: x-rate-limit-* headers", not missing, f"missing or not a number: {missing}")
    date = headers.get("Date")
    try:
        skew = abs(email.utils.parsedate_to_datetime(date).timestamp() - time.time())
    except (TypeError, ValueError):
        skew = None
    check(f"{name}: a Date header", skew is not None and skew < 120, f"Date: {date!r}")
    try:
        body = json.loads(raw)
    except ValueError as error:
        check(f"{name}: body is JSON", False, error)
        return None
    found = problem_errors(body) if schema == "Problem" else errors_against(schema, body)
    if schema.startswith("Get2") and isinstance(body, dict):
        data = body.get("data")
        tweets = [] if not schema.startswith(("Get2Tweets", "Get2UsersIdTweets")) else \
            data if isinstance(data, list) else [data] if isinstance(data, dict) else []
        for tweet in tweets:
            found += facts_errors(tweet, want_metrics)
        for problem in body.get("errors", []) if isinstance(body.get("errors"), list) else []:
            found += [f"errors[]: {e}" for e in problem_errors(problem)] if isinstance(problem, dict) \
                else [f"errors[]: {problem!r} is no object"]
        includes = body.get("includes")
        if isinstance(includes, dict) and not any(includes.values()):
            found.append("includes is there but empty")
    check(f"{name}: body conforms to {schema}", not found, "\n".join(found))
    if expect is not None:
        try:
            holds = bool(expect[1](body))
        except (KeyError, TypeError, IndexError, AttributeError):
            holds = False
        check(f"{name}: {expect[0]}", holds, json.dumps(body)[:300])
    return body


def snowflake(ms_ago, n):
    return str(((int(time.time() * 1000) - ms_ago - 1288834974657) << 22) + n)


# Ids an hour old; the mock runs with --deleted-every 53 --protected-every 61 --omitted-every 97.
ids = [snowflake(3_600_000, n) for n in range(1, 400)]
kind = {i: ("omitted" if int(i) % 97 == 13 else "deleted" if int(i) % 53 == 7 else
            "protected" if int(i) % 61 == 11 else "visible") for i in ids}
pick = {k: [i for i in ids if kind[i] == k] for k in ("visible", "deleted", "protected", "omitted")}
batch = pick["visible"][:3] + pick["deleted"][:1] + pick["protected"][:1] + pick["omitted"][:1]
metrics = "tweet.fields=public_metrics,created_at"

answer("found, deleted, protected and left out", f"/2/tweets?ids={','.join(batch)}&{metrics}", 200,
       "Get2TweetsResponse", want_metrics=True,
       expect=("three found, two errors, the left-out id in neither",
               lambda b: len(b.get("data", [])) == 3 and len(b.get("errors", [])) == 2
               and pick["omitted"][0] not in json.dumps(b)))
all_fields = ("tweet.fields=" + ",".join(SPEC["components"]["parameters"]["TweetFieldsParameter"]
                                          ["schema"]["items"]["enum"]))
all_users = ("user.fields=" + ",".join(SPEC["components"]["parameters"]["UserFieldsParameter"]
                                        ["schema"]["items"]["enum"]))
all_expansions = ("expansions=" + ",".join(SPEC["components"]["parameters"]["TweetExpansionsParameter"]
                                            ["schema"]["items"]["enum"]))
answer("every tweet.field, expansion and user.field", f"/2/tweets?ids={','.join(pick['visible'][:5])}"
       f"&{all_fields}&{all_expansions}&{all_users}", 200, "Get2TweetsResponse", want_metrics=True,
       expect=("includes.users holds the authors",
               lambda b: len(b.get("includes", {}).get("users", [])) >= 1))
answer("nothing found", f"/2/tweets?ids={pick['deleted'][0]},{pick['protected'][0]}", 200, "Get2TweetsResponse",
       expect=("no data key", lambda b: "data" not in b))
answer("before Snowflake", "/2/tweets?ids=20,28000000000&tweet.fields=created_at", 200, "Get2TweetsResponse",
       expect=("tweet 20's real time, none invented for the other",
               lambda b: {t["id"]: t.get("created_at") for t in b["data"]}
               == {"20": "2006-03-21T20:50:14.000Z", "28000000000": None}))
answer("single: found", f"/2/tweets/{pick['visible'][0]}?{metrics}&expansions=author_id", 200,
       "Get2TweetsIdResponse", want_metrics=True, expect=("data is one tweet", lambda b: isinstance(b["data"], dict)))
answer("single: deleted", f"/2/tweets/{pick['deleted'][0]}", 200, "Get2TweetsIdResponse",
       expect=("an error, no data", lambda b: "data" not in b and len(b["errors"]) == 1))
answer("single: protected", f"/2/tweets/{pick['protected'][0]}", 200, "Get2TweetsIdResponse",
       expect=("a not-authorized error, no data",
               lambda b: "data" not in b and b["errors"][0]["type"].endswith("/not-authorized-for-resource")))
answer("single: left out", f"/2/tweets/{pick['omitted'][0]}", 200, "Get2TweetsIdResponse",
       expect=("nothing at all", lambda b: b == {}))
answer("invalid ids", "/2/tweets?ids=1,x", 400, "Problem")
answer("no ids", "/2/tweets?ids=", 400, "Problem")
answer("101 ids", f"/2/tweets?ids={','.join(ids[:101])}", 400, "Problem")
answer("unknown tweet.field", "/2/tweets?ids=20&tweet.fields=likes", 400, "Problem")
answer("unknown expansion", "/2/tweets?ids=20&expansions=author", 400, "Problem")
answer("single: invalid id", "/2/tweets/x1", 400, "Problem")
answer("no token", "/2/tweets?ids=20", 401, "Problem", token=None)
answer("a malformed Authorization header", "/2/tweets?ids=20", 401, "Problem", token="Bearer two words")
fetch("/mock/revoke?token=revoked-token", token=None, method="POST")
answer("a revoked token", "/2/tweets?ids=20", 403, "Problem", token="revoked-token")
fetch("/mock/cap?token=capped-token", token=None, method="POST")
answer("a usage-capped token", "/2/tweets?ids=20", 429, "Problem", token="capped-token",
       expect=("usage-capped", lambda b: b["type"].endswith("/usage-capped")))
for _ in range(3):  # the mock allows 3 requests per window
    fetch("/2/tweets?ids=20", token="busy-token")
answer("a spent window", "/2/tweets?ids=20", 429, "Problem", token="busy-token")
_, headers, _ = fetch("/2/tweets?ids=20", token="busy-token")
check("a spent window: x-rate-limit-remaining is 0", headers.get("x-rate-limit-remaining") == "0",
      headers.get("x-rate-limit-remaining"))

# A follower's reads (issue 38): the mock's posting users (mock_100000 on) and their timelines.
user = answer("user by username", "/2/users/by/username/mock_100000?user.fields=protected", 200,
              "Get2UsersByUsernameUsernameResponse",
              expect=("the user, not protected", lambda b: b["data"]["username"] == "mock_100000"
                      and b["data"]["protected"] is False))
answer("user by username: no such user", "/2/users/by/username/gone_for_good", 200,
       "Get2UsersByUsernameUsernameResponse",
       expect=("a resource-not-found error, no data",
               lambda b: "data" not in b and b["errors"][0]["type"].endswith("/resource-not-found")))
locked = answer("user by username: protected", "/2/users/by/username/locked_away?user.fields=protected", 200,
                "Get2UsersByUsernameUsernameResponse", expect=("protected", lambda b: b["data"]["protected"] is True))
answer("user by username: invalid", "/2/users/by/username/not-valid!", 400, "Problem")
start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 600))
timeline = answer("user timeline", f"/2/users/100000/tweets?max_results=100&tweet.fields=created_at&exclude=retweets"
                  f"&start_time={start}", 200, "Get2UsersIdTweetsResponse",
                  expect=("newest first, meta counting them, a next_token for the rest",
                          lambda b: b["meta"]["result_count"] == len(b["data"]) == 100
                          and b["meta"]["newest_id"] == b["data"][0]["id"] and "next_token" in b["meta"]
                          and all(int(a["id"]) > int(c["id"]) for a, c in zip(b["data"], b["data"][1:]))))
if timeline:
    answer("user timeline: the next page", f"/2/users/100000/tweets?max_results=100&start_time={start}"
           f"&pagination_token={timeline['meta']['next_token']}", 200, "Get2UsersIdTweetsResponse",
           expect=("older than the first page", lambda b: int(b["data"][0]["id"]) < int(timeline["data"][-1]["id"])))
    answer("user timeline: nothing since the newest", f"/2/users/100000/tweets?since_id={timeline['meta']['newest_id']}"
           "&max_results=5", 200, "Get2UsersIdTweetsResponse",
           expect=("only posts newer than since_id, counted in meta",
                   lambda b: all(int(t["id"]) > int(timeline["meta"]["newest_id"]) for t in b.get("data", []))
                   and b["meta"]["result_count"] == len(b.get("data", []))))
if locked:
    answer("user timeline: protected", f"/2/users/{locked['data']['id']}/tweets", 200, "Get2UsersIdTweetsResponse",
           expect=("a not-authorized error", lambda b: b["errors"][0]["type"].endswith("/not-authorized-for-resource")))
answer("user timeline: max_results 4", "/2/users/100000/tweets?max_results=4", 400, "Problem")


# X's batch compliance jobs (issue 53; the mock runs with --compliance-upload-seconds 8
# --compliance-processing-ms 300: time enough for the upload on a busy machine, and an expiry the
# check waits for): one app's whole flow. Its token is the same throughout: jobs are the app's.
APP = "spec-compliance-app"
made = answer("compliance: create a tweets job", "/2/compliance/jobs", 200, "CreateComplianceJobResponse", token=APP,
              method="POST", data={"type": "tweets", "name": "spec-job"},
              expect=("created, named, its URLs signed on a host of their own",
                      lambda b: b["data"]["status"] == "created" and b["data"]["name"] == "spec-job"
                      and not b["data"]["upload_url"].startswith(BASE) and "X-Goog-Signature=" in b["data"]["upload_url"]
                      and "X-Goog-Expires=8&" in b["data"]["upload_url"]))
answer("compliance: a second active job of a type", "/2/compliance/jobs", 409, "Problem", token=APP, method="POST",
       data={"type": "tweets"}, expect=("a conflict problem", lambda b: b["type"].endswith("/conflict")))
answer("compliance: an unknown type", "/2/compliance/jobs", 400, "Problem", token=APP, method="POST",
       data={"type": "likes"})
answer("compliance: a name of 65 characters", "/2/compliance/jobs", 400, "Problem", token=APP, method="POST",
       data={"type": "users", "name": "n" * 65})
answer("compliance: no token", "/2/compliance/jobs?type=tweets", 401, "Problem", token=None)
answer("compliance: status=expired is no filter the spec has", "/2/compliance/jobs?type=tweets&status=expired", 400,
       "Problem", token=APP)
answer("compliance: none of a type", "/2/compliance/jobs?type=users", 200, "Get2ComplianceJobsResponse", token=APP,
       expect=("no data, a count of 0", lambda b: "data" not in b and b["meta"]["result_count"] == 0))
if made:
    job = made["data"]
    # Visible posts by four authors: one post deleted, one author suspended, two left alone.
    authors = {t["id"]: t["author_id"] for t in json.loads(fetch(
        f"/2/tweets?ids={','.join(pick['visible'][10:40])}&tweet.fields=author_id", "spec-author")[2])["data"]}
    distinct = list({a: i for i, a in reversed(list(authors.items()))}.values())
    gone_post, by_suspended, fine, other = distinct[:4]
    author = authors[by_suspended]
    fetch("/mock/gone", None, "POST", {"x": [{"post": gone_post, "reason": "deleted"},
                                             {"user": author, "reason": "suspended"}]})
    answer("a post made gone and a suspended author's", f"/2/tweets?ids={gone_post},{by_suspended},{fine}", 200,
           "Get2TweetsResponse",
           expect=("not found, not authorized, and the other found",
                   lambda b: [t["id"] for t in b["data"]] == [fine]
                   and {e["resource_id"]: e["type"].rsplit("/", 1)[1] for e in b["errors"]}
                   == {gone_post: "resource-not-found", by_suspended: "not-authorized-for-resource"}))
    uploaded = [gone_post, by_suspended, fine, pick["deleted"][0], pick["protected"][0], other]
    got, _, raw = fetch(job["upload_url"], None, "PUT", "\n".join(uploaded) + "\n", "text/plain")
    check("compliance: the upload (PUT text/plain, no token) is taken: HTTP 200", got == 200, raw[:300])
    answer("compliance: the job by id", f"/2/compliance/jobs/{job['id']}", 200, "Get2ComplianceJobsIdResponse", token=APP,
           expect=("in progress or complete", lambda b: b["data"]["status"] in ("in_progress", "complete")))
    deadline = time.time() + 20
    while time.time() < deadline and json.loads(fetch(f"/2/compliance/jobs/{job['id']}", APP)[2])["data"]["status"] != "complete":
        time.sleep(0.1)
    answer("compliance: the job, complete", f"/2/compliance/jobs/{job['id']}", 200, "Get2ComplianceJobsIdResponse",
           token=APP, expect=("complete", lambda b: b["data"]["status"] == "complete"))
    answer("compliance: the app's jobs", "/2/compliance/jobs?type=tweets&status=complete", 200,
           "Get2ComplianceJobsResponse", token=APP,
           expect=("this one, counted", lambda b: [j["id"] for j in b["data"]] == [job["id"]]
                   and b["meta"]["result_count"] == 1))
    got, headers, raw = fetch(job["download_url"], None)
    lines = [json.loads(line) for line in raw.decode().splitlines()] if got == 200 else []
    check("compliance: the download (no token): HTTP 200, a JSON object a line", got == 200 and raw.endswith(b"\n"),
          raw[:300])
    want = {gone_post: ("deleted", True), by_suspended: ("suspended", True), pick["deleted"][0]: ("deleted", False),
            pick["protected"][0]: ("protected", False)}
    seen = {line.get("id"): (line.get("reason"), "redacted_at" in line) for line in lines}
    check("compliance: a line for each id out of compliance, with its reason (redacted_at for those made gone), "
          "none for the others", seen == want, f"got {seen}")
    bad = [line for line in lines if line.get("action") != "delete" or not RFC3339_MS.match(line.get("created_at", ""))
           or ("redacted_at" in line and not RFC3339_MS.match(line["redacted_at"]))
           or set(line) - {"id", "action", "created_at", "redacted_at", "reason"}]
    check("compliance: each line is {id, action: delete, created_at, redacted_at?, reason}, times as X's",
          lines and not bad, bad[:2])
    late = answer("compliance: a users job", "/2/compliance/jobs", 200, "CreateComplianceJobResponse", token=APP,
                  method="POST", data={"type": "users"})
    if late:
        deadline = time.time() + 30
        while time.time() < deadline and \
                json.loads(fetch(f"/2/compliance/jobs/{late['data']['id']}", APP)[2])["data"]["status"] != "expired":
            time.sleep(0.1)
        answer("compliance: nothing uploaded in time", f"/2/compliance/jobs/{late['data']['id']}", 200,
               "Get2ComplianceJobsIdResponse", token=APP, expect=("expired", lambda b: b["data"]["status"] == "expired"))
        got, headers, raw = fetch(late["data"]["upload_url"], None, "PUT", "1\n", "text/plain")
        check("compliance: an upload after the URL expired: 400 ExpiredToken, as Cloud Storage answers",
              got == 400 and b"<Code>ExpiredToken</Code>" in raw
              and (headers.get("Content-Type") or "").startswith("application/xml"), f"{got} {raw[:300]!r}")

print(f"# {failures} failed")
sys.exit(1 if failures else 0)
