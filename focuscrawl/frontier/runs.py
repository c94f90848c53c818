"""Cold storage of one host's queue: sorted runs of records, deflated a block at a time.

A ``bytes`` object costs ~50 bytes over its content (~110 bytes a compact record, with its heap
slot), so 10^7 records as objects would not fit in 1 GiB. A host queue keeps only its best records
as objects (its hot heap) and moves the rest to *runs*: sorted, cut into blocks of ``BLOCK``
records, each block zlib-deflated (~40 bytes a plain record) behind its first record's key in
clear, so a run's head is compared without inflating anything. The best block is inflated (the
run's *front*) once a record is taken from it, and stays so until it is used up: a cold record is
deflated again only by a merge. Runs written while the frontier is small stay raw (blocks that
are lists of records): deflating costs CPU every time a run is written, and saves memory only a
big frontier needs.

Runs are merged LSM-style (the newest two while the older is no bigger), but no spill or merge
writes more than ``MERGE_MAX`` records: a size-tiered merge through a deep host is O(host) in one
push (seconds at 10^5 URLs in one host), and a push must not hold the reactor. So a deep host
keeps about host / ``MERGE_MAX`` runs (finding the best head is O(runs), paid by a host that is
popped once per politeness delay), and a record is rewritten a bounded number of times.

Background re-scoring of a deep host takes its longest-stale records a part at a time (the run
scored under the oldest version first, its best blocks first) and writes them back as *lots*: runs
of their own, before the spills' runs, merged only with each other. Oldest first, not best first:
a record's stored priority is what it was worth when last scored, so best first re-scored the same
top part of a host on every learner update and never reached a record queued at a moment the
learner thought little of it, however much it came to be worth since.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from focuscrawl.frontier.records import BLOCK, FLAG, KEY, by_version, pack_block, unpack_block
from focuscrawl.frontier.sampling import draw_counts
from focuscrawl.frontier.storage import Restamp

MERGE_MAX = 1 << 13  # records one spill or merge (of runs or of stale lots) writes at most (~65-100 ms packed)
LOT_MAX = 4096  # records one merge of re-scored lots may write (see ColdRuns.add_lot)
MAX_LOTS = 64  # lots a host keeps; past it the two smallest stale ones are merged (within MERGE_MAX)


class Run:
    """Sorted cold compact records of one host: deflated blocks (the best block last), the best
    of which is inflated (``front``, best record last) once a record is taken from it. With
    ``deflate`` false the blocks are the records' lists themselves."""

    __slots__ = ("blocks", "front", "size", "version", "oldest", "deflated", "lot")

    def __init__(self, records: list[bytes], deflate: bool = True, lot: bool = False) -> None:
        self.size = len(records)
        self.deflated = deflate
        self.lot = lot  # records a background pass re-scored in part (``ColdRuns.add_lot``)
        self.blocks = [self._close(records[i:i + BLOCK]) for i in reversed(range(0, len(records), BLOCK))]
        self.front: list[bytes] | None = None
        versions = {r[KEY:FLAG] for r in records}
        # the version every record shares, if they do: background re-scoring skips fresh runs
        self.version = next(iter(versions)) if len(versions) == 1 else None
        # the oldest version a record was scored under (versions count up from 0, so their packed
        # bytes sort as they do): a bound that taking records out leaves true
        self.oldest = min(versions)

    def _close(self, records: list[bytes]) -> bytes | list[bytes]:
        return pack_block(records) if self.deflated else records

    def _open(self, block: bytes | list[bytes]) -> list[bytes]:
        return unpack_block(block) if self.deflated else block

    def head(self) -> bytes:
        """The best record's key."""
        if self.front:
            return self.front[-1][:KEY]
        block = self.blocks[-1]
        return block[:KEY] if self.deflated else block[0][:KEY]

    def take(self) -> bytes:
        """Remove and return the best record."""
        front = self.front
        if front is None:
            front = self.front = self._open(self.blocks.pop())[::-1]
        record = front.pop()
        if not front:
            self.front = None
        self.size -= 1
        return record

    def take_best(self, n: int) -> list[bytes]:
        """Remove and return at least ``n`` of the best records (whole blocks, or all), best first."""
        out = self.front[::-1] if self.front else []
        self.front = None
        while len(out) < n and self.blocks:
            out += self._open(self.blocks.pop())
        self.size -= len(out)
        return out

    def records(self) -> list[bytes]:
        """The records, best first."""
        out = self.front[::-1] if self.front else []
        for block in reversed(self.blocks):
            out += self._open(block)
        return out

    def sample(self, n: int, rng) -> list[bytes]:
        """``n`` records drawn at random (with replacement; ``rng``: a ``random.Random``), each
        block inflated once however many are drawn from it. The worst block may be short: its
        records are drawn a little more often than the others', which a quantile estimate does
        not mind."""
        front = self.front or ()
        out: list[bytes] = []
        per_block: Counter[int] = Counter()
        for _ in range(n):
            i = rng.randrange(self.size)
            if i < len(front) or not self.blocks:
                out.append(front[i % len(front)])
            else:
                per_block[rng.randrange(len(self.blocks))] += 1
        for j, m in per_block.items():
            records = self._open(self.blocks[j])
            out += [records[rng.randrange(len(records))] for _ in range(m)]
        return out

    def drop(self, keys: set[bytes]) -> list[bytes]:
        """Remove and return the records whose key is in ``keys``, the worst keys of the frontier:
        a suffix of the run, so only the blocks that hold some are inflated (and one deflated)."""
        gone: list[bytes] = []
        blocks = self.blocks
        while blocks:
            records = self._open(blocks[0])
            keep = [r for r in records if r[:KEY] not in keys]
            gone += records[len(keep):]
            if keep:
                if len(keep) < len(records):
                    blocks[0] = self._close(keep)
                break
            del blocks[0]
        else:
            if self.front:
                keep = [r for r in self.front if r[:KEY] not in keys]
                gone += [r for r in self.front if r[:KEY] in keys]
                self.front = keep or None
        self.size -= len(gone)
        return gone

    def stored(self, loose: list[bytes], blocks: list[bytes]) -> None:
        """Add the records to ``loose`` (inflated or raw ones) and ``blocks`` (deflated blocks)."""
        loose += self.front or ()
        if self.deflated:
            blocks += self.blocks
        else:
            for block in self.blocks:
                loose += block


def merged(a: Run, b: Run, deflate: bool, lot: bool = False) -> Run:
    """One run of the records of two."""
    return Run(sorted(a.records() + b.records()), deflate, lot)


class ColdRuns:
    """The runs of one host (never empty: its owner drops it once the last record is taken), the
    spills' runs newest last and the lots before them, with each run's head and the best of them
    kept, so that the best cold record is found without looking into every run."""

    __slots__ = ("runs", "heads", "size", "head")

    def __init__(self) -> None:
        self.runs: list[Run] = []
        self.heads: list[bytes] = []  # each run's head (runs[i]'s is heads[i])
        self.size = 0  # records in the runs
        self.head: bytes | None = None  # the best key in the runs

    def _recount(self) -> None:
        """``size``, ``heads`` and ``head`` from the runs (after any change to them but ``take``'s,
        which keeps them itself)."""
        runs = self.runs
        self.size = sum(run.size for run in runs)
        self.heads = [run.head() for run in runs]
        self.head = min(self.heads) if runs else None

    def sample(self, n: int, rng) -> list[bytes]:
        """``n`` records drawn at random from the runs (with replacement)."""
        runs = self.runs
        out: list[bytes] = []
        for i, m in draw_counts([run.size for run in runs], n, rng).items():
            out += runs[i].sample(m, rng)
        return out

    def add_run(self, records: list[bytes], deflate: bool) -> None:
        """A new run of ``records`` (sorted), merged LSM-style with the newest runs while the older
        of the last two is no bigger and the two hold at most ``MERGE_MAX`` records. Lots sit before
        these runs and are never merged with them (``add_lot``)."""
        runs = self.runs
        runs.append(Run(records, deflate))
        while (len(runs) > 1 and not runs[-2].lot and runs[-2].size <= runs[-1].size
               and runs[-2].size + runs[-1].size <= MERGE_MAX):
            runs.append(merged(runs.pop(), runs.pop(), deflate))
        self._recount()

    def add_lot(self, records: list[bytes], version: bytes, deflate: bool) -> None:
        """A lot of records re-scored under ``version`` by a partial pass (sorted): a run of its own
        at the front, apart from the spills' runs. Among those, many small lots would make the next
        spill merge its way through the whole host; apart, lots merge only with each other, each
        merge bounded: a lot with the lot before it while both are of ``version`` and together at
        most ``LOT_MAX`` records (mixed with stale records, fresh ones would be taken out and put
        back again and again), and past ``MAX_LOTS`` lots the two smallest stale ones, while together
        they hold at most ``MERGE_MAX`` records. The caller recounts."""
        runs = self.runs
        runs.insert(0, Run(records, deflate, lot=True))
        while (len(runs) > 1 and runs[1].lot and runs[1].version == version
               and runs[0].size + runs[1].size <= LOT_MAX):
            runs.insert(0, merged(runs.pop(0), runs.pop(0), deflate, lot=True))
        while sum(run.lot for run in runs) > MAX_LOTS:
            stale = sorted((run for run in runs if run.lot and run.version != version), key=lambda run: run.size)[:2]
            if len(stale) < 2 or stale[0].size + stale[1].size > MERGE_MAX:
                break  # a deep host's lots grow past the cap: it keeps more of them instead
            for run in stale:
                runs.remove(run)
            runs.insert(0, merged(*stale, deflate, lot=True))

    def take(self) -> bytes:
        """Remove and return the best record (from the run whose head is ``head``)."""
        runs, heads = self.runs, self.heads  # a deep host has host / MERGE_MAX runs: heads are kept
        best = heads.index(self.head)
        run = runs[best]
        record = run.take()
        self.size -= 1
        if run.size:
            heads[best] = run.head()
        else:
            del runs[best], heads[best]
        self.head = min(heads) if runs else None
        return record

    def records(self) -> Iterator[bytes]:
        for run in self.runs:
            yield from run.records()

    def has_stale(self, version: bytes) -> bool:
        return any(run.version != version for run in self.runs)

    def drop(self, keys: set[bytes]) -> list[bytes]:
        """Remove and return the records whose key is in ``keys`` (see ``Run.drop``)."""
        gone: list[bytes] = []
        for run in self.runs:
            gone += run.drop(keys)
        self.runs = [run for run in self.runs if run.size]
        self._recount()
        return gone

    def stored(self, loose: list[bytes], blocks: list[bytes]) -> None:
        for run in self.runs:
            run.stored(loose, blocks)

    def oldest_stale(self, version: bytes) -> bytes | None:
        """The oldest version a stale run's records may be scored under (None: every run is fresh)."""
        return min((run.oldest for run in self.runs if run.version != version), default=None)

    def rescore_stalest(self, budget: int, version: bytes, restamp: Restamp, deflate: bool) -> int:
        """Re-score about ``budget`` stale records, the longest stale first: the best blocks of the
        stale run scored under the oldest version (runs known to be fresh are skipped), then of the
        next, written back as a lot. A run bigger than the budget is taken a part at a time, so
        every stale record is reached within a bounded number of calls however the learner moves
        between them. Returns the records re-scored."""
        runs, done, lot = self.runs, 0, []
        while done < budget:
            stale_runs = [run for run in runs if run.version != version]
            if not stale_runs:
                break
            run = min(stale_runs, key=lambda run: (run.oldest, run.head()))
            taken = run.take_best(budget - done)
            if not run.size:
                runs.remove(run)
            fresh, stale = by_version(taken, version)
            lot += fresh + restamp(stale)
            done += len(stale)
        if lot:
            self.add_lot(sorted(lot), version, deflate)
        self._recount()
        return done
