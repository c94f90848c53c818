"""The ``focuscrawl`` console script: Scrapy's command line with focuscrawl's settings, usable from
any folder (``focuscrawl crawl focused ...`` is ``scrapy crawl focused ...`` inside the project)."""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "focuscrawl.settings")
    from scrapy.cmdline import execute

    execute(["focuscrawl", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
