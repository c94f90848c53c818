"""The frontier's record format: order keys, compact and packed records, deflated blocks."""

import random

from focuscrawl.frontier import read_stored, record_priority
from focuscrawl.frontier.records import (
    FULL, PACKED, PREFIXED, VERSION, by_version, compact, in_full, order_key, pack_block, priority_of, read,
    record_version, renumber, restamp, unpack_block, url_prefix,
)


def test_order_key_sorts_priorities_descending_and_round_trips():
    rng = random.Random(3)
    values = [rng.uniform(-1e6, 1e6) for _ in range(500)] + [0.0, -0.0, 1e-300, -1e-300,
                                                               float("inf"), float("-inf"), 1e300, 5, -5]
    for v in values:
        assert priority_of(order_key(v)) == v
    ordered = sorted(values, key=order_key)
    assert [float(v) for v in ordered] == sorted((float(v) for v in values), reverse=True)


def test_records_sort_best_priority_first_then_in_seq_order():
    rows = [(0.5, 3), (0.9, 7), (0.5, 1), (-2.0, 2), (float("inf"), 9)]
    records = [compact(p, seq, 0, f"http://h/{seq}", "http://h", None) for p, seq in rows]
    assert [read(r, "http://h")[0] for r in sorted(records)] == ["http://h/9", "http://h/7", "http://h/1",
                                                                  "http://h/3", "http://h/2"]


def test_compact_and_packed_records_read_back_their_url_and_blob():
    urls = ["http://a.example/x?q=1", "https://a.example/other-scheme", "http://a.example:8080/port",
            "http://a.example/caf\u00e9/\ud800", "not a url", "http://a.example"]
    prefix = url_prefix(urls[0])
    assert prefix == "http://a.example" and url_prefix("not a url") == "not a url"
    for i, url in enumerate(urls):
        for blob in (None, b"", b"\xfe\xff\x00any bytes\xfe"):
            record = compact(0.25 * i, i, i - 1, url, prefix, blob)
            assert read(record, prefix) == (url, blob)
            assert (record_priority(record), record_version(record)) == (0.25 * i, i - 1)
            assert record[16] & FULL == (not url.startswith(prefix)) and bool(record[16] & PACKED) == (blob is not None)
            # the same record for a host whose prefix is another: its URL in full
            assert read(in_full(record, prefix), "https://elsewhere") == (url, blob)


def test_restamp_and_renumber_keep_the_url_and_blob():
    record = compact(0.5, 7, 3, "http://h/a", "http://h", b"\x01\xfe")
    again = restamp(record, 0.75, 8, 4)
    assert (record_priority(again), record_version(again), read(again, "http://h")) == (0.75, 4, ("http://h/a", b"\x01\xfe"))
    moved = renumber(record, 9, -1)
    assert (record_priority(moved), record_version(moved), moved[16]) == (0.5, -1, PREFIXED | PACKED)
    assert moved[8:12] == (9).to_bytes(4, "big")


def test_blocks_deflate_and_inflate_records_of_any_bytes():
    rng = random.Random(5)
    records = sorted(compact(rng.random(), i, i % 3, f"http://h/{i}" + "x" * rng.randrange(50), "http://h",
                             None if i % 2 else bytes(rng.randrange(256) for _ in range(rng.randrange(40))))
                     for i in range(16))
    block = pack_block(records)
    assert block[:12] == records[0][:12]  # the first key in clear
    assert unpack_block(block) == records
    loose = [compact(1.0, 99, 0, "https://other/x", "http://h", None)]
    read_back = list(read_stored("http://h", loose, [block]))
    assert [r for r, _, _ in read_back] == loose + records
    assert read_back[0][1:] == ("https://other/x", None)


def test_by_version_splits_fresh_and_stale():
    records = [compact(0.1, i, i % 2, f"http://h/{i}", "http://h", None) for i in range(6)]
    fresh, stale = by_version(records, VERSION.pack(1))
    assert fresh == records[1::2] and stale == records[::2]
