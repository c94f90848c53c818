"""The finished plan as the web serves it: HTML in each host's charset, 301s, 404s, robots.txt,
and, when they are planned, the JavaScript host's shells, script and data, and the PDF documents.

Also where each page gets its label, since that is decided by what is served: a 200 HTML page
(an app shell too: its page is what a reader sees once the script ran) or a document is on topic
when its theme is the topic and it is not a site's home or about page. The script and the data
records are no page and get no label.
"""

from __future__ import annotations

from html import escape
from urllib.parse import urlsplit

from focuscrawl.demo.hosts import HostProfile
from focuscrawl.demo.javascript import render_app_page, script_record
from focuscrawl.demo.oddities import robots_txt
from focuscrawl.demo.papers import render_document
from focuscrawl.demo.responses import Record, response
from focuscrawl.demo.site_plan import Page, SitePlan


def build_records(plan: SitePlan) -> tuple[dict[str, Record], dict[str, str], dict[str, str]]:
    """``(records, labels, robots)``: every served URL, every page's label (200 HTML and
    documents), every robots.txt."""
    records: dict[str, Record] = {}
    robots: dict[str, str] = {}
    for p in plan.profiles:
        robots[p.host] = text = robots_txt(p)
        records[f"http://{p.host}/robots.txt"] = response(200, "text/plain", text.encode("ascii"))
    labels: dict[str, str] = {}
    copies = {copy: original for copy, original, kind in plan.duplicates if kind == "exact"}
    for url, page in plan.pages.items():
        profile = plan.profile(page.host)
        if page.kind == "document":
            records[url] = response(200, "application/pdf", render_document(page))
        elif profile.javascript:
            records.update(render_app_page(page, profile))  # the shell, and the JSON it fetches
        else:
            body = render_page(page, profile)
            ctype = f"text/html; charset={profile.charset}" if profile.header_charset else "text/html"
            records[url] = response(200, ctype, body)
        labels[url] = plan.topic if page.theme == plan.topic and page.kind not in ("home", "about") else "other"
    for copy, original in copies.items():
        records[copy] = records[original]
        labels[copy] = labels[original]
    for old, target in plan.redirects.items():
        body = f'<html><body>Moved to <a href="{escape(target)}">{escape(target)}</a></body></html>'
        records[old] = response(301, "text/html; charset=utf-8", body.encode(), [("Location", target)])
    for url in plan.missing:
        records[url] = response(404, "text/html; charset=utf-8", b"<html><body><h1>Not Found</h1></body></html>")
    for p in plan.profiles:
        if p.javascript:
            url, record = script_record(p.host)
            records[url] = record
    return records, labels, robots


def render_page(page: Page, profile: HostProfile) -> bytes:
    e = escape
    cp1252 = profile.charset == "windows-1252"
    dash = "\u2014" if cp1252 else "-"

    def a(link):
        url, anchor, _ = link
        href = urlsplit(url).path if urlsplit(url).netloc == page.host else url
        return f'<a href="{e(href)}">{e(anchor)}</a>'

    by = {w: [l for l in page.links if l[2] == w] for w in
          ("nav", "crumb", "body", "list", "related", "blogroll", "footer", "extra")}
    out = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", f'<meta charset="{profile.charset}">',
        f"<title>{e(page.title)} | {e(profile.site_name)}</title>",
        f'<meta name="description" content="{e(profile.tagline)}">', "</head>", "<body>",
        f'<header><div class="logo">{e(profile.site_name)}</div><p class="tagline">{e(profile.tagline)}</p>',
        "<nav><ul>" + "".join(f"<li>{a(l)}</li>" for l in by["nav"]) + "</ul></nav></header>",
        "<main><article>",
    ]
    if by["crumb"]:
        out.append('<p class="breadcrumb">' + " \u203a ".join(a(l) for l in by["crumb"]) + "</p>")
    out.append(f"<h1>{e(page.title)}</h1>")
    if page.date:
        out.append(f'<p class="byline">By {e(page.author)} {dash} <time>{e(page.date)}</time></p>')
    body_links = list(by["body"])
    for i, para in enumerate(page.paragraphs):
        tail = ""
        if body_links and i % 2 == 1:
            tail = f" Related reading: {a(body_links.pop(0))}."
        out.append(f"<p>{e(para)}{tail}</p>")
    for link in body_links:
        out.append(f"<p>See also {a(link)}.</p>")
    if cp1252 and page.kind in ("article", "private"):
        # bytes (curly quotes, em dash, euro) that are windows-1252 but not Latin-1
        out.append("<p>\u201cClear skies\u201d \u2014 entry 5 \u20ac at the café, Besançon.</p>")
    if by["list"]:
        out.append('<ul class="articles">' + "".join(f"<li>{a(l)}</li>" for l in by["list"]) + "</ul>")
    if by["extra"]:
        out.append('<ul class="more">' + "".join(f"<li>{a(l)}</li>" for l in by["extra"]) + "</ul>")
    out.append("</article></main>")
    if by["related"]:
        out.append('<aside class="related"><h2>Related</h2><ul>'
                   + "".join(f"<li>{a(l)}</li>" for l in by["related"]) + "</ul></aside>")
    if by["blogroll"]:
        out.append('<aside class="blogroll"><h2>Elsewhere on the web</h2><ul>'
                   + "".join(f"<li>{a(l)}</li>" for l in by["blogroll"]) + "</ul></aside>")
    out.append(f"<footer><p>\u00a9 2026 {e(profile.site_name)}. All rights reserved. "
               + " \u00b7 ".join(a(l) for l in by["footer"]) + "</p></footer>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out).encode(profile.charset, errors="xmlcharrefreplace")
