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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from page_ranking import each_topic, host_of, labelled_pages, ranking_row, screen_arguments  # noqa: E402
from webs import WEBKB_HELD_OUT  # noqa: E402

from focuscrawl.relevance.query import build_query_model  # noqa: E402


def held_out(web, key: str) -> bool:
    """A page of the crawl's web: WebKB's four departments; every page of a documentation web."""
    return web.name != "webkb" or any(name in host_of(key) for name in WEBKB_HELD_OUT)


def screen(web, parsed, topic, background_docs=None) -> list[dict]:
    keys, y = labelled_pages(web, parsed, topic, lambda key: held_out(web, key))
    model = build_query_model(topic.words, background_docs)
    return [ranking_row(y, scores, model.even_odds_score, topic=topic.name, reading=name)
            for name, scores in (("title and text", model.score_many([parsed.pages[k][:2] for k in keys])),
                                 ("and its links", [model.score_page(*parsed.pages[k]) for k in keys]))]


def main(argv=None) -> int:
    args = screen_arguments(__doc__.split("\n\n")[0], "webkb,langdocs,tooldocs").parse_args(argv)
    print("| topic | page read by | AUC | AP | counted found: on topic / all (on topic) |")
    print("|---|---|---|---|---|")
    for web, parsed, topic in each_topic(args.webs, args.cache, {t for t in args.targets.split(",") if t}):
        for r in screen(web, parsed, topic):
            print(f"| {web.name} {r['topic']} | {r['reading']} | {r['auc']:.3f} | {r['ap']:.3f} | "
                  f"{r['found_on_topic']} / {r['found']} ({r['on_topic']} of {r['pages']}) |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
