"""The ``focuscrawl`` command (and ``python -m focuscrawl``): Scrapy's command line with
focuscrawl's commands (``train``, ``export``, ``replay``, ``evaluate``, ``demo``, ...), usable from
any folder. Outside a Scrapy project it runs with focuscrawl's own project settings
(``focuscrawl crawl focused ...`` is ``scrapy crawl focused ...`` there); inside another project,
with that project's settings, its spiders and focuscrawl's ``focused`` spider, and the add-on.

focuscrawl's commands are never put into other projects' ``scrapy`` command (no
``scrapy.commands`` entry points): a project that wants them there sets
``COMMANDS_MODULE = "focuscrawl.commands"``."""

from __future__ import annotations

import os
import sys

COMMANDS = "focuscrawl.commands"
SPIDERS = "focuscrawl.spiders"
ADDON = "focuscrawl.Addon"


def main(argv: list[str] | None = None) -> None:
    from scrapy.cmdline import execute
    from scrapy.utils.conf import closest_scrapy_cfg
    from scrapy.utils.project import get_project_settings

    if "SCRAPY_SETTINGS_MODULE" not in os.environ and not closest_scrapy_cfg():
        os.environ["SCRAPY_SETTINGS_MODULE"] = "focuscrawl.settings"
    settings = get_project_settings()
    with_focuscrawl(settings)
    execute(["focuscrawl", *(sys.argv[1:] if argv is None else argv)], settings)


def with_focuscrawl(settings) -> None:
    """A project's settings with focuscrawl's commands, its spider and its add-on."""
    from focuscrawl.addon import _setdefault_component

    settings.set("COMMANDS_MODULE", COMMANDS, max(settings.getpriority("COMMANDS_MODULE") or 0, 20))
    modules = settings.getlist("SPIDER_MODULES")
    if SPIDERS not in modules:
        settings.set("SPIDER_MODULES", [*modules, SPIDERS], settings.getpriority("SPIDER_MODULES") or 0)
    _setdefault_component(settings, "ADDONS", ADDON, 0)


if __name__ == "__main__":
    main()
