"""What the offline screens of a page judgement share (``bench/few_page_ranking.py``,
``bench/words_ranking.py``): the labelled pages of each topic of the suite's webs, and one row of
figures for a way of scoring them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

from simulate import Web
from webs import suite

from focuscrawl.replay.metrics import load_labels
from focuscrawl.urls import url_key


def labelled_pages(web, parsed, topic, keep) -> tuple[list[str], np.ndarray]:
    """The keys of ``parsed``'s labelled pages that ``keep(key)`` accepts, and whether each is on
    ``topic`` by the labels."""
    labels = {url_key(u): label for u, label in load_labels(web.labels).items()}
    keys = [k for k in parsed.pages if k in labels and keep(k)]
    return keys, np.array([labels[k] in topic.positive for k in keys])


def ranking_row(y: np.ndarray, scores, even_odds: float, **fields) -> dict:
    """ROC AUC and average precision of ``scores`` for "is on topic" (``y``), and the pages at or
    above ``even_odds``: on topic and in all; ``fields`` name the row."""
    scores = np.asarray(scores)
    found = scores >= even_odds
    return {**fields, "auc": roc_auc_score(y, scores), "ap": average_precision_score(y, scores),
            "found": int(found.sum()), "found_on_topic": int((found & y).sum()), "on_topic": int(y.sum()),
            "pages": len(y)}


def each_topic(webs: str, cache, wanted: set[str]):
    """``(web, parsed web, topic)`` for each topic in ``wanted`` (every topic when empty) of the
    comma-separated ``webs`` this machine has, one parsed web in memory at a time."""
    found = suite([w for w in webs.split(",") if w])
    for name, why in found.skipped.items():
        print(f"skipped {name}: {why}", file=sys.stderr)
    for web in found.webs:
        parsed = Web.cached(web.warc, web.aliases, cache)
        for topic in web.topics:
            if not wanted or topic.name in wanted:
                yield web, parsed, topic
        del parsed


def host_of(key: str) -> str:
    """The host of a URL key (``url_key``: ``scheme://host/path``, or a bare host)."""
    return key.split("/")[2] if "//" in key else key


def screen_arguments(description: str, webs: str, targets_help: str = "topic names, comma-separated "
                     "(default: every topic)") -> argparse.ArgumentParser:
    """The options every offline screen takes: ``--webs``, ``--targets`` and ``--cache`` (the
    folder of ``bench/simulate.py``'s parsed webs)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--webs", default=webs)
    parser.add_argument("--targets", default="", help=targets_help)
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR")
    return parser
