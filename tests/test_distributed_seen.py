"""The shared seen set (focuscrawl.distributed.seen) on a real redis-server: the in-process
SeenSet's answers, exact counts under concurrent workers, crawls kept apart, bounded memory."""

from __future__ import annotations

import random
import threading

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from focuscrawl.distributed.connection import Keys
from focuscrawl.distributed.seen import MIN_LEVEL, RedisSeenSet
from focuscrawl.frontier.seen import SeenSet, url_fingerprint


@pytest.fixture
def client(redis_url):
    with redis.Redis.from_url(redis_url) as client:
        yield client


def urls(count: int, seed: int, hosts: int = 200, paths: int = 5000) -> list[str]:
    """Canonical URLs with many repeats, as a crawl meets them."""
    rng = random.Random(seed)
    return [f"http://host{rng.randrange(hosts)}.example/page/{rng.randrange(paths)}" for _ in range(count)]


def levels(client, crawl="c") -> tuple[int, int]:
    level, split = client.hmget(Keys(crawl)("seen"), "level", "split")
    return int(level or MIN_LEVEL), int(split or 0)


@pytest.mark.parametrize("load", [200, 2])
def test_same_answers_as_the_in_process_seen_set(client, load):
    # load=2 makes the buckets split from 4096 URLs on, so the splits are exercised too
    shared, local = RedisSeenSet(client, Keys("c"), load=load), SeenSet()
    stream = urls(12000, seed=1)
    assert shared.add_many(stream[:8000]) == [local.add(url) for url in stream[:8000]]
    assert [shared.add(url) for url in stream[8000:]] == [local.add(url) for url in stream[8000:]]
    assert len(shared) == len(local) > 5000
    if load == 2:
        assert levels(client) > (MIN_LEVEL, 0)  # buckets were split
    probes = stream[::7] + [f"http://other.example/{i}" for i in range(500)]
    assert [url in shared for url in probes] == [url in local for url in probes]


def test_fingerprints_at_the_edges_of_the_64_bits(client):
    seen = RedisSeenSet(client, Keys("c"), load=1)
    edges = [0, 1, 2**32 - 1, 2**32, 2**52, 2**53 - 1, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1]
    rng = random.Random(2)
    others = [rng.getrandbits(64) for _ in range(2500)]  # to split buckets (load=1: from 2048 on)
    for fp in edges + others:
        assert seen.add_fingerprint(fp)
    assert levels(client) > (MIN_LEVEL, 0)
    for fp in edges + others[::5]:
        assert seen.contains_fingerprint(fp) and not seen.add_fingerprint(fp)
    # the fingerprint is kept whole: one bit away from an edge, wherever the bit, is not seen
    neighbours = {fp ^ (1 << bit) for fp in edges for bit in (0, 1, 31, 32, 52, 53, 63)} - set(edges + others)
    assert not any(seen.contains_fingerprint(fp) for fp in neighbours)
    assert len(seen) == len(set(edges + others))


def test_url_and_fingerprint_methods_agree(client):
    seen = RedisSeenSet(client, Keys("c"))
    assert seen.add("http://a.example/") and not seen.add_fingerprint(url_fingerprint("http://a.example/"))
    assert seen.add_fingerprint(url_fingerprint("http://b.example/")) and "http://b.example/" in seen
    assert "http://c.example/" not in seen and len(seen) == 2


def test_two_crawls_do_not_mix(client):
    first, second = RedisSeenSet(client, Keys("one")), RedisSeenSet(client, Keys("two"))
    assert first.add("http://a.example/")
    assert "http://a.example/" not in second and second.add("http://a.example/")
    assert len(first) == len(second) == 1
    assert all(key.startswith((b"focus:{one}:", b"focus:{two}:")) for key in client.scan_iter())


def test_from_url_uses_the_database_of_the_url(client, redis_url):
    seen = RedisSeenSet.from_url(redis_url.rsplit("/", 1)[0] + "/2", "c")
    assert seen.add("http://a.example/") and len(seen) == 1
    assert client.dbsize() == 0 and len(RedisSeenSet(client, Keys("c"))) == 0


def test_two_workers_adding_overlapping_urls_at_once(redis_url):
    """Every URL is new to exactly one worker, and the count is exact, while buckets split."""
    stream = urls(20000, seed=3, paths=20000)
    order = [stream, list(reversed(stream))]  # the two workers meet the same URLs in other orders
    told_new: list[list[str]] = [[], []]
    barrier = threading.Barrier(2)

    def worker(i: int) -> None:
        with redis.Redis.from_url(redis_url) as own_client:
            seen = RedisSeenSet(own_client, Keys("c"), load=2)
            barrier.wait()
            mine = order[i]
            for start in range(0, len(mine), 500):  # a batch pipelined, a few one at a time
                batch = mine[start : start + 500]
                added = seen.add_many(batch[:-20]) + [seen.add(url) for url in batch[-20:]]
                told_new[i].extend(url for url, new in zip(batch, added, strict=True) if new)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    both = told_new[0] + told_new[1]
    assert told_new[0] and told_new[1]  # they really did race
    assert sorted(both) == sorted(set(stream))  # each URL new exactly once
    with redis.Redis.from_url(redis_url) as client:
        seen = RedisSeenSet(client, Keys("c"), load=2)
        assert len(seen) == len(set(stream))
        assert levels(client) > (MIN_LEVEL, 0)
        assert all(url in seen for url in stream[::50])


def test_buckets_stay_intsets_and_memory_per_url_is_small(client):
    seen = RedisSeenSet(client, Keys("c"), load=5)  # splits from 10240 URLs on
    rng = random.Random(4)
    fps = [rng.getrandbits(64) for _ in range(30000)]
    pipe = client.pipeline(transaction=False)
    for fp in fps:
        seen._add(keys=[seen._state], args=seen._add_args(fp), client=pipe)
    pipe.execute()
    level, split = levels(client)
    buckets = list(client.scan_iter(match=b"focus:{c}:seen:*", count=1000))
    assert len(buckets) <= 2**level + split
    pipe = client.pipeline(transaction=False)
    for key in buckets:
        pipe.object("encoding", key)
    assert set(pipe.execute()) == {b"intset"}
    estimate = seen.memory_bytes()
    # 30000 URLs in ~6000 buckets of ~5: ~8 bytes a member plus ~100 a bucket
    assert 15 * len(fps) < estimate < 50 * len(fps)


def test_redis_errors_name_the_server(client, redis_url):
    client.set(Keys("c")("seen"), "not a hash")  # a key of the wrong type
    seen = RedisSeenSet(client, Keys("c"))
    with pytest.raises(redis.exceptions.ResponseError, match="seen set at redis://127.0.0.1:"):
        seen.add("http://a.example/")
    unreachable = RedisSeenSet(redis.Redis(port=1, retry=Retry(NoBackoff(), 0)), Keys("c"))
    with pytest.raises(redis.exceptions.ConnectionError, match="redis://localhost:1/0"):
        len(unreachable)


def test_pickling_says_the_set_lives_in_redis(client):
    import pickle

    with pytest.raises(TypeError, match="lives in Redis at redis://"):
        pickle.dumps(RedisSeenSet(client, Keys("c")))


def test_bucket_load_must_be_positive(client):
    with pytest.raises(ValueError, match="must be at least 1"):
        RedisSeenSet(client, Keys("c"), load=0)
