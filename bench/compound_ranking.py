"""How well the suite's models rank the crawl's pages when a page's compound words are read as the
words the model knows: the cheap screen before simulations for reading a page's own text through
``relevance.compounds.CompoundReader``.

    python bench/compound_ranking.py --webs webkb,demo,langdocs,tooldocs --cache DIR

For each topic, its suite model (trained from the training hosts' example pages,
``bench/webs.py --train``) scores every labelled page of the hosts it was not trained on two ways:
as written (the model's pipeline on the page's words: "as it is") and as the crawl judges a page
(``TopicModel.score_page``, which reads the title and text through the model's ``CompoundReader``
first, ``TopicModel.read_page``: a word the model knows is read as it is; an unknown identifier,
``ctest`` or ``CTEST_TEST_TIMEOUT``, as the known words it is made of: "compounds read"). ROC AUC and
average precision for "is on topic", the pages at or above even odds (on topic and in all), and
what each costs per page (milliseconds of process time: the model's scoring, and the reading
before it, the reader's word cache filling as it reads, as in a crawl). ``--cache`` is ``bench/simulate.py``'s folder of parsed webs.
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from page_ranking import each_topic, host_of, labelled_pages, ranking_row, screen_arguments  # noqa: E402

from focuscrawl.relevance import TopicModel  # noqa: E402
from focuscrawl.relevance.model import model_document  # noqa: E402


def screen(web, parsed, topic) -> list[dict]:
    train = re.compile(web.train_hosts)
    keys, y = labelled_pages(web, parsed, topic, lambda key: not train.search(host_of(key)))
    model = TopicModel.load(web.cache("models", f"{topic.name}.joblib"))
    pages = [parsed.pages[k] for k in keys]
    # as written: the model's pipeline on the page's words (what the model read before read_page)
    started = time.process_time()
    plain = list(model.pipeline.predict_proba([model_document(title, text) for title, text, _ in pages])[:, 1])
    scoring = (time.process_time() - started) / max(len(pages), 1) * 1000
    started = time.process_time()
    for title, text, _ in pages:
        model.read_page(title, text)
    cost = (time.process_time() - started) / max(len(pages), 1) * 1000
    compounds = [model.score_page(title, text, links) for title, text, links in pages]  # read_page's reading
    return [ranking_row(y, scores, model.even_odds_score, topic=topic.name, reading=name, ms=ms)
            for name, scores, ms in (("as it is", plain, scoring), ("compounds read", compounds, cost))]


def main(argv=None) -> int:
    args = screen_arguments(__doc__.split("\n\n")[0], "webkb,demo,langdocs,tooldocs").parse_args(argv)
    print("| topic | page read | AUC | AP | counted found: on topic / all (on topic of pages) | ms/page |")
    print("|---|---|---|---|---|---|")
    costs: dict[str, list[float]] = {}
    for web, parsed, topic in each_topic(args.webs, args.cache, {t for t in args.targets.split(",") if t}):
        for r in screen(web, parsed, topic):
            costs.setdefault(r["reading"], []).append(r["ms"])
            print(f"| {web.name} {r['topic']} | {r['reading']} | {r['auc']:.3f} | {r['ap']:.3f} | "
                  f"{r['found_on_topic']} / {r['found']} ({r['on_topic']} of {r['pages']}) | {r['ms']:.2f} |",
                  flush=True)
    for reading, what in (("as it is", "the model scoring a page"), ("compounds read", "reading its title and text")):
        if costs.get(reading):
            print(f"{what}: {statistics.mean(costs[reading]):.2f} ms per page on average "
                  f"({min(costs[reading]):.2f}-{max(costs[reading]):.2f} by topic)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
