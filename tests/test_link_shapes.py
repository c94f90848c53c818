"""The shape of a link among its page's links (focuscrawl/learning/shapes.py): anchor kinds, URL
shapes, sibling groups, and the tokens reaching the learner's features and its link model."""

import pytest

from focuscrawl.learning import LinkContext, link_features
from focuscrawl.learning.link_words import WORD_PREFIXES
from focuscrawl.learning.shapes import SHAPE_PREFIX, anchor_kind, link_shapes, url_shape, url_template
from focuscrawl.meta import LINK_FIELDS, LinkMeta, request_meta
from focuscrawl.learning.features import link_context


@pytest.mark.parametrize("anchor, kind", [
    ("Lorenzo Alvisi", "name"),
    ("Agha, Gul", "name"),
    ("Friedman, H. George, Jr.", "name"),
    ("Prof. Misra", "name"),
    ("Anderson", "name"),
    ("CSE 451", "code"),
    ("CS302", "code"),
    ("cs 302a: Operating Systems", "code"),
    ("1996", "number"),
    ("12-3", "number"),
    ("http://www.cs.wisc.edu/", "address"),
    ("someone@cs.wisc.edu", "address"),
    ("", "none"),
    ("   ", "none"),
    ("EXODUS - An Extensible Object-Oriented Database System", "title"),
    ("home page", "word"),
    ("next", "word"),
    ("the list of all the courses we teach", "phrase"),
])
def test_an_anchor_is_read_by_its_kind_not_its_words(anchor, kind):
    assert anchor_kind(anchor) == kind


@pytest.mark.parametrize("url, shape", [
    ("http://h/~smith/", "~d1/"),
    ("http://h/users/dsb/", "d2/"),
    ("http://h/", "d0/"),
    ("http://h", "d0/"),
    ("http://h/a/b/c/d/e/f.html", "d4."),
    ("http://h/courses/cse451", "d2#"),
    ("http://h/people/faculty", "d2-"),
])
def test_a_url_is_read_by_its_shape_not_its_words(url, shape):
    assert url_shape(url) == shape


def test_a_url_template_keeps_the_host_and_the_shape_of_each_segment():
    assert url_template("http://www.cs.utexas.edu/users/lorenzo/") == url_template("http://www.cs.utexas.edu/users/dsb/")
    assert url_template("http://h/courses/cse451/") == "h/a/a#/"
    assert url_template("http://h/~smith/cs302.HTML") == "h/~a/a#.html"
    assert url_template("http://h/a/b.html") != url_template("http://g/a/b.html")
    assert url_template("http://h/a/b") != url_template("http://h/a/b/")


def test_links_of_one_list_form_a_group_and_a_lone_link_does_not():
    people = [(name, f"http://h/users/{login}/") for name, login in
              [("Lorenzo Alvisi", "lorenzo"), ("Don Batory", "dsb"), ("Robert Boyer", "boyer"),
               ("Nell Dale", "ndale"), ("Don Fussell", "fussell"), ("M. G. Gouda", "gouda"),
               ("J. C. Browne", "browne"), ("David R. Kincaid", "kincaid"), ("Michael Dahlin", "dahlin"),
               ("E. Allen Emerson", "emerson")]]
    page = [("Home", "http://h/"), *people, ("faculty profiles", "http://h/report/profiles/")]
    shapes = link_shapes(page)
    assert len(shapes) == len(page)
    assert shapes[0] == "a:name u:d0/ g:name:1"
    assert all(shape == "a:name u:d2/ g:name:10+" for shape in shapes[1:-1])
    assert shapes[-1] == "a:word u:d2/ g:word:1"


def test_group_sizes_are_told_apart_by_buckets():
    def sizes(n):
        return {s.split()[2] for s in link_shapes([(f"CS {100 + i}", f"http://h/c/cs{100 + i}/") for i in range(n)])}
    assert sizes(1) == {"g:code:1"}
    assert sizes(3) == {"g:code:2-3"}
    assert sizes(9) == {"g:code:4-9"}
    assert sizes(10) == {"g:code:10+"}
    assert link_shapes([]) == []


def test_bad_urls_and_odd_anchors_give_a_shape_not_an_error():
    shapes = link_shapes([("\x00\ufffd", "http://[::1"), ("x" * 10_000, "mailto:x"), ("(", "")])
    assert len(shapes) == 3 and all(s.startswith("a:") for s in shapes)


def test_shape_tokens_are_learner_features_and_words_of_the_crawls_link_model():
    link = LinkContext("http://h/users/dsb/", "Don Batory", shape="a:name u:d2/ g:name:10+")
    names = [name for name, _ in link_features(link)]
    assert {"s:a:name", "s:u:d2/", "s:g:name:10+"} <= set(names)
    assert SHAPE_PREFIX in WORD_PREFIXES  # link_words counts them with the anchor's words
    assert not any(name.startswith(SHAPE_PREFIX) for name, _ in link_features(LinkContext("http://h/")))


def test_the_shape_travels_in_the_requests_link_meta():
    assert "shape" in LINK_FIELDS
    meta = request_meta(LinkMeta(anchor="Don Batory", parent_url="http://h/", parent_score=0.5,
                                 shape="a:name u:d2/ g:name:10+"), 1)
    assert link_context("http://h/users/dsb/", meta).shape == "a:name u:d2/ g:name:10+"
    # a request whose meta predates the field has no shape, and no shape features
    old = {"depth": 1, "focus_link": {"anchor": "x", "parent_url": "http://h/", "parent_score": 0.5}}
    assert link_context("http://h/x", old).shape == ""
