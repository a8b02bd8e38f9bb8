#!/usr/bin/env python3
"""debian/changelog from CHANGELOG.md (make deb): one entry per version, newest first, each
top-level bullet of each section (Added, Changed, Upgrading, ...) as one item, so that the package
says what CHANGELOG.md says. The section under work ("## [Unreleased] — X.Y.Z") is version
X.Y.Z, dated DATE (the commit's: scripts/make-deb.sh); released ones by their own date.

Usage: deb-changelog.py CHANGELOG.md VERSION DATE_RFC2822 > debian/changelog"""
import datetime, re, sys, textwrap

MAINTAINER = 'tweetkeeper maintainers <tweetkeeper@users.noreply.github.com>'
path, current, current_date = sys.argv[1:4]
versions = []  # (version, date, [(section, text)])
section = None
item = None
for line in open(path, encoding='utf-8'):
    line = line.rstrip('\n')
    m = re.match(r'^## \[(Unreleased|[0-9.]+)\]\s*(?:—\s*(\S+))?', line)
    if m:
        if m.group(1) == 'Unreleased':
            version, date = current, current_date
        else:
            version = m.group(1)
            day = datetime.datetime.strptime(m.group(2), '%Y-%m-%d').replace(tzinfo=datetime.timezone.utc)
            date = day.strftime('%a, %d %b %Y %H:%M:%S +0000')
        versions.append((version, date, []))
        section = item = None
        continue
    if not versions:
        continue
    m = re.match(r'^### (.+)$', line)
    if m:
        section, item = m.group(1).strip(), None
        continue
    if line.startswith('- '):
        item = [section or 'Changes', line[2:].strip()]
        versions[-1][2].append(item)
    elif line.startswith('  ') and item is not None and line.strip():
        item[1] += ' ' + line.strip()
    elif not line.strip():
        item = None
if not versions or versions[0][0] != current:
    sys.exit(f'deb-changelog: CHANGELOG.md has no section for {current} first')
out = []
for version, date, items in versions:
    out.append(f'tweetkeeper ({version}) bookworm; urgency=medium\n')
    if not items:
        items = [['Changes', f'tweetkeeper {version}.']]
    for sec, text in items:
        out.append(textwrap.fill(f'{sec}: {text}', width=78, initial_indent='  * ', subsequent_indent='    ',
                                 break_long_words=False, break_on_hyphens=False))
    out.append(f'\n -- {MAINTAINER}  {date}\n')
sys.stdout.write('\n'.join(out))
