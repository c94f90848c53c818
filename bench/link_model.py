"""How well links are valued before the crawl knows anything: the link model against the topic
model reading the link's words, on WebKB.

Both are trained on the "misc" universities (pages and their links); they are tested on the links
of the four departments' pages, labelled by their targets (a link to a page never recorded is a
negative: it leads nowhere). Reported: average precision (ranking quality where positives are
rare) and ROC AUC, with the base rate.

    python bench/link_model.py [--webkb ../shared/webkb] [--targets course,student,faculty,project]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sklearn.metrics import average_precision_score, roc_auc_score

from focuscrawl.relevance import TopicModel, load_examples, train_topic_model
from focuscrawl.relevance.links import MISSING

DEPARTMENTS = r"(^|\.)(cornell|utexas|washington|wisc)\.edu$"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webkb", default=str(Path(__file__).resolve().parents[2] / "shared" / "webkb"))
    parser.add_argument("--targets", default="course,student,faculty,project")
    args = parser.parse_args(argv)
    warc, labels = Path(args.webkb) / "webkb.warc.gz", Path(args.webkb) / "labels.tsv"
    if not warc.exists():
        print(f"{warc} not found", file=sys.stderr)
        return 2
    started = time.time()
    train = load_examples([warc], labels_path=labels, exclude_host=DEPARTMENTS)
    test_links = load_examples([warc], labels_path=labels, include_host=DEPARTMENTS).links
    print(f"training: {len(train)} pages, {len(train.links)} labelled links; "
          f"test: {len(test_links)} labelled links of the departments "
          f"({sum(link.label == MISSING for link in test_links)} to pages never recorded)")
    print("| target | test links to target (base rate) | link model AP | AUC | topic model on link words AP | AUC |")
    print("|---|---|---|---|---|---|")
    for target in args.targets.split(","):
        model, _ = train_topic_model(train, [target], cv_folds=0)
        y = [link.label == target for link in test_links]
        docs = [link.document for link in test_links]
        linked = model.score_links(docs)
        worded = TopicModel(model.pipeline, model.metadata).score_links(docs)  # no link model: words
        print(f"| {target} | {sum(y)} ({sum(y) / len(y):.3f}) | {average_precision_score(y, linked):.3f} "
              f"| {roc_auc_score(y, linked):.3f} | {average_precision_score(y, worded):.3f} "
              f"| {roc_auc_score(y, worded):.3f} |")
    print(f"({time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
