"""Release policies: the parts on a request's way through the scheduler, loaded from an ordered
setting as Scrapy loads its middlewares::

    FOCUS_RELEASE_POLICIES = {"myproject.policies.OfficeHours": 450, "focuscrawl.scheduling.policies.Patience": None}

``FOCUS_RELEASE_POLICIES_BASE`` holds focuscrawl's own (URL aliases, patience, the HEAD check,
revisits, render routing, a render service's continuation); ``FOCUS_RELEASE_POLICIES`` is merged
over it (``None`` turns one off) and the policies are asked in ascending order. Each is built
``from_crawler(crawler, scheduler)``, turns itself off by raising ``NotConfigured`` (bare when its
setting has it off: no log line; with a message: one WARNING), raises ``ConfigError`` when it
cannot work as configured (the crawl stops with that one line), and connects the crawler's
signals it needs itself. One with state (``name``, ``state()``, ``restore(state)``:
``persistence.Stateful``) is kept by a JOBDIR snapshot.

A policy defines only the hooks it needs (``ReleasePolicy``); the scheduler asks those who define
each one, in order, as Scrapy asks the middlewares that have a method.
"""

from __future__ import annotations

import logging
import pprint
from typing import TYPE_CHECKING, Any, Protocol

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import build_from_crawler, load_object

from focuscrawl import signals as focus_signals
from focuscrawl.config import ConfigError, FocusConfig

if TYPE_CHECKING:
    from focuscrawl.frontier import Entry, Frontier
    from focuscrawl.frontier.admission import Admission
    from focuscrawl.politeness.gate import HostGate

logger = logging.getLogger(__name__)


class ReleasePolicy(Protocol):
    """What the scheduler asks a policy, and what the policy may answer. Every hook is optional.

    - ``review``: a request the frontier and the host gate let go is about to be released. Answer
      the request to send (it, or another in its place: a HEAD first, a render), or None to hold
      it back (it goes back to its host's queue, and the host is free again).
    - ``popped``: before the host gate, a queued entry. Answer the entry to go on with (it, or
      another spelling of it), or None when it is dropped or moved to another host's queue (the
      policy has then freed ``host`` in the frontier).
    - ``admit``: a new request on its way into the frontier, before admission; answer it and its
      canonical URL (the same, or re-spelled).
    - ``continues``: a request that continues one already released (a downloader middleware made
      a render its call of a render service): True sends it next, past the frontier and the gate.
    - ``released``: a request left the scheduler (``entry`` None: a robots.txt fetch).
    - ``refill``: before the frontier is asked for a request, a policy may queue its own.
    - ``next_due``: when the policy will have something to queue (None: nothing planned).
    - ``pending``: the policy has work that keeps the crawl open though the frontier is empty.
    """

    def review(self, host: str, entry: Entry, request: Request, now: float) -> Request | None: ...
    def popped(self, host: str, entry: Entry, now: float) -> Entry | None: ...
    def admit(self, request: Request, canonical: str) -> tuple[Request, str]: ...
    def continues(self, request: Request) -> bool: ...
    def released(self, host: str, request: Request, entry: Entry | None, now: float) -> None: ...
    def refill(self, now: float) -> None: ...
    def next_due(self, now: float) -> float | None: ...
    def pending(self) -> bool: ...


#: the hooks of ReleasePolicy, as the scheduler collects them
HOOKS = ("review", "popped", "admit", "continues", "released", "refill", "next_due", "pending")


class Scheduling(Protocol):
    """The scheduler's doors a policy may use (its ``from_crawler`` is given the scheduler)."""

    crawler: Any
    config: FocusConfig
    stats: Any
    frontier: Frontier
    gate: HostGate
    admission: Admission
    backend: Any  # where the crawl's state lives (focuscrawl.backends.CrawlBackend)
    released: int  # requests released so far (FOCUS_BUDGET counts them)
    spider: Any

    def enqueue_request(self, request: Request) -> bool: ...
    def forget(self, url: str) -> None: ...


class PolicyHooks:
    """Each hook's bound methods, in the policies' order: the scheduler's loops skip the policies
    without it."""

    def __init__(self, policies: list):
        for hook in HOOKS:
            setattr(self, hook, [getattr(p, hook) for p in policies if callable(getattr(p, hook, None))])


def policy_paths(config: FocusConfig) -> list[Any]:
    """The enabled policies' class paths (or classes), in order: the base merged with the user's
    dict, ``None`` dropping one (Scrapy's ``build_component_list``)."""
    try:
        return build_component_list({**dict(config.release_policies_base), **dict(config.release_policies)})
    except ValueError as exc:
        raise ConfigError(f"FOCUS_RELEASE_POLICIES: {exc}") from None


def policy_classes(config: FocusConfig) -> list[tuple[Any, type]]:
    """(path, class) of every enabled policy, in order; raises ConfigError for a class path that
    cannot be loaded."""
    classes = []
    for path in policy_paths(config):
        try:
            classes.append((path, load_object(path) if isinstance(path, str) else path))
        except (ImportError, NameError, ValueError, AttributeError) as exc:
            raise ConfigError(f"FOCUS_RELEASE_POLICIES: cannot load {path!r}: {exc}") from None
    return classes


def load_policies(crawler, scheduler: Scheduling) -> list:
    """Every enabled release policy, built ``from_crawler(crawler, scheduler)``; one that raises
    ``NotConfigured`` is left out (a WARNING when it says why). Raises ConfigError for a class path
    that cannot be loaded."""
    policies, enabled = [], []
    for path, cls in policy_classes(scheduler.config):
        try:
            policies.append(build_from_crawler(cls, crawler, scheduler))
        except NotConfigured as exc:
            if exc.args:
                logger.warning("Disabled release policy %s: %s", path, exc.args[0])
            continue
        enabled.append(path)
    logger.info("Enabled release policies:\n%s", pprint.pformat(enabled))
    return policies


def refuse(crawler, request: Request, reason: str) -> bool:
    """A request the crawl will not fetch: counted and signalled (``request_refused``: the request
    log, the status, a revisit plan that tracks it). Returns False (not queued)."""
    crawler.stats.inc_value(f"focus/refused/{reason}")
    crawler.signals.send_catch_log(focus_signals.request_refused, request=request, reason=reason)
    return False


__all__ = ["HOOKS", "PolicyHooks", "ReleasePolicy", "Scheduling", "load_policies", "policy_classes", "policy_paths",
           "refuse"]
