"""The JavaScript host: a modern app site on the topic whose pages exist only once a script runs.

Every page it serves is an application shell, as React, Vue and Next.js sites serve them: a
title and a header of a word or two, a ``<noscript>`` asking for JavaScript, an empty mount point
and ``/static/app.js``, one plain script shared by every page. The page's title, paragraphs and
links are data the script turns into DOM, kept where real apps keep it: most pages fetch it from
the host's API (``/api/pages/<route>.json``, application/json), some carry it in the page as
``<script id="__NEXT_DATA__" type="application/json">``, so a renderer must handle both.

The host is planned, linked and written by the same steps as every other host, so its pages are
labelled by their theme like the rest (an on-topic page is on topic whether or not it is rendered)
and its links lead into the web as other topical hosts' do: a crawler that renders finds its
on-topic pages, one that does not finds shells. The topical hubs of the other hosts each gain one
link to it, the only change it makes to them. It draws from a Random of its own.
"""

from __future__ import annotations

import json
from html import escape
from urllib.parse import urlsplit

from focuscrawl.demo.hosts import HostProfile, javascript_profile
from focuscrawl.demo.linking import link_pages
from focuscrawl.demo.pages import plan_pages
from focuscrawl.demo.responses import Record, response
from focuscrawl.demo.site_plan import Page, SitePlan
from focuscrawl.demo.text import write_text

SCRIPT_PATH = "/static/app.js"
API_PREFIX = "/api/pages"
#: Share of articles that carry their data in the page (the rest, hubs and home fetch it).
EMBEDDED_SHARE = 0.25


def add_javascript_host(plan: SitePlan) -> str:
    """Add the topic's app host to ``plan`` (pages, links both ways, text, where each page's data
    lives) and return its name. Runs after the rest of the web is planned and written."""
    plan.use_random("javascript-host")
    profile = javascript_profile(plan.topic)
    plan.profiles = plan.profiles + (profile,)
    plan_pages(plan, (profile,))
    link_pages(plan, (profile,))
    _link_into(plan, profile)
    pages = [p for p in plan.pages.values() if p.host == profile.host]
    write_text(plan, pages)
    for page in pages:
        # a static page is exported with its data (Next.js's __NEXT_DATA__); content comes from the API
        embedded = page.kind == "about" or (page.kind == "article" and plan.rng.random() < EMBEDDED_SHARE)
        page.data = "embedded" if embedded else "api"
    return profile.host


def _link_into(plan: SitePlan, app: HostProfile) -> None:
    """One blogroll link from each other host's first topical hub to one of the app's topical hubs,
    as a site links a new one it recommends; nothing else of theirs changes."""
    app_hubs = [(urls[0], s.name) for s, urls in plan.hubs[app.host].items() if s.theme == plan.topic]
    for profile in plan.profiles:
        sections = plan.topical_sections(profile.host)
        if profile.javascript or not sections:
            continue
        target, name = plan.rng.choice(app_hubs)
        hub = plan.pages[plan.hubs[profile.host][sections[0]][0]]
        hub.links.append((target, f"{name} at {app.site_name}", "blogroll"))


# -- what the host serves ------------------------------------------------------------------------


def data_url(url: str) -> str:
    """Where the page at ``url`` fetches its data: ``/a/b`` -> ``/api/pages/a/b.json``, a directory
    ``/a/`` -> ``/api/pages/a/index.json`` (app.js's ``dataUrl`` says the same)."""
    parts = urlsplit(url)
    path = parts.path + "index" if parts.path.endswith("/") else parts.path
    return f"{parts.scheme}://{parts.netloc}{API_PREFIX}{path}.json"


def page_data(page: Page, profile: HostProfile) -> dict:
    """What app.js builds the page from: its words and every link (same-host links as paths, as an
    app's router writes them), each with where it goes on the page."""

    def href(url: str) -> str:
        return urlsplit(url).path if urlsplit(url).netloc == page.host else url

    return {
        "site": profile.site_name,
        "title": page.title,
        "byline": {"author": page.author, "date": page.date} if page.date else None,
        "paragraphs": page.paragraphs,
        "links": [{"href": href(url), "text": anchor, "where": where} for url, anchor, where in page.links],
    }


def render_app_page(page: Page, profile: HostProfile) -> dict[str, Record]:
    """The shell served at the page's URL, and the JSON it fetches if its data is not in it."""
    data = page_data(page, profile)
    shell = render_shell(page, profile, data if page.data == "embedded" else None)
    records = {page.url: response(200, "text/html; charset=utf-8", shell)}
    if page.data != "embedded":
        body = json.dumps(data, ensure_ascii=False).encode("utf-8")
        # JSON is UTF-8 by definition (RFC 8259): no charset parameter, as most APIs send it
        records[data_url(page.url)] = response(200, "application/json", body)
    return records


def render_shell(page: Page, profile: HostProfile, embedded: dict | None) -> bytes:
    """An app shell: no words but the site's name and the ``<noscript>``, no ``<a href>``. The
    canonical link is invisible but makes each route's shell its own bytes, as the title does on
    most real apps: identical shells would be taken for one page by duplicate detection."""
    e = escape
    mount = "__next" if embedded is not None else "root"
    out = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(profile.site_name)}</title>", f'<link rel="canonical" href="{e(page.url)}">',
        "</head>", "<body>", f'<header class="app-bar">{e(profile.site_name)}</header>',
        "<noscript>You need to enable JavaScript to run this app.</noscript>", f'<div id="{mount}"></div>',
    ]
    if embedded is not None:
        blob = {"props": {"pageProps": embedded}, "page": "/[...route]",
                "query": {"route": [s for s in urlsplit(page.url).path.split("/") if s]}, "buildId": "demo"}
        out.append(f'<script id="__NEXT_DATA__" type="application/json">{_script_json(blob)}</script>')
    out += [f'<script src="{SCRIPT_PATH}"></script>', "</body>", "</html>", ""]
    return "\n".join(out).encode("utf-8")


def _script_json(data: dict) -> str:
    """JSON safe inside ``<script>``: ``<``, ``>``, ``&`` and the JS line separators escaped, as
    Next.js writes __NEXT_DATA__ (a ``</script>`` in a title must not end the element)."""
    text = json.dumps(data, ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def script_record(host: str) -> tuple[str, Record]:
    """``/static/app.js`` of ``host``: the one script every page loads."""
    return f"http://{host}{SCRIPT_PATH}", response(200, "text/javascript; charset=utf-8", APP_JS.encode("utf-8"))


#: The app's front end: plain ES2017 (async/await, fetch, DOM calls), no framework, no build step.
#: It lays a page out as the other hosts' HTML is laid out, so a rendered page reads like theirs.
APP_JS = r"""/* The app's front end: builds each page from its data, no framework. */
(function () {
  'use strict';

  // /a/b -> /api/pages/a/b.json; a directory /a/ -> /api/pages/a/index.json
  function dataUrl(pathname) {
    const path = pathname.endsWith('/') ? pathname + 'index' : pathname;
    return '/api/pages' + path + '.json';
  }

  async function loadData() {
    const embedded = document.getElementById('__NEXT_DATA__');
    if (embedded) {
      return JSON.parse(embedded.textContent).props.pageProps;
    }
    const response = await fetch(dataUrl(window.location.pathname), {headers: {Accept: 'application/json'}});
    if (!response.ok) {
      throw new Error('page data: HTTP ' + response.status);
    }
    return response.json();
  }

  function el(tag, className, children) {
    const node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    for (const child of children) {
      node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  function link(item) {
    const a = el('a', '', [item.text]);
    a.setAttribute('href', item.href);
    return a;
  }

  function linkList(items, className) {
    return el('ul', className, items.map((item) => el('li', '', [link(item)])));
  }

  function render(root, data) {
    const byPlace = {};
    for (const item of data.links) {
      (byPlace[item.where] = byPlace[item.where] || []).push(item);
    }
    const links = (where) => byPlace[where] || [];
    document.title = data.title + ' | ' + data.site;

    const article = el('article', '', []);
    if (links('crumb').length) {
      const crumbs = [];
      links('crumb').forEach((item, i) => {
        if (i) {
          crumbs.push(' \u203a ');
        }
        crumbs.push(link(item));
      });
      article.appendChild(el('p', 'breadcrumb', crumbs));
    }
    article.appendChild(el('h1', '', [data.title]));
    if (data.byline) {
      article.appendChild(el('p', 'byline', ['By ' + data.byline.author + ' - ' + data.byline.date]));
    }
    const bodyLinks = links('body').slice();
    data.paragraphs.forEach((text, i) => {
      const children = [text];
      if (bodyLinks.length && i % 2 === 1) {
        children.push(' Related reading: ', link(bodyLinks.shift()), '.');
      }
      article.appendChild(el('p', '', children));
    });
    for (const item of bodyLinks) {
      article.appendChild(el('p', '', ['See also ', link(item), '.']));
    }
    if (links('list').length) {
      article.appendChild(linkList(links('list'), 'articles'));
    }
    if (links('extra').length) {
      article.appendChild(linkList(links('extra'), 'more'));
    }

    const page = [el('nav', '', [linkList(links('nav'), 'menu')]), el('main', '', [article])];
    for (const [where, heading] of [['related', 'Related'], ['blogroll', 'Elsewhere on the web']]) {
      if (links(where).length) {
        page.push(el('aside', where, [el('h2', '', [heading]), linkList(links(where), '')]));
      }
    }
    const footer = ['\u00a9 2026 ' + data.site + '. All rights reserved. '];
    links('footer').forEach((item, i) => {
      if (i) {
        footer.push(' \u00b7 ');
      }
      footer.push(link(item));
    });
    page.push(el('footer', '', [el('p', '', footer)]));

    root.textContent = '';
    for (const node of page) {
      root.appendChild(node);
    }
  }

  async function main() {
    const root = document.getElementById('root') || document.getElementById('__next') ||
      document.getElementById('app');
    try {
      render(root, await loadData());
    } catch (error) {
      root.textContent = 'Sorry, this page could not be loaded.';
      console.error(error);
    }
  }

  main();
}());
"""
