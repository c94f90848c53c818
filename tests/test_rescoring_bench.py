"""bench/shared_rescoring.py: its passes re-score every record once a pass, shared and in process,
and bad arguments get one error line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import load_bench

BENCH = Path(__file__).resolve().parents[1] / "bench" / "shared_rescoring.py"


def test_bad_arguments_get_one_error_line():
    done = subprocess.run([sys.executable, str(BENCH), "--passes", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["error: --urls, --hosts, --passes and --limit take whole numbers of at least 1"]


@pytest.mark.slow
def test_a_pass_rescores_every_record_once_in_small_calls(redis_url):
    import redis

    from focuscrawl.distributed.connection import Keys
    from focuscrawl.distributed.frontier import SharedFrontier
    from focuscrawl.frontier import Entry, Frontier
    from focuscrawl.scheduling.requests import RequestSerializer

    bench = load_bench("shared_rescoring")
    rows = bench.UrlMaker(3).chunk(300, "crawler")
    client = redis.Redis.from_url(redis_url)
    try:
        shared = SharedFrontier(client, Keys("rescoring-bench"), bench.crawler_codec(), RequestSerializer(),
                                worker="w", capacity=10**9, write_behind=0.05)
        local = Frontier(capacity=10**9, codec=bench.crawler_codec())
        for host, url, priority, payload, feats in rows:
            shared.push(host, Entry(priority, url, payload, feats, 0))
            local.push(host, Entry(priority, url, payload, feats, 0))
        shared.flush()
        assert bench.passes(shared, 2, 64, shared.flush) == 600
        assert bench.passes(local, 2, 64) == 600
        assert {e.version for h in {row[0] for row in rows} for e in shared.queued(h)} == {2}
    finally:
        client.close()
