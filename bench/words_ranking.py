"""How well a model made from words judges the pages of a recorded web: the cheap screen before
simulations and replays for a change to how words judge a page.

    python bench/words_ranking.py --webs webkb,langdocs,tooldocs --cache DIR

For each topic, the model ``scrapy train --query Topic.words`` writes scores every labelled page
(WebKB: the four held-out departments', the crawl's web) two ways: by its title and text alone
(``TopicModel.score``) and as the crawl judges a page, its own links too (``score_page``: a words
model's ``link_field``). ROC AUC and average precision for "is on topic", and the pages at or
above even odds: on topic and in all. ``--cache`` is ``bench/simulate.py``'s folder of parsed webs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simulate import Web  # noqa: E402
from webs import WEBKB_HELD_OUT, suite  # noqa: E402

from focuscrawl.relevance.query import build_query_model  # noqa: E402
from focuscrawl.replay.metrics import load_labels  # noqa: E402
from focuscrawl.urls import url_key  # noqa: E402


def held_out(web, key: str) -> bool:
    """A page of the crawl's web: WebKB's four departments; every page of a documentation web."""
    host = key.split("/")[2] if "//" in key else key
    return web.name != "webkb" or any(name in host for name in WEBKB_HELD_OUT)


def screen(web, parsed, topic, background_docs=None) -> list[dict]:
    labels = {url_key(u): label for u, label in load_labels(web.labels).items()}
    keys = [k for k in parsed.pages if k in labels and held_out(web, k)]
    y = np.array([labels[k] in topic.positive for k in keys])
    model = build_query_model(topic.words, background_docs)
    rows = []
    for name, scores in (("title and text", model.score_many([parsed.pages[k][:2] for k in keys])),
                         ("and its links", [model.score_page(*parsed.pages[k]) for k in keys])):
        scores = np.asarray(scores)
        found = scores >= model.even_odds_score
        rows.append({"topic": topic.name, "reading": name, "auc": roc_auc_score(y, scores),
                     "ap": average_precision_score(y, scores), "found": int(found.sum()),
                     "found_on_topic": int((found & y).sum()), "on_topic": int(y.sum()), "pages": len(keys)})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--webs", default="webkb,langdocs,tooldocs")
    parser.add_argument("--targets", default="", help="topic names, comma-separated (default: every topic)")
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR")
    args = parser.parse_args(argv)
    wanted = {t for t in args.targets.split(",") if t}
    found = suite([w for w in args.webs.split(",") if w])
    for name, why in found.skipped.items():
        print(f"skipped {name}: {why}", file=sys.stderr)
    print("| topic | page read by | AUC | AP | counted found: on topic / all (on topic) |")
    print("|---|---|---|---|---|")
    for web in found.webs:
        parsed = Web.cached(web.warc, web.aliases, args.cache)
        for topic in web.topics:
            if wanted and topic.name not in wanted:
                continue
            for r in screen(web, parsed, topic):
                print(f"| {web.name} {r['topic']} | {r['reading']} | {r['auc']:.3f} | {r['ap']:.3f} | "
                      f"{r['found_on_topic']} / {r['found']} ({r['on_topic']} of {r['pages']}) |", flush=True)
        del parsed
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
