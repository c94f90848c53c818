"""``DemoWeb``: a generated web's records plus its ground truth, and how it is written to disk."""

from __future__ import annotations

import io
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable
from urllib.parse import urljoin, urlsplit

from protego import Protego

from focuscrawl import BOT_NAME
from focuscrawl.demo.responses import REASON_PHRASES, SERVED_AT, Record, header, is_html
from focuscrawl.parsing import parse_html


@dataclass
class DemoWeb:
    """A recorded web plus its ground truth.

    ``records`` is exactly what ``focuscrawl.replay.RecordedWeb.from_records`` takes; ``labels``
    covers every HTML page answered with 200 and every PDF document (``topic`` or ``"other"``).

    What only a browser or a PDF reader sees: ``javascript_host`` serves app shells whose links and
    text a script builds (its labelled pages are ``javascript_pages``; its script and JSON data are
    records without a label), ``documents`` are the PDFs' URLs, and ``rendered_links`` holds, for
    each of those pages and documents, the links a renderer or a reader finds in it.
    """

    records: dict[str, Record]
    labels: dict[str, str]
    robots: dict[str, str]
    seeds: list[str]
    train_hosts: list[str]
    crawl_hosts: list[str]
    disallowed: list[str] = field(default_factory=list)
    topic: str = "astronomy"
    missing: list[str] = field(default_factory=list)  # deliberate 404s some page links to
    redirects: dict[str, str] = field(default_factory=dict)  # 301 source -> target
    duplicates: list[tuple[str, str, str]] = field(default_factory=list)  # (copy, original, kind)
    javascript_host: str | None = None
    javascript_pages: list[str] = field(default_factory=list)
    documents: list[str] = field(default_factory=list)
    rendered_links: dict[str, list[str]] = field(default_factory=dict)  # absolute targets
    _link_cache: dict[str, list[str]] = field(default_factory=dict, repr=False, compare=False)

    # -- ground truth --------------------------------------------------------------------------

    def relevant_urls(self, hosts: Iterable[str] | None = None) -> set[str]:
        """URLs labelled with the topic, optionally only on ``hosts``."""
        wanted = set(hosts) if hosts is not None else None
        return {
            url for url, label in self.labels.items()
            if label == self.topic and (wanted is None or urlsplit(url).netloc in wanted)
        }

    def links(self, url: str, rendered: bool = False) -> list[str]:
        """Absolute, fragment-free targets of the ``<a href>`` links of a recorded HTML page; with
        ``rendered``, a JavaScript page's links once its script ran and a document's links."""
        if rendered and url in self.rendered_links:
            return list(self.rendered_links[url])
        if url not in self._link_cache:
            record = self.records.get(url)
            if record is None or record[0] != 200 or not is_html(record[1]):
                self._link_cache[url] = []
            else:
                page = parse_html(record[2], url, content_type=header(record[1], "Content-Type"))  # as crawled
                self._link_cache[url] = [link.url for link in page.links]
        return list(self._link_cache[url])

    def allowed(self, url: str) -> bool:
        """Whether the host's robots.txt lets focuscrawl fetch ``url`` (no robots.txt: allowed)."""
        host = urlsplit(url).netloc
        text = self.robots.get(host)
        if text is None:
            return True
        return _robots_parser(text).can_fetch(url, BOT_NAME)

    def reachable_relevant(self, seeds: Iterable[str], rendered: bool = False) -> set[str]:
        """The relevant pages a crawl from ``seeds`` can possibly fetch.

        Breadth-first over the link graph: robots-disallowed URLs are never fetched (so their
        links are never seen), redirects are followed, 404s and unrecorded URLs end a path.
        ``rendered``: the crawl renders JavaScript and reads documents' links (``links``).
        """
        seen: set[str] = set()
        queue: deque[str] = deque()
        for seed in seeds:
            if seed not in seen:
                seen.add(seed)
                queue.append(seed)
        fetched: set[str] = set()
        while queue:
            url = queue.popleft()
            if not self.allowed(url):
                continue
            record = self.records.get(url)
            if record is None:
                continue
            status, headers, _ = record
            if 300 <= status < 400:
                targets = [urljoin(url, header(headers, "Location") or "")]
            elif status == 200:
                fetched.add(url)
                targets = self.links(url, rendered)
            else:
                continue
            for target in targets:
                if target not in seen:
                    seen.add(target)
                    queue.append(target)
        return {url for url in fetched if self.labels.get(url) == self.topic}

    # -- output ----------------------------------------------------------------------------------

    def write_warc(self, path: str | Path) -> Path:
        """Every record (robots.txt included) as a gzipped WARC/1.0 of response records."""
        from warcio.statusandheaders import StatusAndHeaders
        from warcio.warcwriter import WARCWriter

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        warc_date = SERVED_AT.strftime("%Y-%m-%dT%H:%M:%SZ")
        with open(path, "wb") as fh:
            writer = WARCWriter(fh, gzip=True, warc_version="WARC/1.0")
            for url, (status, headers, body) in self.records.items():
                http_headers = StatusAndHeaders(
                    f"{status} {REASON_PHRASES.get(status, 'OK')}", list(headers), protocol="HTTP/1.1"
                )
                # derived from the URL, not random, so the same web writes the same WARC
                record_id = f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>"
                record = writer.create_warc_record(
                    url, "response", payload=io.BytesIO(body), http_headers=http_headers,
                    warc_headers_dict={"WARC-Date": warc_date, "WARC-Record-ID": record_id},
                )
                writer.write_record(record)
        return path

    def write_labels(self, path: str | Path) -> Path:
        """A TSV with a header ``url<TAB>label<TAB>host``, one line per labelled page."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["url\tlabel\thost"]
        lines += [f"{url}\t{label}\t{urlsplit(url).netloc}" for url, label in self.labels.items()]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


# robots.txt texts repeat across webs and calls; parsing each once keeps reachable_relevant cheap
_ROBOTS_CACHE: dict[str, Protego] = {}


def _robots_parser(text: str) -> Protego:
    parser = _ROBOTS_CACHE.get(text)
    if parser is None:
        parser = _ROBOTS_CACHE[text] = Protego.parse(text)
    return parser
