"""A focused crawl from a script or a notebook::

    from focuscrawl import FocusCrawl

    crawl = FocusCrawl(["https://example.org/"], model="models/topic.joblib", budget=200)
    for item in crawl.items():      # as the crawl finds them
        print(item["score"], item["url"])
    crawl.finish_reason, crawl.stats  # "focus_budget", {"focus/pages/relevant": ..., ...}

    pages = focuscrawl.crawl(["https://example.org/"], "models/topic.joblib", budget=200)  # a list

By default focuscrawl's ``focused`` spider crawls (its items are the relevant pages, with
``FEED_EXPORT_FIELDS``); ``spider=`` takes a project's own spider class (or its import path),
crawled in focused order through the add-on, its own items returned. ``settings`` are Scrapy
settings, as ``-s`` gives them (``FOCUS_STORE``, ``DOWNLOAD_DELAY``, ``LOG_LEVEL``, ...).

Each crawl runs in a process of its own (``python -m focuscrawl.api``: Scrapy's reactor cannot be
started twice in one process, and a notebook's event loop is not Scrapy's), so a script needs no
``if __name__ == "__main__"`` guard: items come back as plain dicts as the crawl's
``item_scraped`` signal sends them. Stopping early (leaving the loop) stops the crawl as
Ctrl-C does, its store and JOBDIR kept whole. A crawl that cannot start (no model, bad seeds, a
bad setting) raises ``CrawlError`` with the same one line ``scrapy crawl`` prints.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

#: how long a stopped crawl may take to finish its requests in flight and close its store
STOP_GRACE_SECONDS = 60.0


class CrawlError(RuntimeError):
    """A crawl that could not start or ended without finishing (the message says why)."""


class FocusCrawl:
    """One focused crawl: ``items()`` streams its items, ``run()`` waits for all of them.

    Args:
        seeds: the URLs the crawl starts from (a list, a comma-separated string, or a seeds file's
            path); for a project's spider, None leaves its own start URLs.
        model: the topic model's path (``scrapy train`` makes one); FOCUS_MODEL.
        budget: the most requests (robots.txt not counted; 0: no limit); FOCUS_BUDGET.
        settings: Scrapy settings, over the crawl's own (as ``-s``).
        spider: focuscrawl's focused spider when None; else a Spider class defined in a module (not
            in ``__main__``) or its import path (``"myproject.spiders.books.BooksSpider"``), crawled
            with ``focuscrawl.Addon``.
        spider_args: the spider's arguments (as ``-a``).
    """

    def __init__(self, seeds: list[str] | str | None, model: str | os.PathLike | None = None, *, budget: int = 0,
                 settings: dict[str, Any] | None = None, spider: type | str | None = None,
                 spider_args: dict[str, Any] | None = None) -> None:
        if isinstance(seeds, (list, tuple)):
            seeds = ",".join(seeds)
        self.spec = {"seeds": seeds, "model": os.fspath(model) if model is not None else None, "budget": int(budget),
                     "settings": dict(settings or {}), "spider": _spider_path(spider),
                     "spider_args": dict(spider_args or {})}
        #: the crawl's Scrapy stats, once it has finished
        self.stats: dict[str, Any] = {}
        self.finish_reason: str | None = None

    def run(self) -> list[dict]:
        """Crawl to the end; the items, in the order they were found."""
        return list(self.items())

    def items(self) -> Iterator[dict]:
        """The items as the crawl finds them; leaving the loop early stops the crawl."""
        # a process of its own, its messages on a pipe of their own (the spider may print)
        read_end, write_end = os.pipe()
        process = subprocess.Popen([sys.executable, "-m", "focuscrawl.api", str(write_end)], stdin=subprocess.PIPE,
                                   pass_fds=(write_end,), env=_child_environment())
        os.close(write_end)
        finished = False
        try:
            process.stdin.write(pickle.dumps(self.spec))
            process.stdin.close()
            with os.fdopen(read_end, "rb") as messages:
                while True:
                    try:
                        kind, payload = pickle.load(messages)
                    except EOFError:
                        process.wait()
                        raise CrawlError(f"the crawl process ended without finishing (exit code "
                                         f"{process.returncode})") from None
                    if kind == "item":
                        yield payload
                    elif kind == "error":
                        raise CrawlError(payload)
                    else:
                        self.stats = payload["stats"]
                        self.finish_reason = self.stats.get("finish_reason")
                        finished = True
                        return
        finally:
            if not finished and process.poll() is None:
                process.terminate()  # Scrapy's SIGTERM: a graceful stop, store and JOBDIR kept
            try:
                process.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def crawl(seeds: list[str] | str | None, model: str | os.PathLike | None = None, *, budget: int = 0,
          settings: dict[str, Any] | None = None, spider: type | str | None = None,
          spider_args: dict[str, Any] | None = None) -> list[dict]:
    """Run a focused crawl to its end and return its items (see FocusCrawl)."""
    return FocusCrawl(seeds, model, budget=budget, settings=settings, spider=spider, spider_args=spider_args).run()


def _child_environment() -> dict[str, str]:
    """This process's environment, with the folder this focuscrawl was imported from first on the
    path (it may not be the installed one)."""
    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [home, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}


def _spider_path(spider: type | str | None) -> str | None:
    if spider is None or isinstance(spider, str):
        return spider
    if spider.__module__ == "__main__":
        raise CrawlError(f"{spider.__qualname__} is defined in __main__: the crawl's process imports its spider, "
                         "so define it in a module (or give its import path)")
    return f"{spider.__module__}.{spider.__qualname__}"


# --- in the crawl's own process -------------------------------------------------------------------
def _crawl_in_process(channel, spec: dict) -> None:
    def send(kind: str, payload) -> None:
        pickle.dump((kind, payload), channel)
        channel.flush()

    try:
        process, spider, args = _prepare(spec)
    except Exception as exc:  # noqa: BLE001 - every reason a crawl cannot start is the caller's one line
        send("error", _one_line(exc))
        return
    from itemadapter import ItemAdapter
    from scrapy import signals

    from focuscrawl.items import PageItem

    def scraped(item, **kwargs):
        if isinstance(item, PageItem):
            row = {name: getattr(item, name) for name in PageItem.EXPORT_FIELDS}
        else:
            row = ItemAdapter(item).asdict()
        send("item", row)

    crawler = process.create_crawler(spider)
    crawler.signals.connect(scraped, signal=signals.item_scraped, weak=False)
    process.crawl(crawler, **args)
    process.start()
    if process.bootstrap_failed or crawler.stats is None:
        send("error", "the crawl did not start (see its log)")
        return
    send("done", {"stats": dict(crawler.stats.get_stats())})


def _prepare(spec: dict):
    """(CrawlerProcess, spider, spider arguments), every input checked as ``scrapy crawl`` checks it."""
    from scrapy.crawler import CrawlerProcess
    from scrapy.settings import Settings
    from scrapy.utils.misc import load_object

    from focuscrawl.addon import _setdefault_component
    from focuscrawl.config import FocusConfig
    from focuscrawl.relevance import TopicModel

    settings = Settings()
    if spec["spider"] is None:
        settings.setmodule("focuscrawl.settings", priority="project")
    else:
        _setdefault_component(settings, "ADDONS", "focuscrawl.Addon", 0)
    settings.set("LOG_LEVEL", "WARNING", "project")  # a script's output is its own; LOG_LEVEL=INFO for more
    if spec["model"] is not None:
        settings.set("FOCUS_MODEL", spec["model"], "cmdline")
    if spec["budget"]:
        settings.set("FOCUS_BUDGET", spec["budget"], "cmdline")
    settings.setdict(spec["settings"], "cmdline")
    args = dict(spec["spider_args"])
    if spec["spider"] is None:
        from focuscrawl import preflight
        from focuscrawl.spiders.focused import FocusedSpider

        if spec["seeds"] is not None:
            args["seeds"] = spec["seeds"]
        errors = preflight.run(args, settings)  # what `scrapy crawl focused` checks, said the same way
        if errors:
            raise ValueError("; ".join(errors))
        return CrawlerProcess(settings), FocusedSpider, args
    spider = load_object(spec["spider"]) if isinstance(spec["spider"], str) else spec["spider"]
    config = FocusConfig.from_settings(settings)
    if not config.model:
        raise ValueError("no topic model: give model= (see `focuscrawl train`)")
    TopicModel.load(config.model)
    if spec["seeds"] is not None:
        from focuscrawl.spiders.focused import read_seeds

        args["start_urls"] = read_seeds(spec["seeds"])
    return CrawlerProcess(settings), spider, args


def _one_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


if __name__ == "__main__":
    with os.fdopen(int(sys.argv[1]), "wb") as _channel:
        _crawl_in_process(_channel, pickle.load(sys.stdin.buffer))
