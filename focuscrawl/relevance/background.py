"""The background corpus: what "off topic" looks like when a user has on-topic examples only.

A user starting a focused crawl has a few pages she likes, or a few words; nobody has the pages
she does not want. The classifier still needs a contrast, so focuscrawl ships one: short
pseudo-pages made of the long descriptions of Debian packages, a few hundred KB of ordinary
English prose about everything software touches (games, science, sound, mail, mathematics,
electronics, education, editors...), sampled over Debian's sections.

Source and licence: the package descriptions of Debian 12 ("bookworm", main), read from the
archive's package lists (``Packages`` for each package's section, ``Translation-en`` for its long
description). Each description is its package's own
text (its ``debian/control``), distributed by Debian under that package's DFSG-free licence; every
pseudo-page records the packages it was made of (``packages``), so each text's licence can be
looked up (``/usr/share/doc/PACKAGE/copyright``). Rebuild it with::

    apt-get update -o Acquire::Languages=en   # the lists with the long descriptions
    python -m focuscrawl.relevance.background --build [--lists /var/lib/apt/lists]

Sampling is deterministic (a hash of the package name), so a rebuild from the same lists writes
the same file.

It is a contrast, not a truth: pages about software are "off topic" to it and everything else
merely "not this". Training from positives alone says so in its report (``off_topic`` in the
model's metadata), and a crawl that grows its model (``focuscrawl.relevance.growing``) replaces it
with the pages the crawl itself fetched.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

from focuscrawl.relevance.examples import Example

PATH = Path(__file__).with_name("background.jsonl.gz")
SOURCE = "Debian 12 (bookworm, main) package descriptions, from the archive's Packages and Translation-en lists"
LICENCE = "each description under its Debian package's DFSG-free licence (the packages are listed per page)"
LABEL = "background"

#: sections made mostly of near-identical library boilerplate ("This package contains the
#: development files of..."), which would teach the model that every page about anything else
#: is on topic as long as it is not a library stub
_SKIPPED_SECTIONS = {"libs", "libdevel", "oldlibs", "debug", "introspection", "localization",
                     "metapackages", "tasks", "fonts"}
_PER_SECTION = 40  # descriptions at most from one section: no section dominates
_PER_PAGE = 6  # descriptions per pseudo-page: about the length of a short web page's main text
_MIN_CHARS = 250  # a description shorter than this says little


def load_background() -> list[Example]:
    """The shipped background pages, as off-topic training examples (label ``background``)."""
    return [Example(page["url"], page["title"], page["text"], LABEL) for page in _pages()]


@lru_cache(maxsize=1)
def _pages() -> tuple[dict, ...]:
    with gzip.open(PATH, "rt", encoding="utf-8") as fh:
        return tuple(json.loads(line) for line in fh if line.strip())


def describe() -> dict:
    """What a model trained against the background records about it."""
    return {"source": SOURCE, "licence": LICENCE, "pages": len(_pages()), "file": PATH.name}


def parse_stanzas(text: str):
    """Each stanza of a Debian package list as a dict (continuation lines joined with newlines)."""
    for stanza in text.split("\n\n"):
        fields, current = {}, None
        for line in stanza.splitlines():
            if line.startswith((" ", "\t")) and current:
                fields[current] += "\n" + line
            elif ":" in line:
                current, _, value = line.partition(":")
                fields[current] = value.strip()
        if "Package" in fields:
            yield fields


def descriptions(packages_text: str, translations_text: str):
    """``(package, section, summary, long description)`` for each package of a ``Packages`` list
    whose long description a ``Translation-en`` list gives."""
    sections = {f["Package"]: f.get("Section", "misc").rsplit("/", 1)[-1] for f in parse_stanzas(packages_text)}
    for fields in parse_stanzas(translations_text):
        package, description = fields["Package"], fields.get("Description-en") or fields.get("Description")
        if not description or package not in sections:
            continue
        summary, _, long = description.partition("\n")
        body = " ".join(" ".join("" if ln.strip() == "." else ln.strip() for ln in long.splitlines()).split())
        yield package, sections[package], summary.strip(), body


def build_pages(stanzas) -> list[dict]:
    """Pseudo-pages from package descriptions: per section at most ``_PER_SECTION`` descriptions
    (picked by a hash of the package name; duplicated texts once), ``_PER_PAGE`` to a page."""
    by_section: dict[str, list] = defaultdict(list)
    seen_texts: set[str] = set()
    for package, section, summary, body in stanzas:
        key = re.sub(r"\W+", " ", body.lower())[:200]
        if section in _SKIPPED_SECTIONS or len(body) < _MIN_CHARS or key in seen_texts:
            continue
        seen_texts.add(key)
        by_section[section].append((hashlib.sha1(package.encode()).hexdigest(), package, summary, body))
    pages = []
    for section in sorted(by_section):
        chosen = sorted(by_section[section])[:_PER_SECTION]
        for start in range(0, len(chosen), _PER_PAGE):
            group = chosen[start:start + _PER_PAGE]
            pages.append({
                "url": f"background:debian/{section}/{start // _PER_PAGE}",
                "title": group[0][2],
                "text": " ".join(f"{summary}. {body}" for _, _, summary, body in group),
                "packages": [package for _, package, _, _ in group],
            })
    return pages


def _read_lists(lists: Path, kind: str) -> str:
    """Every list of ``kind`` (``Packages``, ``Translation-en``) of the main archive in ``lists``,
    decompressed by apt's own helper (lz4, xz, gzip: whatever apt stored)."""
    texts = []
    for path in sorted(lists.glob(f"*_dists_*_main_*{kind}*")):
        if "security" in path.name or "updates" in path.name:
            continue  # the release itself: fixed contents, a reproducible build
        texts.append(subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", str(path)], check=True,
                                    capture_output=True, text=True).stdout)
    return "\n\n".join(texts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Rebuild the background corpus from Debian's package lists")
    parser.add_argument("--build", action="store_true", help="read the package lists and write the corpus")
    parser.add_argument("--lists", type=Path, default=Path("/var/lib/apt/lists"),
                        help="apt's lists folder (after apt-get update -o Acquire::Languages=en)")
    parser.add_argument("-o", "--output", type=Path, default=PATH)
    args = parser.parse_args(argv)
    if not args.build:
        print(json.dumps(describe()))
        return 0
    try:
        packages, translations = _read_lists(args.lists, "Packages"), _read_lists(args.lists, "Translation-en")
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"error: cannot read Debian's package lists in {args.lists}: {exc}", file=sys.stderr)
        return 2
    pages = build_pages(descriptions(packages, translations))
    if not pages:
        print(f"error: no package description in {args.lists}: run apt-get update -o Acquire::Languages=en first",
              file=sys.stderr)
        return 2
    # no name and no time in the gzip header: a rebuild from the same lists is the same bytes
    with open(args.output, "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as raw:
        for page in pages:
            raw.write((json.dumps(page, sort_keys=True) + "\n").encode("utf-8"))
    print(f"{len(pages)} background pages written to {args.output} ({args.output.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
