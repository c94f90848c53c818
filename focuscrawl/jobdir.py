"""The crawl's state in JOBDIR: a periodic snapshot plus a write-ahead journal, so that a crawl
killed at any moment (SIGKILL included) resumes without fetching a completed page again and
without losing a discovered URL.

- The snapshot (``focus-frontier.pickle``) holds the frontier, seen set, learner and host
  state; it is written to a temporary file and renamed, so it is never torn. Its ``format``
  (``SNAPSHOT_FORMAT``; none before 2) says how it holds the frontier: 2 keeps the packed records
  as the frontier stores them (``packed``), beside the rows of the entries it keeps as objects and
  of the requests in flight (``entries``); before 2, ``entries`` holds every row.
- The journal (``focus-journal-<generation>.pickle``) records, since that snapshot, every URL
  added to the frontier (``enq``), every request released to the downloader (``deq``) and every
  page whose item reached the store (``done``). It is flushed before a request is released, so
  the operating system has it even if the process dies the next instant. A torn last record is
  ignored.
- The spill file (``focus-spill.pickle``) holds URLs pruned from a full frontier, to be loaded
  back when the frontier runs dry.
"""

from __future__ import annotations

import logging
import os
import pickle
from typing import Any

logger = logging.getLogger(__name__)

SNAPSHOT = "focus-frontier.pickle"
SPILL = "focus-spill.pickle"
SNAPSHOT_KEYS = frozenset({"entries", "seen", "learner", "released", "timing", "host_admitted", "robots"})
SNAPSHOT_FORMAT = 2  # how the snapshot holds the frontier; a newer one is refused, not misread


class JobDirError(Exception):
    """A snapshot that cannot be read; the caller starts afresh and says so."""


class JobDir:
    def __init__(self, path: str):
        self.path = path
        os.makedirs(path, exist_ok=True)
        self.generation = 0
        self._journal = None

    def _journal_path(self, generation: int) -> str:
        return journal_path(self.path, generation)

    # --- reading ------------------------------------------------------------------------------
    def load(self) -> tuple[dict[str, Any] | None, list[tuple]]:
        """The last snapshot (None if there is none) and the journal events written after it."""
        state, events = read_jobdir(self.path)
        if state is not None:
            self.generation = state.get("generation", 0)
        return state, events

    # --- writing ------------------------------------------------------------------------------
    def _open_journal(self) -> None:
        self._journal = open(self._journal_path(self.generation), "ab")  # noqa: SIM115 - long-lived

    def append(self, event: tuple) -> None:
        if self._journal is None:
            self._open_journal()
        pickle.dump(event, self._journal, protocol=pickle.HIGHEST_PROTOCOL)

    def flush(self) -> None:
        if self._journal is not None:
            self._journal.flush()

    def save(self, state: dict[str, Any]) -> None:
        """Write a new snapshot and start a new, empty journal."""
        old = self.generation
        state = dict(state, generation=old + 1, format=SNAPSHOT_FORMAT)
        tmp = os.path.join(self.path, SNAPSHOT + ".tmp")
        with open(tmp, "wb") as handle:
            pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, os.path.join(self.path, SNAPSHOT))
        self.generation = old + 1
        if self._journal is not None:
            self._journal.close()
        self._open_journal()
        for stale in (old, old - 1):
            try:
                os.remove(self._journal_path(stale))
            except FileNotFoundError:
                pass

    def spill(self, rows: list[tuple]) -> None:
        with open(os.path.join(self.path, SPILL), "ab") as handle:
            for row in rows:
                pickle.dump(row, handle, protocol=pickle.HIGHEST_PROTOCOL)

    def unspill(self) -> list[tuple]:
        """Everything spilled so far (and forget it)."""
        path = os.path.join(self.path, SPILL)
        rows = list(_read_events(path))
        if rows:
            os.remove(path)
        return rows

    def has_spill(self) -> bool:
        return os.path.exists(os.path.join(self.path, SPILL))

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None


def read_jobdir(path: str) -> tuple[dict[str, Any] | None, list[tuple]]:
    """The last snapshot in the JOBDIR ``path`` (None if there is none) and the journal events written
    after it, read without changing anything there; a snapshot that cannot be used raises
    JobDirError."""
    snapshot = os.path.join(path, SNAPSHOT)
    state = None
    if os.path.exists(snapshot):
        try:
            with open(snapshot, "rb") as handle:
                state = pickle.load(handle)
            missing = SNAPSHOT_KEYS - set(state) if isinstance(state, dict) else SNAPSHOT_KEYS
            if missing:
                raise ValueError(f"not a focuscrawl snapshot (missing {', '.join(sorted(missing))})")
            if state.get("format", 1) > SNAPSHOT_FORMAT:
                raise ValueError(f"snapshot format {state['format']} is newer than this focuscrawl's "
                                 f"({SNAPSHOT_FORMAT})")
        except Exception as exc:  # noqa: BLE001 - any unreadable file means: start afresh
            raise JobDirError(f"cannot resume from {snapshot}: {exc}") from exc
    generation = state.get("generation", 0) if state is not None else 0
    return state, list(_read_events(journal_path(path, generation)))


def journal_path(jobdir: str, generation: int) -> str:
    """The journal written after the snapshot of ``generation``."""
    return os.path.join(jobdir, f"focus-journal-{generation}.pickle")


def _read_events(path: str):
    if not os.path.exists(path):
        return
    with open(path, "rb") as handle:
        while True:
            try:
                record = pickle.load(handle)
            except EOFError:
                return
            except Exception as exc:  # noqa: BLE001 - a record torn by a kill ends the journal
                logger.warning("journal %s ends in a torn record (%s); replaying what precedes it", path, exc)
                return
            if not (isinstance(record, tuple) and record and isinstance(record[0], str)):
                # bytes that happen to unpickle (a damaged file) are not a record either
                logger.warning("journal %s holds a record that is not one (%r); replaying what precedes it",
                               path, type(record).__name__)
                return
            yield record
