"""Fuzzing what focuscrawl reads back from its own files, torn by a kill or damaged on disk: the
crawl store's packed links (``store/sqlite.py`` ``_unpack_links``: a damaged row is logged and
read as none) and the JOBDIR journal (``jobdir.py`` ``_read_events``: a torn record ends the
journal, the records before it are replayed)."""

from __future__ import annotations

import json
import pickle
import zlib

from hypothesis import example, given
from hypothesis import strategies as st

from focuscrawl.jobdir import _read_events
from focuscrawl.store.sqlite import _pack_links, _unpack_links

_text = st.text(max_size=30).map(lambda s: s.encode("utf-8", "replace").decode("utf-8"))
link_rows = st.lists(st.tuples(_text, _text, _text), max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(_text, children, max_size=5),
    max_leaves=30,
)


@given(link_rows)
def test_packed_links_read_back(rows):
    assert _unpack_links(_pack_links(rows)) == rows


@given(link_rows, st.data())
def test_a_torn_row_of_links_reads_as_none_or_all(rows, data):
    packed = _pack_links(rows)
    cut = data.draw(st.integers(min_value=0, max_value=len(packed)))
    assert _unpack_links(packed[:cut]) in ([], rows)


@given(st.one_of(st.binary(max_size=2_000), st.binary(max_size=2_000).map(zlib.compress),
                 json_values.map(lambda v: zlib.compress(json.dumps(v).encode()))))
def test_garbage_links_never_raise(data):
    assert isinstance(_unpack_links(data), list)


def test_a_links_row_of_the_wrong_shape_is_a_damaged_row():
    for rows in (["abc"], [["u", "a"]], {"u": 1}, "text", [["u", "a", "c", "extra"]]):
        assert _unpack_links(zlib.compress(json.dumps(rows).encode())) == []


def test_a_zlib_bomb_in_a_links_row_is_a_damaged_row():
    assert _unpack_links(zlib.compress(b"[" + b" " * (100 * 2**20) + b"]", 9)) == []


def test_deeply_nested_links_json_is_a_damaged_row():
    assert _unpack_links(zlib.compress(b"[" * 100_000 + b"]" * 100_000)) == []


events = st.lists(st.one_of(
    st.tuples(st.sampled_from(["enq", "deq", "done"]), _text),
    st.tuples(st.just("enq"), st.dictionaries(_text, _text, max_size=4)),
), max_size=15)


def _journal(tmp_path_factory, data: bytes) -> str:
    path = tmp_path_factory.mktemp("jobdir") / "focus-journal-0.pickle"
    path.write_bytes(data)
    return str(path)


@given(events, st.data())
def test_a_journal_torn_anywhere_replays_the_records_before_the_tear(tmp_path_factory, written, data):
    records = [pickle.dumps(event, protocol=pickle.HIGHEST_PROTOCOL) for event in written]
    blob = b"".join(records)
    cut = data.draw(st.integers(min_value=0, max_value=len(blob)))
    whole, end = 0, 0
    for record in records:
        if end + len(record) > cut:
            break
        end += len(record)
        whole += 1
    assert list(_read_events(_journal(tmp_path_factory, blob[:cut]))) == written[:whole]


@given(events, st.binary(max_size=500))
@example([("deq", "http://a/")], b"N.")
def test_garbage_after_the_journal_never_raises(tmp_path_factory, written, garbage):
    """Garbage may itself read as a pickle (``N.`` is None): the reader ends there as at a torn
    record, never raises; the records written before it all come back, and every record it returns
    is a (kind, ...) tuple a resume can read."""
    blob = b"".join(pickle.dumps(event, protocol=pickle.HIGHEST_PROTOCOL) for event in written)
    replayed = list(_read_events(_journal(tmp_path_factory, blob + garbage)))
    assert replayed[:len(written)] == written
    assert all(isinstance(r, tuple) and r and isinstance(r[0], str) for r in replayed)
