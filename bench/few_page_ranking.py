"""How well a model from ten on-topic pages judges the pages of hosts it never saw, and how many of
them it counts as found: the cheap screen before replays for a start from a few pages.

    python bench/few_page_ranking.py --webs webkb,langdocs,tooldocs [--count 10] [--contrast 200] --cache DIR

For each topic, the ten pages are drawn as ``bench/draw_examples.py`` draws them (seed 0) and the
contrast is that many other pages of their sites; three models are scored on every labelled page
of the web's held-out hosts (the hosts the examples do not come from):

- ``background``: the ten pages against the background corpus (``scrapy train`` without
  ``--contrast``);
- ``unlabelled, uncalibrated``: the contrast as the unlabelled side too, scores as the classifier
  gives them (the model shifted back: what training without the calibration would give);
- ``unlabelled, calibrated``: the same model as ``scrapy train --contrast`` writes it (Elkan &
  Noto's c; even odds at 0.5).

ROC AUC and average precision for "is on topic", and the pages at or above even odds: on topic
and in all. ``--cache`` is ``bench/simulate.py``'s folder of parsed webs.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from draw_examples import as_examples, draw, site_sample  # noqa: E402
from page_ranking import each_topic, host_of, labelled_pages, ranking_row  # noqa: E402

from focuscrawl.relevance import train_topic_model  # noqa: E402


def screen(web, parsed, topic, count: int, contrast: int, seed: int = 0) -> list[dict]:
    import re

    train = re.compile(web.train_hosts)
    keys, y = labelled_pages(web, parsed, topic, lambda key: not train.search(host_of(key)))
    docs = [parsed.pages[k][:2] for k in keys]
    path = web.cache("examples.jsonl")
    with path.open(encoding="utf-8") as lines:
        pages = draw(lines, list(topic.positive), count, seed)
    with path.open(encoding="utf-8") as lines:
        others = site_sample(lines, pages, contrast, seed)
    rows = []
    plain, _ = train_topic_model(as_examples(pages), [topic.positive[0]], cv_folds=0)
    pu, report = train_topic_model(as_examples(pages), [topic.positive[0]], cv_folds=0,
                                   unlabelled=as_examples(others, "site"))
    shift = report["off_topic"]["unlabelled"]["even_odds_logit"]
    calibrated = np.array(pu.score_many(docs))
    z = np.log(np.clip(calibrated, 1e-12, 1)) - np.log(np.clip(1 - calibrated, 1e-12, 1))
    for name, scores in (("background", np.array(plain.score_many(docs))),
                         ("unlabelled, uncalibrated", 1 / (1 + np.exp(-(z + shift)))),
                         ("unlabelled, calibrated", calibrated)):
        rows.append(ranking_row(y, scores, 0.5, topic=topic.name, model=name,
                                c=report["off_topic"]["unlabelled"]["c"] if name != "background" else math.nan))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--webs", default="webkb,langdocs,tooldocs")
    parser.add_argument("--targets", default="", help="topic names, comma-separated (default: WebKB's course "
                                                      "and faculty, every documentation topic)")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--contrast", type=int, default=200)
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR")
    args = parser.parse_args(argv)
    wanted = {t for t in args.targets.split(",") if t} or {"course", "faculty", "concurrency", "text", "testing",
                                                           "performance"}
    print("| topic | model | AUC | AP | counted found: on topic / all (on topic held out) | c |")
    print("|---|---|---|---|---|---|")
    for web, parsed, topic in each_topic(args.webs, args.cache, wanted):
        for r in screen(web, parsed, topic, args.count, args.contrast):
            c = "" if math.isnan(r["c"]) else f"{r['c']:.4f}"
            print(f"| {web.name} {r['topic']} | {r['model']} | {r['auc']:.3f} | {r['ap']:.3f} | "
                  f"{r['found_on_topic']} / {r['found']} ({r['on_topic']} of {r['pages']}) | {c} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
