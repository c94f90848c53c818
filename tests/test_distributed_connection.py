"""The shared crawl's Redis client: what the reactor's thread waits for Redis counts as the
crawler's work (patience prices its waits by it)."""

import threading

from focuscrawl.distributed.connection import connect, reactor_wait


def test_waits_for_replies_on_the_main_thread_are_counted(redis_url):
    client = connect(redis_url)
    before = reactor_wait()
    client.blpop(["focus:test:nothing"], timeout=0.3)  # the server holds the reply 0.3 s
    waited = reactor_wait() - before
    assert 0.25 <= waited < 2.0
    client.ping()
    assert reactor_wait() - before < waited + 0.05  # a quick reply adds little


def test_waits_on_other_threads_are_not_the_reactors(redis_url):
    client = connect(redis_url)
    before = reactor_wait()
    worker = threading.Thread(target=lambda: client.blpop(["focus:test:nothing"], timeout=0.3))
    worker.start()
    worker.join()
    assert reactor_wait() == before
