"""scrapy-splash 0.11.1 on current Scrapy (2.13+): the fixes upstream has not released yet.

Remove this module once scrapy-splash releases them. Each patch first checks that the installed
scrapy-splash still needs it (feature detection, never a version number), so a fixed release is
left alone and ``install()`` then patches nothing. What it mends, each seen failing on Scrapy 2.19:

- ``canonicalize_url``: ``scrapy_splash.dupefilter`` and ``.request`` import it from
  ``scrapy.utils.url``, which no longer has it (it lives in ``w3lib.url``): ``import scrapy_splash``
  raises ImportError (scrapy-plugins/scrapy-splash#332). The name is lent to ``scrapy.utils.url``
  for the import alone and taken back: Scrapy is left as it was.
- ``SplashDeduplicateArgsMiddleware``: its ``process_spider_output`` is a plain generator and it has
  no ``process_spider_output_async``, so Scrapy refuses to build the spider middlewares ("doesn't
  support asynchronous spider output": no crawl starts); and Scrapy no longer calls its
  ``process_start_requests``, which is where the spider's table of argument values was set up
  (a request with ``cache_args`` then failed with a KeyError). It gets ``process_start`` and
  ``process_spider_output_async``, async generators doing what the old methods did.
- ``SplashMiddleware._get_slot_key`` calls ``Downloader._get_slot_key``, removed from Scrapy (#330):
  every SplashRequest failed with an AttributeError. It now asks ``Downloader.get_slot_key``.
- The downloader middlewares' ``process_request``/``process_response`` require a ``spider``
  argument, which Scrapy deprecates (a ScrapyDeprecationWarning per method at every start, and it
  "will not be passed in future Scrapy versions"): the argument becomes optional, the crawler's
  spider standing in for it. ``SafeRobotsTxtMiddleware``, swapped in for spiders with
  ``http_user``/``http_pass``, called Scrapy's robots.txt middleware with the spider and was called
  by Scrapy without it (a TypeError on every request); it now works without.

Use: call ``install()`` before anything imports ``scrapy_splash`` (at the top of a project's
settings module is early enough), then keep scrapy-splash's documented settings; or merge
``splash_settings(SPLASH_URL)``, which installs the patches and names the same middlewares through
this module, so Scrapy loading them installs the patches too. ``from
focuscrawl.rendering.splash.compat import SplashRequest`` works like ``from scrapy_splash import
SplashRequest``, after installing. Its first name, ``focuscrawl.rendering.splash_compat``, which
projects' settings name, is this module too.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
import threading
from collections.abc import Mapping
from typing import Any

import scrapy
import scrapy.utils.url
import w3lib.url
from scrapy import Request

logger = logging.getLogger(__name__)

HERE = __name__
#: scrapy-splash's documented downloader middlewares (their orders are the documented ones)
DOWNLOADER_MIDDLEWARES = {
    f"{HERE}.SplashCookiesMiddleware": 723,
    f"{HERE}.SplashMiddleware": 725,
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": 810,
}
SPIDER_MIDDLEWARES = {f"{HERE}.SplashDeduplicateArgsMiddleware": 100}
#: scrapy-splash 0.11 deprecates DUPEFILTER_CLASS = SplashAwareDupeFilter for this fingerprinter
#: (Scrapy's default dupefilter uses it); this module sets no DUPEFILTER_CLASS
REQUEST_FINGERPRINTER_CLASS = f"{HERE}.SplashRequestFingerprinter"
DEFAULT_SPLASH_URL = "http://127.0.0.1:8050"

#: scrapy_splash's public names, served from here once the patches are installed
EXPORTS = frozenset({
    "SplashMiddleware", "SplashCookiesMiddleware", "SplashDeduplicateArgsMiddleware", "SlotPolicy",
    "SplashAwareDupeFilter", "splash_request_fingerprint", "SplashAwareFSCacheStorage",
    "SplashResponse", "SplashTextResponse", "SplashJsonResponse",
    "SplashRequest", "SplashFormRequest", "SplashRequestFingerprinter",
})

_lock = threading.Lock()
_installed: tuple[str, ...] | None = None  # what install() patched, once it ran


def install() -> tuple[str, ...]:
    """Make ``import scrapy_splash`` work and patch what the installed scrapy-splash still needs.

    Idempotent and thread-safe: the first call patches and logs what it patched, later calls
    return the same answer and do nothing.

    Returns:
        The names of the patches applied (empty when the installed scrapy-splash needs none).

    Raises:
        ImportError: scrapy-splash is not installed, or fails to import for another reason.
    """
    global _installed
    with _lock:
        if _installed is not None:
            return _installed
        patched: list[str] = []
        module = _import_scrapy_splash(patched)
        middleware = importlib.import_module("scrapy_splash.middleware")
        _patch_dedup_middleware(module.SplashDeduplicateArgsMiddleware, patched)
        _patch_slot_key(module.SplashMiddleware, patched)
        _patch_spider_argument(module.SplashMiddleware, patched)
        _patch_spider_argument(module.SplashCookiesMiddleware, patched)
        _patch_safe_robots(middleware, patched)
        _installed = tuple(patched)
        version = _version("scrapy-splash")
        if patched:
            logger.info("scrapy-splash %s patched for Scrapy %s: %s", version, scrapy.__version__, ", ".join(patched))
        else:
            logger.debug("scrapy-splash %s needs no patch on Scrapy %s", version, scrapy.__version__)
        return _installed


def splash_settings(splash_url: str = DEFAULT_SPLASH_URL, *, merge_with: Mapping[str, Any] | None = None) -> dict:
    """The settings a crawl needs to render through Splash's HTTP API at ``splash_url``.

    Installs the patches. The component dicts name this module's re-exports of scrapy-splash's
    middlewares (the same classes), so Scrapy loading them installs the patches in any process.
    With ``merge_with`` (a project's settings, a dict or Scrapy ``Settings``), its own
    ``DOWNLOADER_MIDDLEWARES``/``SPIDER_MIDDLEWARES`` are kept beside these rather than replaced.
    Do not list ``scrapy_splash.SplashMiddleware`` there as well: it would run twice.
    """
    install()
    answer: dict[str, Any] = {
        "SPLASH_URL": splash_url,
        "DOWNLOADER_MIDDLEWARES": dict(DOWNLOADER_MIDDLEWARES),
        "SPIDER_MIDDLEWARES": dict(SPIDER_MIDDLEWARES),
        "REQUEST_FINGERPRINTER_CLASS": REQUEST_FINGERPRINTER_CLASS,
    }
    for name in ("DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES"):
        own = merge_with.get(name) if merge_with is not None else None
        if own:
            answer[name] = {**dict(own), **answer[name]}
    return answer


def __getattr__(name: str):
    # scrapy_splash's names, so settings and spiders can name them here: installs first
    if name in EXPORTS:
        install()
        return getattr(importlib.import_module("scrapy_splash"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- the patches ------------------------------------------------------------------------------
def _import_scrapy_splash(patched: list[str]):
    try:
        return importlib.import_module("scrapy_splash")
    except ImportError as exc:
        if "canonicalize_url" not in str(exc) or hasattr(scrapy.utils.url, "canonicalize_url"):
            raise
    # a failed import leaves the submodules that did load behind: start again from nothing
    for name in [name for name in sys.modules if name == "scrapy_splash" or name.startswith("scrapy_splash.")]:
        del sys.modules[name]
    scrapy.utils.url.canonicalize_url = w3lib.url.canonicalize_url  # lent for the import only
    try:
        module = importlib.import_module("scrapy_splash")
    finally:
        del scrapy.utils.url.canonicalize_url
    patched.append("canonicalize_url import (from w3lib.url)")
    return module


def _patch_dedup_middleware(cls, patched: list[str]) -> None:
    key = cls.local_values_key

    def ensure_state(spider) -> None:
        if not hasattr(spider, "state"):
            spider.state = {}
        spider.state.setdefault(key, {})  # fingerprint -> argument value

    def spider_of(self, spider):
        if spider is not None:
            return spider
        crawler = getattr(self, "_focus_crawler", None)
        if crawler is None:
            raise RuntimeError(f"{cls.__name__} was not built from a crawler: pass the spider")
        return crawler.spider

    changed = False
    if not hasattr(cls, "process_start"):
        async def process_start(self, start, spider=None):
            spider = spider_of(self, spider)
            ensure_state(spider)
            async for item in start:  # a start item (not a request) passes untouched
                yield self._process_request(item, spider) if isinstance(item, Request) else item
        cls.process_start = process_start
        changed = True

    if (getattr(cls, "process_spider_output_async", None) is None
            and not inspect.isasyncgenfunction(getattr(cls, "process_spider_output", None))):
        async def process_spider_output_async(self, response, result, spider=None):
            spider = spider_of(self, spider)
            ensure_state(spider)
            async for item in result:
                yield self._process_request(item, spider) if isinstance(item, Request) else item
        cls.process_spider_output_async = process_spider_output_async
        changed = True
    if changed:
        if not hasattr(cls, "from_crawler"):  # the async methods take no spider: they find it here
            def from_crawler(klass, crawler):
                middleware = klass()
                middleware._focus_crawler = crawler
                return middleware
            cls.from_crawler = classmethod(from_crawler)
        patched.append("SplashDeduplicateArgsMiddleware async start and output")


def _patch_slot_key(cls, patched: list[str]) -> None:
    from scrapy.core.downloader import Downloader

    method = getattr(cls, "_get_slot_key", None)
    names = getattr(getattr(method, "__code__", None), "co_names", ())
    if ("_get_slot_key" not in names or "get_slot_key" in names or hasattr(Downloader, "_get_slot_key")
            or not hasattr(Downloader, "get_slot_key")):
        return  # fixed upstream, or a Scrapy that still has the old method (or not the new one)

    def _get_slot_key(self, request_or_response):
        return self.crawler.engine.downloader.get_slot_key(request_or_response)

    cls._get_slot_key = _get_slot_key
    patched.append("SplashMiddleware slot key (Downloader.get_slot_key)")


def _patch_spider_argument(cls, patched: list[str]) -> None:
    changed = []
    for name in ("process_request", "process_response", "process_exception"):
        method = cls.__dict__.get(name)
        if method is None or not _requires(method, "spider"):
            continue
        setattr(cls, name, _spider_optional(method))
        changed.append(name)
    if changed:
        patched.append(f"{cls.__name__}.{'/'.join(changed)} without the spider argument")


def _spider_optional(method):
    """``method`` with its ``spider`` argument optional: the crawler's spider when not given (the
    cookies middleware keeps no crawler; it uses the spider only in its log records' extra)."""
    names = list(inspect.signature(method).parameters)[1:]  # after self
    where = names.index("spider")

    def wrapper(self, *args, spider=None, **kwargs):
        if len(args) > where:  # an old Scrapy passing everything by position
            return method(self, *args, **kwargs)
        if spider is None:
            spider = getattr(getattr(self, "crawler", None), "spider", None)
        return method(self, *args, spider=spider, **kwargs)

    # Scrapy reads the signature to decide whether to pass the spider: show the optional one
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names if name != "spider"]
    params.append(inspect.Parameter("spider", inspect.Parameter.KEYWORD_ONLY, default=None))
    wrapper.__signature__ = inspect.Signature(params)
    wrapper.__name__ = method.__name__
    wrapper.__qualname__ = method.__qualname__
    wrapper.__doc__ = method.__doc__
    return wrapper


def _patch_safe_robots(middleware_module, patched: list[str]) -> None:
    cls = getattr(middleware_module, "SafeRobotsTxtMiddleware", None)
    auth_enabled = getattr(middleware_module, "_http_auth_enabled", None)
    if cls is None or auth_enabled is None or not _requires(cls.__dict__.get("process_request"), "spider"):
        return
    base = cls.__mro__[1].process_request
    if _requires(base, "spider"):
        return  # a Scrapy whose robots.txt middleware still takes the spider: upstream's code works

    async def process_request(self, request, spider=None):
        spider = spider if spider is not None else self.crawler.spider
        if auth_enabled(spider) and "splash" in request.meta:
            return None  # robots.txt is not asked for requests to Splash (they carry its credentials)
        result = base(self, request)
        return await result if inspect.isawaitable(result) else result

    cls.process_request = process_request
    patched.append("SafeRobotsTxtMiddleware.process_request without the spider argument")


def _requires(func, name: str) -> bool:
    """Whether ``func`` has a parameter ``name`` without a default."""
    if func is None:
        return False
    try:
        param = inspect.signature(func).parameters.get(name)
    except (TypeError, ValueError):
        return False
    return param is not None and param.default is inspect.Parameter.empty and param.kind not in (
        inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "(unknown version)"
