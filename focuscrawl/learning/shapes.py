"""The shape of a link among its page's links: what kind of anchor it has, what its URL looks like,
and how many links of the same shape stand beside it on the page.

Example pages hold what a topic's pages say, not how the links to them look: that a list of
people's names leads to people, that a course number in an anchor leads to a course, that a list
of thirty links of one shape is a directory while a lone link is navigation. Those shapes are not
words (every name in a list is a different word, every course number a different number), so the
crawl's online link model (``link_words``) cannot learn them from the links it has followed; as
shape tokens it can. They are the same on every web: nothing here names a web, a language or a
topic, and what a shape is worth is learned by the crawl, from its own pages, as it goes.

A link's tokens (``link_shapes``, one space-separated string a link, kept in its ``LinkMeta``):

- ``a:KIND``: its anchor's kind (``anchor_kind``): a person's name, a code with a number, a
  title, a word, a sentence, a number, an address, none;
- ``u:SHAPE``: its URL's shape (``url_shape``): under a ``~user`` directory or not, how deep, and
  how its path ends (a directory, a file, a name with digits);
- ``g:KIND:SIZE``: its sibling group, the links on the same page with the same anchor kind and
  the same URL template (``url_template``: the host and each path segment's shape), by size: a
  lone link, a few, or one of a list.

The tokens are computed from the page's links in their order on the page (anchor and URL of
each), which the spider and the simulator both have.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from focuscrawl.urls import host_key

#: Feature-name prefix of a link's shape tokens (``features.link_features``).
SHAPE_PREFIX = "s:"
#: Upper bounds of the sibling-group sizes told apart: a lone link, a pair or three (a menu's
#: neighbours), a short list, a long list.
GROUP_SIZES = ((1, "1"), (3, "2-3"), (9, "4-9"), (10**9, "10+"))
#: Path depths told apart (segments; the last bucket is "this deep or deeper").
MAX_DEPTH = 4

_TOKEN = re.compile(r"[^\s,;:()\[\]\"'/|]+")
_NAME_WORD = re.compile(r"^(?:[A-Z][a-z'\-]+(?:-[A-Z][a-z]+)?|[A-Z]\.(?:[A-Z]\.)*|[A-Z][a-z]*\.|[A-Z]{1}[a-z]+[A-Z][a-z]+)$")
_TITLES = frozenset({"prof.", "prof", "dr.", "dr", "mr.", "ms.", "mrs.", "jr.", "jr", "sr.", "professor"})
_CODE = re.compile(r"^(?:[A-Za-z]{1,6}[-_]?\d{1,5}[A-Za-z]?|\d{2,5}[A-Za-z]?)$")
_NUMBER = re.compile(r"^[\d.,\-/#]+$")
_ADDRESS = re.compile(r"(?:^[a-z]+://|^www\.|@|\.(?:com|org|edu|net|html?)$)", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")
_LETTERS = re.compile(r"[^\W\d_]+", re.UNICODE)


def anchor_kind(anchor: str) -> str:
    """What kind of text a link's anchor is, whatever its words:

    - ``none``: no anchor (an image without alt text, an empty link);
    - ``address``: a URL or an e-mail address;
    - ``number``: digits only (a page number, a year);
    - ``code``: a short anchor holding a code with a number ("CSE 451", "CS302", "6.001");
    - ``name``: one to four capitalised words or initials, as people's names are written
      ("Lorenzo Alvisi", "Friedman, H. George, Jr.", "Prof. Misra", "Anderson");
    - ``title``: a longer phrase whose words are mostly capitalised (a project's or a page's title);
    - ``word``: one or two other words ("next", "home page");
    - ``phrase``: anything longer (a sentence)."""
    tokens = _TOKEN.findall(anchor)
    if not tokens:
        return "none"
    if len(anchor.split()) == 1 and _ADDRESS.search(anchor.strip()):
        return "address"
    if all(_NUMBER.match(t) for t in tokens):
        return "number"
    if len(tokens) <= 4 and any(_DIGITS.search(t) for t in tokens) and any(_CODE.match(t) for t in tokens):
        return "code"
    words = [t for t in tokens if t.lower() not in _TITLES]
    if words and len(words) <= 4 and all(_NAME_WORD.match(t) for t in words):
        return "name"
    if len(tokens) >= 3 and sum(t[:1].isupper() for t in tokens) >= 0.6 * len(tokens):
        return "title"
    return "word" if len(tokens) <= 2 else "phrase"


def _path(url: str) -> str:
    try:
        return urlsplit(url).path
    except ValueError:  # a malformed URL has no shape worth reading
        return ""


def _segment_shape(segment: str) -> str:
    """A path segment's shape: ``~`` kept, letters ``a``, digits ``#``, punctuation and an
    extension kept (``cs302.html`` -> ``a#.html``, ``~smith`` -> ``~a``)."""
    stem, dot, ext = segment.rpartition(".")
    if not dot or not ext or len(ext) > 5 or not ext.isalnum():
        stem, dot, ext = segment, "", ""
    shape = _LETTERS.sub("a", _DIGITS.sub("#", stem))
    return shape + (dot + ext.lower() if dot else "")


def url_template(url: str) -> str:
    """The URL's host and the shape of each of its path segments, and whether it ends in a slash:
    the links of one list share it (``/users/lorenzo/`` and ``/users/dsb/``: ``a/a/``)."""
    path = _path(url)
    segments = [s for s in path.split("/") if s]
    trail = "/" if path.endswith("/") and segments else ""
    return host_key(url) + "/" + "/".join(_segment_shape(s) for s in segments) + trail


def url_shape(url: str) -> str:
    """How a URL looks, whatever its words: ``~`` when a path segment is a ``~user`` directory,
    ``d`` and its depth (segments, ``MAX_DEPTH`` or more told as one), and how the path ends:
    ``/`` a directory, ``.`` a file with an extension, ``#`` a last segment with digits, ``-``
    another name."""
    path = _path(url)
    segments = [s for s in path.split("/") if s]
    tilde = "~" if any(s.startswith("~") for s in segments) else ""
    if not segments or path.endswith("/"):
        end = "/"
    elif "." in segments[-1]:
        end = "."
    elif _DIGITS.search(segments[-1]):
        end = "#"
    else:
        end = "-"
    return f"{tilde}d{min(len(segments), MAX_DEPTH)}{end}"


def _group_size(n: int) -> str:
    for bound, name in GROUP_SIZES:
        if n <= bound:
            return name
    return GROUP_SIZES[-1][1]


def link_shapes(links: Sequence[tuple[str, str]]) -> list[str]:
    """The shape tokens of each of a page's links, given as (anchor, URL) in page order: one
    space-separated string per link (``a:KIND u:SHAPE g:KIND:SIZE``)."""
    kinds = [anchor_kind(anchor) for anchor, _ in links]
    signatures = [(kind, url_template(url)) for kind, (_, url) in zip(kinds, links)]
    sizes = Counter(signatures)
    return [f"a:{kind} u:{url_shape(url)} g:{kind}:{_group_size(sizes[signature])}"
            for kind, (_, url), signature in zip(kinds, links, signatures)]


def shape_features(shape: str) -> Iterable[tuple[str, float]]:
    """A link's shape tokens (``link_shapes``) as learner features."""
    return ((SHAPE_PREFIX + token, 1.0) for token in shape.split())


__all__ = ["SHAPE_PREFIX", "anchor_kind", "link_shapes", "shape_features", "url_shape", "url_template"]
