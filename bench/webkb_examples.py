"""Write WebKB's training pages as JSON lines: the example pages a user starts from, without the
web graph they came from.

    python bench/webkb_examples.py ../shared/webkb -o misc.jsonl
    scrapy train misc.jsonl --positive faculty -o DIR/faculty.joblib
    python bench/webkb_examples.py ../shared/webkb -o ten-course.jsonl --label course --count 10 --seed 0
    scrapy train ten-course.jsonl --positive course -o DIR/ten-course.joblib   # on-topic pages alone

The pages are those of the "misc" universities (every host but the four departments the
benchmark crawls), one ``{"url", "title", "text", "label"}`` object per line. A model trained from
them has no link model and no measured starting weights: it is what ``scrapy train`` makes from
a user's folder or JSON lines of examples.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from focuscrawl.relevance import load_examples

HELD_OUT = "cornell|utexas|washington|wisc"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("webkb", type=Path, help="the folder with webkb.warc.gz and labels.tsv")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the JSON-lines file to write")
    parser.add_argument("--label", help="only pages with this label (a start from on-topic pages alone)")
    parser.add_argument("--count", type=int, help="at most this many pages, drawn with --seed")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    examples = load_examples([args.webkb / "webkb.warc.gz"], labels_path=args.webkb / "labels.tsv",
                             exclude_host=HELD_OUT, links=False)
    if args.label:
        examples = [e for e in examples if e.label == args.label]
    if args.count is not None:
        random.Random(args.seed).shuffle(examples)
        examples = examples[:args.count]
    with args.output.open("w", encoding="utf-8") as out:
        for example in examples:
            out.write(json.dumps({"url": example.url, "title": example.title, "text": example.text,
                                  "label": example.label}) + "\n")
    print(f"{len(examples)} example pages written to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
