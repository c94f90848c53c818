"""``scrapy export``: write the crawl's relevant pages from the crawl store to a feed file.

A crawl's ``-o`` feed holds only what that run found; the store holds every page the crawl
fetched, across its runs under a JOBDIR. Exporting from the store gives the whole harvest of one
crawl (the latest by default, ``--crawl ID`` for another; ``--crawls`` lists them), re-filtered by
score, in any format Scrapy's feed exports write, chosen by the output file's extension as ``-o``
does.
"""

from __future__ import annotations

import csv
import math
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from scrapy.utils.misc import load_object

from focuscrawl.commandbase import CommandError, FocusCommand
from focuscrawl.items import PageItem
from focuscrawl.store import LABEL_FIELDS, CrawlStore, StoreError, resolve_store_path
from focuscrawl.urls import canonicalize

#: With --all, these are added to the exported fields so relevant, irrelevant and duplicate rows
#: can be told apart.
ALL_EXTRA_FIELDS = ("status", "relevant", "duplicate_of", "duplicate_kind")
#: the columns of ``--labels``: a label as the store keeps it, and the title of the page judged
LABEL_COLUMNS = (*LABEL_FIELDS, "title")


class Command(FocusCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return ("-o|-O FILE[:FORMAT] [--store PATH] [--crawl ID] [--min-score S] [--all] | --crawls | "
                "--plot FILE.png [--plot-x requests|seconds] | --labels [-o FILE.tsv] [--crawl ID] [--label-history]")

    def short_desc(self) -> str:
        return "Write the relevant pages in the crawl store to a feed file (.jsonl, .json, .csv, .xml)"

    def long_desc(self) -> str:
        return (
            "Write the relevant, non-duplicate pages of one crawl in the crawl store to FILE, as "
            "Scrapy's feeds do: -o appends to FILE, -O overwrites it, - is standard output (JSON "
            "lines unless -:FORMAT names another), and "
            "the format is the one its extension names (.jsonl/.jl JSON lines, .json, .csv, .xml) "
            "or FILE:FORMAT gives; the fields are FEED_EXPORT_FIELDS. A store may hold several crawls: the latest is exported "
            "unless --crawl names another; --crawls lists them. The store is found as the crawl "
            "finds it: --store, else FOCUS_STORE, else JOBDIR/crawl.db, else ./crawl.db. --plot "
            "draws the crawl's harvest curve (relevant pages found against pages fetched, or "
            "against time with --plot-x seconds) as PNG (or SVG, by the file's extension). --labels "
            "writes the labels given with scrapy label as TSV (url, label, who, at, crawl, title), "
            "which scrapy train --labels reads."
        )

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("-o", "--output", metavar="FILE", action="append",
                            help="append the pages to FILE (- for standard output); its extension, or "
                                 ":FORMAT after it, picks the format")
        parser.add_argument("-O", "--overwrite-output", metavar="FILE", action="append",
                            help="write the pages to FILE, replacing it (written beside it, then moved into place)")
        parser.add_argument("--store", metavar="PATH", action="append",
                            help="the crawl store (default FOCUS_STORE, JOBDIR/crawl.db or ./crawl.db); given several "
                                 "times, the stores of the workers of one shared crawl, exported together")
        parser.add_argument("--crawl", metavar="ID", help="the crawl to export (the latest if not given)")
        parser.add_argument("--crawls", action="store_true", help="list the store's crawls and exit")
        parser.add_argument("--min-score", metavar="S", help="only pages scored at least S")
        parser.add_argument(
            "--all", action="store_true", help="every stored page, irrelevant and duplicates included"
        )
        parser.add_argument("--labels", action="store_true",
                            help="write the labels given with scrapy label as TSV (to -o FILE.tsv, else to standard "
                                 "output), each page's latest, of every crawl unless --crawl names one")
        parser.add_argument("--label-history", action="store_true",
                            help="with --labels, every judgement given, corrections included, oldest first")
        parser.add_argument("--plot", metavar="FILE.png",
                            help="draw the crawl's harvest curve (relevant pages found against pages fetched)")
        parser.add_argument("--plot-x", metavar="AXIS", default="requests", choices=("requests", "seconds"),
                            help="draw the curve against requests (pages fetched; the default) or seconds")

    def execute(self, args: list[str], opts) -> None:
        if args:
            raise CommandError(f"unexpected argument(s): {' '.join(args)} (the output file goes after -o)")
        if opts.output and opts.overwrite_output:
            raise CommandError("use one of -o (append) and -O (overwrite)")
        overwrite = bool(opts.overwrite_output)
        outputs = opts.overwrite_output or opts.output or []
        if len(outputs) > 1:
            raise CommandError("one output file at a time")
        opts.output = outputs[0] if outputs else None
        stores = opts.store or [resolve_store_path(self.config())]
        path = stores[0]
        if opts.labels or opts.label_history:
            if len(stores) > 1 or opts.crawls or opts.all or opts.min_score is not None:
                raise CommandError("--labels writes one store's labels: --crawls, --all, --min-score and a second "
                                   "--store do not go with it")
            self._export_labels(path, self._parse_crawl(opts.crawl), opts.output, opts.label_history)
            return
        if opts.crawls:
            if len(stores) > 1:
                raise CommandError("--crawls lists one store's crawls: give one --store")
            self._list_crawls(path)
            return
        if opts.plot:
            if len(stores) > 1:
                raise CommandError("--plot draws one crawl: give one --store")
            from focuscrawl.observe.plot import check_available

            check_available("--plot")
            self._plot(path, self._parse_crawl(opts.crawl), opts.plot, opts.plot_x)
            if not opts.output:
                return
        if not opts.output:
            raise CommandError("no output file: use -o FILE (e.g. -o pages.jsonl) or -O FILE to overwrite it")
        output, exporter_cls = self._feed(opts.output)
        output = _Output(output, overwrite)
        min_score = self._parse_score(opts.min_score)
        wanted = self._parse_crawl(opts.crawl)
        for store_path in stores:
            self._check_exists(store_path)
        fields = self._fields(opts.all)
        if len(stores) > 1:
            if wanted is not None:
                raise CommandError("--crawl names a crawl of one store: with several --store, each one's latest is exported")
            self._export_shared(stores, output, exporter_cls, fields, min_score, opts.all)
            return
        try:
            with CrawlStore(path, create=False) as store:
                crawl = self._pick_crawl(store, wanted, path)
                pages = store.iter_pages(min_score=min_score, relevant_only=not opts.all, unique_only=not opts.all,
                                         crawl=crawl)
                written = self._write(output, exporter_cls, fields, pages)
                others = len(store.crawl_ids()) - 1
        except StoreError as exc:
            raise CommandError(str(exc)) from None
        held = f" (the store holds {others} other crawl{'s' if others != 1 else ''}: --crawls)" if others else ""
        output.report(f"wrote {written} page{'s' if written != 1 else ''} of crawl {crawl} to {output}{held}")

    def _export_shared(self, stores: list[str], output: _Output, exporter_cls, fields, min_score, everything: bool) -> None:
        """The latest crawl of each store (one worker's part of a shared crawl each), as one: a page
        two workers both fetched (a lease that ran out while its fetch went on) is written once."""
        seen_urls: set[str] = set()
        crawls = []

        def pages():
            for path in stores:
                with CrawlStore(path, create=False) as store:
                    crawl = self._pick_crawl(store, None, path)
                    crawls.append(f"{path}#{crawl}")
                    for page in store.iter_pages(min_score=min_score, relevant_only=not everything,
                                                 unique_only=not everything, crawl=crawl):
                        # copies across workers are marked duplicates already (the duplicate
                        # indexes are shared): what is left is one URL fetched by two workers
                        url = canonicalize(page.get("final_url") or page["url"])
                        if url in seen_urls:
                            continue
                        seen_urls.add(url)
                        yield page

        try:
            written = self._write(output, exporter_cls, fields, pages())
        except StoreError as exc:
            raise CommandError(str(exc)) from None
        output.report(f"wrote {written} page{'s' if written != 1 else ''} of {len(stores)} stores "
                      f"({', '.join(crawls)}) to {output}")

    def _plot(self, path: str, wanted: int | None, output: str, x: str) -> None:
        """The crawl's harvest curve from the store (its pages in fetch order) as a figure file."""
        from focuscrawl.observe.plot import crawl_series, harvest_figure, store_curve, write_figure

        self._check_exists(path)
        try:
            with CrawlStore(path, create=False) as store:
                crawl = self._pick_crawl(store, wanted, path)
                started = (store.crawl(crawl) or {}).get("started_at")
                curve = store_curve(store.iter_pages(crawl=crawl), started)
        except StoreError as exc:
            raise CommandError(str(exc)) from None
        if not curve:
            raise CommandError(f"crawl {crawl} of {path} has no fetched page to draw")
        fig = harvest_figure([crawl_series(curve, x, f"crawl {crawl}")], x,
                             x_label="pages fetched" if x == "requests" else None)
        try:
            Path(output).parent.mkdir(parents=True, exist_ok=True)
            write_figure(fig, output)
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
        print(f"harvest curve of crawl {crawl} ({curve[-1]['relevant']} relevant in {curve[-1]['requests']} pages) "
              f"drawn in {output}")

    @staticmethod
    def _check_exists(path: str) -> None:
        if not os.path.exists(path):
            raise CommandError(f"no crawl store at {path} (use --store PATH, or -s FOCUS_STORE=... / -s JOBDIR=...)")

    @staticmethod
    def _parse_crawl(raw: str | None) -> int | None:
        if raw is None:
            return None
        try:
            return int(raw)
        except ValueError:
            raise CommandError(f"--crawl must be a crawl id (a number; --crawls lists them), got {raw!r}") from None

    @staticmethod
    def _pick_crawl(store: CrawlStore, wanted: int | None, path: str) -> int:
        if wanted is None:
            latest = store.latest_crawl()
            if latest is None:
                raise CommandError(f"the crawl store {path} holds no crawl")
            return latest
        known = store.crawl_ids()
        if wanted not in known:
            raise CommandError(f"the crawl store {path} holds no crawl {wanted} "
                               f"(its crawls: {', '.join(map(str, known)) or 'none'})")
        return wanted

    def _export_labels(self, path: str, wanted: int | None, output: str | None, history: bool) -> None:
        """The labels people gave (``scrapy label``) as TSV with a header (LABEL_COLUMNS) for other
        tools, and for ``scrapy train --labels``, which reads its url and label columns: each
        URL's latest judgement, or every one with ``history``. A title is one line (its whitespace
        collapsed), so no field spans lines; a field with a double quote is quoted as CSV does."""
        self._check_exists(path)
        try:
            with CrawlStore(path, create=False) as store:
                if wanted is not None:
                    self._pick_crawl(store, wanted, path)
                rows = []
                for label in store.labels(crawl=wanted, history=history):
                    page = store.get_page(label["url"], crawl=label["crawl"]) or {}
                    rows.append({**label, "title": " ".join((page.get("title") or "").split())})
        except StoreError as exc:
            raise CommandError(str(exc)) from None

        def write(handle) -> None:
            writer = csv.DictWriter(handle, fieldnames=LABEL_COLUMNS, delimiter="\t", lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)

        if not output or output == "-":
            write(sys.stdout)
            return
        with _written_in_place(output, "w", encoding="utf-8", newline="") as handle:
            write(handle)
        of = f"crawl {wanted}" if wanted is not None else "every crawl"
        print(f"wrote {len(rows)} label{'s' if len(rows) != 1 else ''} of {of} to {output}")

    def _list_crawls(self, path: str) -> None:
        self._check_exists(path)
        try:
            with CrawlStore(path, create=False) as store:
                crawls = store.crawls()
        except StoreError as exc:
            raise CommandError(str(exc)) from None
        print(f"{'crawl':>5}  {'started (UTC)':<25}  {'ended':<25}  {'pages':>7}  {'relevant':>8}  model")
        for crawl in crawls:
            ended = crawl["ended_at"] or "(not ended: running or killed)"
            if crawl["ended_at"] and crawl["end_reason"]:
                ended = f"{crawl['ended_at']} {crawl['end_reason']}"
            print(f"{crawl['id']:>5}  {crawl['started_at']:<25}  {ended:<25}  {crawl['pages']:>7}  "
                  f"{crawl['relevant']:>8}  {crawl['model'] or '-'}")

    def _feed(self, argument: str):
        """(path or "-", exporter class) of an output as Scrapy's -o reads one: FILE whose extension
        names the format, FILE:FORMAT, or - (standard output, with :FORMAT)."""
        formats = {name: cls for name, cls in self.settings.getwithbase("FEED_EXPORTERS").items() if cls}
        path, fmt = argument, Path(argument).suffix.lstrip(".").lower()
        head, sep, tail = argument.rpartition(":")
        if sep and tail in formats:
            path, fmt = head, tail
        if path == "-" and not sep:
            fmt = "jsonlines"  # standard output, no format named: a line per page, for a pipe
        if path.startswith("file://"):
            path = path[len("file://"):]
        elif path == "stdout:":
            path = "-"
        elif "://" in path:
            raise CommandError(f"{path}: scrapy export writes a local file or standard output (-)")
        if fmt not in formats:
            known = ", ".join(f".{name}" for name in sorted(formats) if name != "jsonlines")
            shown = f"'.{fmt}'" if fmt else "no extension"
            raise CommandError(f"cannot tell the output format from {argument} ({shown}); use one of {known}, "
                               f"or FILE:FORMAT")
        return path, load_object(formats[fmt])

    @staticmethod
    def _parse_score(raw: str | None) -> float | None:
        if raw is None:
            return None
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if math.isnan(value):
            raise CommandError(f"--min-score must be a number, got {raw!r}")
        return value

    def _fields(self, include_all: bool) -> list[str] | dict[str, str]:
        fields = self.settings.getdictorlist("FEED_EXPORT_FIELDS") or list(PageItem.EXPORT_FIELDS)
        if include_all:
            if isinstance(fields, dict):
                fields = {**fields, **{f: f for f in ALL_EXTRA_FIELDS if f not in fields}}
            else:
                fields = list(fields) + [f for f in ALL_EXTRA_FIELDS if f not in fields]
        return fields

    def _write(self, output: _Output, exporter_cls, fields, pages) -> int:
        """Export to standard output, to the end of a file (-o), or into a temporary file beside
        it moved into place (-O), so a failed export never leaves a truncated file where a good
        one was."""
        written = 0
        with output.open() as fh:
            exporter = exporter_cls(
                fh,
                fields_to_export=fields,
                encoding=self.settings.get("FEED_EXPORT_ENCODING") or "utf-8",
                indent=self.settings.getint("FEED_EXPORT_INDENT", 0),
            )
            exporter.start_exporting()
            for page in pages:
                exporter.export_item(page)
                written += 1
            exporter.finish_exporting()
        return written


class _Output:
    """Where the pages go: a file, appended to (-o) or replaced (-O), or standard output (-)."""

    def __init__(self, path: str, overwrite: bool) -> None:
        self.path, self.overwrite = path, overwrite

    def __str__(self) -> str:
        return "standard output" if self.path == "-" else self.path

    @contextmanager
    def open(self):
        if self.path == "-":
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
        elif self.overwrite:
            with _written_in_place(self.path, "wb") as handle:
                yield handle
        else:
            target = Path(self.path)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "ab") as handle:
                    yield handle
            except OSError as exc:
                raise CommandError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def report(self, line: str) -> None:
        """What was written, where the pages are not (standard error when they are on stdout)."""
        print(line, file=sys.stderr if self.path == "-" else sys.stdout)


@contextmanager
def _written_in_place(output: str, mode: str, **kwargs):
    """A file opened beside ``output`` and moved into place once written, so a failed export never
    leaves a truncated file where a good one was; an OSError is a one-line CommandError."""
    target = Path(output)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"cannot create the directory for {output}: {exc.strerror or exc}") from None
    partial = target.with_name(target.name + ".part")
    try:
        with open(partial, mode, **kwargs) as handle:
            yield handle
        os.replace(partial, target)
    except OSError as exc:
        raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
    finally:
        if partial.exists():
            partial.unlink()
