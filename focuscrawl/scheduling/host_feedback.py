"""What the downloader tells the host gate: a response's latency, status and Retry-After (the
host's delay and back-off), and the end of a request, which frees its host (after its delay) or,
for a robots.txt fetch, leaves it busy until the rules are applied."""

from __future__ import annotations

import time

from scrapy import signals

from focuscrawl import meta as M


class HostFeedback:
    def __init__(self, scheduler):
        self.scheduler = scheduler

    def open(self) -> None:
        sig = self.scheduler.crawler.signals
        sig.connect(self.response_downloaded, signal=signals.response_downloaded)
        sig.connect(self.request_left, signal=signals.request_left_downloader)

    def response_downloaded(self, response, request, spider=None):
        host = request.meta.get(M.HOST)
        if host is None:
            return
        request.meta[M.GOT_RESPONSE] = True
        request.meta[M.STATUS] = response.status
        self.scheduler.gate.response(host, request.meta.get("download_latency"), response.status,
                                     response.headers.get(b"Retry-After"), time.monotonic())
        if response.status in (429, 503):
            self.scheduler.stats.inc_value("focus/politeness/backoffs")

    def request_left(self, request, spider=None):
        meta = request.meta
        host = meta.get(M.HOST)
        gate = self.scheduler.gate
        if host is None or gate.inflight.get(host) is not request:
            return
        robots_request = bool(meta.get(M.ROBOTS_FOR))
        if not meta.get(M.GOT_RESPONSE) and not robots_request:
            self.scheduler.stats.inc_value("focus/politeness/network_errors")
        ready_at = gate.finished(host, request, got_response=bool(meta.get(M.GOT_RESPONSE)),
                                 robots_status=meta.get(M.STATUS, 0) if robots_request else None,
                                 now=time.monotonic())
        if ready_at is not None:  # else: busy until its robots.txt is applied
            self.scheduler.free(host, ready_at)


__all__ = ["HostFeedback"]
