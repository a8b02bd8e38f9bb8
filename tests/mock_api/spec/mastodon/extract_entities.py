#!/usr/bin/env python3
"""The attributes of the Mastodon entities a Status holds, read from the documentation's
entity pages (mastodon/documentation, content/en/entities/*.md): for each attribute its
type, whether it may be null ({{<nullable>}} or "or null"), whether it may be left out
({{%optional%}}) and the version that added it. client_check.mjs checks the mock's answers,
as the masto client reads them, against what this writes.

    extract_entities.py DOCS_DIR [SOURCE]           print the JSON
    extract_entities.py --check FILE DOCS_DIR       exit 1 unless FILE is what DOCS_DIR gives

DOCS_DIR is a checkout of mastodon/documentation (the directory holding content/); SOURCE is
recorded as where the pages came from (with --check, FILE's own is kept).
"""
import json
import re
import sys
from pathlib import Path

# The pages read, and of each the sections kept ("Attributes" is the page's own entity).
PAGES = {
    "Status": ["Attributes", "Status::Mention", "Status::Tag"],
    "Account": ["Attributes", "Field", "AccountRole"],
    "MediaAttachment": ["Attributes"],
    "Poll": ["Attributes", "Poll::Option"],
    "PreviewCard": ["Attributes"],
    "PreviewCardAuthor": ["Attributes"],
    "CustomEmoji": ["Attributes"],
    "QuoteApproval": ["Attributes"],
    "FeatureApproval": ["Attributes"],
}

HEADING = re.compile(r"^#{3,4} `([^`]+)`(.*)$")
SECTION = re.compile(r"^## (.+?)(?: entity)?(?: attributes)?(?: \{#[^}]*\})?\s*$")
VERSION = re.compile(r"^(\d+\.\d+\.\d+)\b.*- (added|removed)")
REF = re.compile(r"\[([A-Za-z:]+)\]\(")


def parse_type(text):
    """'{{<nullable>}} Array of [MediaAttachment](...)' -> {"type": "array", "items": "MediaAttachment", ...}"""
    nullable = "{{<nullable>}}" in text or "{{%nullable%}}" in text or re.search(r"\bor null\b", text) is not None
    text = text.replace("{{<nullable>}}", "").strip()
    out = {"nullable": nullable}
    refs = REF.findall(text)
    if text.startswith("Array of"):
        out["type"] = "array"
        if len(refs) == 1:
            out["items"] = refs[0]
        elif text.startswith("Array of String"):
            out["items"] = "string"
        elif text.startswith("Array of Integer"):
            out["items"] = "integer"
    elif text.startswith("["):
        out["type"] = "object"
        if len(refs) == 1:
            out["entity"] = refs[0]
    else:
        word = re.match(r"[A-Za-z]*", text).group(0)
        out["type"] = {"String": "string", "Integer": "integer", "Boolean": "boolean", "Hash": "object",
                       "Float": "number", "Number": "number"}.get(word, "unknown:" + word)
    return out


def parse_page(text, title):
    """{entity: {attribute: {...}}} for the sections of PAGES[title]."""
    keep = PAGES[title]
    entities = {}
    section = None
    current = None
    in_history = False
    heading_nullable = False
    for line in text.splitlines():
        line = line.rstrip()
        m = SECTION.match(line)
        if m and not line.startswith("###"):
            name = m.group(1).strip()
            section = title if name == "Attributes" else name
            if name not in keep and name != "Attributes":
                section = None
            elif name == "Attributes" and "Attributes" not in keep:
                section = None
            current = None
            continue
        if section is None:
            continue
        m = HEADING.match(line)
        if m:
            name, marks = m.group(1), m.group(2)
            entity = section
            if "[" in name:  # application[name]: an attribute of the Hash `application`
                parts = re.findall(r"[^\[\]]+", name)
                if len(parts) != 2:
                    current = None  # deeper (meta[focus][x]): inside a free-form Hash
                    continue
                entity, name = f"{section}::{parts[0]}", parts[1]
            current = {"optional": "{{%optional%}}" in marks, "added": None}
            heading_nullable = "{{%nullable%}}" in marks
            if "{{%removed%}}" in marks:
                current["removed"] = True
            entities.setdefault(entity, {})[name] = current
            in_history = False
            continue
        if current is None:
            continue
        if line.startswith("**Type:**"):
            current.update(parse_type(line[len("**Type:**"):].rstrip("\\").strip()))
            current["nullable"] = current["nullable"] or heading_nullable
        elif line.startswith("**Version history:**"):
            in_history = True
        elif in_history:
            v = VERSION.match(line)
            if v and v.group(2) == "added" and current["added"] is None:
                current["added"] = v.group(1)
            elif v and v.group(2) == "removed":
                current["removed"] = True
            elif not line:
                in_history = False
    return entities


def extract(docs_dir, source):
    entities = {}
    for title in PAGES:
        text = (Path(docs_dir) / "content" / "en" / "entities" / f"{title}.md").read_text(encoding="utf-8")
        entities.update(parse_page(text, title))
    return {"source": source, "entities": entities}


def dump(doc):
    """The JSON with one attribute a line, so that a change of the documentation reads as a diff."""
    one = lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True)
    entities = ",\n".join(
        f"  {one(name)}: {{\n" + ",\n".join(f"   {one(a)}: {one(v)}" for a, v in attrs.items()) + "\n  }"
        for name, attrs in doc["entities"].items())
    return f'{{\n "source": {one(doc["source"])},\n "entities": {{\n{entities}\n }}\n}}'


def main(argv):
    if len(argv) >= 4 and argv[1] == "--check":
        have = json.loads(Path(argv[2]).read_text(encoding="utf-8"))
        want = extract(argv[3], have.get("source"))
        if have != want:
            for name in sorted(set(have["entities"]) | set(want["entities"])):
                if have["entities"].get(name) != want["entities"].get(name):
                    print(f"{argv[2]}: {name} differs from what {argv[3]} gives", file=sys.stderr)
            return 1
        return 0
    if len(argv) in (2, 3) and not argv[1].startswith("-"):
        source = argv[2] if len(argv) == 3 else argv[1]
        print(dump(extract(argv[1], source)))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
