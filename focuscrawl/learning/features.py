"""Features of a link, fixed when the link is found: what its anchor, its surrounding text and its
URL say, how relevant the page holding it was, and how far it is from the last relevant page.

Features are (name, value) pairs; the learner hashes the names. Dynamic evidence (host and
path-prefix yield so far) is added at scoring time by the learner, so it stays current.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from focuscrawl.meta import DEPTH, LinkMeta
from focuscrawl.urls import extension, host_key, is_part_of, url_tokens

#: The feature of a link from a page the learner counted as found into that page's own directory
#: (one of its parts). ``scrapy train`` measures its starting weight (``TopicModel.learner_priors``).
PART_OF_HIT = "part_of_hit"

WORD = re.compile(r"[^\W\d_]{2,30}", re.UNICODE)
ALNUM = re.compile(r"[^\W_]+", re.UNICODE)
DIGIT_RUN = re.compile(r"\d+")
LETTER_RUN = re.compile(r"[^\W\d_]+", re.UNICODE)
STOPWORDS = frozenset(
    "the and for with from this that are was were you your our their has have had not but all any can "
    "will into more about here home page www http https html htm index php asp jsp cgi bin com org net edu "
    "of to in on at by or an be is it as de la le et".split()
)


def words(text: str, limit: int) -> list[str]:
    out, seen = [], set()
    for w in WORD.findall(text.lower()):
        if w in STOPWORDS or w in seen:
            continue
        seen.add(w)
        out.append(w)
        if len(out) >= limit:
            break
    return out


def digit_shapes(text: str, limit: int = 8) -> list[str]:
    """The shapes of the tokens that hold digits, which ``words`` drops: letters become ``a``, each
    digit ``#`` (at most four in a row). "CSE 451" gives ``###``, ``cs302.html`` ``a###``,
    ``96w/`` ``##a``: a course number, a year or a term is told apart from a word without a
    vocabulary of every number."""
    out: list[str] = []
    for token in ALNUM.findall(text):
        if not DIGIT_RUN.search(token):
            continue
        shape = LETTER_RUN.sub("a", DIGIT_RUN.sub(lambda m: "#" * min(4, len(m.group())), token))
        if shape not in out:
            out.append(shape)
            if len(out) >= limit:
                break
    return out


@dataclass(frozen=True)
class LinkContext:
    """Everything known about a link when it is found."""

    url: str
    anchor: str = ""
    context: str = ""
    parent_url: str | None = None
    parent_score: float | None = None  # None for seeds
    depth: int = 0
    hops_since_relevant: int = 0  # 0: the parent page was a hit for the learner (or this is a seed)
    link_score: float | None = None  # the topic model's score of the link's own words


def link_context(url: str, meta: dict) -> LinkContext:
    """The LinkContext of a request, from what the spider put in its meta (its LinkMeta and depth)."""
    link = LinkMeta.from_meta(meta)
    return LinkContext(
        url=url, anchor=link.anchor, context=link.context, parent_url=link.parent_url,
        parent_score=link.parent_score, depth=meta.get(DEPTH, 0), hops_since_relevant=link.hops,
        link_score=link.link_score,
    )


def link_features(link: LinkContext) -> tuple[tuple[str, float], ...]:
    feats: list[tuple[str, float]] = [("bias", 1.0)]
    for w in words(link.anchor, 12):
        feats.append(("a:" + w, 1.0))
    for w in words(link.context, 16):
        feats.append(("c:" + w, 0.5))
    for w in dict.fromkeys(url_tokens(link.url)):
        if len(w) > 1 and w not in STOPWORDS:
            feats.append(("u:" + w, 1.0))
    ext = extension(link.url)
    feats.append(("ext:" + (ext or "none"), 1.0))
    if link.parent_score is None:
        feats.append(("seed", 1.0))
    else:
        feats.append(("parent_score", float(link.parent_score)))
        feats.append(("ps:%d" % min(9, int(link.parent_score * 10)), 1.0))
        same_host = link.parent_url is not None and host_key(link.parent_url) == host_key(link.url)
        feats.append(("same_host" if same_host else "cross_host", 1.0))
        if same_host and link.hops_since_relevant == 0 and is_part_of(link.url, link.parent_url):
            feats.append((PART_OF_HIT, 1.0))
    if link.link_score is not None:
        feats.append(("link_score", float(link.link_score)))
        feats.append(("ls:%d" % min(9, int(link.link_score * 10)), 1.0))
    feats.append(("hops:%d" % min(link.hops_since_relevant, 5), 1.0))
    feats.append(("depth:%d" % min(link.depth, 10), 1.0))
    return tuple(feats)
