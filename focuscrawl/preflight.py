"""What ``scrapy crawl focused`` checks before it starts: every configured part, each by a small
check, each failure one line naming the setting and the fix.

A crawl that would stop as it starts (no model, no seed, a Redis nobody runs, a browser that is
not there, a render service that is something else, a store, request log or output file it cannot
write) stops here instead,
before any request, with ``error: ...`` and exit code 2 (``commands/crawl.py``), never with a
traceback from deep inside Scrapy's start. Every check runs, so a user fixes all at once.

A check is a function of the ``Preflight`` (the spider's arguments, the settings, the
``FocusConfig`` read from them) that raises ``PreflightError`` with its one line. Checks that reach a service (Redis, the render service) are bounded by
``SERVICE_TIMEOUT`` and go to the address configured, nowhere else.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit
from urllib.request import url2pathname

from focuscrawl.config import ConfigError, FocusConfig

#: how long a service checked here may take to answer, in seconds
SERVICE_TIMEOUT = 5.0


class PreflightError(Exception):
    """A part of the crawl's configuration that cannot work; the message is the one line."""


@dataclass
class Preflight:
    spargs: dict
    settings: object
    config: FocusConfig

    @classmethod
    def from_settings(cls, spargs: dict, settings) -> Preflight:
        try:
            return cls(dict(spargs), settings, FocusConfig.from_settings(settings))
        except ConfigError as exc:
            raise PreflightError(str(exc)) from None


Check = Callable[[Preflight], None]


# --- the checks ---------------------------------------------------------------------------------
def check_model(pre: Preflight) -> None:
    from focuscrawl.relevance import ModelError, TopicModel

    model = pre.spargs.get("model") or pre.config.model
    if not model:
        raise PreflightError("no topic model: use -a model=models/NAME.joblib (see `scrapy train`)")
    try:
        TopicModel.load(model)
    except ModelError as exc:
        raise PreflightError(str(exc)) from None


def check_seeds(pre: Preflight) -> None:
    from focuscrawl.safety import NetworkPolicy, url_address
    from focuscrawl.spiders.focused import SeedsError, read_seeds

    try:
        seeds = read_seeds(pre.spargs.get("seeds", ""))
    except SeedsError as exc:
        raise PreflightError(str(exc)) from None
    policy = NetworkPolicy.from_config(pre.config)
    for url in seeds:  # a seed the crawl may not reach would leave a crawl that does nothing
        reason = policy.url_refusal(url)
        if reason:
            raise PreflightError(f"seed {url} is refused ({reason}): allow it with -s FOCUS_ALLOWED_NETWORKS="
                                 f"{url_address(url)} (or -s FOCUS_ALLOW_PRIVATE_NETWORKS=True)")


def check_threshold(pre: Preflight) -> None:
    if "threshold" in pre.spargs:
        try:
            float(pre.spargs["threshold"])
        except ValueError:
            raise PreflightError(f"threshold must be a number, not {pre.spargs['threshold']!r}") from None


def check_exclusion_list(pre: Preflight) -> None:
    from focuscrawl.politeness import ExclusionList

    if pre.config.exclude_file:
        try:
            ExclusionList(pre.config.exclude_file, pre.config.exclude_check_seconds)
        except ValueError as exc:
            raise PreflightError(str(exc)) from None


def check_extras(pre: Preflight) -> None:
    """What the settings ask for is installed: a shared crawl needs the ``redis`` extra,
    ``FOCUS_RENDER=always`` with Playwright the ``render`` extra (``focuscrawl.extras``)."""
    from focuscrawl.extras import MissingExtra, check_extras as missing

    try:
        missing(pre.config)
    except MissingExtra as exc:
        raise PreflightError(str(exc)) from None


def check_release_policies(pre: Preflight) -> None:
    """Every release policy named (FOCUS_RELEASE_POLICIES) can be loaded."""
    from focuscrawl.scheduling.release import policy_classes

    try:
        policy_classes(pre.config)
    except ConfigError as exc:
        raise PreflightError(str(exc)) from None


def check_backend(pre: Preflight) -> None:
    """The crawl's backend (FOCUS_BACKEND, ``focuscrawl.backends``) loads and accepts the settings
    (the shared one needs FOCUS_FRONTIER_URL, for one)."""
    from focuscrawl.backends import backend_class
    from focuscrawl.extras import MissingExtra

    try:
        backend_class(pre.config).check(pre.config)
    except MissingExtra:
        return  # check_extras names the extra to install
    except ConfigError as exc:
        raise PreflightError(str(exc)) from None


def check_redis(pre: Preflight) -> None:
    """A shared frontier's Redis answers a PING (the scheduler and the duplicate filter both
    connect to it as the crawl starts)."""
    url = pre.config.frontier_url
    if not url:
        return
    try:
        import redis
    except ImportError:
        return  # check_extras names the extra to install
    try:
        client = redis.Redis.from_url(url, socket_timeout=SERVICE_TIMEOUT, socket_connect_timeout=SERVICE_TIMEOUT)
    except ValueError as exc:
        raise PreflightError(f"FOCUS_FRONTIER_URL={url} is not a Redis URL ({exc}): use "
                             "redis://HOST:PORT/DB") from None
    try:
        client.ping()
    except redis.exceptions.RedisError as exc:
        raise PreflightError(f"FOCUS_FRONTIER_URL={url}: Redis does not answer ({_first_line(exc)}): start "
                             "redis-server there, or correct FOCUS_FRONTIER_URL") from None
    finally:
        client.close()


def check_rendering(pre: Preflight) -> None:
    """What renders is there: a browser for the playwright backend (FOCUS_RENDER=always cannot
    do without; auto reads pages plainly, with a warning at the start), a render service that
    answers as Splash does for the splash backend."""
    from importlib.util import find_spec

    from focuscrawl.rendering.availability import RenderingError, effective_mode

    config = pre.config
    if config.render == "always" and config.render_backend == "playwright" and find_spec("scrapy_playwright") is None:
        return  # check_extras names the extra to install
    try:
        mode = effective_mode(config, pre.settings)
    except RenderingError as exc:
        raise PreflightError(str(exc)) from None
    if mode != "never" and config.render_backend == "splash":
        problem = splash_problem(pre.settings.get("SPLASH_URL"))
        if problem:
            raise PreflightError(problem)


def check_store(pre: Preflight) -> None:
    """The crawl store can be written: its folder exists or can be made, and a file already there
    is a SQLite database."""
    jobdir = pre.config.jobdir
    if not pre.config.store and jobdir and os.path.exists(jobdir) and not os.path.isdir(jobdir):
        return  # check_jobdir says so
    path = pre.config.store or os.path.join(jobdir or ".", "crawl.db")
    setting = "FOCUS_STORE" if pre.config.store else ("JOBDIR" if pre.config.jobdir else "FOCUS_STORE")
    fix = f"set {setting} to a file in a folder you can write"
    if os.path.isdir(path):
        raise PreflightError(f"{setting}: {path} is a folder, not a store file: {fix}")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise PreflightError(f"{setting}: the store {path} is not writable: {fix}")
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                conn.execute("PRAGMA schema_version").fetchone()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise PreflightError(f"{setting}: {path} is not a crawl store ({exc}): {fix}") from None
        return
    _writable_folder(os.path.dirname(os.path.abspath(path)), setting, fix)


def check_jobdir(pre: Preflight) -> None:
    """JOBDIR is a folder the crawl can write its checkpoints in."""
    jobdir = pre.config.jobdir
    if not jobdir:
        return
    fix = "use another JOBDIR"
    if os.path.exists(jobdir) and not os.path.isdir(jobdir):
        raise PreflightError(f"JOBDIR={jobdir} is a file, not a folder: {fix}")
    _writable_folder(os.path.abspath(jobdir), "JOBDIR", fix)


def check_crawl_log(pre: Preflight) -> None:
    """The request log the user asked for can be written (else the crawl would run without it)."""
    path = pre.config.crawl_log
    if path:
        _writable_file(path, "FOCUS_CRAWL_LOG", "set FOCUS_CRAWL_LOG to a file in a folder you can write")


def check_feeds(pre: Preflight) -> None:
    """Each local file of ``-o``/``-O`` (FEEDS) can be written."""
    for uri in pre.settings.getdict("FEEDS"):
        uri = str(uri)
        parts = urlsplit(uri)
        if parts.scheme == "file":
            path = url2pathname(parts.path)
        elif len(parts.scheme) <= 1:  # no scheme (a Windows drive letter is no scheme either)
            path = uri
        else:
            continue  # s3://, ftp://...: checked by Scrapy's feed storage when it opens
        _writable_file(path.split("%(", 1)[0] if "%(" in os.path.dirname(path) else path,
                       f"-o {uri}", "give -o/-O a file in a folder you can write")


#: in the order a user would fix them
CHECKS: tuple[Check, ...] = (check_model, check_seeds, check_threshold, check_exclusion_list, check_extras,
                             check_backend, check_release_policies, check_redis, check_rendering, check_store,
                             check_jobdir, check_crawl_log, check_feeds)


def run(spargs: dict, settings, checks: tuple[Check, ...] = CHECKS) -> list[str]:
    """Every check of the crawl's configuration: the errors, one line each (empty: all is well)."""
    try:
        pre = Preflight.from_settings(spargs, settings)
    except PreflightError as exc:
        return [str(exc)]
    errors = []
    for check in checks:
        try:
            check(pre)
        except PreflightError as exc:
            errors.append(str(exc))
    return errors


# --- the render service ---------------------------------------------------------------------------
def splash_problem(splash_url: str | None, timeout: float = SERVICE_TIMEOUT) -> str | None:
    """Why ``SPLASH_URL`` cannot render (one line naming the setting and the fix), or None when
    it answers ``_ping`` as Splash does. Asked directly, never through the environment's proxy:
    the crawl's requests to the render service do not go through it either."""
    start = "start one (`scrapy render-server --port N`) or correct SPLASH_URL"
    if not splash_url:
        return "FOCUS_RENDER_BACKEND=splash needs SPLASH_URL (a Splash, or `scrapy render-server`)"
    ping = splash_url.rstrip("/") + "/_ping"
    if not ping.startswith(("http://", "https://")):
        return f"SPLASH_URL={splash_url} is not an http(s) URL: {start}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(ping, timeout=timeout) as answer:
            body = answer.read(65536)
    except urllib.error.HTTPError as exc:
        return f"SPLASH_URL={splash_url}: {ping} answered {exc.code}, not as Splash does: {start}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"SPLASH_URL={splash_url}: no render service answers ({reason}): {start}"
    try:
        status = json.loads(body).get("status")
    except (ValueError, AttributeError):
        status = None
    if status != "ok":
        return f"SPLASH_URL={splash_url}: {ping} is not Splash's answer ({body[:60]!r}): {start}"
    return None


# --- helpers ------------------------------------------------------------------------------------
def _writable_file(path: str, setting: str, fix: str) -> None:
    """``path`` is a file that can be written (or made, in a folder that is or can be made)."""
    if os.path.isdir(path):
        raise PreflightError(f"{setting}: {path} is a folder, not a file: {fix}")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise PreflightError(f"{setting}: {path} is not writable: {fix}")
        return
    _writable_folder(os.path.dirname(os.path.abspath(path)), setting, fix)


def _writable_folder(folder: str, setting: str, fix: str) -> None:
    """``folder`` exists and is writable, or could be made (its nearest existing parent is)."""
    probe = folder
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        made = "" if probe == folder else f", so {folder} cannot be made"
        raise PreflightError(f"{setting}: {probe} is a file, not a folder{made}: {fix}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise PreflightError(f"{setting}: {probe} is not writable: {fix}")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
