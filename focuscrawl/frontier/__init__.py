"""The URL frontier, free of Scrapy: Mercator back queues per host, a heap of host ready
times, global best-first selection among ready hosts, lazy re-scoring, bounded size; and the
seen set.

Scheduling (``mercator.Frontier``) is apart from storage: a host's queue is a ``HostQueue``
(``storage``), in memory by default (``hostqueue.MemoryHostQueue``: a hot heap and cold runs of
``records``)."""

from focuscrawl.frontier.entry import Codec, Entry
from focuscrawl.frontier.hostqueue import MemoryHostQueue
from focuscrawl.frontier.mercator import Frontier
from focuscrawl.frontier.records import read_stored, record_priority
from focuscrawl.frontier.rescoring import PackedRescorer
from focuscrawl.frontier.seen import SeenSet, url_fingerprint
from focuscrawl.frontier.storage import HostQueue, QueueFactory

__all__ = ["Codec", "Entry", "Frontier", "HostQueue", "MemoryHostQueue", "PackedRescorer", "QueueFactory",
           "SeenSet", "read_stored", "record_priority", "url_fingerprint"]
