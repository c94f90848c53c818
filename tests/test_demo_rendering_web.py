"""The demo web's parts that only a renderer or a PDF reader sees: a host of JavaScript app shells
whose script builds each page from JSON data, and on-topic PDF documents. Both are added without
moving the rest of the web: the other hosts' pages are today's but for the links to them."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import urllib.request
from collections import Counter
from urllib.parse import urljoin, urlsplit

import lxml.html
import pytest
from protego import Protego

from focuscrawl.demo import DemoWeb, generate_web
from focuscrawl.demo import vocabulary as V
from focuscrawl.demo.hosts import HOSTS, javascript_profile
from focuscrawl.demo.javascript import APP_JS, data_url
from focuscrawl.demo.responses import header
from focuscrawl.parsing import parse_html


@pytest.fixture(scope="module")
def web() -> DemoWeb:
    return generate_web(seed=0)


@pytest.fixture(scope="module")
def old_web() -> DemoWeb:
    return generate_web(seed=0, javascript_host=False, documents=False)


def host(url: str) -> str:
    return urlsplit(url).netloc


def ctype(web: DemoWeb, url: str) -> str:
    return header(web.records[url][1], "Content-Type") or ""


def shell_parts(body: bytes) -> dict:
    """What a browser needs from a shell: its mount point, its embedded data, its scripts."""
    doc = lxml.html.fromstring(body)
    blob = doc.xpath("//script[@id='__NEXT_DATA__']")
    return {
        "mounts": doc.xpath("//div[@id='root' or @id='__next' or @id='app']"),
        "next_data": blob[0].text if blob else None,
        "scripts": doc.xpath("//script[@src]/@src"),
        "noscript": " ".join(doc.xpath("//noscript//text()")),
        "anchors": doc.xpath("//a[@href]"),
    }


def page_data(web: DemoWeb, url: str) -> dict:
    """The data app.js builds the page at ``url`` from, wherever the page keeps it."""
    parts = shell_parts(web.records[url][2])
    if parts["next_data"] is not None:
        return json.loads(parts["next_data"])["props"]["pageProps"]
    return json.loads(web.records[data_url(url)][2])


def theme_words(theme: str) -> set[str]:
    return {w.lower() for w in V.theme_words(theme)}


# --- the JavaScript host -----------------------------------------------------------------------


def test_the_javascript_host_is_one_more_crawled_host_whose_robots_let_a_renderer_in(web, old_web):
    app = web.javascript_host
    assert app == "app.starfield.test" and old_web.javascript_host is None
    hosts = {host(u) for u in web.labels}
    assert hosts == {host(u) for u in old_web.labels} | {app}
    assert app in web.crawl_hosts and app not in web.train_hosts  # its shells must not teach the model
    assert web.seeds == old_web.seeds + [f"http://{app}/"]
    robots = Protego.parse(web.robots[app])
    for url in [f"http://{app}/static/app.js", data_url(f"http://{app}/"), *web.javascript_pages]:
        assert robots.can_fetch(url, "focuscrawl"), url
    assert not robots.can_fetch(f"http://{app}/account/settings", "focuscrawl")
    assert web.records[f"http://{app}/robots.txt"][2].decode() == web.robots[app]
    assert 50 <= len(web.javascript_pages) <= 75


def test_every_javascript_page_is_a_shell_with_no_content_links_and_almost_no_text(web):
    bodies = set()
    for url in web.javascript_pages:
        status, headers, body = web.records[url]
        assert status == 200 and header(headers, "Content-Type") == "text/html; charset=utf-8"
        parts = shell_parts(body)
        assert parts["anchors"] == [] and web.links(url) == []
        assert len(parts["mounts"]) == 1 and len(parts["mounts"][0]) == 0 and not parts["mounts"][0].text_content()
        assert parts["scripts"] == ["/static/app.js"]
        assert parts["noscript"] == "You need to enable JavaScript to run this app."
        parsed = parse_html(body, url, content_type="text/html; charset=utf-8")
        assert parsed.title == "Starfield" and len(parsed.text.split()) <= 3, parsed.text
        bodies.add(body)
    # each route its own bytes (the canonical link), or duplicate detection takes them for one page
    assert len(bodies) == len(web.javascript_pages)


def test_pages_keep_their_data_both_ways_fetched_from_the_api_and_embedded(web):
    kinds = Counter()
    api_records = {u for u in web.records if host(u) == web.javascript_host and "/api/" in u}
    used = set()
    for url in web.javascript_pages:
        parts = shell_parts(web.records[url][2])
        mount = parts["mounts"][0].get("id")
        if parts["next_data"] is not None:
            kinds["embedded"] += 1
            assert mount == "__next"
            blob = json.loads(parts["next_data"])
            assert set(blob) >= {"props", "page", "buildId"} and "</" not in parts["next_data"]
            assert data_url(url) not in web.records
        else:
            kinds["api"] += 1
            assert mount == "root"
            status, headers, body = web.records[data_url(url)]
            assert status == 200 and header(headers, "Content-Type") == "application/json"
            json.loads(body.decode("utf-8"))
            used.add(data_url(url))
    assert kinds["api"] >= 30 and kinds["embedded"] >= 5  # most fetch, some embed
    assert used == api_records  # no data without its page
    assert data_url(f"http://{web.javascript_host}/") == f"http://{web.javascript_host}/api/pages/index.json"
    assert data_url(f"http://{web.javascript_host}/space/a") == f"http://{web.javascript_host}/api/pages/space/a.json"


def test_app_js_is_one_plain_script_that_builds_the_page_from_either_place(web):
    status, headers, body = web.records[f"http://{web.javascript_host}/static/app.js"]
    assert status == 200 and header(headers, "Content-Type") == "text/javascript; charset=utf-8"
    script = body.decode("utf-8")
    assert script == APP_JS
    for needed in ("getElementById('root')", "getElementById('__next')", "'__NEXT_DATA__'", "fetch(",
                   "'/api/pages'", "createElement(", "setAttribute('href'", "document.title", "'h1'", "'p'"):
        assert needed in script, needed
    # plain ES2017: no optional chaining, no nullish coalescing, no modules, no framework
    assert not re.search(r"\?\.|\?\?|^\s*(import|export)\b|React|Vue", script, re.MULTILINE)
    scripts = [u for u in web.records if u.endswith(".js")]
    assert scripts == [f"http://{web.javascript_host}/static/app.js"]


def test_the_data_of_every_javascript_page_holds_its_links_into_the_web(web):
    app, relevant = web.javascript_host, web.relevant_urls()
    on_topic = [u for u in web.javascript_pages if u in relevant]
    cross_to_relevant = 0
    for url in web.javascript_pages:
        data = page_data(web, url)
        assert data["site"] == "Starfield" and data["title"] and data["paragraphs"]
        targets = [urljoin(url, link["href"]) for link in data["links"]]
        assert targets == web.rendered_links[url]
        assert all(link["text"] and link["where"] for link in data["links"])
        assert any(host(t) == app for t in targets)
        for target in targets:
            assert web.records[target][0] in (200, 301, 404), target
        cross_to_relevant += sum(host(t) != app and t in relevant for t in targets)
    assert cross_to_relevant >= 10  # like the other topical hosts, it links to their topical pages
    words = theme_words(web.topic)
    for url in on_topic:
        text = " ".join(page_data(web, url)["paragraphs"]).lower()
        assert len(set(re.findall(r"[a-z-]+", text)) & words) >= 3, url


def test_a_crawl_that_renders_reaches_the_app_pages_and_one_that_does_not_reaches_shells(web):
    app_relevant = {u for u in web.javascript_pages if web.labels[u] == web.topic}
    # other hosts' topical hubs link to the app's topical hubs: shells, to a plain crawler
    links_in = [(u, t) for u in web.labels if host(u) != web.javascript_host for t in web.links(u)
                if host(t) == web.javascript_host]
    into_app = {t for _, t in links_in}
    assert len({u for u, _ in links_in}) >= 5 and into_app and into_app <= app_relevant
    plain = web.reachable_relevant(web.seeds)
    rendered = web.reachable_relevant(web.seeds, rendered=True)
    assert plain & app_relevant <= into_app
    assert rendered >= plain and len(rendered & app_relevant) >= 0.9 * len(app_relevant)


def test_the_app_pages_are_labelled_by_their_theme_and_its_other_records_not_at_all(web):
    profile = javascript_profile(web.topic)
    topical_paths = tuple(s.path for s in profile.sections if s.theme == web.topic)
    for url in web.javascript_pages:
        path = urlsplit(url).path
        expected = web.topic if path.startswith(topical_paths) else "other"
        assert web.labels[url] == expected, url
    labels = Counter(web.labels[u] for u in web.javascript_pages)
    assert labels[web.topic] >= 30 and labels["other"] >= 10
    unlabelled = {u for u in web.records if host(u) == web.javascript_host} - set(web.labels)
    assert {urlsplit(u).path for u in unlabelled if "/api/" not in u} == {"/robots.txt", "/static/app.js"}
    assert all(u.endswith(".json") for u in unlabelled if "/api/" in u)


def test_the_script_builds_each_page_from_its_data_in_node(web):
    """app.js run by Node against a minimal DOM and fetch: the links and text it builds are the
    page's data, fetched from where the page says (a check of the script, not of a browser)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    api = {urlsplit(u).path: body.decode("utf-8") for u, (_, _, body) in web.records.items()
           if host(u) == web.javascript_host and "/api/" in u}
    pages = []
    for url in web.javascript_pages:
        parts = shell_parts(web.records[url][2])
        pages.append({"mount": parts["mounts"][0].get("id"), "nextData": parts["next_data"],
                      "pathname": urlsplit(url).path})
    proc = subprocess.run([node, "-e", NODE_HARNESS], input=json.dumps({"script": APP_JS, "api": api, "pages": pages}),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout)
    for url, page, result in zip(web.javascript_pages, pages, results):
        data = page_data(web, url)
        assert result["errors"] == []
        assert result["title"] == f"{data['title']} | Starfield"
        assert [urljoin(url, a["href"]) for a in result["links"]] != []
        assert sorted(urljoin(url, a["href"]) for a in result["links"]) == sorted(web.rendered_links[url])
        assert all(p in result["text"] for p in data["paragraphs"])
        expected_fetch = [] if page["nextData"] is not None else [urlsplit(data_url(url)).path]
        assert result["fetched"] == expected_fetch


NODE_HARNESS = r"""
'use strict';
const fs = require('fs');
const vm = require('vm');
const {script, api, pages} = JSON.parse(fs.readFileSync(0, 'utf8'));

const textNode = (text) => ({childNodes: [], textContent: String(text)});
class Element {
  constructor(tag) { this.tagName = tag; this.className = ''; this.attributes = {}; this.childNodes = []; }
  appendChild(child) { this.childNodes.push(child); return child; }
  setAttribute(name, value) { this.attributes[name] = String(value); }
  get textContent() { return this.childNodes.map((c) => c.textContent).join(''); }
  set textContent(value) { this.childNodes = value ? [textNode(value)] : []; }
}
const anchors = (node, out) => {
  if (node.tagName === 'a') out.push({href: node.attributes.href, text: node.textContent});
  node.childNodes.forEach((child) => anchors(child, out));
  return out;
};

async function render(page) {
  const mount = new Element('div');
  const fetched = [], errors = [];
  const document = {
    title: '',
    getElementById: (id) => id === page.mount ? mount
      : (id === '__NEXT_DATA__' && page.nextData !== null ? {textContent: page.nextData} : null),
    createElement: (tag) => new Element(tag),
    createTextNode: textNode,
  };
  const fetch = async (url) => {
    fetched.push(url);
    const body = api[url];
    return {ok: body !== undefined, status: body === undefined ? 404 : 200, json: async () => JSON.parse(body)};
  };
  vm.runInNewContext(script, {document, fetch, window: {location: {pathname: page.pathname}},
                              console: {error: (e) => errors.push(String(e))}});
  await new Promise((resolve) => setTimeout(resolve, 0));
  await new Promise((resolve) => setTimeout(resolve, 0));
  return {title: document.title, links: anchors(mount, []), text: mount.textContent, fetched, errors};
}

(async () => {
  const results = [];
  for (const page of pages) results.push(await render(page));
  process.stdout.write(JSON.stringify(results));
})();
"""


# --- the documents -----------------------------------------------------------------------------


def test_documents_are_on_topic_pdfs_that_open_and_hold_the_topic_words_and_their_links(web):
    from pypdf import PdfReader

    assert 6 <= len(web.documents) <= 10
    per_host = Counter(host(u) for u in web.documents)
    topical_hosts = {p.host for p in (*HOSTS, javascript_profile(web.topic))
                     if p.host in web.robots and any(s.theme == web.topic for s in p.sections)}
    assert set(per_host) == topical_hosts and set(per_host.values()) <= {1, 2}
    words = theme_words(web.topic)
    for url in web.documents:
        assert re.fullmatch(r"http://[^/]+/papers/[a-z0-9-]+\.pdf", url)
        status, headers, body = web.records[url]
        assert status == 200 and header(headers, "Content-Type") == "application/pdf" and body.startswith(b"%PDF-")
        assert web.labels[url] == web.topic
        reader = PdfReader(io.BytesIO(body), strict=True)
        text = " ".join(page.extract_text() for page in reader.pages)
        assert reader.metadata.title and reader.metadata.title.split(":")[0] in text
        assert len(set(re.findall(r"[a-z-]+", text.lower())) & words) >= 8, url
        assert "?" not in text  # every word in the font's encoding (WinAnsi)
        uris = [annot.get_object()["/A"]["/URI"] for page in reader.pages for annot in page.get("/Annots", [])]
        assert uris == web.rendered_links[url] and len(uris) >= 2
        for target in uris:  # back into the web: pages of the same site
            assert host(target) == host(url) and web.records[target][0] == 200 and target in web.labels


def test_documents_are_linked_from_topical_pages_with_their_title_as_anchor(web):
    relevant = web.relevant_urls()
    for url in web.documents:
        title = pdf_title(web, url)
        sources = []
        for page in web.labels:
            record = web.records[page]
            if host(page) != host(url) or record[0] != 200 or "html" not in ctype(web, page):
                continue
            if host(page) == web.javascript_host:
                anchors = [(urljoin(page, l["href"]), l["text"]) for l in page_data(web, page)["links"]]
            else:
                parsed = parse_html(record[2], page, content_type=ctype(web, page))
                anchors = [(link.url, link.anchor) for link in parsed.links]
            sources += [page for target, anchor in anchors if target == url and anchor == f"{title} (PDF)"]
        assert len(sources) >= 2 and set(sources) <= relevant, url
    # a plain crawl meets them as links (and may fetch them); only a reader follows their links
    assert set(web.documents) - {d for d in web.documents if host(d) == web.javascript_host} \
        <= web.reachable_relevant(web.seeds)


def pdf_title(web: DemoWeb, url: str) -> str:
    from pypdf import PdfReader

    return PdfReader(io.BytesIO(web.records[url][2])).metadata.title


# --- determinism and the rest of the web ----------------------------------------------------------


def test_the_same_seed_gives_the_same_new_parts_and_another_seed_others(web):
    again, other = generate_web(seed=0), generate_web(seed=1)
    assert again.records == web.records and again.labels == web.labels
    assert (again.javascript_pages, again.documents, again.rendered_links) == \
        (web.javascript_pages, web.documents, web.rendered_links)
    app = lambda w: {u: r for u, r in w.records.items() if host(u) == w.javascript_host}  # noqa: E731
    assert app(other) != app(web) and other.documents != web.documents


def test_the_other_hosts_are_unchanged_but_for_the_links_to_the_new_parts(web, old_web):
    new_targets = set(web.documents) | {u for u in web.records if host(u) == web.javascript_host}
    assert {u: l for u, l in web.labels.items() if u in old_web.labels} == old_web.labels
    assert {h: t for h, t in web.robots.items() if h in old_web.robots} == old_web.robots
    assert (web.train_hosts, web.missing, web.redirects, web.duplicates, web.disallowed) == \
        (old_web.train_hosts, old_web.missing, old_web.redirects, old_web.duplicates, old_web.disallowed)
    changed = [u for u in old_web.records if web.records[u] != old_web.records[u]]
    # only some topical hubs and articles changed, and only by gaining links to the new parts
    assert 0 < len(changed) <= 20 and all(web.labels[u] == web.topic for u in changed)
    for url in changed:
        links = web.links(url)
        assert [t for t in links if t not in new_targets] == old_web.links(url)
        assert any(t in new_targets for t in links)
    # each part alone changes only its own share of those pages
    js_only = generate_web(seed=0, documents=False)
    docs_only = generate_web(seed=0, javascript_host=False)
    assert js_only.documents == [] and docs_only.javascript_host is None
    assert not any(u.endswith(".pdf") for u in js_only.records)
    assert {u for u in docs_only.records if u not in old_web.records} == set(docs_only.documents)
    assert {u: docs_only.records[u] for u in docs_only.documents} == \
        {u: web.records[u] for u in docs_only.documents}  # the app host does not move them
    assert set(docs_only.documents) == {d for d in web.documents if host(d) != web.javascript_host}


def test_the_new_records_round_trip_through_the_warc_and_the_replay_proxy(web, tmp_path):
    from warcio.archiveiterator import ArchiveIterator

    from focuscrawl.replay import RecordedWeb, ReplayProxy

    new = {u: r for u, r in web.records.items() if host(u) == web.javascript_host or u in web.documents}
    path = web.write_warc(tmp_path / "demo.warc.gz")
    seen = {}
    with open(path, "rb") as fh:
        for rec in ArchiveIterator(fh):
            url = rec.rec_headers.get_header("WARC-Target-URI")
            if rec.rec_type == "response" and url in new:
                seen[url] = (int(rec.http_headers.get_statuscode()), list(rec.http_headers.headers),
                             rec.content_stream().read())
    assert seen == new
    shell = web.javascript_pages[0]
    wanted = [shell, f"http://{web.javascript_host}/static/app.js", data_url(shell), web.documents[0]]
    with ReplayProxy(RecordedWeb.from_records(web.records), robots=web.robots) as proxy:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy.port}"}))
        for url in wanted:
            with opener.open(url) as resp:
                assert resp.status == 200 and resp.read() == web.records[url][2]
                assert resp.headers["Content-Type"] == ctype(web, url)
