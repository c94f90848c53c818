"""The optional parts of focuscrawl and the pip extras that install them.

The core install is what a focused crawl in one process needs. Rendering JavaScript in a browser
(``render``), a frontier shared through Redis (``redis``) and figures (``plot``) pull in large
packages most crawls never use, so their imports live inside the code paths of those features, and
a feature used without its extra says, in one line, which extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: extra -> what it adds, as a user would name it (the messages say it)
EXTRAS = {
    "render": "rendering pages in a browser (Playwright)",
    "redis": "a frontier shared through Redis",
    "plot": "figures (matplotlib)",
}


class MissingExtra(ImportError):
    """A feature was asked for whose packages the install left out; the message names the extra."""

    def __init__(self, feature: str, extra: str, missing: str | None = None):
        self.feature = feature
        self.extra = extra
        lacking = f" ({missing} is not installed)" if missing else ""
        super().__init__(f"{feature} needs focuscrawl's {extra} extra{lacking}: pip install 'focuscrawl[{extra}]'")


def require(module: str, extra: str, feature: str) -> ModuleType:
    """``module`` imported, or MissingExtra saying that ``feature`` needs ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(feature, extra, exc.name or module) from None


def check_extras(config) -> None:
    """MissingExtra when the settings (a ``FocusConfig``) ask for what the install lacks, so that
    ``scrapy crawl`` refuses before it starts rather than once its parts are built. Rendering in
    ``auto`` mode is no refusal: without a browser the crawl reads pages as they come."""
    if config.frontier_url:
        require("redis", "redis", "FOCUS_FRONTIER_URL (a shared crawl)")
    if config.render == "always" and config.render_backend == "playwright":
        require("scrapy_playwright", "render", "FOCUS_RENDER=always")


__all__ = ["EXTRAS", "MissingExtra", "check_extras", "require"]
