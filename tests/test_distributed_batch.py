"""Writes sent behind (``distributed/batch.py``) on a real Redis: they ride with the next command
answered, in order; a worker killed with writes not sent loses no page; a URL two workers find at
once is queued once."""

import time

import pytest
import redis
from scrapy import Request

from focuscrawl.distributed.batch import Scripts, WriteBehind
from focuscrawl.distributed.connection import Keys
from focuscrawl.distributed.frontier import SharedFrontier
from focuscrawl.distributed.seen import RedisSeenSet
from focuscrawl.frontier import Entry
from focuscrawl.request_codec import RequestCodec
from focuscrawl.scheduling.requests import RequestSerializer

#: long enough that nothing is sent by age during a test: only a command answered sends writes
NEVER = 60.0


def vector():
    import numpy as np

    return np.array([1, 2], dtype=np.int32), np.array([0.5, 1.0], dtype=np.float32)


def entry(url, priority):
    return Entry(priority, url, Request(url), vector(), 0)


@pytest.fixture
def client(redis_url):
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def make(redis_url):
    clients = []

    def make(worker, write_behind=NEVER, seen=False, **kwargs):
        client = redis.Redis.from_url(redis_url)
        clients.append(client)
        serializer = RequestSerializer()
        codec = RequestCodec(serializer.to_dict, serializer.from_dict, lambda r: None)
        frontier = SharedFrontier(client, Keys("c"), codec, serializer, worker=worker, write_behind=write_behind,
                                  **kwargs)
        if seen:  # wired as SharedCrawl.from_config wires them
            frontier.seen = RedisSeenSet(client, Keys("c"))
            frontier.seen.write_behind(frontier.writes)
            frontier.seen_claim = frontier.seen.claim
        return frontier

    yield make
    for client in clients:
        client.close()


def test_writes_wait_for_a_command_answered_and_keep_their_order(client):
    writes = WriteBehind(client, max_age=NEVER)
    replies = []
    writes.defer(("RPUSH", "l", "a"), replies.append)
    writes.defer(("RPUSH", "l", "b"), replies.append)
    assert client.llen("l") == 0 and len(writes) == 2  # nothing sent yet
    assert writes.call("LRANGE", "l", 0, -1) == [b"a", b"b"]  # sent first, in order, one round trip
    assert replies == [1, 2] and len(writes) == 0


def test_a_write_waits_max_age_at_most(client):
    now = [0.0]
    writes = WriteBehind(client, max_age=0.05, clock=lambda: now[0])
    writes.defer(("SET", "k", "v"))
    writes.flush_if_due()
    assert client.get("k") is None
    now[0] = 0.06
    writes.flush_if_due()
    assert client.get("k") == b"v"


def test_a_write_due_is_sent_ahead_and_answered_with_the_next_command(client):
    now = [0.0]
    writes = WriteBehind(client, max_age=0.05, clock=lambda: now[0])
    replies = []
    writes.defer(("RPUSH", "l", "a"), replies.append)
    now[0] = 0.06
    writes.flush_if_due()  # on the wire: Redis runs it while the caller goes on
    assert len(writes) == 1 and replies == []
    deadline = time.monotonic() + 2
    while client.llen("l") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.lrange("l", 0, -1) == [b"a"]
    writes.defer(("RPUSH", "l", "b"), replies.append)
    assert writes.call("LRANGE", "l", 0, -1) == [b"a", b"b"]  # in order, after both writes
    assert replies == [1, 2] and len(writes) == 0


def test_writes_sent_ahead_keep_their_order_with_later_ones(client):
    writes = WriteBehind(client, max_age=NEVER)
    for i in range(3):
        writes.defer(("RPUSH", "l", f"ahead{i}"))
        writes.send_ahead()
    writes.defer(("RPUSH", "l", "behind"))
    assert writes.call_many([("LRANGE", "l", 0, -1), ("TIME",)])[0] == [b"ahead0", b"ahead1", b"ahead2", b"behind"]
    writes.send_ahead()  # nothing pending: nothing sent
    writes.flush()
    assert len(writes) == 0


def test_writes_sent_ahead_on_a_connection_lost_are_sent_again(client):
    writes = WriteBehind(client, max_age=NEVER)
    writes.call("CLIENT", "SETNAME", "behind")
    writes.defer(("SET", "k", "v"))
    client.client_kill_filter(_type="normal", skipme=True)  # the writer's connection drops ...
    writes.send_ahead()  # ... so this write may never reach Redis
    assert writes.call("GET", "k") == b"v"


def test_a_script_sent_ahead_to_a_server_that_lost_it_is_loaded_again(client):
    scripts = Scripts(client, {"ECHO": "return ARGV[1]"})
    writes = WriteBehind(client, scripts, max_age=NEVER)
    client.script_flush()
    replies = []
    writes.defer(scripts.command("ECHO", "ahead"), replies.append)
    writes.send_ahead()
    assert writes.call(*scripts.command("ECHO", "now")) == b"now" and replies == [b"ahead"]


def test_without_max_age_every_write_goes_at_once(client):
    writes = WriteBehind(client, max_age=None)
    writes.defer(("SET", "k", "v"))
    assert client.get("k") == b"v" and len(writes) == 0


def test_a_withdrawn_write_is_never_sent(client):
    writes = WriteBehind(client, max_age=NEVER)
    handle = writes.defer(("SET", "k", "v"))
    writes.defer(("SET", "j", "w"))
    assert writes.withdraw(handle) and not writes.withdraw(handle)
    writes.flush()
    assert client.get("k") is None and client.get("j") == b"w"


def test_scripts_lost_by_the_server_are_loaded_again(client):
    scripts = Scripts(client, {"ECHO": "return ARGV[1]"})
    writes = WriteBehind(client, scripts, max_age=NEVER)
    client.script_flush()
    writes.defer(("SET", "k", "v"))
    writes.defer(scripts.command("ECHO", "one"))
    assert writes.call(*scripts.command("ECHO", "two")) == b"two"
    assert client.get("k") == b"v"
    client.script_flush()
    assert writes.call(*scripts.command("ECHO", "three")) == b"three"


def test_a_pages_links_go_in_one_push(make):
    a, b = make("a"), make("b")
    for i in range(5):
        a.push(f"h{i % 2}", entry(f"http://h{i % 2}/{i}", 0.1 * i))
    assert len(a.writes) == 1  # one PUSH carries the five links
    assert b.size() == 0 and len(a) == 5  # b sees none of them yet; a counts them
    a.flush()
    assert b.size() == 5


def test_a_release_reaches_other_workers_with_the_holders_next_command(make):
    a, b = make("a"), make("b")
    a.push("h", entry("http://h/1", 0.5))
    a.push("h", entry("http://h/2", 0.4))
    host, _ = a.pop(0)
    a.release(host, 0.0)
    assert b.pop(0) is None  # the release is still a's
    a.size()  # any command a sends carries it
    assert b.pop(0)[1].url == "http://h/2"


def test_a_worker_killed_with_writes_not_sent_loses_no_page(make):
    """A: leases a host, fetches a page, releases it and queues the page's links, all behind, and
    dies before sending them: its lease runs out, the page goes back to the queue."""
    a, b = make("a", worker_timeout=0.3), make("b", write_behind=None)
    a.push("h", entry("http://h/1", 0.5))
    a.heartbeat()
    host, e = a.pop(0)
    a.fetching(host, e.url)
    a.release(host, 0.0)
    a.push("h", entry("http://h/link", 0.9))
    a.done([e.url])
    assert len(a.writes) == 3  # release, push, done: none sent; a dies here
    time.sleep(0.4)
    reaped, _requeued, _gone = b.heartbeat()
    assert reaped == 1
    assert drain(b) == ["http://h/1"]


def test_a_worker_killed_after_release_but_before_done_loses_no_page(make):
    a, b = make("a", worker_timeout=0.3), make("b", write_behind=None)
    a.push("h", entry("http://h/1", 0.5))
    a.heartbeat()
    host, e = a.pop(0)
    a.fetching(host, e.url)
    a.release(host, 0.0)
    a.size()  # the release is sent (the page is a's work now) ...
    a.push("h", entry("http://h/link", 0.9))
    a.done([e.url])  # ... its links and its done are not: a dies here
    time.sleep(0.4)
    _reaped, requeued, gone = b.heartbeat()
    assert (requeued, gone) == (1, 1)
    assert drain(b) == ["http://h/1"]


def test_leave_sends_everything(make):
    a, b = make("a"), make("b", write_behind=None)
    a.push("h", entry("http://h/1", 0.5))
    host, e = a.pop(0)
    a.fetching(host, e.url)
    a.push("h", entry("http://h/2", 0.4))
    a.leave()
    assert len(a.writes) == 0
    assert drain(b) == ["http://h/2"] and b.in_flight() == 0


def test_a_url_two_workers_find_at_once_is_queued_once(make):
    a, b = make("a", seen=True), make("b", seen=True)
    for w in (a, b):  # each takes its block of seq numbers (a round trip that would send the add alone)
        w.push("seed", entry(f"http://seed/{w.worker}", 0.1))
        w.flush()
    # both take the URL as new (neither knows the other has it) and queue it ...
    assert a.seen.add("http://h/x") and b.seen.add("http://h/x")
    a.push("h", entry("http://h/x", 0.5))
    b.push("h", entry("http://h/x", 0.6))
    assert len(a.writes) == len(b.writes) == 1  # the add went into the push
    a.flush(), b.flush()
    # ... and Redis keeps one: the seen set's add and the push are one step
    assert a.host_size("h") == 1 and len(a.seen) == 1
    assert a.stats()["late_duplicates"] == 1
    # a URL a worker knows is not new without a round trip
    assert not a.seen.add("http://h/x") and "http://h/x" in a.seen


def test_a_url_refused_after_its_add_is_still_seen(make):
    a, b = make("a", seen=True), make("b", seen=True)
    assert a.seen.add("http://h/refused")  # admission then refuses it: no push claims the add
    a.push("h", entry("http://h/other", 0.5))  # another URL's push does not take it
    a.flush()
    assert "http://h/refused" in b.seen and not b.seen.add("http://h/refused")
    assert b.size() == 1 and len(b.seen) == 1  # the other URL was pushed without a seen-set add


def test_the_seen_add_sent_before_the_push_still_decides(make):
    a, b = make("a", seen=True), make("b", seen=True)
    assert b.seen.add("http://h/x")
    b.flush()
    assert a.seen.add("http://h/x")
    a.size()  # a's add goes on its own (a command answered between the add and the push)
    a.push("h", entry("http://h/x", 0.5))  # known not new by then: not queued
    a.flush()
    assert a.size() == 0


def drain(frontier):
    out = []
    while (popped := frontier.pop(0)) is not None:
        host, e = popped
        out.append(e.url)
        frontier.release(host, 0.0)
    return out


def test_a_seen_add_sent_ahead_still_decides_its_push(make):
    a, b = make("a", seen=True), make("b", seen=True)
    for w in (a, b):
        w.push("seed", entry(f"http://seed/{w.worker}", 0.1))
        w.flush()
    assert b.seen.add("http://h/x")
    b.push("h", entry("http://h/x", 0.6))
    b.flush()
    assert a.seen.add("http://h/x")  # a does not know b has it ...
    a.writes.send_ahead()  # ... and its add goes ahead, unanswered, before the link's push
    a.push("h", entry("http://h/x", 0.5))  # the add's reply decides: not new, not queued
    assert a.seen.add("http://h/new")
    a.writes.send_ahead()
    a.push("h", entry("http://h/new", 0.5))
    a.flush()
    assert a.host_size("h") == 2 and len(a.seen) == 2
