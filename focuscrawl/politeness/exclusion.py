"""The exclusion list: sites that asked not to be crawled, and sites we chose to avoid.

One entry a line, ``#`` starts a comment:

    example.com            the host example.com only
    .example.org           example.org and every subdomain (``*.example.org`` too)
    re:^https?://[^/]+/cgi-bin/   a regular expression searched in the URL

The file is re-read when its modification time changes (checked at most every
``check_seconds``), so "please stop" takes effect while a crawl runs.
"""

from __future__ import annotations

import logging
import os
import re
import time
from urllib.parse import urlsplit

from focuscrawl.config import DEFAULTS

logger = logging.getLogger(__name__)


class ExclusionList:
    def __init__(self, path: str | None = None, check_seconds: float = DEFAULTS.exclude_check_seconds,
                 clock=time.monotonic):
        self.path = path
        self.check_seconds = check_seconds
        self._clock = clock
        self._mtime: float | None = None
        self._checked_at = float("-inf")
        self.hosts: set[str] = set()
        self.domains: list[str] = []
        self.patterns: list[re.Pattern] = []
        self.reloads = 0
        if path:
            self._reload_if_changed(force=True)

    def _parse(self, lines) -> None:
        hosts, domains, patterns = set(), [], []
        for number, raw in enumerate(lines, 1):
            line = raw.split("#", 1)[0].strip() if not raw.strip().startswith("re:") else raw.strip()
            if not line:
                continue
            if line.startswith("re:"):
                try:
                    patterns.append(re.compile(line[3:].strip()))
                except re.error as exc:
                    logger.warning("exclusion list line %d: bad pattern %r skipped (%s)", number, line, exc)
            elif line.startswith(("*.", ".")):
                domains.append(line.lstrip("*").lstrip(".").lower())
            else:
                hosts.add(line.lower().rstrip("/"))
        self.hosts, self.domains, self.patterns = hosts, domains, patterns

    def _reload_if_changed(self, force: bool = False) -> None:
        now = self._clock()
        if not self.path or (not force and now - self._checked_at < self.check_seconds):
            return
        self._checked_at = now
        try:
            mtime = os.stat(self.path).st_mtime_ns
        except OSError as exc:
            if force:
                raise ValueError(f"exclusion list {self.path!r} cannot be read: {exc.strerror}") from None
            logger.warning("exclusion list %s cannot be read (%s); keeping the previous rules", self.path, exc)
            return
        if mtime == self._mtime:
            return
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            self._parse(handle.read().splitlines())
        self._mtime = mtime
        self.reloads += 1
        logger.info("exclusion list %s loaded: %d hosts, %d domains, %d patterns", self.path,
                    len(self.hosts), len(self.domains), len(self.patterns))

    def excludes(self, url: str) -> str | None:
        """The rule that excludes ``url``, or None."""
        self._reload_if_changed()
        try:
            parts = urlsplit(url)
            host = (parts.hostname or "").lower()
            netloc = parts.netloc.lower()
        except ValueError:
            return "malformed URL"
        if host in self.hosts or netloc in self.hosts:
            return f"host {host}"
        for domain in self.domains:
            if host == domain or host.endswith("." + domain):
                return f"domain {domain}"
        for pattern in self.patterns:
            if pattern.search(url):
                return f"pattern {pattern.pattern}"
        return None
