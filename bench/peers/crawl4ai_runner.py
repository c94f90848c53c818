"""The crawl4ai half of ``crawl4ai_peer.py``: crawl a recorded web through the replay proxy.

Run by the python of crawl4ai's own virtual environment (crawl4ai is never a dependency of
focuscrawl), so it imports only crawl4ai and the standard library. ``crawl4ai_peer.py`` starts
it with one JSON job as its argument::

    {"strategy": "bestfirst" | "adaptive", "proxy": "http://127.0.0.1:PORT",
     "log": SERVER_LOG.jsonl, "seeds": [URL, ...], "words": [WORD, ...], "budget": N}

and speaks to it over a pipe, one JSON line each way: before each start URL the runner says
``{"event": "seed", "index": I, "url": URL}`` and the driver answers ``{"cap": C}``, the number of
counted requests (robots.txt not counted) the replay will have answered when this start URL's
share of the budget is spent; the replay refuses every counted request past it. The runner then
crawls that start URL until the server's log (the replay's own record, read as it grows) holds C
counted requests, or crawl4ai stops by itself, and says ``{"event": "seed_done", ...}`` with the
URLs of the pages crawl4ai kept (``kept``: the successful results; AdaptiveCrawler's knowledge
base, without the links it only previewed). Anything
crawl4ai prints goes to stderr, so stdout carries only these lines.

Only the replay is contacted: every fetch of crawl4ai's HTTP strategy is given the proxy (a
``ProxyConfig`` in the run config, as crawl4ai documents it, and its ``before_request`` hook for the
fetches AdaptiveCrawler configures itself); its own HTTP clients (the link previews) get it through
``crawl4ai.egress_policy.set_egress_proxy``; and a guard in this process refuses any connection or
name look-up that is not the loopback proxy and reports it (``blocked`` in the last line).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
from urllib.parse import urlsplit

LOOPBACK_NAMES = {"127.0.0.1", "localhost", "::1"}


# --- the network guard -------------------------------------------------------------------------

BLOCKED: list[str] = []


def install_network_guard() -> None:
    """Refuse (and remember) every connection and name look-up that is not to loopback."""
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_sendto, real_getaddrinfo = socket.socket.sendto, socket.getaddrinfo

    def loopback(address) -> bool:
        if isinstance(address, tuple) and address:
            return str(address[0]) in LOOPBACK_NAMES or str(address[0]).startswith("127.")
        return isinstance(address, (str, bytes))  # a Unix socket: local by nature

    def refuse(what: str):
        BLOCKED.append(what)
        raise ConnectionRefusedError(f"network guard: {what} is not the replay on loopback")

    def connect(self, address):
        if not loopback(address):
            refuse(f"connect {address!r}")
        return real_connect(self, address)

    def connect_ex(self, address):
        if not loopback(address):
            refuse(f"connect {address!r}")
        return real_connect_ex(self, address)

    def sendto(self, data, *args):
        address = args[-1]
        if not loopback(address):
            refuse(f"sendto {address!r}")
        return real_sendto(self, data, *args)

    def getaddrinfo(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in LOOPBACK_NAMES and not name.startswith("127."):
            BLOCKED.append(f"getaddrinfo {name!r}")
            raise socket.gaierror(socket.EAI_NONAME, f"network guard: no look-up of {name!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
    socket.socket.sendto = sendto
    socket.getaddrinfo = getaddrinfo


# --- the budget, read from the server's log ------------------------------------------------------


class ServerLog:
    """The replay's log as it grows: how many counted requests it has answered, read
    incrementally. Counted as ``scrapy evaluate`` counts (focuscrawl.replay.metrics): not
    robots.txt, not CONNECT (an https link: the replay refuses the tunnel), not what the replay
    refused past the cap."""

    def __init__(self, path: str):
        self.path = path
        self.offset = 0
        self.counted = 0
        self._partial = ""

    def refresh(self) -> int:
        try:
            with open(self.path, encoding="utf-8") as fh:
                fh.seek(self.offset)
                text = fh.read()
                self.offset = fh.tell()
        except FileNotFoundError:
            return self.counted
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()  # a line still being written
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if (rec.get("url") and rec.get("method") != "CONNECT" and rec.get("path") != "/robots.txt"
                    and not rec.get("refused")):
                self.counted += 1
        return self.counted


class BudgetSpent(Exception):
    """This start URL's share of the request budget is spent: the fetch is not sent."""


class Budget:
    """The cap of the start URL being crawled, against the server's count."""

    def __init__(self, log: ServerLog):
        self.log = log
        self.cap = 0

    def spent(self) -> bool:
        return self.log.refresh() >= self.cap


# --- crawling ------------------------------------------------------------------------------------


def keyword_list(words) -> list[str]:
    """The words as KeywordRelevanceScorer's keywords: lower case, each once, in order."""
    seen, out = set(), []
    for word in words:
        word = word.strip().lower()
        if word and word not in seen:
            seen.add(word)
            out.append(word)
    return out


def http_strategy(proxy: str, budget: Budget, downloads: str):
    """crawl4ai's HTTP-only fetcher, every fetch through ``proxy`` and none past the budget."""
    from crawl4ai import HTTPCrawlerConfig
    from crawl4ai.async_crawler_strategy import AsyncHTTPCrawlerStrategy

    strategy = AsyncHTTPCrawlerStrategy(browser_config=HTTPCrawlerConfig(downloads_path=downloads))

    def before_request(url, request_kwargs):
        if budget.spent():
            raise BudgetSpent(f"request budget spent before {url}")
        request_kwargs["proxy"] = proxy

    strategy.set_hook("before_request", before_request)
    return strategy


async def crawl_bestfirst(crawler, seed: str, job: dict, budget: Budget) -> dict:
    """BestFirstCrawlingStrategy + KeywordRelevanceScorer from one start URL."""
    from crawl4ai import CacheMode, CrawlerRunConfig, ProxyConfig
    from crawl4ai.deep_crawling import BestFirstCrawlingStrategy
    from crawl4ai.deep_crawling.scorers import KeywordRelevanceScorer

    deep = BestFirstCrawlingStrategy(
        max_depth=job["budget"],  # a path no longer than the budget: never the limit
        include_external=True,  # the start page links to other hosts
        url_scorer=KeywordRelevanceScorer(keywords=keyword_list(job["words"])),
        max_pages=job["budget"],  # counts successful pages only: the request cap is the budget's
        should_cancel=budget.spent,
    )
    config = CrawlerRunConfig(deep_crawl_strategy=deep, cache_mode=CacheMode.BYPASS, stream=True,
                              proxy_config=ProxyConfig(server=job["proxy"]), verbose=False)
    results, kept = 0, []
    async for result in await crawler.arun(seed, config=config):
        results += 1
        if result.success:
            kept.append(result.url)
    return {"results": results, "kept": kept}


async def crawl_adaptive(crawler, seed: str, job: dict, budget: Budget) -> dict:
    """AdaptiveCrawler (its statistical strategy) with the words as the query, its own stopping
    rules off so that the budget is the limit."""
    from crawl4ai.adaptive_crawler import AdaptiveConfig, AdaptiveCrawler, StatisticalStrategy

    class BudgetedStatistical(StatisticalStrategy):
        async def should_stop(self, state, config):
            return budget.spent() or await super().should_stop(state, config)

    config = AdaptiveConfig(
        max_pages=job["budget"], max_depth=job["budget"],  # each round crawls top_k_links pages
        confidence_threshold=1.0, saturation_threshold=1.0, min_gain_threshold=0.0,
    )
    adaptive = AdaptiveCrawler(crawler=crawler, config=config, strategy=BudgetedStatistical())
    state = await adaptive.digest(start_url=seed, query=" ".join(job["words"]))
    # the pages it crawled; the links it only previewed (their <head>) are not among them
    return {"results": len(state.crawled_urls), "kept": [result.url for result in state.knowledge_base]}


STRATEGIES = {"bestfirst": crawl_bestfirst, "adaptive": crawl_adaptive}


def say(channel, message: dict) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


async def run(job: dict, channel, replies) -> dict:
    from crawl4ai import AsyncWebCrawler, BrowserConfig
    from crawl4ai.egress_policy import set_egress_proxy

    set_egress_proxy(job["proxy"])  # crawl4ai's own HTTP clients (link previews) through the replay
    budget = Budget(ServerLog(job["log"]))
    crawl = STRATEGIES[job["strategy"]]
    downloads = os.path.join(os.environ["HOME"], "downloads")
    strategy = http_strategy(job["proxy"], budget, downloads)
    async with AsyncWebCrawler(crawler_strategy=strategy, config=BrowserConfig(verbose=False)) as crawler:
        for index, seed in enumerate(job["seeds"]):
            say(channel, {"event": "seed", "index": index, "url": seed})
            reply = replies.readline()
            if not reply:
                break  # the driver is gone
            budget.cap = int(json.loads(reply)["cap"])
            started = time.monotonic()
            try:
                done = await crawl(crawler, seed, job, budget)
            except BudgetSpent:
                done = {}
            say(channel, {"event": "seed_done", "index": index, "url": seed, **done,
                          "counted": budget.log.refresh(), "seconds": round(time.monotonic() - started, 3)})
    return {"event": "done", "blocked": BLOCKED}


def main(argv: list[str]) -> int:
    job = json.loads(argv[1])
    host = urlsplit(job["proxy"]).hostname or ""
    if host not in LOOPBACK_NAMES and not host.startswith("127."):
        print(f"error: the proxy {job['proxy']} is not on loopback", file=sys.stderr)
        return 2
    if job["strategy"] not in STRATEGIES:
        print(f"error: unknown strategy {job['strategy']!r}", file=sys.stderr)
        return 2
    # stdout is the driver's channel: keep a copy of it, and send everything else printed to stderr
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    install_network_guard()
    final = asyncio.run(run(job, channel, sys.stdin))
    say(channel, final)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
