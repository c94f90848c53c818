"""The shared crawl's Redis: one client a process, and the names of the crawl's keys.

Every key of a crawl starts with ``focus:{CRAWL_ID}:`` (``FOCUS_CRAWL_ID``), so several crawls
share one Redis and ``scrapy``-free tools find a crawl's keys by that prefix. The braces make the
crawl id a Redis Cluster hash tag: all of one crawl's keys live on one node, which the Lua scripts
that touch several of them at once require.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from focuscrawl.extras import require
from focuscrawl.scheduling.load import runnable_time

if TYPE_CHECKING:
    import redis

#: what the extra's message calls the feature
SHARED_CRAWL = "a shared crawl (FOCUS_FRONTIER_URL)"

#: how long a command may take before the crawl treats Redis as unreachable
SOCKET_TIMEOUT = 10.0


class _Waits:
    """Seconds the main thread (Scrapy's reactor) has spent waiting for Redis' replies, its CPU
    time in the wait left out: the crawler's work includes those waits (it handles nothing else
    meanwhile), and ``runnable_time`` does not see them, as the thread sleeps on its socket."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.round_trips = 0  # commands or pipelines the main thread sent and waited for
        self.sent_ahead = 0  # ... and those it sent without waiting (their replies read later)
        self.main = threading.main_thread().ident


WAITS = _Waits()


def _timed(connection_class: type) -> type:
    """``connection_class`` whose replies are timed on the main thread (``WAITS``)."""

    class Timed(connection_class):
        def send_packed_command(self, *args, **kwargs):
            # one call a command or a pipeline: a round trip
            if threading.get_ident() == WAITS.main:
                WAITS.round_trips += 1
            return super().send_packed_command(*args, **kwargs)

        def read_response(self, *args, **kwargs):
            if threading.get_ident() != WAITS.main:
                return super().read_response(*args, **kwargs)
            wall, ran = time.perf_counter(), runnable_time()
            try:
                return super().read_response(*args, **kwargs)
            finally:
                WAITS.seconds += max(0.0, (time.perf_counter() - wall) - (runnable_time() - ran))

    Timed.__name__ = Timed.__qualname__ = f"Timed{connection_class.__name__}"
    return Timed


def redis_module():
    """redis-py, or MissingExtra naming the ``redis`` extra: the modules of a shared crawl import
    it through here, so a core install imports the crawler and refuses only a shared crawl."""
    return require("redis", "redis", SHARED_CRAWL)


def reactor_wait() -> float:
    """Seconds the reactor's thread has waited for Redis so far (see ``_Waits``)."""
    return WAITS.seconds


def round_trips() -> int:
    """Commands and pipelines the reactor's thread has sent to Redis and waited for so far."""
    return WAITS.round_trips - WAITS.sent_ahead


def sent_ahead() -> int:
    """Pipelines the reactor's thread has sent to Redis without waiting for their replies."""
    return WAITS.sent_ahead


def count_sent_ahead() -> None:
    """A pipeline about to be sent without waiting (``batch.WriteBehind.send_ahead``): no round trip."""
    if threading.get_ident() == WAITS.main:
        WAITS.sent_ahead += 1


class RedisUnavailable(RuntimeError):
    """The shared crawl's Redis cannot be reached; the message says which one."""


class Keys:
    """Key names of one shared crawl."""

    def __init__(self, crawl_id: str) -> None:
        self.crawl_id = crawl_id
        self.prefix = f"focus:{{{crawl_id}}}:"

    def __call__(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)


def connect(url: str, *, decode_responses: bool = False, socket_timeout: float = SOCKET_TIMEOUT,
            retries: int | None = None) -> redis.Redis:
    """A client of ``url``, checked with a PING: a clear error now rather than at the first page.
    ``retries``: how often a failed command is retried (None: redis-py's default)."""
    redis = redis_module()
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    options = {}
    if retries is not None:
        options["retry"] = Retry(NoBackoff(), retries)
    client = redis.Redis.from_url(url, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout,
                                  health_check_interval=30, decode_responses=decode_responses, **options)
    pool = client.connection_pool
    pool.connection_class = _timed(pool.connection_class)  # before the first connection is made
    try:
        client.ping()
    except redis.exceptions.RedisError as exc:
        raise RedisUnavailable(f"the shared frontier's Redis at {url} cannot be reached: {exc}") from exc
    return client


__all__ = ["SHARED_CRAWL", "Keys", "RedisUnavailable", "connect", "count_sent_ahead", "reactor_wait", "redis_module",
           "round_trips", "sent_ahead"]
