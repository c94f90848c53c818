"""``focuscrawl.Addon``: the focused crawl in any Scrapy project, as Scrapy add-ons do it (2.10+)::

    ADDONS = {"focuscrawl.Addon": 0}
    FOCUS_MODEL = "models/topic.joblib"

The add-on puts the focused scheduler and its parts (download handlers, DNS resolver, downloader
and spider middlewares, pipelines, extensions, feed storages) and every ``FOCUS_*`` default into
the crawl's settings at the ``addon`` priority: ``scrapy settings --get`` shows them (in a project
whose ``COMMANDS_MODULE`` is ``focuscrawl.commands``), and a project's own settings, a spider's
``custom_settings`` and ``-s`` override any of them. A component the project already names in a
component dict (even as ``None``, to turn it off) keeps the project's order.

A project's own spider keeps its callbacks and items: ``focuscrawl.spidermw.FocusPages`` scores
each response with the topic model and gives each request a callback yields the words of its link
in that response, so the frontier orders what the spider asks for (focuscrawl's own project uses
this add-on too; its ``focused`` spider scores its pages itself).

At the start of each crawl the add-on names, once, an unknown ``FOCUS_*`` setting (with the
closest known one) and the Scrapy settings the focused scheduler does not honour.
"""

from __future__ import annotations

import difflib
import logging
from typing import Any

from focuscrawl import BOT_NAME, DEFAULT_USER_AGENT

logger = logging.getLogger(__name__)

PRIORITY = "addon"

#: Scrapy's own settings as the focused crawl wants them by default (politeness, safety, limits).
SETTINGS: dict[str, Any] = {
    "USER_AGENT": DEFAULT_USER_AGENT,
    # the frontier enforces these itself (focuscrawl/politeness): robots.txt with Crawl-delay, a
    # minimum gap between two requests to one host, one connection per host
    "ROBOTSTXT_OBEY": True,
    "DOWNLOAD_DELAY": 1.0,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    "CONCURRENT_REQUESTS_PER_IP": 0,
    "REDIRECT_MAX_TIMES": 5,  # robots.txt may redirect 5 times (RFC 9309); pages FOCUS_MAX_REDIRECTS
    "DOWNLOAD_TIMEOUT": 30,
    "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,
    "DOWNLOAD_WARNSIZE": 2 * 1024 * 1024,
    "RETRY_TIMES": 1,
    "SCHEDULER": "focuscrawl.scheduler.FocusScheduler",
}

#: Components, by component dict: None turns Scrapy's own off.
COMPONENTS: dict[str, dict[str, int | None]] = {
    "DOWNLOADER_MIDDLEWARES": {
        # robots.txt is fetched by the frontier itself (so robots.txt requests obey the per-host
        # delay), with Crawl-delay and RFC 9309 error semantics. Scrapy's middleware is replaced.
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        # Next to the downloader: sees every raw response (redirects included) for the request log.
        "focuscrawl.middlewares.CrawlLogMiddleware": 950,
        # Nearer still, so that a response or a lookup it refuses is logged once, as refused.
        "focuscrawl.network_guard.NetworkGuardMiddleware": 960,
        # Renders never hold the crawl: each host's renders timed, a host whose renders fail read
        # plainly (ahead of scrapy-splash's middleware, 725, which sends a render to SPLASH_URL).
        "focuscrawl.rendering.health.RenderHealthMiddleware": 700,
    },
    # A project's own spider: its responses scored, its requests given their links' words. After
    # Scrapy's DepthMiddleware (900) on the way out, so a request has its depth.
    "SPIDER_MIDDLEWARES": {"focuscrawl.spidermw.FocusPages": 800},
    # Resident memory that is what the crawl holds; the progress line or panel; the web console
    # (both off by FOCUS_* settings, silently).
    "EXTENSIONS": {
        "focuscrawl.memory.MemoryTrim": 0,
        "focuscrawl.observe.progress.Progress": 400,
        "focuscrawl.observe.console.ConsoleExtension": 500,
        # grows a model made from words or on-topic pages alone from the crawl's pages (FOCUS_GROW_MODEL)
        "focuscrawl.relevance.growing_ext.GrowModel": 600,
    },
    # Before a project's own pipelines (300 in Scrapy's template): a page record of a project's
    # spider is judged and stored, then leaves, so the project's pipelines see only its own items.
    "ITEM_PIPELINES": {
        "focuscrawl.pipelines.DuplicatesPipeline": 10,
        "focuscrawl.pipelines.StorePipeline": 20,
        "focuscrawl.pipelines.RelevantItemsPipeline": 30,
    },
}

#: Plain dicts (not ordered components): a key the project sets is the project's.
MAPPINGS: dict[str, dict[str, str]] = {
    # Twisted's pool would re-send a request on a reset keep-alive connection behind the frontier's
    # back; a request the scheduler made a render goes to a browser (focuscrawl/rendering).
    "DOWNLOAD_HANDLERS": {
        "http": "focuscrawl.rendering.browser.FocusDownloadHandler",
        "https": "focuscrawl.rendering.browser.FocusDownloadHandler",
    },
    # Local feed files written with no buffer in the process, so a killed crawl loses no line it
    # counted as exported (focuscrawl/feeds.py).
    "FEED_STORAGES": {
        "": "focuscrawl.feeds.DurableFileFeedStorage",
        "file": "focuscrawl.feeds.DurableFileFeedStorage",
    },
}

#: Scrapy settings the focused scheduler does not honour: (name, is it set to something it would
#: change, what happens instead).
IGNORED: tuple[tuple[str, Any, str], ...] = (
    ("DEPTH_PRIORITY", lambda s: s.getint("DEPTH_PRIORITY") != 0,
     "the frontier orders requests by expected reward; FOCUS_STRATEGY=bfs for breadth-first"),
    ("SCHEDULER_PRIORITY_QUEUE", None, "the frontier keeps its own per-host queues"),
    ("SCHEDULER_MEMORY_QUEUE", None, "the frontier keeps its own per-host queues"),
    ("SCHEDULER_DISK_QUEUE", None, "the frontier keeps its own queues, spilled to JOBDIR"),
    ("CONCURRENT_REQUESTS_PER_DOMAIN", lambda s: s.getint("CONCURRENT_REQUESTS_PER_DOMAIN") > 1,
     "one request at a time per host, always"),
    ("AUTOTHROTTLE_ENABLED", lambda s: s.getbool("AUTOTHROTTLE_ENABLED"),
     "the frontier's adaptive per-host delay replaces it: FOCUS_ADAPTIVE_DELAY_FACTOR"),
)


def focus_defaults() -> dict[str, Any]:
    """Every FOCUS_* setting with its default (config.DEFAULTS, their one home), as Scrapy settings
    hold them (tuples as lists, component dicts as dicts)."""
    from focuscrawl.config import COMPONENT_SETTINGS, FocusConfig

    return {name: dict(default) if name in COMPONENT_SETTINGS else list(default) if isinstance(default, tuple)
            else default for name, default, _ in FocusConfig.settings()}


class Addon:
    """The focused crawl's settings and components, at the ``addon`` priority."""

    @classmethod
    def update_pre_crawler_settings(cls, settings) -> None:
        """The process's settings, before any crawler: the FOCUS_* defaults (a command reading its
        settings sees them) and the DNS resolver, which Scrapy installs once per process from them."""
        _set_defaults(settings, focus_defaults())
        _set_resolver(settings)

    def update_settings(self, settings) -> None:
        _set_defaults(settings, focus_defaults())
        _set_defaults(settings, SETTINGS)
        if settings.getpriority("USER_AGENT") <= _priority(PRIORITY):
            # our User-Agent: robots.txt groups are matched against its token (a project's own
            # User-Agent is matched as Scrapy matches it)
            settings.set("ROBOTSTXT_USER_AGENT", BOT_NAME, PRIORITY)
        for name, components in COMPONENTS.items():
            for path, order in components.items():
                _setdefault_component(settings, name, path, order)
        for name, mapping in MAPPINGS.items():
            current = settings.getdict(name)
            merged = {**mapping, **current}
            if merged != current:
                settings.set(name, merged, max(settings.getpriority(name) or 0, _priority(PRIORITY)))
        _set_resolver(settings)
        from focuscrawl.rendering.addon import RenderBackend

        RenderBackend().update_settings(settings)
        warn_unknown_settings(settings)
        note_ignored_settings(settings)


def _priority(name: str) -> int:
    from scrapy.settings import get_settings_priority

    return get_settings_priority(name)


def _set_defaults(settings, values: dict[str, Any]) -> None:
    for name, value in values.items():
        settings.set(name, value, PRIORITY)  # below a project's, a spider's and -s


def _setdefault_component(settings, name: str, path: str, order: int | None) -> None:
    """``path`` at ``order`` in the component dict ``name``, unless the project names it there
    (as a path or a class). Import paths, so that ``scrapy settings --get`` can print the dict."""
    from scrapy.utils.misc import load_object

    current = settings.getdict(name)
    wanted = load_object(path)
    for key in current:
        try:
            if key == path or (load_object(key) if isinstance(key, str) else key) is wanted:
                return
        except (ImportError, NameError, ValueError, AttributeError):
            continue  # the project's own broken path: Scrapy reports it when it builds the dict
    current[path] = order
    settings.set(name, current, settings.getpriority(name) or 0)


def _set_resolver(settings) -> None:
    """No fetch into private networks: a name is judged by the address it resolves to (the
    process's resolver: a crawler's settings come too late for it)."""
    from scrapy.settings import default_settings

    name = "TWISTED_DNS_RESOLVER" if hasattr(default_settings, "TWISTED_DNS_RESOLVER") else "DNS_RESOLVER"
    settings.set(name, "focuscrawl.network_guard.GuardedResolver", PRIORITY)


def _set_by_user(settings, name: str) -> bool:
    """The setting was given by a project, a spider or the command line (not a default)."""
    return (settings.getpriority(name) or 0) > _priority(PRIORITY)


def warn_unknown_settings(settings) -> list[str]:
    """A FOCUS_* name that is no setting would silently keep a default: one warning each, naming
    the closest setting. Returns the unknown names."""
    known = set(focus_defaults())
    unknown = sorted(name for name in settings if isinstance(name, str) and name.startswith("FOCUS_")
                     and name not in known)
    for name in unknown:
        # judged without the prefix every name shares, which would make any two look alike
        close = difflib.get_close_matches(name[len("FOCUS_"):], [k[len("FOCUS_"):] for k in known], n=1, cutoff=0.6)
        hint = f"; did you mean FOCUS_{close[0]}?" if close else " (README.md lists the FOCUS_* settings)"
        logger.warning("%s is no focuscrawl setting and is ignored%s", name, hint)
    return unknown


def note_ignored_settings(settings) -> list[str]:
    """The Scrapy settings given that the focused scheduler does not honour, named once, at the
    start of the crawl. Returns their names."""
    if not _is_focus_scheduler(settings.get("SCHEDULER")):
        return []
    ignored = []
    for name, changes, instead in IGNORED:
        if _set_by_user(settings, name) and (changes is None or changes(settings)):
            ignored.append(f"{name} ({instead})")
    if ignored:
        logger.warning("the focused scheduler ignores %s", "; ".join(ignored))
    return [entry.split(" ", 1)[0] for entry in ignored]


def _is_focus_scheduler(scheduler) -> bool:
    from scrapy.utils.misc import load_object

    from focuscrawl.scheduler import FocusScheduler

    try:
        cls = load_object(scheduler) if isinstance(scheduler, str) else scheduler
    except (ImportError, NameError, ValueError, AttributeError):
        return False
    return isinstance(cls, type) and issubclass(cls, FocusScheduler)
