"""Labelled training pages from the places people keep them.

Formats, told apart by content (not only by name):

- WARC (``.warc``, ``.warc.gz``): ``response`` records with status 200 and HTML; labels from a
  TSV (``url`` and ``label`` columns) matched on the record's URL.
- JSON lines: one ``{"url"?, "html" | "text", "label", "title"?}`` per line (a line without a
  label takes it from the labels TSV by URL, when given).
- A folder with one sub-folder per label holding ``.html``/``.htm``/``.txt`` files.
- A focuscrawl crawl store (SQLite), labels from the TSV matched on url or final_url, and the
  labels people gave its pages (``scrapy label``, the console): ``on-topic`` / ``off-topic``,
  which training counts as the positive and a negative class (a TSV's label wins for a URL both
  name).

Unlabelled and unreadable pages are skipped and counted (``ExampleList.skipped``), so a caller
can say what was left out; inputs that cannot give any example raise ExamplesError.

WARC inputs and crawl stores also give labelled links (``ExampleList.links``, for the link
model): every page's links, labelled by their targets once every input is read (see
``relevance.links.LinkedWeb``; a crawl store's links are those its crawl recorded, and a target
the crawl never fetched is skipped, not dead).
"""

from __future__ import annotations

import csv
import gzip
import json
import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from focuscrawl.labelling.labels import SKIP
from focuscrawl.parsing import decode_body, parse_html
from focuscrawl.relevance.links import LINK_OUTCOMES, LinkedWeb, LinkExample
from focuscrawl.store.sqlite import SQLITE_MAGIC
from focuscrawl.tsv import TsvError, read_pairs
from focuscrawl.urls import w3lib_canonical

logger = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"
FOLDER_SUFFIXES = (".html", ".htm", ".txt")


class ExamplesError(Exception):
    """Training examples cannot be read: a one-line message the user can act on."""


@dataclass
class Example:
    url: str
    title: str
    text: str
    label: str


class ExampleList(list):
    """A list of Example that also says what was skipped and why (reason -> count), and the
    labelled links of the recorded webs and crawl stores read (``links``: what ``train_link_model``
    learns from), where they came from (``link_sources``: input -> its kind and a Counter of
    ``links.LINK_OUTCOMES``) and why an input gave none (``link_notes``, one line each)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.skipped: Counter = Counter()
        self.links: list[LinkExample] = []
        self.link_sources: dict[str, dict] = {}
        self.link_notes: list[str] = []
        #: where the examples came from, so a model can be retrained from them: one group per
        #: ``load_examples`` call, {"paths", "labels", "include_host", "exclude_host"} (absolute paths)
        self.sources: list[dict] = []


def load_examples(
    paths,
    labels_path=None,
    include_host: str | None = None,
    exclude_host: str | None = None,
    links: bool = True,
) -> ExampleList:
    """Read every path (any supported format) into one ExampleList, deduplicated by URL; with
    ``links``, also the labelled links of WARC inputs (which means parsing every page) and of
    crawl stores (the link table their crawl recorded)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    include = _regex(include_host, "include-host")
    exclude = _regex(exclude_host, "exclude-host")
    labels = read_labels(labels_path) if labels_path else None
    given = _store_labels(map(Path, paths))
    if given:  # people's labels in crawl stores; a TSV's label wins for a URL both name
        labels = Labels({**given, **(labels.exact if labels is not None else {})})
    out = ExampleList()
    out.sources.append({"paths": [str(Path(p).resolve()) for p in paths],
                        "labels": str(Path(labels_path).resolve()) if labels_path else None,
                        "include_host": include_host or None, "exclude_host": exclude_host or None})
    web = LinkedWeb() if links else None
    seen: set[str] = set()

    def keep(url: str) -> bool:
        host = (urlsplit(url).hostname or "") if url else ""
        return not ((include and not include.search(host)) or (exclude and exclude.search(host)))

    for path in map(Path, paths):
        for example in _read_any(path, labels, labels_path, out.skipped, web, out.link_notes):
            if not keep(example.url):
                out.skipped["host filtered"] += 1
                continue
            if example.url and example.url in seen:
                out.skipped["duplicate url"] += 1
                continue
            if example.url:
                seen.add(example.url)
            out.append(example)
    if labels is not None and web is not None:
        out.links = web.examples(lambda key: labels.get(key), keep_url=keep)
        for source, tally in web.tally.items():
            out.link_sources[source] = {"kind": web.kinds.get(source, ""), **{k: tally[k] for k in LINK_OUTCOMES}}
            if not (tally["labelled"] or tally["dead"]):
                out.link_notes.append(f"{source}: none of its {sum(tally.values())} links leads to a labelled "
                                      "page or a dead URL")
    return out


def merge_examples(*lists: ExampleList) -> ExampleList:
    """Several ExampleLists as one: a URL in a later list replaces the earlier example (a person's
    later judgement wins), links, their tallies and the sources are kept from all."""
    out = ExampleList()
    index: dict[str, int] = {}
    for examples in lists:
        for example in examples:
            at = index.get(example.url) if example.url else None
            if at is None:
                if example.url:
                    index[example.url] = len(out)
                out.append(example)
            else:
                out[at] = example
                out.skipped["relabelled"] += 1
        out.skipped.update(examples.skipped)
        out.links.extend(examples.links)
        out.link_sources.update(examples.link_sources)
        out.link_notes.extend(examples.link_notes)
        out.sources.extend(examples.sources)
    return out


def examples_from_sources(sources: list[dict], links: bool = True) -> ExampleList:
    """The examples a model was trained on, read again from where it recorded them
    (``model.metadata["sources"]``); a source that is gone is an ExamplesError naming it."""
    lists = []
    for group in sources or []:
        paths = [p for p in group.get("paths") or [] if p]
        missing = [p for p in paths + [group.get("labels")] if p and not Path(p).exists()]
        if missing:
            raise ExamplesError(f"the model's training examples are gone: {missing[0]} (give the examples "
                                "as inputs with --positive instead of retraining the model)")
        lists.append(load_examples(paths, labels_path=group.get("labels"), include_host=group.get("include_host"),
                                   exclude_host=group.get("exclude_host"), links=links))
    return merge_examples(*lists)


def _store_labels(paths) -> dict[str, str]:
    """url -> on-topic/off-topic from the labels table of every crawl store among ``paths``
    (a skip is no evidence); both the requested and the final URL of a labelled page."""
    from focuscrawl.labelling.labels import TRAINING_LABELS
    from focuscrawl.store import CrawlStore, StoreError, is_crawl_store

    labels: dict[str, str] = {}
    for path in paths:
        if not (path.is_file() and is_crawl_store(path)):
            continue
        try:
            with CrawlStore(str(path), create=False) as store:
                rows = store.labels(final_urls=True)
        except StoreError:
            continue  # reading it as examples says what is wrong with it
        for row in rows:
            if row["label"] in TRAINING_LABELS:
                labels[row["url"]] = row["label"]
                if row["final_url"]:
                    labels[row["final_url"]] = row["label"]
    return labels


def _regex(pattern: str | None, name: str):
    if not pattern:
        return None
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ExamplesError(f"--{name} {pattern!r} is not a valid regular expression: {exc}") from None


class Labels:
    """url -> label from a TSV, looked up exactly, then by w3lib's canonical form (``w3lib_canonical``,
    as the link examples' targets are)."""

    def __init__(self, mapping: dict[str, str]):
        self.exact = mapping
        self.canonical = {w3lib_canonical(u): label for u, label in mapping.items()}

    def get(self, *urls: str | None) -> str | None:
        for url in urls:
            if url and url in self.exact:
                return self.exact[url]
        for url in urls:
            if url:
                label = self.canonical.get(w3lib_canonical(url))
                if label:
                    return label
        return None

    def __len__(self) -> int:
        return len(self.exact)



def read_labels(path) -> Labels:
    """A labels TSV: header row with ``url`` and ``label`` columns; other columns ignored. A
    ``skip`` (a page a person passed over, as ``scrapy export --labels`` writes it) is no label."""
    try:
        return Labels({url: label for url, label in read_pairs(path, "url", "label", require_header=True)
                       if label != SKIP})
    except FileNotFoundError:
        raise ExamplesError(f"labels file not found: {path}") from None
    except TsvError as exc:
        raise ExamplesError(f"labels file {exc}") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ExamplesError(f"cannot read labels file {path}: {exc}") from None


def _read_any(path: Path, labels, labels_path, skipped: Counter, web: LinkedWeb | None, notes: list[str]):
    if not path.exists():
        raise ExamplesError(f"no such file or folder: {path}")
    if path.is_dir():
        return _read_folder(path, skipped)
    try:
        with path.open("rb") as fh:
            head = fh.read(64)
    except OSError as exc:
        raise ExamplesError(f"cannot read {path}: {exc.strerror or exc}") from None
    if head.startswith(SQLITE_MAGIC):
        return _read_store(path, _need_labels(labels, path, "a crawl store"), labels_path, skipped, web, notes)
    if _is_warc(path, head):
        return _read_warc(path, _need_labels(labels, path, "a WARC file"), labels_path, skipped, web)
    name = path.name.lower()
    if name.endswith((".jsonl", ".json", ".ndjson", ".jsonl.gz")) or head.lstrip().startswith(b"{"):
        return _read_jsonl(path, labels, skipped)
    raise ExamplesError(
        f"{path}: unknown format; expected a WARC (.warc, .warc.gz), JSON lines (.jsonl), "
        "a folder with one sub-folder per label, or a focuscrawl crawl store"
    )


def _need_labels(labels, path: Path, what: str):
    if labels is None:
        more = " or label its pages with `scrapy label`" if what == "a crawl store" else ""
        raise ExamplesError(
            f"{path} is {what}: give its labels with --labels FILE.tsv (columns url, label){more}"
        )
    return labels


def _is_warc(path: Path, head: bytes) -> bool:
    if head.startswith(b"WARC/"):
        return True
    if head.startswith(GZIP_MAGIC):
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read(5) == b"WARC/"
        except (OSError, EOFError):
            return path.name.lower().endswith(".warc.gz")
    return False


def _read_warc(path: Path, labels: Labels, labels_path, skipped: Counter, web: LinkedWeb | None) -> list[Example]:
    """Labelled HTML pages; every record also goes to ``web`` (links, answered URLs, redirects)
    when there is one."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    examples, html_pages = [], 0
    try:
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI") or ""
                status = record.http_headers.get_statuscode()
                content_type = record.http_headers.get_header("Content-Type") or ""
                if status != "200" or (content_type and "html" not in content_type.lower()):
                    if web is not None:
                        location = record.http_headers.get_header("Location") if status.startswith("3") else None
                        web.add_record(url, urljoin(url, location) if location else None)
                    continue
                html_pages += 1
                label = labels.get(url)
                if label is not None or web is not None:  # an unlabelled page is read for its links only
                    page = parse_html(record.content_stream().read(), url, content_type=content_type)
                    if web is not None:
                        web.add_page(url, [(link.anchor, link.context, link.url)
                                           for link in page.links if not link.nofollow], source=str(path))
                if label is None:
                    skipped["no label"] += 1
                    continue
                examples.append(Example(url, page.title, page.text, label))
    except ArchiveLoadFailed as exc:
        if not html_pages:
            raise ExamplesError(f"{path} is not a readable WARC file: {_first_line(exc)}") from None
        logger.warning("%s: stopped at an unreadable record (%s)", path, _first_line(exc))
        skipped["unreadable WARC tail"] += 1
    except (OSError, EOFError, ValueError) as exc:  # truncated gzip, bad chunk
        if not html_pages:
            raise ExamplesError(f"{path} is not a readable WARC file: {_first_line(exc)}") from None
        logger.warning("%s: truncated after %d pages (%s)", path, html_pages, _first_line(exc))
        skipped["unreadable WARC tail"] += 1
    if not examples:
        raise ExamplesError(
            f"no page in {path} has a label in {labels_path} "
            f"({html_pages} HTML pages with status 200; none of their URLs is labelled)"
        )
    return examples


def _read_jsonl(path: Path, labels, skipped: Counter) -> list[Example]:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    examples = []
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                example = _json_example(line, labels)
                if isinstance(example, str):
                    skipped[example] += 1
                    logger.warning("%s line %d skipped: %s", path, number, example)
                else:
                    examples.append(example)
    except (OSError, EOFError) as exc:
        raise ExamplesError(f"cannot read {path}: {_first_line(exc)}") from None
    if not examples:
        raise ExamplesError(
            f"no usable example in {path}: each line needs a JSON object with a 'label' and "
            "an 'html' or 'text'"
        )
    return examples


def _json_example(line: str, labels) -> Example | str:
    """An Example, or the reason the line is skipped."""
    try:
        obj = json.loads(line)
    except ValueError:
        return "not JSON"
    if not isinstance(obj, dict):
        return "not a JSON object"
    url = str(obj.get("url") or "")
    label = obj.get("label")
    if label in (None, "") and labels is not None and url:
        label = labels.get(url)
    if label in (None, ""):
        return "no label"
    title = obj.get("title")
    if isinstance(obj.get("html"), str):
        page = parse_html(obj["html"].encode("utf-8"), url, declared_encoding="utf-8")
        return Example(url, str(title) if title else page.title, page.text, str(label))
    if isinstance(obj.get("text"), str):
        return Example(url, " ".join(str(title or "").split()), " ".join(obj["text"].split()), str(label))
    return "no html or text"


def _read_folder(path: Path, skipped: Counter) -> list[Example]:
    examples = []
    for label_dir in sorted(p for p in path.iterdir() if p.is_dir()):
        for file in sorted(label_dir.rglob("*")):
            if not file.is_file() or file.suffix.lower() not in FOLDER_SUFFIXES:
                continue
            try:
                body = file.read_bytes()
            except OSError:
                skipped["unreadable file"] += 1
                continue
            url = file.resolve().as_uri()
            if file.suffix.lower() == ".txt":
                text = decode_body(body)[0]
                examples.append(Example(url, "", " ".join(text.split()), label_dir.name))
            else:
                page = parse_html(body, url)
                examples.append(Example(url, page.title, page.text, label_dir.name))
    if not examples:
        raise ExamplesError(
            f"folder {path} has no examples: it needs one sub-folder per label holding "
            ".html, .htm or .txt files"
        )
    return examples


def _read_store(path: Path, labels: Labels, labels_path, skipped: Counter, web: LinkedWeb | None,
                notes: list[str]) -> list[Example]:
    """Labelled pages with text; with ``web``, also every fetch (answered, redirected or failed)
    and the links the crawl recorded."""
    try:
        from focuscrawl.store import CrawlStore, StoreError
    except ImportError as exc:  # pragma: no cover - the store package ships with focuscrawl
        raise ExamplesError(f"cannot read crawl store {path}: {exc}") from None
    examples, pages = [], 0
    try:
        store = CrawlStore(str(path), create=False)
        try:
            for page in store.iter_pages():
                pages += 1
                url, final_url = page.get("url") or "", page.get("final_url") or ""
                if web is not None:
                    _record_fetch(web, url, final_url, page.get("status"))
                label = labels.get(url, final_url)
                if label is None:
                    skipped["no label"] += 1
                    continue
                title, text = page.get("title") or "", page.get("text") or ""
                if not (title or text):
                    skipped["no text"] += 1
                    continue
                examples.append(Example(final_url or url, title, text, label))
            if web is not None:
                _read_store_links(store, path, web, notes)
        finally:
            store.close()
    except StoreError as exc:
        raise ExamplesError(_first_line(exc)) from None
    except Exception as exc:  # sqlite3.DatabaseError and friends: a damaged store
        raise ExamplesError(f"cannot read crawl store {path}: {_first_line(exc)}") from None
    if not examples:
        where = f"in {labels_path} or " if labels_path else ""
        raise ExamplesError(
            f"no page in crawl store {path} has a label {where}given with `scrapy label` ({pages} pages)"
        )
    return examples


def _record_fetch(web: LinkedWeb, url: str, final_url: str, status) -> None:
    """What one stored fetch says about its URLs: a redirect, an answer, or a failure (an error
    status, or none at all: DNS, refused connection, timeout), which makes a link to it dead."""
    final_url = final_url or url
    if not final_url or not isinstance(status, int) or isinstance(status, bool):
        return  # a damaged row says nothing: its URLs stay unknown
    if url and url != final_url:
        web.add_record(url, final_url)
    if status == 0 or status >= 400:
        web.add_failure(final_url)
    else:
        web.add_record(final_url)


def _read_store_links(store, path: Path, web: LinkedWeb, notes: list[str]) -> None:
    if not store.has_links:
        notes.append(f"{path}: no link table (a store written before focuscrawl recorded links)")
        return
    current, page_url, docs, total = None, "", [], 0
    for link in store.iter_links():  # page by page
        if link["from_url"] != current:
            if docs:
                web.add_page(page_url, docs, source=str(path), crawled=True)
            current, page_url, docs = link["from_url"], link["from_final_url"] or link["from_url"], []
        docs.append((link["anchor"], link["context"], link["url"]))
        total += 1
    if docs:
        web.add_page(page_url, docs, source=str(path), crawled=True)
    if not total:
        notes.append(f"{path}: no links recorded")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class _AnyLabel:
    """Labels that give every page one label: pages read for their words, whatever they are about."""

    def __init__(self, label: str):
        self.label = label

    def get(self, *urls) -> str:
        return self.label


#: the label of a page read as a contrast (``load_contrast``)
CONTRAST = "contrast"


def load_contrast(paths) -> ExampleList:
    """Pages of any supported format read for their words alone, their labels ignored: pages of the
    same sites as a few on-topic examples that the user did not pick (``scrapy train --contrast``).
    A WARC's and a crawl store's pages need no labels file; a JSON line needs a ``url`` or a
    ``label`` to be read. Deduplicated by URL."""
    out = ExampleList()
    seen: set[str] = set()
    for path in map(Path, [paths] if isinstance(paths, (str, Path)) else paths):
        for example in _read_any(path, _AnyLabel(CONTRAST), path, out.skipped, None, out.link_notes):
            if example.url and example.url in seen:
                out.skipped["duplicate url"] += 1
                continue
            seen.add(example.url)
            out.append(Example(example.url, example.title, example.text, CONTRAST))
    return out


#: the label of a crawled page the crawl did not judge relevant (``judged_by_crawl``)
CRAWLED = "crawled"


def judged_by_crawl(path) -> ExampleList:
    """A crawl store's fetched pages as the crawl judged them: relevant ones ``on-topic``, the
    others ``crawled`` (unlabelled pages, standing for off topic). What a crawl that started
    from words or a few pages learned, kept for ``scrapy train CRAWL.db``."""
    from focuscrawl.labelling.labels import ON_TOPIC
    from focuscrawl.store import CrawlStore, StoreError

    out = ExampleList()
    try:
        with CrawlStore(str(path), create=False) as store:
            for page in store.iter_pages():
                title, text = page.get("title") or "", page.get("text") or ""
                if page.get("status") != 200 or not (title or text):
                    out.skipped["no text"] += 1
                    continue
                out.append(Example(page.get("final_url") or page["url"], title, text,
                                   ON_TOPIC if page.get("relevant") else CRAWLED))
    except StoreError as exc:
        raise ExamplesError(_first_line(exc)) from None
    except Exception as exc:  # sqlite3.DatabaseError and friends: a damaged store
        raise ExamplesError(f"cannot read crawl store {path}: {_first_line(exc)}") from None
    return out
