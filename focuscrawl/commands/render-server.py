"""``scrapy render-server``: Scrapy names a command after its module, and the name Splash's users
know has a hyphen, which no importable module name has; the command lives in render_server.py
and takes its name from this module (so it is listed once, as ``render-server``)."""

from focuscrawl.commands.render_server import Command

Command.__module__ = __name__

__all__ = ["Command"]
