"""One exclusion list for a shared crawl, whichever worker's file it was edited in.

A worker started with ``FOCUS_EXCLUDE_FILE`` publishes the file's text to Redis whenever it
(re)loads it; every worker, with a file or without, takes up the text last published, looked at
every ``FOCUS_EXCLUDE_CHECK_SECONDS``. So "please stop" written into the file on any one machine
reaches every worker of the crawl within that time. The list is the last one published: workers
started with different files end up with the last one loaded.
"""

from __future__ import annotations

import logging

from focuscrawl.config import DEFAULTS
from focuscrawl.politeness.exclusion import ExclusionList

logger = logging.getLogger(__name__)


class SharedExclusionList(ExclusionList):
    def __init__(self, client, keys, path: str | None = None,
                 check_seconds: float = DEFAULTS.exclude_check_seconds, **kwargs):
        self.client = client
        self._key = keys("exclude")
        self._version = 0  # of the text this worker took up last
        super().__init__(path, check_seconds, **kwargs)

    def checked(self, text: str | None) -> None:
        if text is not None:  # this worker's file changed: it is the crawl's list now
            pipe = self.client.pipeline(transaction=True)  # a reader sees the version with its text
            pipe.hincrby(self._key, "version", 1)
            pipe.hset(self._key, "text", text)
            self._version = int(pipe.execute()[0])
        else:
            self._take_shared()

    def _take_shared(self) -> None:
        version, text = self.client.hmget(self._key, "version", "text")
        if version is None or text is None or int(version) <= self._version:
            return
        self.load_lines(text.decode("utf-8", "replace").splitlines())
        self._version = int(version)
        logger.info("exclusion list of the shared crawl taken up: %d hosts, %d domains, %d patterns",
                    len(self.hosts), len(self.domains), len(self.patterns))


__all__ = ["SharedExclusionList"]
