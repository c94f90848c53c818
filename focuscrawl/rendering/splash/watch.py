"""The render service behind ``FOCUS_RENDER_BACKEND=splash``, watched: a ``SPLASH_URL`` that answers
with something that is not Splash's answer (a proxy's 405, a web server's page, a login portal)
stops the crawl with one clear line after the first few such answers, instead of a crawl that
goes on without a rendered page.

Splash answers a render with 200 and the page, or with its JSON error shape
(``{"error": status, "type": ..., "description": ...}``, e.g. 502 RenderError, 504
GlobalTimeoutError): both are the service working (a page that cannot be rendered is that page's
failure). Anything else is not Splash. Once any answer was Splash's, later odd answers are
counted (``focus/render/service/not_splash``) but never stop the crawl: a service that worked is
having trouble, which the render health of each host takes care of.

An extension built ``from_crawler`` (added by the render backend's add-on), listening to
``response_downloaded``; pure judgement in ``is_splash_answer``.
"""

from __future__ import annotations

import json
import logging

from scrapy import signals

logger = logging.getLogger(__name__)

#: answers that are not Splash's before the crawl stops, none of Splash's having come
NOT_SPLASH_LIMIT = 3
#: why the crawl stopped (its finish_reason): ``scrapy crawl`` exits with 2 for it
FINISH_REASON = "render_service_not_splash"
#: the stat holding the one line that says why
ERROR_STAT = "focus/configuration_error"


def is_splash_answer(status: int, content_type: str, body: bytes) -> bool:
    """Whether an answer of the render service is one Splash (or ``scrapy render-server``) gives."""
    if status == 200:
        return True
    if "json" not in content_type.lower():
        return False
    try:
        answer = json.loads(body[:65536])
    except ValueError:
        return False
    return isinstance(answer, dict) and "error" in answer and "type" in answer


class SplashWatch:
    def __init__(self, crawler, splash_url: str, limit: int = NOT_SPLASH_LIMIT):
        self.crawler = crawler
        self.splash_url = splash_url
        self.limit = limit
        self.splash_answers = 0
        self.odd: list[str] = []  # the odd answers so far, as "405 text/html"
        self.stopping = False

    @classmethod
    def from_crawler(cls, crawler):
        watch = cls(crawler, crawler.settings.get("SPLASH_URL") or "")
        crawler.signals.connect(watch.response_downloaded, signal=signals.response_downloaded)
        return watch

    def response_downloaded(self, response, request, spider=None):
        if not request.meta.get("_splash_processed"):
            return  # not a call of the render service
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1")
        if is_splash_answer(response.status, content_type, response.body):
            self.splash_answers += 1
            return
        self.crawler.stats.inc_value("focus/render/service/not_splash")
        self.odd.append(f"{response.status} {content_type.split(';')[0] or '(no type)'}")
        if self.splash_answers or self.stopping or len(self.odd) < self.limit:
            return
        self.stopping = True
        proxied = " through the proxy " + request.meta["proxy"] if request.meta.get("proxy") else ""
        message = (f"SPLASH_URL={self.splash_url} answered {len(self.odd)} renders{proxied} with something that is "
                   f"not Splash's answer ({', '.join(self.odd)}): point SPLASH_URL at a Splash or "
                   "`scrapy render-server`")
        logger.error("%s; stopping the crawl", message)
        self.crawler.stats.set_value(ERROR_STAT, message)  # `scrapy crawl` ends with it, as error: ...
        engine = self.crawler.engine
        if hasattr(engine, "close_spider_async"):  # Scrapy 2.14+
            from scrapy.utils.defer import deferred_from_coro

            deferred_from_coro(engine.close_spider_async(reason=FINISH_REASON))
        else:
            engine.close_spider(spider or self.crawler.spider, FINISH_REASON)
