"""The Scrapy add-on that puts the configured render backend's components in the crawl's settings
(Scrapy applies add-ons before the settings are frozen, so ``-s FOCUS_RENDER_BACKEND=splash`` is
all a user sets besides ``SPLASH_URL``).

``playwright`` needs nothing here: the crawl's download handler sends renders to the browser.
``splash`` adds scrapy-splash's downloader middlewares (through ``splash.compat``, which makes them
work on current Scrapy), which rewrite a request the scheduler made a render into a call of
``SPLASH_URL``'s ``render.html``, and ``splash.watch.SplashWatch``, which stops a crawl whose
``SPLASH_URL`` does not answer as Splash does. Its request fingerprinter and argument-deduplicating spider
middleware are left out: focuscrawl's frontier keeps its own seen set and sends no cached
arguments.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


class RenderBackend:
    def update_settings(self, settings) -> None:
        backend = settings.get("FOCUS_RENDER_BACKEND") or "playwright"
        if backend != "splash" or (settings.get("FOCUS_RENDER") or "auto") == "never":
            return
        try:
            from focuscrawl.rendering.splash.compat import DOWNLOADER_MIDDLEWARES, install

            install()
        except ImportError as exc:  # reported once the crawl starts (rendering.availability)
            logger.debug("scrapy-splash unavailable: %s", exc)
            return
        for component, order in DOWNLOADER_MIDDLEWARES.items():
            settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", component, order)
        # a SPLASH_URL answering with something that is not Splash stops the crawl, said once
        settings.set_in_component_priority_dict("EXTENSIONS", "focuscrawl.rendering.splash.watch.SplashWatch", 0)
