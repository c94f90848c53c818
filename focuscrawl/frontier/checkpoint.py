"""What a JOBDIR checkpoint reads and writes of the in-process frontier (``mercator.Frontier``
inherits it): its entries, its compact records as they are stored, and records loaded back."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

from focuscrawl.frontier.entries import decode
from focuscrawl.frontier.entry import Entry
from focuscrawl.frontier.records import in_full, renumber


class FrontierCheckpoint:
    """``Frontier``'s checkpoint side, over its hosts (``_hosts``: name -> slot with its queue
    ``q``), how it decodes records (``_unpack``) and how it files a host's work (``_host``,
    ``_next_seq``, ``_deflate``, ``_schedule``, ``prune``)."""

    def entries(self) -> Iterable[tuple[str, Entry]]:
        for name, h in self._hosts.items():
            q = h.q
            for record in q.records():
                yield name, decode(record, q, self._unpack)

    def rich_entries(self) -> Iterator[tuple[str, Entry]]:
        """The entries kept as objects (``stored`` leaves them out)."""
        for name, h in self._hosts.items():
            for entry in h.q.kept_entries():
                yield name, entry

    def stored(self) -> list[tuple[str, str, list[bytes], list[bytes]]]:
        """``(host, prefix, loose records, deflated blocks)`` of each host with compact or packed
        records (see ``HostQueue.stored``): what a checkpoint writes of them, nothing decoded,
        unpacked or inflated; ``load`` puts them back, ``read_stored`` reads them."""
        out = []
        for name, h in self._hosts.items():
            loose, blocks = h.q.stored()
            if loose or blocks:
                out.append((name, h.q.prefix, loose, blocks))
        return out

    def load(self, host: str, prefix: str, records: list[bytes], version: int) -> list[Entry]:
        """Add records another frontier stored (``stored``, ``read_stored``) as they are, nothing
        unpacked or packed again: under fresh seq numbers in their order (equal priorities keep
        it) and ``version`` (-1: stale, re-scored as they surface). Returns the entries pruned to
        stay within capacity, as ``push``."""
        h = self._host(host)
        q = h.q
        if q.prefix is None:
            q.prefix = sys.intern(prefix)
        elif q.prefix != prefix:
            records = [in_full(r, prefix) for r in records]
        records = [renumber(r, self._next_seq(), version) for r in sorted(records)]
        self._size += len(records)  # first: how the queue stores them may depend on it
        deflate = self._deflate()
        if q.size():
            for record in records:
                q.push(record, deflate)
        else:
            q.replace(records, deflate)
        self._schedule(h)
        if self._size > self.capacity * (1 + self.prune_slack):
            return self.prune()
        return []
