"""Feeds that survive a killed crawl.

Scrapy's file feed storage writes through a buffer in the process: a crawl killed with SIGKILL
loses the lines still in it, and the resumed crawl has no way to know which. ``DurableFileFeedStorage``
opens the file unbuffered, so every line an exporter writes is in the operating system (one
``write`` per item for JSON lines) before the item counts as exported (``pages.exported`` in the
crawl store). A crawl resumed from its JOBDIR then re-emits exactly the relevant pages that no
durable feed has (``focuscrawl.pipelines.StorePipeline``).

Feeds whose storage is not durable this way (S3, FTP, GCS, or a file with a post-processing
plugin such as gzip, which buffers) count as written only when the feed exporter has closed them.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

from scrapy.extensions.feedexport import FileFeedStorage
from scrapy.utils.misc import load_object


class DurableFileFeedStorage(FileFeedStorage):
    """A local feed file written with no buffer in the process (``-o``/``-O`` use it)."""

    def open(self, spider: Any) -> IO[bytes]:
        path = Path(self.path)
        if path.parent and not path.parent.exists():
            path.parent.mkdir(parents=True)
        return path.open(self.write_mode, buffering=0)


def feeds_durability(settings: Any) -> str | None:
    """How this crawl's feeds (``FEEDS``, ``-o``/``-O``) keep what they are given: ``"each"`` when
    every feed has an item once the exporter has written it, ``"at-close"`` when some feed has it
    only once closed, None when the crawl has no feed."""
    feeds = settings.getdict("FEEDS")
    if not feeds:
        return None
    storages = settings.getwithbase("FEED_STORAGES")
    for uri, options in feeds.items():
        scheme = urlparse(str(uri)).scheme
        if len(scheme) == 1:  # a Windows drive letter, not a scheme
            scheme = ""
        try:
            storage = load_object(storages[scheme])
        except (KeyError, ImportError, NameError, AttributeError, ValueError):
            return "at-close"
        options = options or {}
        if not (isinstance(storage, type) and issubclass(storage, DurableFileFeedStorage)) \
                or options.get("postprocessing"):
            return "at-close"
    return "each"


__all__ = ["DurableFileFeedStorage", "feeds_durability"]
