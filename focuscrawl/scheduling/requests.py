"""Requests as the spider-independent dicts of Scrapy's ``Request.to_dict`` (what JOBDIR journals,
spills and checkpoints hold, and the frontier's codec packs), and back.

``to_dict`` searches the spider's members for each callback's name on every call (~25 us); a
crawl converts every queued request, so the names of the spider's methods are cached.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.utils.request import request_from_dict

_UNNAMED = object()  # a callback that is not one of the spider's methods (to_dict decides)


class RequestSerializer:
    def __init__(self, spider=None):
        self.spider = spider
        self._method_names: dict = {}  # the spider's callbacks' functions -> their names

    def to_dict(self, request: Request) -> dict:
        """``request.to_dict(spider=...)``: for a plain Request whose callbacks are the spider's
        methods, their names from the cache and the rest of the dict as ``to_dict`` builds it."""
        names = [self._method_name(f) for f in (request.callback, request.errback)]
        if type(request) is not Request or _UNNAMED in names:
            return request.to_dict(spider=self.spider)
        d = {"url": request.url, "callback": names[0], "errback": names[1], "headers": dict(request.headers)}
        for attr in request.attributes:
            d.setdefault(attr, getattr(request, attr))
        return d

    def from_dict(self, d: dict) -> Request:
        return request_from_dict(d, spider=self.spider)

    def _method_name(self, func):
        """The spider's name for ``func`` (None or a string as they are), ``_UNNAMED`` otherwise."""
        if func is None or isinstance(func, str):
            return func
        key = getattr(func, "__func__", None)
        if key is None or getattr(func, "__self__", None) is not self.spider:
            return _UNNAMED
        name = self._method_names.get(key)
        if name is None:
            name = self._method_names[key] = Request("http://localhost/", callback=func).to_dict(
                spider=self.spider)["callback"]
        return name
