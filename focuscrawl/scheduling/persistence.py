"""JOBDIR persistence of the scheduler: a snapshot, a write-ahead journal and a spill file
(``focuscrawl.jobdir``), so that a crawl killed at any moment resumes where it stood.

- The journal records every URL queued (``enq``), released (``deq``) and done (``done``: its item
  went through the pipelines) since the last snapshot.
- The snapshot keeps the frontier's packed records as they are stored (nothing unpacked: this
  runs on the reactor's thread, for every queued URL), the seen set, the learner, the host gate's
  state, and the requests in flight, which go first in line on resume.
- URLs pruned from a full frontier are spilled to disk and loaded back when it runs low.
- The stateful parts it is given (``Stateful``: a release policy's learned URL aliases, revisit
  plan, hosts that need a browser) are kept in the snapshot, each under its name.

Restoring reads the snapshot, then replays the journal: URLs done since are dropped, URLs released
and never finished are fetched first, URLs queued since go through admission again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from scrapy import Request

from focuscrawl.config import ConfigError
from focuscrawl.frontier import Entry, Frontier, read_stored, record_priority
from focuscrawl.frontier.admission import Admission
from focuscrawl.jobdir import JobDir, JobDirError, read_jobdir
from focuscrawl.learning import link_context, link_features
from focuscrawl.learning.learner import is_vector
from focuscrawl.meta import FEATURES, REVISIT, ROBOTS_FOR
from focuscrawl.politeness.gate import HostGate
from focuscrawl.rendering.requests import storable
from focuscrawl.request_codec import packed_row, packed_rows
from focuscrawl.scheduling.requests import RequestSerializer
from focuscrawl.urls import canonicalize, host_key

logger = logging.getLogger(__name__)

FIRST = float("inf")  # the priority of a request in flight at a kill: first in line on resume
#: the snapshot's own keys, which no stateful part's name may take
SNAPSHOT_KEYS = frozenset({"entries", "packed", "seen", "learner", "released", "timing", "host_admitted", "robots",
                           "strategy"})


@runtime_checkable
class Stateful(Protocol):
    """A part whose state a JOBDIR snapshot keeps: ``state()`` is pickled under ``name`` and given
    back to ``restore`` on resume."""

    name: str

    def state(self) -> object: ...
    def restore(self, state: object) -> None: ...


@runtime_checkable
class Shareable(Protocol):
    """A stateful part whose conclusions the workers of a shared crawl give each other (the
    conclusions, not the evidence they came from): ``shared_view()`` is what changed since last
    asked, by key (a host's rule or mark; "" withdraws one), ``take_shared`` takes up other
    workers' views where this process has no evidence to the contrary."""

    name: str

    def shared_view(self) -> dict[str, str]: ...
    def take_shared(self, conclusions: dict[str, str]) -> None: ...


class Persistence:
    def __init__(self, jobdir: str, serializer: RequestSerializer, frontier: Frontier, admission: Admission,
                 gate: HostGate, stats, checkpoint_seconds: float, parts: Iterable[Stateful] = ()):
        self.jobdir = jobdir
        self.job = JobDir(jobdir)
        self.serializer = serializer
        self.frontier = frontier
        self.admission = admission
        self.gate = gate
        self.stats = stats
        self.checkpoint_seconds = checkpoint_seconds
        self.parts: list[Stateful] = []
        self.keep(parts)
        # canonical URL -> request released whose item has not been through the pipelines yet
        self.unfinished: dict[str, Request] = {}
        self.restoring = False
        self._last_checkpoint = time.monotonic()

    def keep(self, parts: Iterable[Stateful]) -> None:
        """Keep these parts' state with the snapshot too; raises ConfigError for a name taken."""
        for part in parts:
            if part.name in SNAPSHOT_KEYS or any(part.name == kept.name for kept in self.parts):
                raise ConfigError(f"{type(part).__name__}: its name in the JOBDIR snapshot is taken: {part.name!r}")
            self.parts.append(part)

    # --- the journal ------------------------------------------------------------------------------
    def enqueued(self, request: Request) -> None:
        if not self.restoring:
            self.job.append(("enq", self.serializer.to_dict(request)))

    def released(self, url: str, request: Request) -> None:
        """``request``: what a resumed crawl fetches if this one dies before the page is done (the
        page's GET, not a HEAD sent first)."""
        self.unfinished[url] = request
        self.job.append(("deq", url))
        self.job.flush()  # on disk (in the OS) before the request can complete

    def done(self, urls: set[str]) -> None:
        """Pages done (stored, or through the pipelines): journaled once each."""
        fresh = [url for url in urls if self.unfinished.pop(url, None) is not None]
        for url in fresh:
            self.job.append(("done", url))
        if fresh:
            self.job.flush()

    def forget(self, url: str) -> None:
        """A released URL that will not be fetched after all (a HEAD check said it is no page)."""
        self.unfinished.pop(url, None)

    # --- spill --------------------------------------------------------------------------------------
    def spill(self, entries: list[Entry]) -> None:
        self.job.spill([(host_key(e.url), e.priority, self.serializer.to_dict(e.payload), e.features)
                        for e in entries])
        self.stats.inc_value("focus/frontier/spilled", len(entries))

    def has_spill(self) -> bool:
        return self.job.has_spill()

    def unspill(self, learner) -> None:
        rows = self.job.unspill()
        for host, priority, request_dict, features in rows:
            request = self.serializer.from_dict(request_dict)
            canonical = canonicalize(request.url)
            self.frontier.push(host, Entry(priority, canonical, request, _vector(learner, features, canonical, request),
                                           -1))
        if rows:
            logger.info("frontier ran low: %d spilled URLs loaded back", len(rows))
            self.stats.inc_value("focus/frontier/unspilled", len(rows))

    # --- snapshots ------------------------------------------------------------------------------
    def checkpoint_due(self, now: float) -> bool:
        return now - self._last_checkpoint >= self.checkpoint_seconds

    def checkpoint(self, learner, released: int, strategy=None) -> None:
        """Packed entries as the frontier stores them, the rest as request dicts; a classic
        ``strategy`` (``FOCUS_STRATEGY``) with what it knows of each URL (the learner is the
        ``learned`` one's state)."""
        self._last_checkpoint = time.monotonic()
        to_dict = self.serializer.to_dict
        # robots.txt is fetched again on resume, and revisits are due again by the plan kept here
        entries = [(host, entry.priority, to_dict(entry.payload), entry.features)
                   for host, entry in self.frontier.rich_entries()
                   if not entry.payload.meta.get(ROBOTS_FOR) and entry.payload.meta.get(REVISIT) is None]
        for url, request in self.unfinished.items():  # released, item not stored yet: first in line on resume
            entries.append((host_key(url), FIRST, to_dict(storable(request)), request.meta.get(FEATURES)))
        gate = self.gate.state()
        self.job.save({
            "entries": entries, "packed": self.frontier.stored(), "seen": self.admission.seen, "learner": learner,
            "released": released, "timing": gate["timing"], "host_admitted": self.admission.host_admitted,
            "robots": gate["robots"],
            "strategy": strategy if getattr(strategy, "name", "learned") != "learned" else None,
            **{part.name: part.state() for part in self.parts},
        })
        self.stats.inc_value("focus/checkpoints")

    def close(self, learner, released: int, strategy=None) -> None:
        self.checkpoint(learner, released, strategy)
        self.job.close()

    # --- resume ---------------------------------------------------------------------------------
    def restore(self, learner, released: int, enqueue: Callable[[Request], bool],
                apply_robots: Callable[[str], None], use_learner: Callable[[object], None],
                use_strategy: Callable[[object], None] = lambda strategy: None) -> tuple[object, int]:
        """Snapshot, then the journal written after it: the frontier, seen set, learner and host
        state of the last checkpoint, plus every URL discovered since, minus the pages done.
        ``use_learner(learner)`` is called with the snapshot's learner, and ``use_strategy`` with
        its classic strategy if it had one, before the journal's URLs go to ``enqueue``, which
        scores them with it. Returns the learner and the count of requests made (the snapshot's,
        or those given)."""
        self.restoring = True
        try:
            return self._restore(learner, released, enqueue, apply_robots, use_learner, use_strategy)
        finally:
            self.restoring = False

    def _restore(self, learner, released, enqueue, apply_robots, use_learner, use_strategy):
        try:
            state, events = self.job.load()
        except JobDirError as exc:
            logger.error("%s; starting a new crawl", exc)
            self.stats.set_value("focus/resume_failed", 1)
            return learner, released
        if state is None and not events:
            return learner, released
        checkpoint = Checkpoint(state, events)
        done, pending = checkpoint.done, checkpoint.pending
        if state is not None:
            self.admission.seen, learner = state["seen"], state["learner"]
            use_learner(learner)
            if state.get("strategy") is not None:
                use_strategy(state["strategy"])
            released = state["released"]
            self.admission.host_admitted = state["host_admitted"]
            for part in self.parts:
                if state.get(part.name) is not None:
                    part.restore(state[part.name])
            for host in self.gate.restore(state["timing"], state["robots"], time.monotonic()):
                apply_robots(host)
            rows = list(state["entries"])  # every row, in a snapshot of format 1
            if self.frontier.codec is None:  # FOCUS_FRONTIER_PACK turned off since: no packed records
                rows += packed_rows(state.get("packed", ()))
            else:
                rows += self._load_packed(state.get("packed", ()), done, pending)
            for host, priority, request_dict, features in rows:
                request = self.serializer.from_dict(request_dict)
                canonical = canonicalize(request.url)
                if canonical in pending or priority == FIRST:
                    # no features: never re-scored, so it stays first in line
                    self.frontier.push(host, Entry(FIRST, canonical, request, None, -1))
                elif canonical not in done:
                    vector = _vector(learner, features, canonical, request)
                    self.frontier.push(host, Entry(priority, canonical, request, vector, -1))
        replayed = 0
        for event in events:
            if event[0] == "deq":
                released += 1
            elif event[0] == "enq":
                request = self.serializer.from_dict(event[1])
                canonical = canonicalize(request.url)
                if canonical in done:
                    self.admission.seen.add(canonical)
                elif canonical in pending and self.admission.seen.add(canonical):
                    self.frontier.push(host_key(canonical), Entry(FIRST, canonical, request, None, -1))
                    replayed += 1
                elif enqueue(request):
                    replayed += 1
        self.checkpoint(learner, released)  # a clean generation: the replayed journal is folded in
        logger.info("resumed from %s: %d URLs in the frontier (%d from the journal), %d seen, %d pages done "
                    "since the snapshot, %d requests already made", self.jobdir, len(self.frontier), replayed,
                    len(self.admission.seen), len(done), released)
        self.stats.set_value("focus/resumed", 1)
        return learner, released

    def _load_packed(self, stored: list[tuple], done: set[str], pending: set[str]) -> list[tuple]:
        """A snapshot's packed records back into the frontier as they are (no Request built), stale
        (re-scored as they surface), minus the pages done since (not those in flight at the
        snapshot, priority inf: their rows are kept too). Returns the rows of the records in flight
        at the kill, unpacked: they go first in line, without features (never re-scored)."""
        rows = []
        for host, prefix, loose, blocks in stored:
            records = []
            for record, url, blob in read_stored(prefix, loose, blocks):
                if url in pending:
                    rows.append(packed_row(host, record, url, blob))
                elif url not in done or record_priority(record) == FIRST:
                    records.append(record)
            self.frontier.load(host, prefix, records, version=-1)
        return rows


def _vector(learner, features, canonical: str, request: Request):
    """The stored feature vector, or one rebuilt from the request's link context."""
    if is_vector(features):
        return features
    return learner.vectorise(link_features(link_context(canonical, request.meta)))


@dataclass
class Checkpoint:
    """A JOBDIR's last snapshot (None when there is none) and the journal written after it: what a
    resumed crawl and ``scrapy explain`` read."""

    state: dict[str, Any] | None
    events: list[tuple]

    @property
    def done(self) -> set[str]:
        """Pages whose items went through the pipelines since the snapshot."""
        return {url for kind, url in self.events if kind == "done"}

    @property
    def pending(self) -> set[str]:
        """URLs released since the snapshot and never finished: in flight at the kill."""
        return {url for kind, url in self.events if kind == "deq"} - self.done

    def queued_since(self) -> list[dict]:
        """The request dicts of the URLs queued since the snapshot."""
        return [payload for kind, payload in self.events if kind == "enq" and isinstance(payload, dict)]

    def rows(self) -> list[tuple]:
        """Every (host, priority, request dict, features) row of the snapshot, its packed records
        unpacked without a spider (callbacks stay names)."""
        if self.state is None:
            return []
        return [*self.state["entries"], *packed_rows(self.state.get("packed", ()))]


def read_checkpoint(jobdir: str) -> Checkpoint:
    """The JOBDIR's checkpoint, read without changing anything; raises JobDirError when its
    snapshot cannot be used."""
    return Checkpoint(*read_jobdir(jobdir))
