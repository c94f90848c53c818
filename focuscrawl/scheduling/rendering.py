"""The release policy that sends pages to the browser (``FOCUS_RENDER``).

A request leaves the frontier through the host gate as any other (robots.txt, delay, one
connection per host); here, last of the release policies, it is made a render when the spider
asked for one (its plain HTML was a shell), when ``FOCUS_RENDER=always``, or when its host has
shown it needs rendering (``RenderHosts``). Robots.txt requests, sitemaps, feeds, HEAD checks and
documents are never rendered.
"""

from __future__ import annotations

from scrapy import Request

from focuscrawl import meta as M
from focuscrawl.frontier import Entry
from focuscrawl.politeness.gate import HostGate
from focuscrawl.rendering.decide import RenderHosts
from focuscrawl.rendering.requests import RenderMeta, is_render
from focuscrawl.urls import extension

#: what a browser would only download, not render
NOT_RENDERED_EXTENSIONS = frozenset({"pdf", "doc", "docx", "odt", "rtf", "xml", "rss", "atom", "json", "txt", "csv"})


class RenderRouting:
    def __init__(self, mode: str, hosts: RenderHosts, render_meta: RenderMeta, gate: HostGate, stats):
        self.mode = mode
        self.hosts = hosts
        self.render_meta = render_meta
        self.gate = gate
        self.stats = stats

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
