#!/usr/bin/env python3
"""Writes the part of X's official OpenAPI description (openapi.json, 2.159) that the mock
imitates: GET /2/tweets and GET /2/tweets/{id}, the users a follower reads (GET
/2/users/by/username/{username}, GET /2/users/{id}/tweets), the batch compliance jobs (POST and
GET /2/compliance/jobs, GET /2/compliance/jobs/{id}), their parameters, and every schema their
answers reach ($ref closure, plus the subtypes Problem's discriminator maps to), unchanged.

    extract_spec.py OPENAPI_JSON > x-api-tweets.json      (--check FILE: exit 1 if it differs)

The whole document is 750 KB and lives outside this repository; the extract is what
validate_answers.py checks the mock's answers against, and --check proves it is still exact.
"""
import json
import sys

# Each path with the methods the mock answers.
PATHS = {"/2/tweets": ["get"], "/2/tweets/{id}": ["get"], "/2/users/by/username/{username}": ["get"],
         "/2/users/{id}/tweets": ["get"], "/2/compliance/jobs": ["get", "post"], "/2/compliance/jobs/{id}": ["get"]}


def refs(node, out):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                out.add(value)
            elif key == "mapping" and isinstance(value, dict):  # a discriminator's subtypes
                out.update(v for v in value.values() if isinstance(v, str))
            else:
                refs(value, out)
    elif isinstance(node, list):
        for item in node:
            refs(item, out)


def extract(spec):
    paths = {p: {m: spec["paths"][p][m] for m in methods} for p, methods in PATHS.items()}
    components = {}
    todo, seen = set(), set()
    refs(paths, todo)
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        root, kind, name = ref[2:].split("/", 2)  # "#/components/schemas/Tweet"
        node = spec[root][kind][name]
        components.setdefault(kind, {})[name] = node
        refs(node, todo)
    return {
        "openapi": spec["openapi"],
        "info": {"title": spec["info"]["title"], "version": spec["info"]["version"],
                 "x-extract": "the operations the mock answers (tweets, users, compliance jobs) of X's "
                              "openapi.json with every schema they reach; made by "
                              "tests/mock_api/spec/extract_spec.py"},
        "paths": paths,
        "components": {k: dict(sorted(v.items())) for k, v in sorted(components.items())},
    }


def main():
    args = sys.argv[1:]
    check = None
    if args[:1] == ["--check"]:
        check, args = args[1], args[2:]
    with open(args[0]) as f:
        text = json.dumps(extract(json.load(f)), indent=1, sort_keys=False) + "\n"
    if check is None:
        sys.stdout.write(text)
        return 0
    with open(check) as f:
        if f.read() != text:
            print(f"{check} differs from what {args[0]} gives: run extract_spec.py again", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
