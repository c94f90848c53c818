"""Starting a crawl from a few on-topic pages or a few words: the background corpus, the model
made from words, and the model that grows from the crawl's pages."""

from __future__ import annotations

import random

import numpy as np
import pytest

from focuscrawl.relevance import Example, TopicModel, TrainingError, train_topic_model
from focuscrawl.relevance.background import build_pages, descriptions, load_background
from focuscrawl.relevance.growing import ModelGrower
from focuscrawl.relevance.growing_ext import grows_by_default
from focuscrawl.relevance.linear import LinearScorer
from focuscrawl.relevance.query import build_query_model, query_terms

COURSE = "syllabus lecture homework exam assignment midterm grading textbook office hours".split()
PEOPLE = "professor research interests publications students advisor phd thesis".split()
FILLER = "the of and a to in university department computer science page".split()


def page(words, rng, n=60) -> str:
    return " ".join(rng.choice(words + FILLER) for _ in range(n))


# --- the background corpus -------------------------------------------------------------------

def test_the_shipped_background_is_small_varied_and_says_where_it_came_from():
    pages = load_background()
    assert 200 <= len(pages) <= 600
    assert {p.label for p in pages} == {"background"}
    sections = {p.url.split("/")[1] for p in pages}
    assert {"games", "science", "sound", "mail", "math"} <= sections
    assert all(len(p.text) >= 250 for p in pages)


def test_the_background_is_built_from_debian_package_lists():
    packages = ("Package: foo\nSection: games\n\nPackage: bar\nSection: libs\n\n"
                "Package: baz\nSection: contrib/science\n")
    long = " ".join(["word"] * 60)
    translations = (f"Package: foo\nDescription-en: a game\n {long}\n .\n more about the game\n\n"
                    f"Package: bar\nDescription-en: a library\n {long}\n\n"
                    f"Package: baz\nDescription-en: short\n too short\n\n"
                    f"Package: unknown\nDescription-en: not in Packages\n {long}\n")
    found = list(descriptions(packages, translations))
    assert [(p, s) for p, s, _, _ in found] == [("foo", "games"), ("bar", "libs"), ("baz", "science")]
    assert found[0][3].endswith("more about the game") and "\n" not in found[0][3]
    pages = build_pages(found)  # libraries' boilerplate and too-short descriptions are left out
    assert len(pages) == 1 and pages[0]["packages"] == ["foo"] and pages[0]["title"] == "a game"


# --- on-topic examples alone ------------------------------------------------------------------

def test_on_topic_examples_alone_are_contrasted_with_the_background():
    rng = random.Random(0)
    examples = [Example(f"http://u/{i}", "course", page(COURSE, rng), "course") for i in range(10)]
    model, report = train_topic_model(examples, ["course"], cv_folds=3)
    assert report["off_topic"]["kind"] == "background" and "Debian" in report["off_topic"]["source"]
    assert report["n_positive"] == 10 and report["n_negative"] == len(load_background())
    assert report["examples_per_class"]["background"] == report["n_negative"]
    assert model.even_odds_score == 0.5 and not model.labelled_off_topic
    assert model.score("CS 1", page(COURSE, rng)) > model.score("Jane", page(PEOPLE, rng))
    assert not grows_by_default(model)  # unless asked (scrapy train --grow)
    model.metadata["grow"] = True
    assert grows_by_default(model)


# --- words alone ----------------------------------------------------------------------------

def test_query_terms_read_as_the_vectorizer_reads():
    assert query_terms("Course  SYLLABUS, lecture; a") == ["course", "syllabus", "lecture"]
    with pytest.raises(TrainingError, match="no word"):
        build_query_model("a ; !")


def test_a_query_model_scores_by_the_share_of_the_query_a_page_uses():
    model = build_query_model("course syllabus lecture homework", background_docs=["a course about software"] * 5)
    assert not model.labelled_off_topic
    none = model.score("Jane", "my research interests and publications")
    one = model.score("", "the syllabus")
    two = model.score("", "the syllabus and the homework")
    every = model.score("", "course syllabus lecture homework")
    assert none < 0.06 and none < one < two < every and every > 0.9
    # rarer words weigh more: "course" is in every background page
    assert model.score("", "syllabus") > model.score("", "course")
    # plural and singular forms alike; repeats add (sublinearly)
    assert model.score("", "the lectures") == pytest.approx(model.score("", "the lecture"))
    assert model.score("", "homework homework homework") > model.score("", "homework")
    assert model.even_odds_score == 0.5
    assert model.metadata["off_topic"]["kind"] == "query" and not grows_by_default(model)


def test_a_query_model_scores_links_and_survives_saving(tmp_path):
    model = build_query_model("course syllabus lecture homework", background_docs=["software"] * 3)
    hw, person = model.score_links([("Homework 1", "due Friday", "http://u/cs302/homework/"),
                                    ("Jane Doe", "", "http://u/~jane/")])
    assert hw > person
    model.save(tmp_path / "q.joblib")
    loaded = TopicModel.load(tmp_path / "q.joblib")
    docs = [("CS 302", "lecture notes and homework"), ("x", "nothing here")]
    assert loaded.score_many(docs) == pytest.approx(model.score_many(docs))
    # the crawl's fast scorer reads it, and agrees with scikit-learn
    pipeline = loaded.pipeline
    assert LinearScorer.for_pipeline(pipeline) is not None
    assert np.allclose(loaded.score_many(docs), pipeline.predict_proba(
        [f"{t} {t} {x}" for t, x in docs])[:, 1])


# --- growing from the crawl's pages -------------------------------------------------------------

def test_the_grown_model_learns_words_the_query_did_not_name():
    rng = random.Random(1)
    prior = build_query_model("syllabus homework", background_docs=["software"] * 3)
    grower = ModelGrower(prior, first=50, max_pages=300)
    for i in range(120):
        if i % 4 == 0:
            grower.add("course", "syllabus homework midterm textbook grading " + page(COURSE, rng, 20))
        else:
            grower.add("person", page(PEOPLE, rng))
    assert grower.due()
    snapshot = grower.training_set()
    assert not grower.due() and grower.next_round == 240
    model, report = grower.grow(snapshot)
    assert model is not None and report["found"] == 30 and report["n_negative"] == 90
    # a course page without the query's words: the prior cannot tell, the grown model can
    unseen = ("CS 302", "midterm textbook grading office hours")
    assert prior.score(*unseen) < 0.1 < 0.5 < model.score(*unseen)
    assert model.even_odds_score == pytest.approx(90 / 120)  # the crawl's own base rate
    assert model.metadata["grown"][-1]["round"] == 1 and model.metadata["query"] == "syllabus homework"
    grower.adopt(model, report)
    assert grower.model is model and grower.history == [report]


def test_a_round_with_too_few_found_pages_keeps_the_model():
    rng = random.Random(2)
    prior = build_query_model("syllabus", background_docs=["software"] * 3)
    grower = ModelGrower(prior, first=10)
    for _ in range(20):
        grower.add("person", page(PEOPLE, rng))
    model, report = grower.grow(grower.training_set())
    assert model is None and "fewer than" in report["skipped"]


def test_the_kept_pages_are_bounded():
    grower = ModelGrower(build_query_model("syllabus", background_docs=["x"]), max_pages=100, max_chars=50)
    for i in range(1000):
        grower.add("t" * 1000, f"{i} " + "w " * 1000)
    assert len(grower.pages) == 100 and grower.seen == 1000
    assert all(len(t) <= 300 and len(x) <= 50 for t, x in grower.pages)
    assert grower.pages[0][1].startswith("900 ")  # the oldest dropped first


def test_the_users_examples_stay_on_topic_in_every_round():
    rng = random.Random(3)
    prior = build_query_model("syllabus", background_docs=["x"])
    own = [("course", page(COURSE, rng)) for _ in range(6)]
    grower = ModelGrower(prior, positives=own, first=10)
    for _ in range(30):
        grower.add("person", page(PEOPLE, rng))
    model, report = grower.grow(grower.training_set())
    assert report["examples"] == 6 and report["n_positive"] >= 6 and model is not None


# --- a real crawl that grows its model -----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.e2e
def test_a_crawl_from_words_grows_its_model_in_a_worker_thread(demo_web, demo_files, tmp_path):
    import json
    import signal

    from focuscrawl.replay import RecordedWeb, ReplayProxy

    from .conftest import run_scrapy

    signal.signal(signal.SIGINT, signal.default_int_handler)
    model = tmp_path / "q.joblib"
    result = run_scrapy(["train", "--query", "astronomy telescope star galaxy planet", "-o", str(model), "--grow"],
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with ReplayProxy(RecordedWeb.from_records(demo_web.records), robots=demo_web.robots) as proxy:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={demo_files['seeds']}", "-a", f"model={model}",
             "-s", "FOCUS_BUDGET=120", "-s", "FOCUS_GROW_FIRST=20", "-s", "DOWNLOAD_DELAY=0.02",
             "-s", "LOG_LEVEL=INFO", "-s", "STATS_DUMP=True", "-O", "items.jsonl"],
            cwd=tmp_path, env={"http_proxy": proxy.url})
    assert result.returncode == 0, result.stderr[-3000:]
    log = result.stderr
    assert "the topic model grows from the crawl's pages" in log
    assert "topic model round 1: trained on" in log, log[-3000:]
    assert "'focus/grow/rounds'" in log and "Traceback" not in log
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert items  # the crawl went on scoring and exporting with the grown model
    # written beside the model it grew from, saying so, for scrapy label and the console
    grown = TopicModel.load(tmp_path / "q.grown.joblib")
    assert grown.metadata["grown_from"] == str(model) and grown.metadata["grown"][0]["round"] == 1
    assert "scrapy label ranks its unsure pages" in log


def test_a_combined_grown_model_adds_the_priors_evidence_and_reads_links_as_the_prior():
    import math

    rng = random.Random(4)
    prior = build_query_model("syllabus homework", background_docs=["software"] * 3)
    grower = ModelGrower(prior, first=20, combine=True)
    for i in range(60):
        grower.add("course" if i % 3 == 0 else "person",
                   ("syllabus homework " + page(COURSE, rng, 20)) if i % 3 == 0 else page(PEOPLE, rng))
    model, _ = grower.grow(grower.training_set())
    doc = ("CS 302", "syllabus midterm textbook")
    alone = ModelGrower(prior, first=20)
    alone.pages = grower.pages
    grown_alone, _ = alone.grow(alone.training_set())
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    assert logit(model.score(*doc)) == pytest.approx(logit(grown_alone.score(*doc)) + logit(prior.score(*doc)), abs=1e-6)
    assert model.even_odds_score == 0.5
    links = [("Homework 1", "", "http://u/hw1.html"), ("Jane", "", "http://u/~jane/")]
    assert model.score_links(links) == prior.score_links(links)


# --- fetching on-topic pages by URL: who resolves a name ----------------------------------------

def test_a_name_is_judged_by_its_addresses_unless_a_proxy_resolves_it():
    from focuscrawl.relevance.fetch import PoliteFetcher, Refused
    from focuscrawl.safety import NetworkPolicy

    through_proxy = PoliteFetcher("ua", "bot", NetworkPolicy(), proxies={"http": "http://127.0.0.1:9", "no": "localhost"})
    through_proxy.check("http://example.com/page")  # the proxy resolves it: no lookup here
    with pytest.raises(Refused, match="private_network/loopback"):
        through_proxy.check("http://localhost/page")  # no_proxy: fetched directly, so resolved and judged
    with pytest.raises(Refused, match="private_network/loopback"):
        through_proxy.check("http://127.0.0.1/page")  # an address in a URL, always judged
    with pytest.raises(Refused, match="not an http"):
        through_proxy.check("file:///etc/passwd")
    direct = PoliteFetcher("ua", "bot", NetworkPolicy(), proxies={})
    with pytest.raises(Refused, match="localhost resolves to"):
        direct.check("http://localhost/page")
    PoliteFetcher("ua", "bot", NetworkPolicy(allow_all=True), proxies={}).check("http://localhost/page")


# --- links read from words; growing bounded, written and used for labelling -----------------------

def test_a_query_model_reads_a_links_url_words_on_a_links_scale():
    model = build_query_model("test testing debug ctest check assert", background_docs=["software"] * 3)
    ctest, prop, plain = model.score_links([
        ("[9]", "", "http://cmake.local/help/variable/CTEST_CUSTOM_ERROR_PRE_CONTEXT.html"),
        ("LABELS", "", "http://cmake.local/help/prop_test/LABELS.html"),
        ("Home", "", "http://cmake.local/help/index.html")])
    # one of the query's words in a URL's path (a word of an identifier too) is near even odds,
    # where read as a page it would be a sixth of the query
    assert plain < 0.3 < prop and ctest >= 0.5
    assert model.score("", "ctest") < ctest
    assert model.metadata["links"]["kind"] == "query"
    assert LinearScorer.for_pipeline(model.link_pipeline) is not None
    # written from the user's words, it knows no other: the crawl's learner still learns the links' words
    assert not model.learned_links
    # a link's words count once per place: a URL naming a word twice is no stronger
    once, twice = model.score_links([("", "", "http://u/ctest/a.html"), ("", "", "http://u/ctest/ctest.html")])
    assert once == pytest.approx(twice)


def test_a_round_past_its_time_limit_is_given_up():
    from focuscrawl.relevance.growing import RoundTimeout

    rng = random.Random(5)
    prior = build_query_model("syllabus homework", background_docs=["software"] * 3)
    grower = ModelGrower(prior, first=20, max_seconds=0.0)
    for i in range(40):
        grower.add("course" if i % 2 else "person", page(COURSE if i % 2 else PEOPLE, rng))
    with pytest.raises(RoundTimeout, match="limit"):
        grower.grow(grower.training_set())


def test_a_grown_model_is_written_beside_its_prior_and_labelling_judges_by_it(tmp_path):
    import os

    from focuscrawl.labelling.models import judging_model_path
    from focuscrawl.relevance.growing import grown_path

    prior_path = tmp_path / "q-course.joblib"
    build_query_model("syllabus homework", background_docs=["software"] * 3).save(prior_path)
    assert grown_path(prior_path) == tmp_path / "q-course.grown.joblib"
    assert judging_model_path(str(prior_path)) == (str(prior_path), False)  # no crawl grew it yet
    rng = random.Random(6)
    grower = ModelGrower(TopicModel.load(prior_path), first=20)
    for i in range(60):
        grower.add("course" if i % 3 == 0 else "person",
                   ("syllabus homework " + page(COURSE, rng, 20)) if i % 3 == 0 else page(PEOPLE, rng))
    model, report = grower.grow(grower.training_set())
    assert report["unsure"] >= 0 and model is not None
    model.save(grown_path(prior_path))
    assert judging_model_path(str(prior_path)) == (str(grown_path(prior_path)), True)
    loaded = TopicModel.load(grown_path(prior_path))
    assert loaded.metadata["grown"][-1]["round"] == 1 and loaded.metadata["start"] == "query"
    # its links are still read as the words' model reads them
    link = [("Homework 3", "", "http://u/cs302/homework/")]
    assert loaded.score_links(link) == pytest.approx(TopicModel.load(prior_path).score_links(link))
    # a prior made again after the crawl is newer than what grew from the old one
    os.utime(grown_path(prior_path), (1, 1))
    assert judging_model_path(str(prior_path)) == (str(prior_path), False)


def test_the_judge_takes_a_grown_model():
    from focuscrawl.relevance.judge import PageJudge

    prior = build_query_model("syllabus", background_docs=["x"])
    judge = PageJudge(prior, 0.5, None, 1.0)
    other = build_query_model("professor", background_docs=["x"])
    judge.use_model(other, 0.7)
    assert judge.model is other and judge.reward_threshold == 0.7


def test_a_crawl_whose_round_runs_past_its_limit_keeps_its_model_and_grows_no_more():
    from types import SimpleNamespace

    from scrapy.utils.test import get_crawler
    from twisted.python.failure import Failure

    from focuscrawl.relevance.growing import RoundTimeout
    from focuscrawl.relevance.growing_ext import GrowModel

    prior = build_query_model("syllabus", background_docs=["x"])
    crawler = get_crawler(settings_dict={"FOCUS_GROW_MODEL": True, "FOCUS_GROW_FIRST": 10})
    used = []
    spider = SimpleNamespace(model=prior, use_model=used.append, model_arg=None)
    grower = ModelGrower(prior, first=10)
    part = GrowModel(crawler, spider, grower)
    part._round_failed(Failure(RoundTimeout("fitting took past the round's limit of 1 s")), 1)
    assert part.stopped and crawler.stats.get_value("focus/grow/timeout") == 1
    for i in range(30):
        part.page_scored(page=SimpleNamespace(page_score=0.1, title="t", text=f"page {i}"))
    assert part.running is None and not used and grower.model is prior


# --- a few on-topic pages: the words to read on links ----------------------------------------

SITE = "manual index chapter next previous home copyright license see also".split()


def test_the_words_read_on_links_are_the_pages_and_not_their_sites():
    from focuscrawl.relevance.query import distinctive_words, page_words

    rng = random.Random(0)
    mine = [page_words(f"http://docs.test/regex/regex_{i}.html", "", page(SITE + ["regex", "match", "pattern"], rng))
            for i in range(10)]
    others = [page_words(f"http://docs.test/io/file_{i}.html", "", page(SITE + ["file", "stream"], rng))
              for i in range(40)]
    words = dict(distinctive_words(mine, others))
    assert {"regex", "match", "pattern"} <= set(words)  # "regex" also from the URLs' identifiers
    assert not set(words) & set(SITE + FILLER)  # shared, but by the sites' other pages too
    assert all(lift > 0.69 for lift in words.values())
    assert distinctive_words(mine, mine) == []  # nothing is distinctive against the pages themselves
    assert len(distinctive_words(mine, others, count=2)) == 2


def test_a_word_on_few_of_the_pages_is_not_theirs():
    from focuscrawl.relevance.query import distinctive_words

    mine = ["thread mutex"] * 4 + ["thread lock"] + ["thread"] * 5
    assert [w for w, _ in distinctive_words(mine, ["page"] * 20)] == ["thread"]


def test_a_few_pages_model_reads_links_by_their_distinctive_words(tmp_path):
    from focuscrawl.relevance.query import attach_link_reading, page_words

    rng = random.Random(1)
    examples = [Example(f"http://u.test/c/{i}", "course", page(COURSE, rng), "course") for i in range(10)]
    contrast = [page(PEOPLE, rng) for _ in range(30)]
    model, _ = train_topic_model(examples, ["course"], cv_folds=0)
    assert model.link_pipeline is None
    words = attach_link_reading(model, [page_words(e.url, e.title, e.text) for e in examples], contrast, "30 pages")
    assert words and model.link_pipeline is not None
    links = model.metadata["links"]
    assert links["kind"] == "query" and set(links["words"]) == {w for w, _ in words}
    assert links["contrast"] == {"source": "30 pages", "pages": 30, "shared_by": 0.5, "ratio": 2.0}
    assert not model.learned_links  # the crawl's learner still learns the links' other words
    model.save(tmp_path / "m.joblib")
    again = TopicModel.load(tmp_path / "m.joblib")
    named, unnamed = again.score_links([(f"{words[0][0]} {words[1][0]}", "", "http://u.test/x"),
                                        ("Jane Doe", "", "http://u.test/jd")])
    assert named > 0.5 > unnamed
    bare, _ = train_topic_model(examples, ["course"], cv_folds=0)
    assert attach_link_reading(bare, ["a b"] * 3, ["a b"] * 3, "same") == []
    assert bare.link_pipeline is None and bare.metadata["links"]["kind"] == "none"


# --- a page's own links, read as a field of the page ----------------------------------------------

COURSE_LINKS = [("Syllabus", "", "http://u/cs543/syllabus.html"), ("Homework 1", "due Friday", "http://u/cs543/hw1.html"),
                ("Lecture notes", "", "http://u/cs543/lectures/"), ("Instructor", "", "http://u/~bob/")]


def test_a_words_model_reads_the_links_a_page_names_as_a_field_of_the_page():
    model = build_query_model("course syllabus lecture homework", background_docs=["software"] * 3)
    home = model.score("CSE 543 Home Page", "Welcome. Instructor: Bob.")
    assert home < 0.1
    lifted = model.score_page("CSE 543 Home Page", "Welcome. Instructor: Bob.", COURSE_LINKS)
    assert lifted > 0.5  # three of its four links name the course's parts
    # each word once, at the page reading's weight, times the share of links naming any
    found, share = model.link_field.read(COURSE_LINKS)
    assert share == pytest.approx(0.75)
    assert set(found) == {"syllabus", "homework", "lecture", "lectures"}  # the URL's form too
    assert model.link_field.evidence(COURSE_LINKS) == pytest.approx(0.75 * sum(found.values()))
    assert [term for term, _ in model.link_field.explain(COURSE_LINKS)][0] in found
    # the text around a link is the page's own text: not read again
    assert model.link_field.read([("Jane", "the syllabus", "http://u/~jane/")]) == ({}, 0.0)
    # a menu of many links naming the words once says little: the share is small
    menu = COURSE_LINKS[:1] + [(f"page {i}", "", f"http://u/p{i}.html") for i in range(99)]
    assert model.score_page("x", "", menu) < 0.1
    # no links, or none naming the words: the page's words alone
    assert model.score_page("x", "the syllabus", []) == model.score("x", "the syllabus")
    assert model.score_page("x", "the syllabus", COURSE_LINKS[3:]) == model.score("x", "the syllabus")
    assert "page_links" in model.metadata


def test_a_page_fields_reading_survives_saving_and_a_trained_model_reads_no_links(tmp_path):
    model = build_query_model("course syllabus lecture homework", background_docs=["software"] * 3)
    model.save(tmp_path / "q.joblib")
    loaded = TopicModel.load(tmp_path / "q.joblib")
    assert loaded.score_page("CS 543", "welcome", COURSE_LINKS) == pytest.approx(
        model.score_page("CS 543", "welcome", COURSE_LINKS))
    examples = [Example(f"http://a/{i}", "course", "syllabus homework lecture", "course") for i in range(3)]
    trained, _ = train_topic_model(examples, ["course"], cv_folds=0)
    assert trained.link_field is None
    assert trained.score_page("CS 543", "welcome", COURSE_LINKS) == trained.score("CS 543", "welcome")


def test_the_judge_reads_the_pages_links_when_its_model_does():
    from types import SimpleNamespace

    from focuscrawl.relevance.judge import PageJudge, page_links

    model = build_query_model("course syllabus lecture homework", background_docs=["software"] * 3)
    parsed = SimpleNamespace(links=[SimpleNamespace(anchor=a, context=c, url=u, nofollow=False) for a, c, u in COURSE_LINKS]
                             + [SimpleNamespace(anchor="Exam", context="", url="http://u/ad", nofollow=True)])
    assert list(page_links(parsed)) == COURSE_LINKS  # lazy: nothing built for a model that does not read them
    judge, page = PageJudge(model, 0.5, None, 1.0), SimpleNamespace()
    hit, _ = judge.judge(page, "CSE 543 Home Page", "Welcome.", None, False, page_links(parsed))
    assert hit and page.relevant and page.page_score > 0.5
    hit, _ = judge.judge(page, "CSE 543 Home Page", "Welcome.", None, False)
    assert not hit and page.page_score < 0.1


def test_a_words_model_reads_a_page_as_written():
    """Its vocabulary is the query's words: read through them, a page's other words would become
    them (``undergraduate`` as ``graduate``)."""
    model = build_query_model("student graduate advisor", background_docs=["software package"] * 3)
    assert model.read_page("Undergraduate", "undergraduates welcome") == ("Undergraduate", "undergraduates welcome")
