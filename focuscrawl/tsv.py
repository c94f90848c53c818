"""Tab-separated label and alias files (``url<TAB>label``, ``url<TAB>same_as``): one reader for all."""

from __future__ import annotations

import csv
from pathlib import Path


class TsvError(ValueError):
    """The file has no header naming the columns asked for (when a header is required)."""


def read_pairs(path: str | Path, key: str, value: str, *, require_header: bool = False) -> list[tuple[str, str]]:
    """(key, value) from every row with both filled in. The header row names the columns (others
    are ignored); without such a header the first two columns are used, unless
    ``require_header``. A missing file raises FileNotFoundError."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"file not found: {path}")
    pairs: list[tuple[str, str]] = []
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        first = next(rows, None)
        if first is None:
            if require_header:
                raise TsvError(f"{path} is empty: it needs a header row with {key!r} and {value!r} columns")
            return pairs
        columns = [c.strip().lower() for c in first]
        if key in columns and value in columns:
            ik, iv = columns.index(key), columns.index(value)
        elif require_header:
            found = ", ".join(repr(c) for c in columns) or "nothing"
            raise TsvError(f"{path} needs a tab-separated header row with {key!r} and {value!r} columns "
                           f"(found {found})")
        else:
            ik, iv = 0, 1
            rows = [first, *rows]
        for row in rows:
            if len(row) > max(ik, iv) and row[ik].strip() and row[iv].strip():
                pairs.append((row[ik].strip(), row[iv].strip()))
    return pairs
