"""Rendering JavaScript-built pages, by job:

- the crawl's rendering decisions, whatever the backend: which hosts need a browser (``decide``),
  what a render request carries (``requests``), which backend is usable (``availability``),
  renders that never hold the crawl (``health``), the backend's components (``addon``);
- ``chromium``: finding Chromium, its launch switches and proxy script, its processes;
  ``network_rules``: which addresses a render may reach;
- ``browser``: the crawl's own browser (``FOCUS_RENDER_BACKEND=playwright``);
- ``splash``: scrapy-splash as the backend (``FOCUS_RENDER_BACKEND=splash``);
- ``server``: ``scrapy render-server``, Splash's HTTP API on Playwright and Chromium.
"""
