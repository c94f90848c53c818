"""The shared frontier's two-part records on a real Redis: a record in its host's sorted set is its
header and URL, its codec bytes (request and features) beside it in ``blobs``. Each step that adds
or removes a record moves both parts in one script, so whatever step a worker dies after, every
queued, in-flight or unfinished page keeps its request, and nothing is left behind once done; a
worker re-scoring records another worker pops meanwhile leaves those alone."""

import time

import pytest
import redis
from scrapy import Request

from focuscrawl.distributed import scripts
from focuscrawl.distributed.connection import Keys
from focuscrawl.distributed.frontier import SharedFrontier
from focuscrawl.distributed.shared_records import REF_BYTES, LinkParts, is_packed
from focuscrawl.frontier import Entry, records
from focuscrawl.request_codec import RequestCodec
from focuscrawl.scheduling.requests import RequestSerializer


def vector(n=3):
    import numpy as np

    return np.arange(n, dtype=np.int32), np.linspace(0.1, 1.0, n, dtype=np.float32)


def entry(url, priority, version=0):
    return Entry(priority, url, Request(url, meta={"mark": url[-1]}), vector(), version)


@pytest.fixture
def make(redis_url):
    clients = []

    def make(worker, **kwargs):
        client = redis.Redis.from_url(redis_url)
        clients.append(client)
        serializer = RequestSerializer()
        codec = RequestCodec(serializer.to_dict, serializer.from_dict, lambda r: "http://parent/")
        return SharedFrontier(client, Keys("layout"), codec, serializer, worker=worker, **kwargs)

    yield make
    for client in clients:
        client.close()


def held_refs(f: SharedFrontier) -> list[bytes]:
    """The refs of every packed record the crawl holds: queued, in flight, work."""
    c = f.client
    held = [r for key in c.scan_iter(f.keys("q", "*")) for r in c.zrange(key, 0, -1)]
    held += c.hvals(f.keys("leaserec"))
    held += [v.split(b"\n", 1)[1] for v in c.hvals(f.keys("work"))]
    return sorted(r[-REF_BYTES:] for r in held if is_packed(r))


def assert_accounted(f: SharedFrontier) -> None:
    """Every record's codec bytes are kept, and none that no record names."""
    f.flush()
    assert held_refs(f) == sorted(f.client.hkeys(f.keys("blobs")))


def assert_whole(e: Entry) -> None:
    """An entry back from the frontier with its request and features as queued."""
    assert isinstance(e.payload, Request) and e.payload.url == e.url
    assert e.payload.meta["mark"] == e.url[-1] and list(e.features[0]) == [0, 1, 2]


def test_a_record_is_its_header_and_url_in_the_queue_and_its_codec_bytes_beside_it(make):
    a = make("a")
    a.push("h", entry("http://h/1", 0.5))
    a.flush()
    (member,) = a.client.zrange(a.keys("q", "h"), 0, -1)
    assert is_packed(member) and member[records.HEADER:-REF_BYTES - 1] == b"http://h/1"
    assert len(member) < 40 < len(a.client.hget(a.keys("blobs"), member[-REF_BYTES:]))
    assert_accounted(a)
    host, e = a.pop(0)
    assert_whole(e)
    assert_accounted(a)  # in flight: its codec bytes stay until it is done
    a.fetching(host, e.url)
    a.release(host, 0.0)
    assert_accounted(a)
    a.done([e.url])
    assert_accounted(a)
    assert a.client.hlen(a.keys("blobs")) == 0


@pytest.mark.parametrize("dies_after", ["pop", "release", "requeue", "refresh"])
def test_a_worker_killed_after_any_step_loses_no_part_of_a_record(make, dies_after):
    """Worker a stops sending after a step (SIGKILL: its writes not sent are lost, its heartbeat
    stops); b reaps it and gets every page back whole, and once all are done Redis holds nothing."""
    a, b = make("a", worker_timeout=0.3), make("b")
    urls = [f"http://h/{i}" for i in range(4)]
    for i, url in enumerate(urls):
        a.push("h", entry(url, 0.9 - i / 10))
    a.heartbeat()
    a.flush()
    if dies_after == "refresh":
        a.version = 1
        host, e = a.pop(0, rescore=lambda entries: [1.0 - x.priority for x in entries])
    else:
        host, e = a.pop(0)
    assert_whole(e)
    if dies_after in ("release", "refresh"):
        a.fetching(host, e.url)
        a.release(host, 0.0)
    elif dies_after == "requeue":
        a.requeue(host, Entry(0.95, e.url, e.payload, e.features, 0))
    a.flush()  # what a sent before its death
    assert_accounted(a)
    time.sleep(0.45)
    b.heartbeat()
    assert_accounted(b)
    seen = []
    while (popped := b.pop(0)) is not None:
        host, e = popped
        assert_whole(e)
        seen.append(e.url)
        b.fetching(host, e.url)
        b.release(host, 0.0)
        b.done([e.url])
    assert sorted(seen) == urls
    assert_accounted(b)
    assert b.client.hlen(b.keys("blobs")) == 0 and b.client.hlen(b.keys("work")) == 0


def test_background_rescoring_leaves_records_another_worker_popped_meanwhile(make):
    """Worker a re-scores records, some of which b pops (and finishes) between a's read of them and
    its write: those whose codec bytes a still had re-scored in vain and left alone in Redis, those
    it had to read from Redis skipped; the rest re-scored; nothing fetched twice or lost."""
    a, b = make("a"), make("b")
    for i in range(3):
        a.push("mine", entry(f"http://mine/{i}", 0.9 - i / 10))  # a has their link parts
        b.push("theirs", entry(f"http://theirs/{i}", 0.8 - i / 10))  # a must read theirs
    b.flush()
    a.version = 1
    taken = []

    def racing(entries):
        if not taken:  # b takes each host's best and finishes them, while a re-scores
            held = [b.pop(0), b.pop(0)]  # both hosts' best, each host held by b meanwhile
            for host, e in held:
                taken.append(e.url)
                b.fetching(host, e.url)
                b.release(host, 0.0)
                b.done([e.url])
            b.flush()
        return [0.5 for _ in entries]

    original = a.records.link_blobs

    def read_after_b(recs):  # b pops before a reads the codec bytes it lacks
        racing([])
        return original(recs)

    a.records.link_blobs = read_after_b
    a.rescore_stale(racing)
    assert sorted(taken) == ["http://mine/0", "http://theirs/0"]
    a.flush()
    left = {e.url: e for h in ("mine", "theirs") for e in a.queued(h)}
    assert sorted(left) == ["http://mine/1", "http://mine/2", "http://theirs/1", "http://theirs/2"]
    assert all(e.version == 1 and e.priority == pytest.approx(0.5) for e in left.values())
    for e in left.values():
        assert_whole(e)
    assert_accounted(a)
    rest = []
    while (popped := a.pop(0)) is not None:
        rest.append(popped[1].url)
        a.release(popped[0], 0.0)  # not fetched as a page: the record ends here
    assert sorted(rest) == sorted(left) and a.client.hlen(a.keys("blobs")) == 0


def test_drops_and_prunes_take_the_codec_bytes_with_the_records(make):
    a = make("a", capacity=3, prune_slack=0.0)
    for i in range(3):
        a.push("gone", entry(f"http://gone/{i}", 0.5))
    dropped = a.drop_host("gone")
    assert sorted(e.url for e in dropped) == [f"http://gone/{i}" for i in range(3)]
    for e in dropped:
        assert_whole(e)
    assert a.client.hlen(a.keys("blobs")) == 0
    pruned = []
    for i in range(5):  # past the capacity: the crawl's worst pruned as they come
        pruned += a.push("h", entry(f"http://h/{i}", 0.9 - i / 10))
    a.flush()
    pruned += a.prune()
    assert sorted(e.url for e in pruned) == ["http://h/3", "http://h/4"]
    for e in pruned:
        assert_whole(e)
    assert_accounted(a)
    assert a.client.hlen(a.keys("blobs")) == 3


def test_a_worker_reads_the_link_parts_it_lacks_once_and_keeps_a_bounded_number():
    links = LinkParts(capacity=2)
    for ref in (b"1", b"2", b"3"):
        links.put(ref, ref * 4)
    assert len(links) == 2 and links.get(b"1") is None and links.get(b"3") == b"3333"


def test_link_part_is_all_rescoring_reads():
    serializer = RequestSerializer()
    codec = RequestCodec(serializer.to_dict, serializer.from_dict, lambda r: "http://parent/")
    blob = codec.pack(entry("http://h/1", 0.5))
    part = codec.link_part(blob)
    assert len(part) < len(blob) and blob.startswith(part)
    full, cut = codec.preview("http://h/1", blob), codec.preview("http://h/1", part)
    assert full[0] == cut[0] and all((x == y).all() for x, y in zip(full[1], cut[1]))
    assert [list(map(str, c)) for c in codec.links([part])[:2]] == [list(map(str, c)) for c in codec.links([blob])[:2]]


def test_the_scripts_find_the_ref_where_the_records_put_it():
    assert scripts.REF_BYTES == REF_BYTES
    assert records.PACKED in (4,) and records.FULL == 1  # blob_ref in scripts.py tests these flags


def test_a_crawl_records_its_layout_and_a_crawl_of_another_is_refused(redis_url):
    from focuscrawl.distributed.shared_records import LAYOUT, CrawlOfAnotherLayout, check_layout

    client = redis.Redis.from_url(redis_url)
    try:
        fresh, older, newer = Keys("fresh-layout"), Keys("older-layout"), Keys("newer-layout")
        check_layout(client, fresh)  # a new crawl takes this release's layout
        check_layout(client, fresh)  # and a second worker joins it
        assert client.get(fresh("layout")) == LAYOUT.encode()
        client.set(older("seq"), 4096)  # queued pages, no layout: a crawl of the first layout
        with pytest.raises(CrawlOfAnotherLayout, match="layout 1, this release reads layout 2"):
            check_layout(client, older)
        assert client.get(older("layout")) is None  # refused, it is left as it was
        client.set(newer("layout"), "3")
        with pytest.raises(CrawlOfAnotherLayout, match="'newer-layout'"):
            check_layout(client, newer)
    finally:
        client.close()
