"""What an HTML document says about being an application shell: a page whose text and links a
script builds in the browser, so that its HTML alone holds little of what a reader sees.

Read from the lxml tree ``parse_html`` already built, by tag-filtered iteration (in C): the
scripts, an empty element a framework mounts into (``#root``, ``#app``, ``#__next``...), a
``<noscript>`` asking for JavaScript, and the data blobs frameworks embed for the script to
render from (``__NEXT_DATA__``, ``window.__INITIAL_STATE__``, ``__NUXT__``...). The decision to
render (how few words and links make a shell) is not made here: ``focuscrawl.rendering.decide``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import lxml.etree

#: ids of the elements React, Vue, Next.js, Gatsby, Nuxt, Svelte and Angular apps mount into
MOUNT_IDS = frozenset({"root", "app", "__next", "___gatsby", "__nuxt", "svelte", "app-root", "main-app"})
#: attributes that mark a mount point whatever its id
MOUNT_ATTRIBUTES = ("data-reactroot", "ng-app", "data-server-rendered", "data-v-app")
#: the mount points, found in one XPath evaluation (in C) instead of a look at every element
_MOUNTS = lxml.etree.XPath("//*[" + " or ".join([*(f"@id='{i}'" for i in sorted(MOUNT_IDS)),
                                                  *(f"@{a}" for a in MOUNT_ATTRIBUTES)]) + "]")
#: elements whose emptiness means nothing (scripts, styles and the like are not content)
_NOT_CONTENT = frozenset({"script", "style", "noscript", "template", "link", "meta"})
#: ids and globals of framework data embedded for the client to render from
_BLOB_IDS = frozenset({"__NEXT_DATA__", "__NUXT_DATA__", "__APOLLO_STATE__", "__INITIAL_STATE__", "__remixContext"})
_BLOB_GLOBAL = re.compile(r"window\.__[A-Z_]+__\s*=|__NUXT__\s*=|window\.__remixContext\s*=")
#: a noscript's words that ask for JavaScript
_ASKS_FOR_JS = re.compile(
    r"\b(enable|turn on|requires?|need)\b.{0,40}\bjavascript\b|\bjavascript\b.{0,40}\b(enabled?|required)\b",
    re.IGNORECASE | re.DOTALL)
#: script text read for data globals: a blob's marker is at its start
_SCRIPT_HEAD_CHARS = 200


@dataclass(frozen=True, slots=True)
class AppSignals:
    """``scripts``: script elements (inline and external); ``empty_mount``: the id (or attribute)
    of an empty framework mount point, "" if none; ``asks_for_javascript``: a ``<noscript>`` says
    the page needs JavaScript; ``data_blob``: the framework data the page embeds ("" if none)."""

    scripts: int = 0
    empty_mount: str = ""
    asks_for_javascript: bool = False
    data_blob: str = ""

    def describe(self) -> list[str]:
        """The signals present, as short phrases for the request log and ``scrapy explain``."""
        said = []
        if self.empty_mount:
            said.append(f"empty #{self.empty_mount}")
        if self.asks_for_javascript:
            said.append("<noscript> asks for JavaScript")
        if self.data_blob:
            said.append(f"data blob {self.data_blob}")
        if self.scripts:
            said.append(f"{self.scripts} script{'s' if self.scripts != 1 else ''}")
        return said


NONE = AppSignals()


def app_signals(root) -> AppSignals:
    """The shell signals of a parsed document (``lxml.html`` root); never raises."""
    scripts, blob = 0, ""
    for script in root.iter("script"):
        scripts += 1
        if not blob:
            blob = _blob_of(script)
    asks = any(_ASKS_FOR_JS.search(noscript.text_content() or "") for noscript in root.iter("noscript"))
    return AppSignals(scripts=scripts, empty_mount=_empty_mount(root), asks_for_javascript=asks, data_blob=blob)


def _blob_of(script) -> str:
    ident = script.get("id") or ""
    if ident in _BLOB_IDS:
        return ident
    kind = (script.get("type") or "").lower()
    if kind in ("application/json", "application/ld+json"):
        return ""  # JSON-LD and other data islands are metadata, not an app's state
    head = (script.text or "")[:_SCRIPT_HEAD_CHARS]
    match = _BLOB_GLOBAL.search(head)
    return match.group(0).split("=")[0].strip() if match else ""


def _empty_mount(root) -> str:
    try:
        mounts = _MOUNTS(root)
    except lxml.etree.XPathError:
        return ""
    for el in mounts[:8]:
        name = el.get("id") or ""
        marked = name if name in MOUNT_IDS else next((a for a in MOUNT_ATTRIBUTES if el.get(a) is not None), "")
        if marked and _is_empty(el):
            return marked
    return ""


def _is_empty(el) -> bool:
    """No visible words and no content elements inside (a spinner's markup counts as empty)."""
    for child in el.iter():
        if child is el:
            continue
        if not isinstance(child.tag, str) or child.tag in _NOT_CONTENT:
            continue
        if child.tag in ("a", "p", "li", "h1", "h2", "h3", "article", "table"):
            return False
    words = 0
    for text in el.itertext():
        words += len(text.split())
        if words > 3:  # "Loading..." is empty; a sentence is content
            return False
    return True
