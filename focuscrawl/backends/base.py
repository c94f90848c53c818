"""The interface every crawl backend implements, and how the configured one is found."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from scrapy import Request
from scrapy.utils.misc import load_object

from focuscrawl.config import ConfigError, FocusConfig
from focuscrawl.extras import MissingExtra
from focuscrawl.frontier import Entry
from focuscrawl.politeness import ExclusionList
from focuscrawl.politeness.gate import HostGate

if TYPE_CHECKING:
    from focuscrawl.scheduling.persistence import Stateful


class BackendUnavailable(Exception):
    """The configured backend cannot be built (its service does not answer, an extra is missing, a
    combination of settings it cannot honour); the message is one line for the user."""


@runtime_checkable
class CrawlBackend(Protocol):
    """Where one crawl's state lives, and the events the scheduler tells it of.

    The scheduler decides (admission, priorities, politeness, release policies); the backend
    holds what those decisions are made over and keeps it: the frontier (``push``/``pop`` of
    ``focuscrawl.frontier.Entry`` by host, ``requeue``/``release`` of a host, ``next_ready_time``,
    ``len``), the seen set (``add`` True when new, ``in``, ``len``), the exclusion list, the count
    of requests released that the budget is spent against, the pages released and not done yet
    (what a restart must fetch again), and the state a restarted crawl takes up.
    """

    #: other processes work on the same crawl (the crawl status says so, and counts theirs)
    shared: ClassVar[bool]
    frontier: Any
    seen: Any
    exclusion: ExclusionList | None
    #: requests this process released for pages (robots.txt fetches not counted)
    released_here: int

    # --- the settings it accepts, and the parts that live with it -----------------------------
    @classmethod
    def check(cls, config: FocusConfig) -> None:
        """Raise ConfigError (one line, saying why) for settings this backend cannot honour."""

    @classmethod
    def duplicate_indexes(cls, config: FocusConfig, **parameters) -> tuple[Any, Any] | None:
        """(exact, near) duplicate indexes when they live with the backend (every process of the
        crawl sees the same); None: they live in the crawl store."""

    @classmethod
    def continues(cls, config: FocusConfig, stored_settings: Mapping[str, Any]) -> bool:
        """Whether a crawl stored with ``stored_settings`` is the one this process joins again."""

    # An optional door, for a continuous crawl (FOCUS_RECRAWL): ``revisit_keeper(revisits)``, where
    # the revisit plan lives (``focuscrawl.scheduling.plan_keepers.PlanKeeper``). Without it the plan
    # is this process's, which a shared backend refuses (each process would keep a plan of its own).

    # Another optional door, for the budget's price of patience (FOCUS_PATIENCE_PRICE):
    # ``priority_sample(k, rng)``, the priorities of ``k`` entries of the crawl's frontier drawn at
    # random. Without it a budgeted crawl's patience is priced by time.

    # --- lifecycle ------------------------------------------------------------------------------
    def bind(self, gate: HostGate, admission, kept: Iterable[Stateful]) -> None:
        """The scheduler's parts whose state is the crawl's too: the gate (hosts' timing and
        robots.txt), the admission (per-host counts) and ``kept``: other stateful parts
        (``focuscrawl.scheduling.persistence.Stateful``: ``name``, ``state()``, ``restore()``),
        which a restarted crawl takes up (what a journal keeps)."""

    def open(self, *, learner, enqueue: Callable[[Request], bool], apply_robots: Callable[[str], None],
             use_learner: Callable[[Any], None], use_strategy: Callable[[Any], None]) -> None:
        """The crawl starts: a kept state is taken up (``use_learner``/``use_strategy`` get the
        kept learner and strategy, ``enqueue`` the URLs to admit again, ``apply_robots(host)``
        each host whose robots.txt rules came from elsewhere)."""

    def tick(self, now: float, learner, strategy) -> bool:
        """The passing of time (heartbeats, checkpoints, syncs, each at its own pace). True when the
        learner took up learning from elsewhere (queued priorities are then stale)."""

    def close(self, learner, strategy) -> None:
        """The crawl ends: what must be kept is kept, what is held is handed back."""

    # --- events ---------------------------------------------------------------------------------
    def queued(self, request: Request, pruned: list[Entry]) -> None:
        """``request`` was admitted into the frontier, which pruned ``pruned`` to make room."""

    def released(self, host: str, url: str, resume_request: Request | None) -> None:
        """The page ``url`` of ``host`` was released for download; ``resume_request`` is what a
        restart fetches if it is not done by then (None: nothing, it is planned again)."""

    def forget(self, url: str) -> None:
        """A released page that will not be fetched after all."""

    def redirected(self, urls: Iterable[str]) -> None:
        """Released pages that redirected (as fetched: canonicalized where kept): their targets are
        queued as new URLs."""

    def done(self, urls: Iterable[str]) -> None:
        """Pages done (through the pipelines, or stored; their URLs as fetched: canonicalized where
        kept): never to be fetched again by a restart."""

    # --- questions ------------------------------------------------------------------------------
    def crawl_released(self) -> int:
        """Requests the whole crawl released so far: what FOCUS_BUDGET counts."""

    def refill(self, learner) -> bool:
        """The frontier ran empty: URLs kept elsewhere put back into it (True when some were)."""

    def more_work(self) -> bool:
        """With this process's frontier empty: whether URLs may still come (work in progress
        here or elsewhere, URLs kept aside)."""

    def work_time(self) -> float:
        """The seconds of work the process has done (the patience policy prices waits by it)."""


#: what a backend class must answer (its attributes are set when it is built)
_INTERFACE = ("from_crawler", "check", "duplicate_indexes", "continues", "bind", "open", "tick", "close", "queued",
              "released", "forget", "redirected", "done", "crawl_released", "refill", "more_work", "work_time")


def backend_class(config: FocusConfig) -> type[CrawlBackend]:
    """The class of the configured backend (FOCUS_BACKEND, or the default for FOCUS_FRONTIER_URL);
    raises ConfigError when it cannot be loaded, MissingExtra (``focuscrawl.extras``) when it needs
    an extra that is not installed (the shared backend: redis)."""
    path = config.backend_path
    try:
        cls = load_object(path)
    except MissingExtra:
        raise
    except (ImportError, AttributeError, ValueError, NameError) as exc:
        raise ConfigError(f"FOCUS_BACKEND={path} cannot be loaded ({exc})") from None
    missing = [name for name in _INTERFACE if not callable(getattr(cls, name, None))]
    if not isinstance(cls, type) or missing:
        raise ConfigError(f"FOCUS_BACKEND={path} is not a crawl backend (focuscrawl.backends.CrawlBackend): "
                          f"it has no {', '.join(missing or ['class'])}")
    return cls


__all__ = ["BackendUnavailable", "CrawlBackend", "backend_class"]
