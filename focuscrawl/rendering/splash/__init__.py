"""scrapy-splash as the crawl's render backend (``FOCUS_RENDER_BACKEND=splash``): ``compat`` makes
scrapy-splash 0.11 work on current Scrapy, ``watch`` stops a crawl whose ``SPLASH_URL`` does not
answer as Splash does. The add-on that wires them is ``rendering.addon``."""
