"""The release policy that sends pages to the browser (``FOCUS_RENDER``).

A request leaves the frontier through the host gate as any other (robots.txt, delay, one
connection per host); here, last of the release policies, it is made a render when the spider
asked for one (its plain HTML was a shell), when ``FOCUS_RENDER=always``, or when its host has
shown it needs rendering (``RenderHosts``). Robots.txt requests, sitemaps, feeds, HEAD checks and
documents are never rendered.

What each host has shown (``RenderHosts``: the spider's ``render_judged`` reports) is its state,
kept with a JOBDIR snapshot. A render a downloader middleware turned into its call of the render
service (scrapy-splash's, to ``SPLASH_URL``) comes back to the scheduler: it continues the visit of
its host, and is sent next.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.exceptions import NotConfigured

from focuscrawl import meta as M
from focuscrawl import signals as focus_signals
from focuscrawl.config import ConfigError
from focuscrawl.frontier import Entry
from focuscrawl.politeness.gate import HostGate
from focuscrawl.rendering.availability import RenderingError, effective_mode
from focuscrawl.rendering.decide import RenderHosts
from focuscrawl.rendering.requests import RenderMeta, is_render
from focuscrawl.scheduling.release import Scheduling
from focuscrawl.urls import extension

#: what a browser would only download, not render
NOT_RENDERED_EXTENSIONS = frozenset({"pdf", "doc", "docx", "odt", "rtf", "xml", "rss", "atom", "json", "txt", "csv"})


class RenderRouting:
    name = "render_hosts"  # its state in a JOBDIR snapshot

    def __init__(self, mode: str, hosts: RenderHosts, render_meta: RenderMeta, gate: HostGate, stats):
        self.mode = mode
        self.hosts = hosts
        self.render_meta = render_meta
        self.gate = gate
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler, scheduler: Scheduling) -> RenderRouting:
        """Off when no page is rendered (FOCUS_RENDER=never, or ``auto`` without a backend); a
        configuration that cannot render as asked is a ConfigError."""
        try:
            mode = effective_mode(scheduler.config, crawler.settings)
        except RenderingError as exc:
            raise ConfigError(str(exc)) from None
        if mode == "never":
            raise NotConfigured
        routing = cls(mode, RenderHosts(), RenderMeta(scheduler.config), scheduler.gate, crawler.stats)
        crawler.signals.connect(routing.render_judged, signal=focus_signals.render_judged)
        return routing

    def render_judged(self, request, host, shell=None, plain=None, rendered=None, spider=None) -> None:
        if plain is not None and rendered is not None:
            if self.hosts.rendered(host, *plain, *rendered):
                self.stats.inc_value("focus/render/gained")
        elif shell is not None:
            self.hosts.plain_page(host, shell)
        self.stats.set_value("focus/render/hosts_marked", self.hosts.stats()["hosts_marked"])

    def state(self) -> RenderHosts:
        return self.hosts

    def restore(self, state: RenderHosts) -> None:
        self.hosts.adopt(state)

    # --- a shared crawl: what the other workers concluded ----------------------------------------
    def shared_view(self) -> dict[str, str]:
        return self.hosts.shared_view()

    def take_shared(self, conclusions: dict[str, str]) -> None:
        self.hosts.take_shared(conclusions)

    def review(self, host: str, entry: Entry, request: Request, now: float) -> Request | None:
        meta = request.meta
        if (request.method != "GET" or meta.get(M.ROBOTS_FOR) or meta.get(M.SITEMAP) or meta.get(M.FEED)
                or is_render(meta) or extension(request.url) in NOT_RENDERED_EXTENSIONS):
            return request
        reason = meta.get(M.RENDER)
        if reason is None and self.mode == "always":
            reason = "FOCUS_RENDER=always"
        elif reason is None and self.mode == "auto":
            reason = self.hosts.route(host)
        if not reason:
            return request
        meta[M.RENDER] = reason
        self.render_meta.apply(meta, allows=self._allows(host))
        self.stats.inc_value("focus/render/requests_routed")
        return request

    def _allows(self, host: str) -> RobotsCheck | None:
        rules = self.gate.robots.get(host)
        if rules is None or not self.gate.obey_robots:
            return None
        return RobotsCheck(rules, self.gate.agent)


class RenderContinuation:
    """scrapy-splash makes a released render its call of SPLASH_URL (a downloader middleware returns
    a new request, which comes back to the scheduler): the same visit of the host, which holds the
    host until it ends, sent next. On whatever FOCUS_RENDER says: a project may send its own
    renders through scrapy-splash."""

    def __init__(self, gate: HostGate):
        self.gate = gate

    @classmethod
    def from_crawler(cls, crawler, scheduler: Scheduling) -> RenderContinuation:
        return cls(scheduler.gate)

    def continues(self, request: Request) -> bool:
        host = request.meta.get(M.HOST)
        if not request.meta.get("_splash_processed") or host is None or host not in self.gate.inflight:
            return False
        self.gate.inflight[host] = request
        return True


class RobotsCheck:
    """What the host's robots.txt allows a render's page to load: a plain object, so a render in
    flight is kept by a JOBDIR checkpoint like any request."""

    __slots__ = ("rules", "agent")

    def __init__(self, rules, agent: str):
        self.rules, self.agent = rules, agent

    def __call__(self, url: str) -> bool:
        return self.rules.allows(url, self.agent)

    def __getstate__(self):
        return (self.rules, self.agent)

    def __setstate__(self, state) -> None:
        self.rules, self.agent = state
