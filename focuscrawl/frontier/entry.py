"""What the frontier holds: an ``Entry`` (priority, URL, what the crawler attached to it), and
the ``Codec`` that turns what an entry carries into bytes and back. The lowest layer of the
frontier's objects: ``storage`` (a host's queue keeps rich entries) and ``entries`` (an entry
as a record and back) build on it; it imports neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

# unpack(url, blob) -> (payload, features): a codec's ``unpack`` or ``preview``
Unpack = Callable[[str, bytes], tuple[Any, Any]]


class Entry:
    __slots__ = ("priority", "url", "payload", "features", "version")

    def __init__(self, priority: float, url: str, payload: Any = None, features: Any = None, version: int = 0):
        self.priority = priority
        self.url = url
        self.payload = payload
        self.features = features
        self.version = version

    def __repr__(self) -> str:
        return f"Entry({self.priority:.3f}, {self.url!r})"


class Codec(Protocol):
    """Turns what an entry carries (payload, features) into bytes and back, so that the frontier
    stores the entry as a packed record, which can go cold, rather than as live objects."""

    def pack(self, entry: Entry) -> bytes | None:
        """The entry's payload and features as bytes; None keeps the entry as an object."""

    def unpack(self, url: str, blob: bytes) -> tuple[Any, Any]:
        """(payload, features), new objects equal to those ``pack`` was given."""

    # Optional: ``preview(url, blob) -> (payload, features)``, what the rescorer needs of an
    # entry, cheaper than ``unpack`` (a re-scored record keeps its blob, so the payload given
    # to the rescorer is never stored).


__all__ = ["Codec", "Entry", "Unpack"]
