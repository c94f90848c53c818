"""Fetched pages as the scheduler hands them to a learner's ``observe``, and learners fed with
them: shared by the tests of learners merged by hand and through Redis."""

import random

from focuscrawl.learning import LinkContext, LinkRewardLearner, link_features

WORDS = ("comet planet orbit star galaxy telescope nebula lunar solar course syllabus lecture homework exam "
         "faculty people project paper news contact about staff student research seminar").split()


def pages(seed: int, n: int, hosts: range) -> list[tuple]:
    """``n`` fetched pages, as the scheduler hands them to ``observe``: a page's parent is an
    earlier page of the same list (so credit flows within the list), its host one of ``hosts``."""
    rng = random.Random(seed)
    out, urls = [], []
    for i in range(n):
        host = f"h{rng.choice(hosts)}.test"
        url = f"http://{host}/{rng.choice(WORDS)}/{seed}-{i}.html"
        parent = rng.choice(urls) if urls and rng.random() < 0.8 else None
        anchor = " ".join(rng.sample(WORDS, 2))
        feats = link_features(LinkContext(url, anchor, " ".join(rng.sample(WORDS, 4)), parent or f"http://{host}/",
                                          rng.random(), 2, link_score=rng.random()))
        relevant = rng.random() < 0.3
        wasted = not relevant and rng.random() < 0.2
        out.append((url, parent, feats, -0.2 if wasted else (1.0 if relevant else 0.1), relevant, wasted))
        urls.append(url)
    return out


def learner() -> LinkRewardLearner:
    return LinkRewardLearner(link_model=False)  # learns its links' words too: every shared part


def feed(target: LinkRewardLearner, observed: list[tuple]) -> None:
    for args in observed:
        target.observe(*args)
