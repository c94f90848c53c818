"""How long a learner update holds the reactor: the scheduler's background re-scoring of a large
frontier (a benchmark, not a test).

    python bench/rescore.py --urls 100000,1000000 --hosts 10000,100000

For each size, a FocusScheduler holds N queued URLs shaped like the focused spider's requests
(packed, as in a crawl; ``bench/frontier.py`` builds them) and gets learner updates the way a
crawl gives them: a page is scored, the learner's version moves on, and the scheduler's
background rescorer starts a pass over up to MAX_PER_UPDATE stale entries
(``focuscrawl/scheduling/rescoring.py``). Its chunks (CHUNK entries each) run one per reactor
turn; here the turns are run by hand, one after the other. Reported per mode:
the longest single turn (what every download, callback and politeness timer waits behind), the
whole pass, and entries re-scored per second. The baseline, in the same run, is each pass in one
turn (an unbounded chunk), as the scheduler ran it before. (Before that change the frontier also
took a deep host whole, however far past the limit: docs/research.md, "Frontier storage and memory".)
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from frontier import UrlMaker, crawler_spider  # noqa: E402  (bench/frontier.py)


def filled_scheduler(n: int, hosts: int):
    """A scheduler (packed frontier, the focused spider's callbacks) holding ``n`` queued URLs."""
    from scrapy.utils.test import get_crawler

    from focuscrawl.frontier import Entry
    from focuscrawl.scheduler import FocusScheduler

    spider = crawler_spider()
    scheduler = FocusScheduler.from_crawler(
        get_crawler(type(spider), {"ROBOTSTXT_OBEY": False, "FOCUS_FRONTIER_PACK": True}))
    scheduler.spider = scheduler.serializer.spider = spider  # what open() sets (the codec names callbacks)
    maker = UrlMaker(hosts)
    for start in range(0, n, 5000):
        for host, url, priority, payload, features in maker.chunk(min(5000, n - start), "crawler"):
            scheduler.frontier.push(host, Entry(priority, url, payload, features, scheduler.frontier.version))
    gc.collect()
    gc.freeze()  # as the scheduler's open() does: full collections would be measured, not re-scoring
    return scheduler


def updates(scheduler, count: int) -> dict:
    """``count`` learner updates, each pass run to its end one turn at a time: the longest turn,
    the mean pass, entries re-scored per second."""
    from focuscrawl.learning.learner import page_reward

    turns: list = []
    scheduler.rescorer.call_soon = turns.append  # the reactor's later turns, run below (one pending at a time)
    learner = scheduler.learner
    longest = total = 0.0
    before = scheduler.frontier.rescored
    for _ in range(count):
        learner.version += 1  # what 16 observed pages do
        t = time.perf_counter()
        # what the page_scored signal does for a 404: the learner observes it, the rescorer starts
        learner.observe("https://example.test/gone.html", None, None, page_reward(None, False), False, True)
        scheduler.rescorer.learner_updated()
        turn = time.perf_counter() - t
        longest, total = max(longest, turn), total + turn
        while turns:
            func = turns.pop()
            t = time.perf_counter()
            func()
            turn = time.perf_counter() - t
            longest, total = max(longest, turn), total + turn
    done = scheduler.frontier.rescored - before
    return {"longest_ms": 1000 * longest, "pass_ms": 1000 * total / count, "per_s": done / total if total else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", default="100000,1000000", help="queued URLs, comma-separated sizes")
    parser.add_argument("--hosts", default="10000,100000", help="hosts for each size, comma-separated")
    parser.add_argument("--updates", type=int, default=5, help="learner updates per mode (default 5)")
    args = parser.parse_args()
    from focuscrawl.scheduling import rescoring as module

    sizes = [int(x) for x in args.urls.split(",")]
    hosts = [int(x) for x in args.hosts.split(",")]
    if len(hosts) != len(sizes):
        sys.exit("error: give one --hosts value per --urls size")
    chunk = module.CHUNK
    print(f"MAX_PER_UPDATE={module.MAX_PER_UPDATE}, CHUNK={chunk}, {args.updates} updates per mode")
    print(f"{'URLs':>9} {'hosts':>7} {'mode':<22} {'longest turn ms':>15} {'pass ms':>8} {'entries/s':>10}")
    for n, h in zip(sizes, hosts):
        scheduler = filled_scheduler(n, h)
        for mode, size in ((f"chunks of {chunk}", chunk), ("one turn a pass", 10**12)):
            module.CHUNK = size
            r = updates(scheduler, args.updates)
            print(f"{n:>9,} {h:>7,} {mode:<22} {r['longest_ms']:>15.1f} {r['pass_ms']:>8.1f} {r['per_s']:>10,.0f}",
                  flush=True)
        module.CHUNK = chunk


if __name__ == "__main__":
    main()
