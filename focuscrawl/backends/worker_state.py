"""What a worker of a shared crawl keeps in its JOBDIR: its own stateful parts, those the crawl does
not share (the URL aliases it learned, the hosts it found need a browser). The crawl's state (the
frontier, seen set, budget, learner) is in Redis, which a worker started again takes up from there.

One file, ``focus-worker.pickle``, written whole (a temporary file, then a rename): beside a crawl
of its own's snapshot, never in its place, so the same JOBDIR may serve either.
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from collections.abc import Iterable

from focuscrawl.scheduling.persistence import Stateful

logger = logging.getLogger(__name__)

WORKER_STATE = "focus-worker.pickle"


class WorkerState:
    def __init__(self, jobdir: str, parts: Iterable[Stateful], checkpoint_seconds: float):
        self.path = os.path.join(jobdir, WORKER_STATE)
        self.parts = list(parts)
        self.checkpoint_seconds = checkpoint_seconds
        self._saved_at = time.monotonic()

    def restore(self) -> int:
        """Each part given back what it kept (``restore``); returns how many were. A file that cannot
        be read is logged and the worker starts afresh."""
        try:
            with open(self.path, "rb") as handle:
                kept = pickle.load(handle)
            if not isinstance(kept, dict):
                raise ValueError("not a worker's state")
        except FileNotFoundError:
            return 0
        except Exception as exc:  # noqa: BLE001 - a damaged file costs what it kept, never the crawl
            logger.error("JOBDIR %s cannot be read (%s); this worker's own state starts afresh", self.path, exc)
            return 0
        adopted = 0
        for part in self.parts:
            if kept.get(part.name) is not None:
                part.restore(kept[part.name])
                adopted += 1
        if adopted:
            logger.info("this worker's own state taken up from %s: %s", self.path, ", ".join(sorted(kept)))
        return adopted

    def save_if_due(self, now: float) -> None:
        if self.parts and now - self._saved_at >= self.checkpoint_seconds:
            self.save()

    def save(self) -> None:
        self._saved_at = time.monotonic()
        if not self.parts:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as handle:
            pickle.dump({part.name: part.state() for part in self.parts}, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, self.path)


__all__ = ["WORKER_STATE", "WorkerState"]
