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
        self.refresh(force=True)

    def load_lines(self, lines) -> None:
        """The rules of ``lines`` (the file's format) replace the list's."""
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

    def refresh(self, force: bool = False) -> None:
        """At most every ``check_seconds`` (at once with ``force``): the file re-read if it changed,
        then ``checked`` called with what was read."""
        if not force and (self.path is None and type(self).checked is ExclusionList.checked):
            return  # nothing to look at
        now = self._clock()
        if not force and now - self._checked_at < self.check_seconds:
            return
        self._checked_at = now
        self.checked(self._read_if_changed(force) if self.path else None)

    def checked(self, text: str | None) -> None:
        """Called at every check of the list (``refresh``) with the text of the file when it was
        (re)loaded at this check, else None: where a list that also takes its rules from elsewhere
        looks there (``focuscrawl.distributed.exclusion``). The file's list has nothing more to do."""

    def _read_if_changed(self, force: bool) -> str | None:
        try:
            mtime = os.stat(self.path).st_mtime_ns
        except OSError as exc:
            if force:
                raise ValueError(f"exclusion list {self.path!r} cannot be read: {exc.strerror}") from None
            logger.warning("exclusion list %s cannot be read (%s); keeping the previous rules", self.path, exc)
            return None
        if mtime == self._mtime:
            return None
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        self.load_lines(text.splitlines())
        self._mtime = mtime
        self.reloads += 1
        logger.info("exclusion list %s loaded: %d hosts, %d domains, %d patterns", self.path,
                    len(self.hosts), len(self.domains), len(self.patterns))
        return text

    def excludes(self, url: str) -> str | None:
        """The rule that excludes ``url``, or None."""
        self.refresh()
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
