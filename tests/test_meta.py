"""The Request.meta contract (focuscrawl.meta): the spider's link record and how it is read."""

from __future__ import annotations

from focuscrawl.learning import link_context, link_features
from focuscrawl.meta import DEPTH, LINK, LINK_FIELDS, SITEMAP, LinkMeta, link_meta, link_parent, request_meta
from focuscrawl.request_codec import _pack_meta, _unpack_meta


def test_a_link_record_goes_into_the_meta_and_back():
    link = LinkMeta(anchor="CSE 451", context="courses", parent_url="http://A.test/x#top", parent_score=0.8,
                    hops=1, link_score=0.93)
    meta = request_meta(link, 2)
    assert meta == {DEPTH: 2, LINK: link.to_meta()}
    assert tuple(meta[LINK]) == LINK_FIELDS  # every field, in order: what the codec packs as values
    assert LinkMeta.from_meta(meta) == link
    assert link_meta(meta) is meta[LINK]
    assert link_parent(meta) == "http://a.test/x"  # canonical


def test_a_request_without_a_full_link_reads_as_the_defaults():
    for meta in ({}, {LINK: None}, {LINK: {}}):
        assert LinkMeta.from_meta(meta) == LinkMeta() and link_meta(meta) == {} and link_parent(meta) is None
    assert LinkMeta.from_meta({LINK: {"anchor": "a", "future_field": 1}}) == LinkMeta(anchor="a")


def test_a_seed_has_the_features_the_old_partial_seed_meta_had():
    url = "http://a.test/"
    old = {DEPTH: 0, LINK: {"anchor": "", "hops": 0}}  # what the spider wrote before LinkMeta
    new = request_meta(LinkMeta(), 0)
    assert link_features(link_context(url, new)) == link_features(link_context(url, old))
    sitemap_old = {SITEMAP: True, LINK: {"anchor": "", "context": "sitemap"}}
    sitemap_new = {SITEMAP: True, LINK: LinkMeta(context="sitemap").to_meta()}
    assert link_features(link_context(url, sitemap_new)) == link_features(link_context(url, sitemap_old))


def test_the_codec_packs_the_spiders_meta_as_values():
    meta = request_meta(LinkMeta(anchor="a", parent_url="http://a.test/", parent_score=0.5, hops=1), 3)
    packed = _pack_meta(meta, "http://a.test/")
    assert type(packed) is tuple
    assert _unpack_meta(packed, "http://a.test/") == meta
    other = {**meta, "extra": 1}  # any other meta stays a dict
    assert _pack_meta(other, None) is other
