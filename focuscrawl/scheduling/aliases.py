"""The release policy that fetches each page in one spelling (``FOCUS_URL_ALIASES``).

``focuscrawl.frontier.aliases.HostAliases`` learns the spellings each host serves one page at
(trailing slash, index pages, www or bare name) from redirects and content hashes; this part puts
what it learns on the request's path:

- on the way in (``admit``), a URL is taken in the spelling its host's rules give; a redirect hop
  is evidence of the rules, and a redirect's target (where the server says the page is) is never
  re-spelled, so a rule can never send the crawl round a redirect;
- on the way out (``popped``), a URL queued before its host's rules were learned is re-spelled,
  dropped when that spelling was seen already, or moved to the other host's queue;
- a page scored (``page_scored``) is evidence for the rules, and a re-spelled URL that failed is
  evidence against them: the spelling the link gave is fetched instead.

What it learned is its state, kept with a JOBDIR snapshot; in a shared crawl its rules are given to
the other workers and theirs taken up (``shared_view``, ``take_shared``).
"""

from __future__ import annotations

import logging

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from focuscrawl import meta as M
from focuscrawl import signals as focus_signals
from focuscrawl.frontier import Entry
from focuscrawl.frontier.aliases import HostAliases
from focuscrawl.scheduling.release import Scheduling
from focuscrawl.urls import canonicalize, host_key

logger = logging.getLogger(__name__)

#: what a released request's meta gained on its way (the scheduler's and Scrapy's own): dropped when
#: the request is made again in another spelling
RELEASE_META = frozenset({M.ALIAS_OF, M.HOST, M.PRIORITY, M.EXPLAIN, M.GOT_RESPONSE, M.STATUS, "download_slot",
                          "download_latency", "download_timeout", "_scheme_proxy", "proxy"})


def spelled_as_given(meta) -> bool:
    """A redirect's target (where the server says the page is) and the fallback of a failed
    re-spelling are fetched as they are spelled."""
    return bool(meta.get("redirect_times") or meta.get(M.AS_LINKED))


def respelled(request: Request, url: str) -> Request:
    """``request`` for ``url``, remembering the spelling the link gave (fetched instead if ``url`` fails)."""
    return request.replace(url=url, meta={**request.meta, M.ALIAS_OF: request.url})


class UrlAliases:
    name = "aliases"  # its state in a JOBDIR snapshot

    def __init__(self, scheduler: Scheduling, aliases: HostAliases):
        self.scheduler = scheduler
        self.aliases = aliases
        self.stats = scheduler.stats

    @classmethod
    def from_crawler(cls, crawler, scheduler: Scheduling) -> UrlAliases:
        config = scheduler.config
        if not config.url_aliases:
            raise NotConfigured
        part = cls(scheduler, HostAliases(max_pages=config.url_aliases_pages))
        crawler.signals.connect(part.page_scored, signal=focus_signals.page_scored)
        crawler.signals.connect(part.spider_closed, signal=signals.spider_closed)
        return part

    # --- the request's path -----------------------------------------------------------------------
    def admit(self, request: Request, canonical: str) -> tuple[Request, str]:
        meta = request.meta
        previous = meta.get("redirect_urls") or ()
        if meta.get("redirect_times") and previous:
            self.aliases.redirected(canonicalize(previous[-1]), canonical)
        if spelled_as_given(meta):
            return request, canonical
        alias = self.aliases.canonical(canonical)
        if alias == canonical:
            return request, canonical
        self.stats.inc_value("focus/aliases/respelled")
        return respelled(request, alias), alias

    def popped(self, host: str, entry: Entry, now: float) -> Entry | None:
        """A URL queued before its host's aliases were learned, in the spelling they give: dropped
        when that spelling was seen already, moved to the other host's queue for a www/bare alias
        (None: nothing to fetch from ``host`` now), else the entry to fetch. The new spelling
        becomes seen when the request is released, not here: an entry held back (patience, a
        host's wait) goes back to its queue as it was popped, and is re-spelled again."""
        request = entry.payload
        if not self.aliases.active or request.meta.get(M.ROBOTS_FOR) or spelled_as_given(request.meta):
            return entry
        frontier = self.scheduler.frontier
        alias = self.aliases.canonical(entry.url)
        if self.aliases.fetched_as_another(alias) or (alias != entry.url and alias in self.scheduler.admission.seen):
            self.stats.inc_value("focus/aliases/dropped")
            frontier.release(host, now)
            return None
        if alias == entry.url:
            return entry
        self.stats.inc_value("focus/aliases/respelled")
        moved = Entry(entry.priority, alias, respelled(request, alias), entry.features, entry.version)
        if host_key(alias) != host:
            frontier.push(host_key(alias), moved)
            frontier.release(host, now)
            return None
        return moved

    def released(self, host: str, request: Request, entry: Entry | None, now: float) -> None:
        if entry is not None and request.meta.get(M.ALIAS_OF) and not request.meta.get(M.ROBOTS_FOR):
            self.scheduler.admission.seen.add(entry.url)  # re-spelled in the queue (see popped)

    # --- evidence ---------------------------------------------------------------------------------
    def page_scored(self, request, response, page, links=None, hit=None, spider=None) -> None:
        """A page's content hash is evidence of its host's aliases; a re-spelled URL that failed is
        evidence against the rule, and the spelling the link gave is fetched instead. A revisit is
        no evidence (it is fetched as it was)."""
        if request.meta.get(M.REVISIT) is not None:
            return
        status = getattr(page, "status", None)
        original = request.meta.get(M.ALIAS_OF)
        if original and (not status or status >= 400):
            self.aliases.mistaken(canonicalize(original), canonicalize(request.url))
            self.stats.inc_value("focus/aliases/mistaken")
            meta = {k: v for k, v in request.meta.items() if k not in RELEASE_META}
            meta[M.AS_LINKED] = True
            self.scheduler.enqueue_request(request.replace(url=original, meta=meta))
        elif status == 200 and getattr(page, "content_hash", ""):
            self.aliases.fetched(canonicalize(page.final_url or request.url), page.content_hash,
                                 redirected=bool(request.meta.get("redirect_urls")))

    def spider_closed(self, spider=None, reason=None) -> None:
        if not self.aliases.active:
            return
        rules = self.aliases.rules()
        logger.info("URL aliases learned: slash on %d hosts, index pages on %d, www/bare names on %d",
                    len(rules["slash"]), len(rules["index"]), len(rules["www"]))
        self.stats.set_value("focus/aliases/hosts", len(rules["slash"]) + len(rules["index"]) + len(rules["www"]))

    # --- JOBDIR -------------------------------------------------------------------------------------
    def state(self) -> HostAliases:
        return self.aliases

    def restore(self, state: HostAliases) -> None:
        self.aliases.adopt(state)

    # --- a shared crawl: what the other workers concluded ----------------------------------------
    def shared_view(self) -> dict[str, str]:
        return self.aliases.shared_view()

    def take_shared(self, conclusions: dict[str, str]) -> None:
        self.aliases.take_shared(conclusions)
