"""The one way the crawl benchmarks print their runs: a markdown table of each configuration's
mean and range over its runs."""

from __future__ import annotations

import statistics


def cell(values: list) -> str:
    """The mean of a figure over runs, and its range when the runs differ."""
    mean = statistics.mean(values)
    text = f"{mean:.3g}" if isinstance(mean, float) else f"{mean:g}"
    if len(values) > 1 and min(values) != max(values):
        text += f" ({min(values):.3g}-{max(values):.3g})"
    return text


def markdown_table(label: str, results: dict, keys: list[str]) -> str:
    """``results``: configuration -> its runs (dicts holding ``keys``)."""
    lines = ["| " + label + " | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for name, runs in results.items():
        lines.append(f"| {name} | " + " | ".join(cell([run[key] for run in runs]) for key in keys) + " |")
    return "\n".join(lines)
