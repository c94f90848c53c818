"""The one drawing of a harvest curve: relevant pages found against requests made (or against time).

``scrapy evaluate --plot``, ``scrapy export --plot`` and the web console draw through
``harvest_figure``, so a curve looks the same wherever it is read: a crawl's line solid, the runs
it is the mean of faint in its colour, simulated baselines dashed, the relevant pages there are to
find a dotted grey ceiling.

matplotlib's object API only (a ``Figure`` with its own canvas, never ``pyplot``): pyplot keeps
global state (the current figure, a backend chosen once per process), which a server drawing for
several requests, inside a crawl, must not share or leak. matplotlib is the ``plot`` extra's: it
is imported when a figure is drawn (``harvest_figure``), so the series and curves here need only the
core install.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from focuscrawl.extras import require

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: what the plot extra's message calls the feature
FIGURES = "drawing a harvest curve"

#: how each kind of line is drawn: a crawl (or a mean of crawls), one of the runs behind a mean,
#: a simulated baseline
STYLES = {
    "crawl": {"linewidth": 1.8},
    "run": {"linewidth": 0.8, "alpha": 0.25},
    "baseline": {"linewidth": 1.2, "linestyle": "--"},
}
#: the x axes a crawl's curve can be drawn against (the keys of its points)
X_AXES = {"requests": "requests", "seconds": "seconds since the crawl began"}
FORMATS = ("png", "svg")


@dataclass(frozen=True)
class Series:
    """One line: ``ys[i]`` relevant pages found at ``xs[i]``. ``colour`` is an index in
    matplotlib's cycle (lines of one crawler share one); ``label`` None keeps it out of the legend."""

    xs: Sequence[float]
    ys: Sequence[float]
    label: str | None = None
    kind: str = "crawl"
    colour: int | None = None


def found_series(found: Sequence[float], label: str | None = None, kind: str = "crawl",
                 colour: int | None = None) -> Series:
    """A found curve as ``scrapy evaluate`` keeps it (``found[i]``: found after ``i + 1`` requests)."""
    return Series(range(1, len(found) + 1), found, label, kind, colour)


def crawl_series(points: Iterable[Mapping], x: str = "requests", label: str | None = None,
                 colour: int | None = None) -> Series:
    """A crawl's curve as the console and the store give it (points with ``requests``, ``seconds``
    and ``relevant``), against ``x``."""
    if x not in X_AXES:
        raise ValueError(f"a harvest curve is drawn against {' or '.join(X_AXES)}, not {x!r}")
    points = list(points)
    return Series([p[x] for p in points], [p["relevant"] for p in points], label, "crawl", colour)


def store_curve(pages: Iterable[Mapping], started_at: str | None = None) -> list[dict]:
    """A stored crawl's harvest curve, from its pages in fetch order (``CrawlStore.iter_pages``):
    a point per page, ``requests`` the pages fetched so far, ``relevant`` the relevant ones among
    them that are no duplicates (what the crawl's feed holds), ``seconds`` since ``started_at``
    (the crawl's start; its first page's fetch without it), as the live console's points are."""
    curve, relevant, start, seconds = [], 0, _instant(started_at), 0.0
    for requests, page in enumerate(pages, 1):
        relevant += bool(page.get("relevant")) and not page.get("duplicate_of")
        fetched = _instant(page.get("fetched_at"))
        if fetched is not None:
            start = fetched if start is None else start
            seconds = max(seconds, (fetched - start).total_seconds())
        curve.append({"requests": requests, "seconds": round(seconds, 3), "relevant": relevant})
    return curve


def _instant(text: str | None) -> datetime | None:
    try:
        value = datetime.fromisoformat(text) if text else None
    except ValueError:
        return None
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def check_available(feature: str = FIGURES) -> None:
    """Nothing when figures can be drawn, else MissingExtra naming the ``plot`` extra: a command
    asked for a figure checks before its work, not after."""
    require("matplotlib", "plot", feature)


def harvest_figure(series: Iterable[Series], x: str = "requests", *, x_label: str | None = None,
                   y_label: str = "relevant pages found", x_max: float | None = None,
                   ceiling: float | None = None, ceiling_label: str = "reachable relevant",
                   size: tuple[float, float] = (7, 4.5), dpi: int = 100, title: str | None = None) -> Figure:
    """The figure of ``series`` against ``x`` ("requests" or "seconds": the default axis label).
    ``ceiling`` draws the relevant pages there are to find; ``x_max`` fixes the axis's end (a budget)."""
    check_available()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    labelled = False
    for line in series:
        style = dict(STYLES[line.kind])
        if line.colour is not None:
            style["color"] = f"C{line.colour}"
        ax.plot(list(line.xs), list(line.ys), label=line.label, **style)
        labelled |= line.label is not None
    if ceiling is not None:
        ax.axhline(ceiling, color="grey", linestyle=":", linewidth=1, label=ceiling_label)
        labelled = True
    ax.set_xlabel(x_label or X_AXES.get(x, x))
    ax.set_ylabel(y_label)
    if x_max:
        ax.set_xlim(0, x_max)
    else:
        ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    if title:
        ax.set_title(title, fontsize="medium")
    if labelled:
        ax.legend(loc="center right" if ceiling is not None else "lower right", fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def figure_bytes(fig: Figure, fmt: str = "png") -> bytes:
    """The figure as PNG or SVG bytes (an SVG's text is drawn as paths: no fonts needed to read it)."""
    if fmt not in FORMATS:
        raise ValueError(f"a figure is written as {' or '.join(FORMATS)}, not {fmt!r}")
    out = io.BytesIO()
    fig.savefig(out, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
    return out.getvalue()


def write_figure(fig: Figure, path: str | Path) -> None:
    """Write the figure to ``path`` in the format its extension names (.png, .svg, .pdf: whatever
    matplotlib writes; PNG for any other)."""
    suffix = Path(path).suffix.lstrip(".").lower()
    fig.savefig(path, format=suffix if suffix in fig.canvas.get_supported_filetypes() else "png")


__all__ = ["FIGURES", "FORMATS", "STYLES", "X_AXES", "Series", "check_available", "crawl_series",
           "figure_bytes", "found_series", "harvest_figure", "store_curve", "write_figure"]
