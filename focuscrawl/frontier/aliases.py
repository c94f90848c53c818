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

In a crawl shared between workers, each worker publishes the rules its own evidence concluded
(``shared_view``) and takes up the others' (``take_shared``) for hosts where it has no evidence
to the contrary: a rule of its own, or evidence against one, keeps winning here.

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
        # rules other workers concluded (``take_shared``), by the same keys, and what sharing tracks
        self._adopted_slash: set[str] = set()
        self._adopted_index: dict[str, frozenset[str]] = {}
        self._adopted_www: dict[str, str] = {}
        self._sharing = False  # set by the first ``shared_view``: a crawl not shared tracks nothing
        self._touched: set[tuple[str, str]] = set()  # (rule, host key) re-judged since last asked
        self._published: dict[str, str] = {}  # shared key -> the conclusion last given out

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
    def _own_slash(self, host: str) -> bool:
        n = self.slash_for[host]
        return n >= self.min_evidence and n > SLASH_COUNTER_WEIGHT * (
            self.slash_against[host] + MISTAKE_WEIGHT * self.mistakes[("slash", host, "")])

    def _own_index(self, host: str) -> frozenset[str]:
        return frozenset(name for name, n in self.index_votes.get(host, {}).items()
                         if n - MISTAKE_WEIGHT * self.mistakes[("index", host, name)] >= self.min_evidence)

    def _own_www(self, bare: str) -> str | None:
        if self.www_votes.get(bare):
            (choice, n), *rest = self.www_votes[bare].most_common()
            n -= MISTAKE_WEIGHT * self.mistakes[("www", bare, choice)]
            if n >= self.min_evidence and (not rest or n > 2 * rest[0][1]):
                return choice
        return None

    def _touch(self, rule: str, host: str) -> None:
        if self._sharing:
            self._touched.add((rule, host))

    def _update_slash(self, host: str) -> None:
        self._touch("slash", host)
        # another worker's rule holds until this one has seen the host answer against it
        holds = self._own_slash(host) or (host in self._adopted_slash and not self.slash_against[host]
                                          and not self.mistakes[("slash", host, "")])
        if holds != (host in self._slash):
            (self._slash.add if holds else self._slash.discard)(host)
            self.version += 1

    def _update_index(self, host: str) -> None:
        self._touch("index", host)
        names = self._own_index(host) | frozenset(
            name for name in self._adopted_index.get(host, ()) if not self.mistakes[("index", host, name)])
        if names != self._index.get(host, frozenset()):
            if names:
                self._index[host] = names
            else:
                del self._index[host]
            self.version += 1

    def _update_www(self, bare: str) -> None:
        self._touch("www", bare)
        preferred = self._own_www(bare)
        adopted = self._adopted_www.get(bare)
        votes = self.www_votes.get(bare, {})
        if preferred is None and adopted is not None and not self.mistakes[("www", bare, adopted)] and not any(
                n for choice, n in votes.items() if choice != adopted):
            preferred = adopted
        if preferred != self._www.get(bare):
            if preferred is None:
                del self._www[bare]
            else:
                self._www[bare] = preferred
            self.version += 1

    # --- sharing with the other workers of a crawl -------------------------------------------------
    def shared_view(self) -> dict[str, str]:
        """The rules this process's own evidence concluded that changed since last asked (all of
        them the first time), by ``rule:host``: ``slash:`` "1", ``index:`` the names joined by
        commas, ``www:`` the preferred name; "" when a rule given out before stopped holding."""
        if not self._sharing:
            self._sharing = True
            self._touched.update(("slash", h) for h in self.slash_for)
            self._touched.update(("index", h) for h in self.index_votes)
            self._touched.update(("www", h) for h in self.www_votes)
        view = {}
        for rule, host in self._touched:
            if rule == "slash":
                value = "1" if self._own_slash(host) else ""
            elif rule == "index":
                value = ",".join(sorted(self._own_index(host)))
            else:
                value = self._own_www(host) or ""
            key = f"{rule}:{host}"
            if value != self._published.get(key, ""):
                view[key] = value
                if value:
                    self._published[key] = value
                else:
                    self._published.pop(key, None)
        self._touched.clear()
        return view

    def take_shared(self, conclusions: dict[str, str]) -> None:
        """Other workers' rules (``shared_view``'s keys and values), applied where this process's own
        evidence does not say otherwise; "" withdraws one."""
        for key, value in conclusions.items():
            rule, _, host = key.partition(":")
            if rule == "slash":
                (self._adopted_slash.add if value else self._adopted_slash.discard)(host)
            elif rule == "index":
                names = frozenset(name for name in value.split(",") if INDEX_NAME.match(name))
                if names:
                    self._adopted_index[host] = names
                else:
                    self._adopted_index.pop(host, None)
            elif rule == "www":
                if value and _bare(value) == host:  # only ever the host's own www or bare name
                    self._adopted_www[host] = value
                else:
                    self._adopted_www.pop(host, None)
            else:
                continue  # a rule this version does not know
            sharing, self._sharing = self._sharing, False  # re-judged on others' word: nothing to give out
            try:
                {"slash": self._update_slash, "index": self._update_index, "www": self._update_www}[rule](host)
            finally:
                self._sharing = sharing

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
