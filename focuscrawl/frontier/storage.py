"""The storage interface of the frontier: one host's queue of records, best first.

The frontier (``Frontier``, in ``mercator``) decides which host goes next and when; what a host
has queued lives behind ``HostQueue``. A record is a ``bytes`` object (``records``) whose first
``KEY`` bytes are unique and order it: the smallest record is the best entry, so a queue is
ordered by plain byte comparison and never decodes a record to order it. The frontier turns
entries into records (``entries.encode``) and back (``entries.decode``), numbers them, and tells a
queue when the frontier is big (``deflate``: what is written now should save memory at some CPU
cost); a queue knows nothing of the frontier, of other hosts, or of politeness.

A backend is a class that implements ``HostQueue`` and a ``QueueFactory`` that makes one per host:
``memory_queue`` (``hostqueue.MemoryHostQueue``: a hot heap and deflated cold runs in this
process) by default. Another backend (say Redis: a sorted set per host, records as members, all
of score 0 so that they sort as bytes) implements the same methods; it keeps ``top`` in the
process, since the frontier reads it on every scheduling decision about the host.

A queue may also answer ``sample(n, rng)``: ``n`` of its records drawn at random with replacement
(``rng`` a ``random.Random``), what an estimate of the frontier's priorities reads (the backend's
``priority_sample``, through ``sampling.queue_priority_sample``); one without it is read whole
(``records``) for a sample.

Entries the codec does not pack (*rich*: their record has no URL) are kept as objects by their
queue, keyed by the record's seq: they cannot leave the process, whatever the backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from focuscrawl.frontier.entry import Entry

# records -> the same records re-scored under the frontier's version (new headers), in their order
Restamp = Callable[[list[bytes]], list[bytes]]


@runtime_checkable
class HostQueue(Protocol):
    """One host's queued records, best (smallest) first, and the entries it keeps as objects."""

    #: the host's ``scheme://netloc``, which compact records leave out of their URL (set by the
    #: frontier from the first compact entry, or by ``Frontier.load``); None until then
    prefix: str | None
    #: the best record, None when the queue is empty; kept up to date by every method below
    top: bytes | None

    def size(self) -> int:
        """The records queued (rich ones included)."""

    def push(self, record: bytes, deflate: bool) -> None:
        """Add a record."""

    def pop(self) -> bytes:
        """Remove and return the best record (``top``); the queue is not empty."""

    def records(self) -> Iterable[bytes]:
        """Every record, in no particular order (the queue must not change while they are read)."""

    def has_stale(self, version: bytes) -> bool:
        """Whether some record is not of ``version`` (``records.VERSION``-packed): cheaper than
        reading every record where the queue knows whole parts to be fresh."""

    def drop(self, keys: set[bytes]) -> list[bytes]:
        """Remove and return the records whose key (``record[:KEY]``) is in ``keys``: the worst
        keys of the frontier (a prune), so the queue may look for them from its worst end."""

    def replace(self, records: list[bytes], deflate: bool) -> None:
        """Hold exactly ``records`` (any order; the list may be taken), in place of every record
        held. Kept objects stay: the caller re-keeps or forgets those of the records it changed."""

    def clear(self) -> None:
        """Forget every record and every kept object."""

    def rescore_part(self, budget: int, version: bytes, restamp: Restamp, deflate: bool) -> int:
        """Re-score about ``budget`` (a block or so more at most) of the stale records (not of
        ``version``), the longest stale first (those scored under the oldest version), by
        ``restamp``; the rest stay as they are, for a later call: every stale record is reached
        within a bounded number of calls, whatever its stored priority.
        Returns the records re-scored. A backend that can afford a whole deep host at once may
        re-score them all."""

    def stored(self) -> tuple[list[bytes], list[bytes]]:
        """The compact and packed records as they are stored, for a checkpoint that must neither
        decode nor inflate them: loose records, and deflated blocks (``records.unpack_block``).
        Rich records are left out."""

    def keep(self, seq: int, entry: Entry) -> None:
        """Keep ``entry`` as an object, for its rich record of ``seq``."""

    def kept(self, seq: int, forget: bool = False) -> Entry:
        """The object kept for the rich record of ``seq``; no longer kept if ``forget``."""

    def kept_entries(self) -> Iterable[Entry]:
        """Every object kept."""


# host name -> an empty queue for it
QueueFactory = Callable[[str], HostQueue]
