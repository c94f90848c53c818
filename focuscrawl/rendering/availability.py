"""Whether the crawl can render, decided once at its start: a crawl in ``auto`` mode without a
browser reads pages as they come (with one warning), one in ``always`` mode stops with the reason.
``FOCUS_RENDER_BACKEND=splash`` is a choice the user made: without ``SPLASH_URL`` (or without
scrapy-splash) the crawl stops with the reason in either mode, rather than quietly reading plainly."""

from __future__ import annotations

import logging

from focuscrawl.config import FocusConfig

logger = logging.getLogger(__name__)


class RenderingError(RuntimeError):
    """FOCUS_RENDER=always, and nothing to render with."""


def effective_mode(config: FocusConfig, settings, *, warn: bool = False) -> str:
    """``config.render``, or "never" when ``auto`` has no backend to render with; raises
    RenderingError when ``always`` has none."""
    if config.render == "never":
        return "never"
    missing = missing_backend(config, settings)
    if missing is None:
        return config.render
    if config.render == "always":
        raise RenderingError(f"FOCUS_RENDER=always but {missing}")
    if config.render_backend == "splash":
        raise RenderingError(missing)
    if warn:
        logger.warning("pages that need JavaScript are read as they are (FOCUS_RENDER=auto): %s", missing)
    return "never"


def missing_backend(config: FocusConfig, settings) -> str | None:
    """What the configured backend lacks, or None when it can render."""
    if config.render_backend == "splash":
        if not settings.get("SPLASH_URL"):
            return "FOCUS_RENDER_BACKEND=splash needs SPLASH_URL (a Splash, or `scrapy render-server`)"
        try:
            from focuscrawl.rendering.splash.compat import install

            install()
        except ImportError as exc:
            return f"scrapy-splash cannot be used: {exc}"
        return None
    from focuscrawl.rendering.browser.handler import RenderUnavailable, check_available

    try:
        check_available(config)
    except RenderUnavailable as exc:
        return str(exc)
    return None
