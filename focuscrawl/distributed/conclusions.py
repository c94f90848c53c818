"""What the workers of a shared crawl concluded about hosts, given to each other: a URL alias rule
one learned from redirects, a host one's renders showed needs a browser. Without it every worker
pays again (redirects, plain fetches of shell pages) for what another already knows.

A part that shares (``focuscrawl.scheduling.persistence.Shareable``) gives its conclusions that
changed (``shared_view``), never its evidence; they are appended to the part's Redis stream under
the crawl's prefix (``XADD``, trimmed to about ``MAX_ENTRIES``), sent behind with the worker's
other writes, and the entries added since the last reading are read back in one round trip for
every part together, at most every ``SHARE_SECONDS``. A worker's own entries are skipped; the
others' go to ``take_shared``, which applies them where the worker has no evidence of its own to
the contrary. A worker that joins late reads the stream from its start.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from focuscrawl.distributed.batch import WriteBehind
from focuscrawl.distributed.connection import Keys

logger = logging.getLogger(__name__)

#: how often a worker gives out and takes up conclusions (seconds): a rule learned reaches the other
#: workers within this, and the reading costs one round trip each time
SHARE_SECONDS = 1.5
#: entries a part's stream keeps, about (a late worker reads what is left of older ones)
MAX_ENTRIES = 100_000
#: entries read at most a part each time (the rest next time)
READ_COUNT = 1_000
#: the field naming the worker an entry is from (no conclusion's key starts with a NUL)
WORKER_FIELD = b"\x00worker"


class SharedConclusions:
    def __init__(self, writes: WriteBehind, keys: Keys, worker: str, parts: Iterable, *,
                 every: float = SHARE_SECONDS) -> None:
        self.writes = writes
        self.keys = keys
        self.worker = worker.encode()
        self.parts = list(parts)
        self.every = every
        self.taken = 0  # conclusions of other workers taken up
        self._last = {part.name: b"0-0" for part in self.parts}  # the last entry read of each stream
        self._next = 0.0

    def stream(self, name: str) -> str:
        return self.keys("shared", name)

    def maybe_share(self, now: float) -> bool:
        """Give out and take up, when due. True when conclusions of other workers were taken up."""
        if not self.parts or now < self._next:
            return False
        self._next = now + self.every
        self.publish()
        return self.take()

    def publish(self) -> None:
        """Each part's conclusions changed since last asked, sent behind the worker's writes."""
        for part in self.parts:
            view = part.shared_view()
            if view:
                fields = [item for key, value in view.items() for item in (key, value)]
                self.writes.defer(("XADD", self.stream(part.name), "MAXLEN", "~", MAX_ENTRIES, "*",
                                   WORKER_FIELD, self.worker, *fields))

    def take(self) -> bool:
        """Other workers' entries added since the last reading, one round trip for every part."""
        replies = self.writes.call_many([("XRANGE", self.stream(part.name), b"(" + self._last[part.name], "+",
                                          "COUNT", READ_COUNT) for part in self.parts])
        took = False
        for part, entries in zip(self.parts, replies, strict=True):
            conclusions: dict[str, str] = {}
            for entry_id, fields in entries or ():
                self._last[part.name] = entry_id if isinstance(entry_id, bytes) else str(entry_id).encode()
                if not fields or fields.get(WORKER_FIELD) == self.worker:
                    continue
                for key, value in fields.items():
                    if key != WORKER_FIELD:
                        conclusions[_text(key)] = _text(value)
            if conclusions:
                part.take_shared(conclusions)
                self.taken += len(conclusions)
                took = True
        return took

    def close(self) -> None:
        """What changed since the last share goes out with the worker's last writes."""
        self.publish()
        if self.taken:
            logger.info("shared crawl: %d conclusions of other workers taken up (URL aliases, hosts rendered)",
                        self.taken)


def _text(value) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


__all__ = ["SHARE_SECONDS", "SharedConclusions"]
