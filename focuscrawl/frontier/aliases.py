"""URL aliases learned per host: the spellings under which a host serves the same page.

w3lib's rules (and ``focuscrawl.urls.canonicalize``) know what holds for every server. Three
more hold for many servers but not all, so they are learned per host from the crawl's evidence
and then applied to the host's queued and future URLs:

- **slash**: the host answers ``/dir`` with a redirect to ``/dir/``; its other extension-less
  paths without a trailing slash are then fetched with one (no request spent on the redirect);
- **index**: the host serves the same page at ``/dir/`` and ``/dir/index.html`` (or redirects the
  one to the other), for an index-like name (``index``, ``default``, ``home``, ``welcome`` with a
  page extension): ``/any/index.html`` is then fetched as ``/any/``;
- **www**: ``www.host`` and ``host`` serve the same page at the same path (or one redirects to
  the other): the host's URLs are then fetched under the name that answered first (or the
  redirect's target).

A rule holds once ``min_evidence`` observations agree; the slash rule also needs the host not to
answer extension-less paths without a slash directly (a host that serves ``/dir`` as a page of
its own is not a slash host). A re-spelled URL that fails (``mistaken``: the scheduler then
fetches the spelling the link gave) counts MISTAKE_WEIGHT observations against its rule, so a
rule that costs more requests than it saves stops holding for that host. Evidence is kept for a bounded number of pages (``max_pages``),
oldest forgotten first: rules are learned early in a crawl, from a host's first pages.

Pure: canonical URLs in, canonical URLs out; the scheduler feeds the evidence (redirect hops and
the content hash of every page fetched) and asks ``canonical`` at admission and at dequeue.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections import Counter
from urllib.parse import urlsplit, urlunsplit

from focuscrawl.bounded import drop_oldest
from focuscrawl.config import DEFAULTS

INDEX_NAME = re.compile(r"^(index|default|home|welcome)\.(s?html?|php[0-9]?|aspx?|jsp|cgi)$", re.IGNORECASE)
#: the evidence against the slash rule it takes to outweigh one redirect
SLASH_COUNTER_WEIGHT = 3
#: observations against a rule that one failed re-spelling counts for: it cost two requests (the
#: failure and the spelling the link gave) where a right one saved one
MISTAKE_WEIGHT = 3


def _split(url: str):
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    if not host or parts.scheme not in ("http", "https"):
        return None
    return parts


def _bare(netloc: str) -> str:
    return netloc[4:] if netloc.startswith("www.") else netloc


def _last_segment(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _key(*parts: str) -> int:
    """A page's or a directory's place (or a content hash) as a 64-bit number: the evidence is kept
    for up to ``max_pages`` pages, and tuples of fresh strings cost ~400 bytes a page where two
    numbers and a shared host name cost ~150. The same in every process (a checkpoint keeps them);
    two places colliding would only pair two pages whose content hashes also collide."""
    data = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


class HostAliases:
    """The aliases learned so far, and the evidence they were learned from."""

    def __init__(self, min_evidence: int = 2, max_pages: int = DEFAULTS.url_aliases_pages):
        self.min_evidence = min_evidence
        self.max_pages = max_pages
        self.slash_for: Counter[str] = Counter()   # netloc -> redirects /dir -> /dir/
        self.slash_against: Counter[str] = Counter()  # netloc -> /dir answered 200 directly
        self.index_votes: dict[str, Counter[str]] = {}  # netloc -> index name -> agreeing pairs
        self.www_votes: dict[str, Counter[str]] = {}  # bare netloc -> preferred netloc -> agreeing pairs
        self.mistakes: Counter[tuple[str, str, str]] = Counter()  # (rule, host key, choice) -> failed re-spellings
        # evidence awaiting its pair, by ``_key``: (netloc, directory) -> (digest, index name or "")
        # and (scheme, bare netloc, path, query) -> (netloc, digest), the digests as ``_key`` of
        # the content hash, the names shared (sys.intern); insertion-ordered, bounded
        self._dirs: dict[int, tuple[int, str]] = {}
        self._pages: dict[int, tuple[str, int]] = {}
        self.version = 0  # bumped whenever a rule starts or stops holding
        # the rules that hold: slash hosts, index names per host, preferred name per bare host
        self._slash: set[str] = set()
        self._index: dict[str, frozenset[str]] = {}
        self._www: dict[str, str] = {}

    # --- evidence -------------------------------------------------------------------------------
    def redirected(self, source: str, target: str) -> None:
        """One redirect hop, both URLs canonical."""
        a, b = _split(source), _split(target)
        if a is None or b is None or a.scheme != b.scheme or a.query != b.query:
            return
        if a.netloc == b.netloc:
            if b.path == a.path + "/" and a.path and "." not in _last_segment(a.path):
                self.slash_for[a.netloc] += 1
                self._update_slash(a.netloc)
            elif INDEX_NAME.match(_last_segment(a.path)) and b.path == a.path[: -len(_last_segment(a.path))]:
                self._vote(self.index_votes, a.netloc, _last_segment(a.path).lower())
                self._update_index(a.netloc)
        elif _bare(a.netloc) == _bare(b.netloc) and a.path == b.path:
            self._vote(self.www_votes, _bare(a.netloc), b.netloc)
            self._update_www(_bare(a.netloc))

    def fetched(self, url: str, digest: str, redirected: bool = False) -> None:
        """A page answered 200 at ``url`` (canonical) with content hash ``digest``; ``redirected``:
        it was reached by a redirect."""
        parts = _split(url)
        if parts is None or not digest:
            return
        netloc, path = sys.intern(parts.netloc), parts.path or "/"
        digest_key = _key(digest)
        last = _last_segment(path)
        if not redirected and not parts.query and last and "." not in last:
            self.slash_against[netloc] += 1
            self._update_slash(netloc)
        if not parts.query:
            name = last if INDEX_NAME.match(last) else ""
            if name or path.endswith("/"):
                key = _key(netloc, path[: len(path) - len(name)])
                other = self._dirs.get(key)
                if other is None:
                    self._remember(self._dirs, key, (digest_key, sys.intern(name)))
                elif other[0] == digest_key and other[1] != name:
                    self._vote(self.index_votes, netloc, (name or other[1]).lower())
                    self._update_index(netloc)
        key = _key(parts.scheme, _bare(netloc), path, parts.query)
        first = self._pages.get(key)
        if first is None:
            self._remember(self._pages, key, (netloc, digest_key))
        elif first[0] != netloc and first[1] == digest_key:
            self._vote(self.www_votes, _bare(netloc), first[0])
            self._update_www(_bare(netloc))

    def mistaken(self, original: str, respelled: str) -> None:
        """``respelled`` (what ``canonical`` made of ``original``) failed: evidence against its rule."""
        a, b = _split(original), _split(respelled)
        if a is None or b is None:
            return
        if a.netloc != b.netloc:
            self.mistakes[("www", _bare(a.netloc), b.netloc)] += 1
            self._update_www(_bare(a.netloc))
        elif b.path == a.path + "/":
            self.mistakes[("slash", a.netloc, "")] += 1
            self._update_slash(a.netloc)
        else:
            self.mistakes[("index", a.netloc, _last_segment(a.path).lower())] += 1
            self._update_index(a.netloc)

    def _remember(self, table: dict, key, value) -> None:
        table[key] = value
        drop_oldest(table, self.max_pages)

    @staticmethod
    def _vote(votes: dict[str, Counter[str]], key: str, choice: str) -> None:
        votes.setdefault(key, Counter())[choice] += 1

    # Each piece of evidence re-judges the one rule of the one host it is about: a crawl sees a
    # page a few milliseconds, and re-judging every host's rules for each would cost O(hosts).
    def _update_slash(self, host: str) -> None:
        n = self.slash_for[host]
        holds = n >= self.min_evidence and n > SLASH_COUNTER_WEIGHT * (
            self.slash_against[host] + MISTAKE_WEIGHT * self.mistakes[("slash", host, "")])
        if holds != (host in self._slash):
            (self._slash.add if holds else self._slash.discard)(host)
            self.version += 1

    def _update_index(self, host: str) -> None:
        names = frozenset(name for name, n in self.index_votes.get(host, {}).items()
                          if n - MISTAKE_WEIGHT * self.mistakes[("index", host, name)] >= self.min_evidence)
        if names != self._index.get(host, frozenset()):
            if names:
                self._index[host] = names
            else:
                del self._index[host]
            self.version += 1

    def _update_www(self, bare: str) -> None:
        preferred = None
        if self.www_votes.get(bare):
            (choice, n), *rest = self.www_votes[bare].most_common()
            n -= MISTAKE_WEIGHT * self.mistakes[("www", bare, choice)]
            if n >= self.min_evidence and (not rest or n > 2 * rest[0][1]):
                preferred = choice
        if preferred != self._www.get(bare):
            if preferred is None:
                del self._www[bare]
            else:
                self._www[bare] = preferred
            self.version += 1

    def adopt(self, other: HostAliases) -> None:
        """Take on what ``other`` learned (a resumed crawl's checkpoint), keeping this object."""
        self.__dict__.update(other.__dict__)

    # --- the rules --------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self.version > 0

    def canonical(self, url: str) -> str:
        """``url`` (canonical) under its host's learned rules; itself when none applies."""
        parts = _split(url) if self.version else None
        if parts is None:
            return url
        slash, index, www = self._slash, self._index, self._www
        netloc, path = parts.netloc, parts.path or "/"
        preferred = www.get(_bare(netloc))
        if preferred is not None:
            netloc = preferred
        last = _last_segment(path)
        if last and not parts.query:
            if last.lower() in index.get(netloc, ()):
                path = path[: -len(last)]
            elif netloc in slash and "." not in last:
                path += "/"
        if netloc == parts.netloc and path == parts.path:
            return url
        return urlunsplit((parts.scheme, netloc, path, parts.query, ""))

    def fetched_as_another(self, url: str) -> bool:
        """Whether the page at ``url`` (canonical, in the spelling ``canonical`` gives) was fetched
        under another spelling before its host's rule was learned: ``/dir/`` as ``/dir/index.html``,
        or at the host's other www/bare name."""
        parts = _split(url) if self.version else None
        if parts is None:
            return False
        index, www = self._index, self._www
        netloc, path = parts.netloc, parts.path or "/"
        if path.endswith("/") and not parts.query:
            before = self._dirs.get(_key(netloc, path))
            if before is not None and before[1] and before[1].lower() in index.get(netloc, ()):
                return True
        bare = _bare(netloc)
        if bare in www:
            before = self._pages.get(_key(parts.scheme, bare, path, parts.query))
            if before is not None and before[0] != netloc:
                return True
        return False

    def rules(self) -> dict[str, object]:
        """The rules that hold, for logs and stats: hosts with the slash rule, index names per
        host, preferred names of www/bare host pairs."""
        slash, index, www = self._slash, self._index, self._www
        return {"slash": sorted(slash), "index": {h: sorted(n) for h, n in sorted(index.items())},
                "www": dict(sorted(www.items()))}


__all__ = ["INDEX_NAME", "HostAliases"]
