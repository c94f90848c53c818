"""The storage interface: a second backend, written against ``HostQueue`` alone, serves the
frontier's scheduling unchanged."""

import bisect
import random
import zlib

from focuscrawl.frontier import Entry, Frontier, HostQueue
from focuscrawl.frontier.records import FLAG, KEY, RICH
from tests.test_frontier import BytesCodec


class ListQueue:
    """A host queue as one sorted list of records (no hot heap, no cold runs, nothing deflated)."""

    def __init__(self):
        self.sorted: list[bytes] = []
        self.rich: dict = {}
        self.prefix = None
        self.top = None

    def _settle(self):
        self.top = self.sorted[0] if self.sorted else None

    def size(self):
        return len(self.sorted)

    def push(self, record, deflate):
        bisect.insort(self.sorted, record)
        self._settle()

    def pop(self):
        record = self.sorted.pop(0)
        self._settle()
        return record

    def records(self):
        return list(self.sorted)

    def has_stale(self, version):
        return any(r[KEY:FLAG] != version for r in self.sorted)

    def drop(self, keys):
        gone = [r for r in self.sorted if r[:KEY] in keys]
        self.sorted = [r for r in self.sorted if r[:KEY] not in keys]
        self._settle()
        return gone

    def replace(self, records, deflate):
        self.sorted = sorted(records)
        self._settle()

    def clear(self):
        self.sorted, self.rich = [], {}
        self._settle()

    def rescore_part(self, budget, version, restamp, deflate):
        stale = [r for r in self.sorted if r[KEY:FLAG] != version][:budget]
        taken = set(stale)
        self.replace([r for r in self.sorted if r not in taken] + restamp(stale), deflate)
        return len(stale)

    def stored(self):
        return [r for r in self.sorted if r[FLAG] != RICH], []

    def keep(self, seq, entry):
        self.rich[seq] = entry

    def kept(self, seq, forget=False):
        return self.rich.pop(seq) if forget else self.rich[seq]

    def kept_entries(self):
        return list(self.rich.values())


def rescore(f):
    """New priorities that depend on the URL and the version only (distinct: no ties to break)."""
    def scores(entries):
        return [zlib.crc32(f"{e.url} {f.version}".encode()) / 2**32 for e in entries]
    return scores


def drive(f, seed):
    """Random pushes (compact, packed and kept entries, a few deep hosts), pops with and without
    lazy re-scoring, requeues, releases, background passes, prunes and dropped hosts; returns
    every output."""
    rng = random.Random(seed)
    out, busy, now = [], {}, 0.0
    for step in range(6000):
        op = rng.random()
        host = f"h{rng.randrange(3)}" if rng.random() < 0.5 else f"s{rng.randrange(40)}"
        if op < 0.45:
            payload = [None, bytes([step % 256]), b"keep"][step % 3]
            features = (1.0,) if payload is not None and step % 5 == 0 else None
            entry = Entry(rng.random(), f"https://{host}/{step}", payload, features, f.version)
            out.append(sorted((e.priority, e.url) for e in f.push(host, entry)))
        elif op < 0.75:
            popped = f.pop(now, rescore=rescore(f) if rng.random() < 0.5 else None)
            if popped is None:
                now = f.next_ready_time() or now
            else:
                busy[popped[0]] = popped[1]
                out.append((popped[0], popped[1].priority, popped[1].url, popped[1].payload, popped[1].version))
        elif op < 0.8 and busy:
            host = rng.choice(sorted(busy))
            f.requeue(host, busy[host])
        elif op < 0.93 and busy:
            host = rng.choice(sorted(busy))
            del busy[host]
            f.release(host, now + rng.random())
        elif op < 0.96:
            f.version += rng.random() < 0.5
            out.append(f.rescore_stale(rescore(f), limit=10**6))
        elif op < 0.97:
            f.capacity = max(1, len(f) - 20)
            out.append(sorted((e.priority, e.url) for e in f.prune()))
            f.capacity = 10**6
        elif op < 0.975:
            out.append(sorted((e.priority, e.url) for e in f.drop_host(host)))
        else:
            out.append((f.next_ready_time(), f.best_soon(now, 1.0, sorted(busy)), len(f), f.host_size(host)))
    return out


def test_a_second_backend_implements_the_interface_and_schedules_the_same():
    assert isinstance(ListQueue(), HostQueue)
    for seed in range(3):
        memory = Frontier(codec=BytesCodec(), deflate_from=500)
        listed = Frontier(codec=BytesCodec(), deflate_from=500, queue_factory=lambda host: ListQueue())
        assert drive(memory, seed) == drive(listed, seed)
        assert sorted((h, e.url) for h, e in memory.entries()) == sorted((h, e.url) for h, e in listed.entries())
