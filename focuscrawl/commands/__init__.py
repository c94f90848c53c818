"""focuscrawl's Scrapy commands (COMMANDS_MODULE, and the ``scrapy.commands`` entry points)."""
