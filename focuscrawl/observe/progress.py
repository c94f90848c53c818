"""The crawl's progress as it runs: one line every ``FOCUS_PROGRESS_SECONDS`` (0: off), from the
crawl's ``CrawlStatus``.

On a terminal (stderr is a tty; ``FOCUS_PROGRESS_PANEL``) the line's figures are a live panel at
the bottom of the screen, redrawn in place, instead of a line scrolling by; in a log, the line
goes through logging like any other. The panel is drawn by rich (``Live``), and Scrapy's log
lines are printed above it: rich's ``Live`` redirects ``sys.stderr`` to its console, but
Scrapy's log handler holds the stream it was made with, so while the panel shows, the root
logger's handlers on that stream write to rich's proxy of it, and get their stream back when the
panel goes. Nothing is drawn over anything else, and a log file (``LOG_FILE``) is untouched.

The figures also go to the stats collector (``focus/progress/*``) at every tick and when the
spider closes, so the final stats dump has them. The final line is logged once when the spider
closes, panel or not. Scrapy's own LogStats line (every 60 s) is left as it is.
"""

from __future__ import annotations

import logging
import sys

from scrapy import signals
from scrapy.exceptions import NotConfigured

from focuscrawl.config import ConfigError, FocusConfig
from focuscrawl.observe.status import CrawlStatus

logger = logging.getLogger(__name__)


# --- the figures as text and stats: pure -------------------------------------------------------------
def duration(seconds: float | None) -> str:
    """``45s``, ``3m05s``, ``2h07m``; ``?`` when not known."""
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _count(value) -> str:
    return "?" if value is None else f"{value:,}"


def _ratio(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def budget_text(snapshot: dict) -> str:
    """How far the crawl is through its budget, and the time left at the recent rate."""
    budget = snapshot.get("budget")
    if not budget:
        return "no budget"
    done = snapshot.get("crawl_requests", snapshot.get("requests", 0))
    share = min(100, int(100 * done / budget))
    if snapshot.get("finished") or done >= budget:
        return f"budget {budget:,}: {share}% spent"
    return f"budget {budget:,}: {share}% spent, {duration(snapshot.get('eta_seconds'))} left"


def progress_line(snapshot: dict) -> str:
    """The crawl's figures on one line (a snapshot of ``CrawlStatus``)."""
    hosts = snapshot.get("hosts") or {}
    return (f"{duration(snapshot.get('elapsed'))} elapsed, {_count(snapshot.get('requests'))} requests, "
            f"{_count(snapshot.get('pages'))} pages, {_count(snapshot.get('relevant'))} relevant, "
            f"harvest {_ratio(snapshot.get('harvest'))} ({_ratio(snapshot.get('harvest_recent'))} over the last "
            f"{snapshot.get('recent_window')} requests), frontier {_count(snapshot.get('frontier'))}, "
            f"hosts {_count(hosts.get('active'))} active / {_count(hosts.get('waiting'))} waiting / "
            f"{_count(hosts.get('blocked'))} blocked, {budget_text(snapshot)}")


def progress_stats(snapshot: dict) -> dict[str, float | int]:
    """The figures as stats (``focus/progress/*``); figures not known are left out."""
    hosts = snapshot.get("hosts") or {}
    values = {
        "elapsed_seconds": snapshot.get("elapsed"), "requests": snapshot.get("requests"),
        "pages": snapshot.get("pages"), "relevant": snapshot.get("relevant"), "harvest": snapshot.get("harvest"),
        "harvest_recent": snapshot.get("harvest_recent"), "pages_per_second": snapshot.get("pages_per_second"),
        "frontier": snapshot.get("frontier"), "hosts_active": hosts.get("active"),
        "hosts_waiting": hosts.get("waiting"), "hosts_blocked": hosts.get("blocked"),
        "eta_seconds": snapshot.get("eta_seconds"),
    }
    return {f"focus/progress/{name}": value for name, value in values.items() if value is not None}


# --- the panel --------------------------------------------------------------------------------------
def panel_renderable(snapshot: dict):
    """The figures as a rich renderable."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.progress_bar import ProgressBar
    from rich.table import Table

    hosts = snapshot.get("hosts") or {}
    grid = Table.grid(padding=(0, 3))
    for _ in range(4):
        grid.add_column()
    grid.add_row(f"elapsed [bold]{duration(snapshot.get('elapsed'))}[/]",
                 f"requests [bold]{_count(snapshot.get('requests'))}[/]",
                 f"pages [bold]{_count(snapshot.get('pages'))}[/]",
                 f"{snapshot.get('pages_per_second') or 0:.1f} pages/s")
    grid.add_row(f"relevant [bold green]{_count(snapshot.get('relevant'))}[/]",
                 f"harvest [bold]{_ratio(snapshot.get('harvest'))}[/]",
                 f"last {snapshot.get('recent_window')}: [bold]{_ratio(snapshot.get('harvest_recent'))}[/]",
                 f"frontier [bold]{_count(snapshot.get('frontier'))}[/]")
    grid.add_row(f"hosts [bold]{_count(hosts.get('active'))}[/] active",
                 f"[bold]{_count(hosts.get('waiting'))}[/] waiting",
                 f"[bold]{_count(hosts.get('blocked'))}[/] blocked", "")
    parts = [grid]
    budget = snapshot.get("budget")
    if budget:
        done = snapshot.get("crawl_requests", snapshot.get("requests", 0))
        row = Table.grid(padding=(0, 2))
        row.add_row(ProgressBar(total=budget, completed=min(done, budget), width=30), budget_text(snapshot))
        parts.append(row)
    title = "focuscrawl: finished" if snapshot.get("finished") else "focuscrawl"
    return Panel(Group(*parts), title=title, title_align="left", expand=False)


class LivePanel:
    """The figures redrawn in place at the bottom of a terminal, the log scrolling above them."""

    def __init__(self, stream, force_terminal: bool = False) -> None:
        from rich.console import Console
        from rich.live import Live

        self.stream = stream
        self.console = Console(file=stream, force_terminal=True if force_terminal else None)
        self.live = Live(console=self.console, auto_refresh=False, transient=True,
                         redirect_stdout=True, redirect_stderr=True)
        self._moved: list[logging.StreamHandler] = []

    def start(self, snapshot: dict) -> None:
        self.live.update(panel_renderable(snapshot))
        self.live.start()
        proxy = sys.stderr  # rich's proxy of the stream, while the panel shows
        if proxy is self.stream:
            return
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream is self.stream:
                handler.setStream(proxy)
                self._moved.append(handler)

    def update(self, snapshot: dict) -> None:
        self.live.update(panel_renderable(snapshot), refresh=True)

    def stop(self) -> None:
        for handler in self._moved:
            handler.setStream(self.stream)
        self._moved.clear()
        self.live.stop()


# --- the extension ---------------------------------------------------------------------------------
class Progress:
    """A Scrapy extension: the progress line (or panel) every ``FOCUS_PROGRESS_SECONDS``, the
    figures in the stats, the final line once when the spider closes."""

    def __init__(self, crawler, status: CrawlStatus, seconds: float, panel: str) -> None:
        self.crawler = crawler
        self.status = status
        self.seconds = seconds
        self.panel_mode = panel
        self.panel: LivePanel | None = None
        self._loop = None
        self._closed = False

    @classmethod
    def from_crawler(cls, crawler):
        try:
            config = FocusConfig.from_settings(crawler.settings)
        except ConfigError as exc:
            raise NotConfigured(str(exc)) from exc
        if not config.progress_seconds:
            raise NotConfigured("no progress line (FOCUS_PROGRESS_SECONDS=0)")
        extension = cls(crawler, CrawlStatus.of(crawler), config.progress_seconds, config.progress_panel)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def wants_panel(self, stream) -> bool:
        if self.panel_mode == "always":
            return True
        if self.panel_mode == "never":
            return False
        try:
            return bool(stream.isatty())
        except (AttributeError, ValueError):
            return False

    def spider_opened(self, spider=None):
        from twisted.internet import task

        stream = sys.stderr
        if self.wants_panel(stream):
            panel = LivePanel(stream, force_terminal=self.panel_mode == "always")
            try:
                panel.start(self.status.snapshot())
                self.panel = panel
            except Exception:  # noqa: BLE001 - no panel is no reason to stop a crawl: the line is shown
                logger.warning("progress: no live panel on this terminal; logging the line instead", exc_info=True)
        self._loop = task.LoopingCall(self.tick)
        self._loop.start(self.seconds, now=False)

    def tick(self) -> str:
        """One update: the figures to the stats and to the panel or the log; returns the line."""
        snapshot = self.status.snapshot()
        self._to_stats(snapshot)
        line = progress_line(snapshot)
        if self.panel is not None:
            try:
                self.panel.update(snapshot)
                return line
            except Exception:  # noqa: BLE001 - see spider_opened
                logger.warning("progress: the live panel failed; logging the line instead", exc_info=True)
                self._stop_panel()
        logger.info("progress: %s", line)
        return line

    def _to_stats(self, snapshot: dict) -> None:
        stats = self.crawler.stats
        for name, value in progress_stats(snapshot).items():
            stats.set_value(name, value)

    def _stop_panel(self) -> None:
        panel, self.panel = self.panel, None
        if panel is not None:
            try:
                panel.stop()
            except Exception:  # noqa: BLE001 - the terminal may be gone at the end of a crawl
                logger.debug("progress: the panel did not stop cleanly", exc_info=True)

    def spider_closed(self, spider=None, reason=None):
        if self._closed:
            return
        self._closed = True
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._stop_panel()
        self.status.finish()
        snapshot = self.status.snapshot()
        self._to_stats(snapshot)
        logger.info("progress (finished): %s", progress_line(snapshot))


__all__ = ["LivePanel", "Progress", "budget_text", "duration", "panel_renderable", "progress_line",
           "progress_stats"]
