"""Insertion-ordered dicts kept within a size (focuscrawl.bounded)."""

from hypothesis import given
from hypothesis import strategies as st

from focuscrawl.bounded import BATCH, drop_oldest


@given(st.integers(1, 200), st.lists(st.integers(0, 300), max_size=600))
def test_a_table_drops_its_oldest_entries_first_and_never_holds_more_than_its_limit(limit, keys):
    table: dict = {}
    order: list = []  # the keys held, oldest first (a key set again keeps its place, as in a dict)
    for key in keys:
        if key not in table:
            order.append(key)
        table[key] = True
        drop_oldest(table, limit)
        assert len(table) <= limit
        dropped = len(order) - len(table)
        assert order[dropped:] == list(table)  # what went is the oldest, what stays kept its order
        order = order[dropped:]


def test_a_full_table_drops_a_batch_at_a_time():
    table = {i: i for i in range(100)}
    drop_oldest(table, 100)
    assert len(table) == 100  # within its limit: nothing dropped
    table[100] = 100
    drop_oldest(table, 100)
    kept = 100 - int(100 * BATCH)
    assert list(table) == list(range(101 - kept, 101))  # the newest, in order
