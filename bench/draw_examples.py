"""Draw a few on-topic pages from a JSON-lines example set: the start of a user who has a handful
of pages she likes and nothing else.

    python bench/draw_examples.py SUITE/langdocs/examples.jsonl -o ten-text.jsonl --label text --count 10 --seed 0
    python bench/draw_examples.py SUITE/tooldocs/examples.jsonl -o ten-testing.jsonl \
           --label testing,testing+performance --count 10 --seed 0
    scrapy train ten-text.jsonl --positive text -o DIR/ten-text.joblib   # on-topic pages alone

The input is a web's training-host pages as the suite writes them (``bench/suite.py``'s
``examples.jsonl``: one ``{"url", "title", "text", "label"}`` object a line). A page whose label
is one of ``--label``'s is on topic; the pages are shuffled with ``--seed`` (Python's
``random.Random``, as ``bench/webkb_examples.py`` draws WebKB's) and the first ``--count`` are
written, each labelled with the first of ``--label``'s names, so ``scrapy train --positive`` takes
that one name.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from urllib.parse import urlsplit


def draw(lines, labels: list[str], count: int, seed: int) -> list[dict]:
    """The on-topic pages among ``lines`` (JSON objects, one a line), ``count`` of them drawn with
    ``seed``, relabelled with ``labels[0]``."""
    wanted = set(labels)
    pages = [page for page in (json.loads(line) for line in lines if line.strip()) if page.get("label") in wanted]
    random.Random(seed).shuffle(pages)
    return [dict(page, label=labels[0]) for page in pages[:count]]


def site_sample(lines, pages: list[dict], count: int, seed: int) -> list[dict]:
    """``count`` pages of ``lines`` on the sites (hosts) of ``pages`` but not among them, whatever
    their label, drawn with ``seed``: what a user who picked ``pages`` finds on the same sites
    without picking it, the contrast that tells the topic's words from the sites'."""
    hosts = {urlsplit(page.get("url", "")).hostname for page in pages} - {None}
    picked = {page.get("url") for page in pages}
    others = [page for page in (json.loads(line) for line in lines if line.strip())
              if urlsplit(page.get("url", "")).hostname in hosts and page.get("url") not in picked]
    random.Random(seed).shuffle(others)
    return [dict(page, label="site") for page in others[:count]]


def as_examples(pages: list[dict], label: str | None = None) -> list:
    """``pages`` (JSON lines' objects) as training examples, labelled ``label`` or their own."""
    from focuscrawl.relevance.examples import Example

    return [Example(p.get("url", ""), p.get("title", ""), p.get("text", ""), label or p["label"]) for p in pages]


def few_page_model(web, topic, count: int, contrast: int, seed: int = 0, calibrate: bool = False):
    """The model a user with ``count`` on-topic pages makes (``bench/draw_examples.py``: drawn with
    ``seed`` from the web's training-host pages, trained against the background corpus); with
    ``contrast``, that many other pages of their sites (drawn with ``seed``, whatever their label):
    its links are read by the words the pages share and those pages do not
    (``query.attach_link_reading``; ``scrapy train --contrast``), and with ``calibrate`` they are the
    page classifier's unlabelled side too, the model calibrated for them (``--unlabelled-contrast``)."""
    from focuscrawl.relevance import train_topic_model
    from focuscrawl.relevance.query import attach_link_reading, page_words

    examples_path = web.cache("examples.jsonl")
    with examples_path.open(encoding="utf-8") as lines:
        pages = draw(lines, list(topic.positive), count, seed)
    others = []
    if contrast:
        with examples_path.open(encoding="utf-8") as lines:
            others = site_sample(lines, pages, contrast, seed)
    model, _ = train_topic_model(as_examples(pages), [topic.positive[0]], cv_folds=0,
                                 unlabelled=as_examples(others, "site") if calibrate else None)
    if contrast:
        words = attach_link_reading(model, [page_words(e.url, e.title, e.text) for e in as_examples(pages)],
                                    [page_words(e.url, e.title, e.text) for e in as_examples(others, "site")],
                                    f"{len(others)} other pages of the pages' sites")
        print(f"{web.name}/{topic.name}: links read by {', '.join(w for w, _ in words) or 'nothing'} "
              f"(against {len(others)} pages of the same sites)", file=sys.stderr)
    return model


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("examples", type=Path, help="a JSON-lines example set")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the JSON-lines file to write")
    parser.add_argument("--label", required=True, help="the on-topic label(s), comma-separated")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--contrast", type=Path, metavar="FILE",
                        help="also write --contrast-count other pages of the drawn pages' sites here "
                             "(scrapy train --contrast FILE)")
    parser.add_argument("--contrast-count", type=int, default=200)
    args = parser.parse_args(argv)
    labels = [label for label in args.label.split(",") if label]
    try:
        with args.examples.open(encoding="utf-8") as lines:
            pages = draw(lines, labels, args.count, args.seed)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read {args.examples}: {exc}", file=sys.stderr)
        return 2
    if not pages:
        print(f"error: no page of {args.examples} is labelled {args.label}", file=sys.stderr)
        return 2
    with args.output.open("w", encoding="utf-8") as out:
        for page in pages:
            out.write(json.dumps(page) + "\n")
    print(f"{len(pages)} example pages written to {args.output}")
    if args.contrast:
        with args.examples.open(encoding="utf-8") as lines:
            others = site_sample(lines, pages, args.contrast_count, args.seed)
        with args.contrast.open("w", encoding="utf-8") as out:
            for page in others:
                out.write(json.dumps(page) + "\n")
        print(f"{len(others)} other pages of their sites written to {args.contrast}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
