"""Insertion-ordered dicts kept within a size, the oldest entries dropped first.

A plain dict is the most compact ordered table Python has, but it cannot drop its oldest entry
cheaply: ``next(iter(table))`` walks over every slot deleted since the dict was last resized, so
dropping one entry per insert, once a table is full, costs time that grows with the table
(measured on a 100,000-entry table: 10 us an insert at 200,000 inserts, 150 us at 400,000: a long
crawl would slow down for it). ``OrderedDict.popitem(last=False)`` is constant-time but costs
about 50 bytes more an entry. Dropping the oldest in batches (a sixteenth of the limit at a time)
walks the deleted slots once a batch: constant time an insert, no memory beyond the dict's own,
and the table never holds more than ``limit`` entries.
"""

from __future__ import annotations

from itertools import islice

#: the share of a full table dropped at once
BATCH = 1 / 16


def drop_oldest(table: dict, limit: int) -> None:
    """Keep ``table`` within ``limit`` entries: once it holds more, drop its oldest entries down
    to ``limit`` less a batch."""
    excess = len(table) - limit
    if excess <= 0:
        return
    excess += int(limit * BATCH)  # never more than the table holds: limit * BATCH < limit
    for key in list(islice(iter(table), excess)):
        del table[key]


__all__ = ["drop_oldest"]
