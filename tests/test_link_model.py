"""The link model: labelled links from a recorded web, training, ranking, save/load, `scrapy train`."""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path

import joblib
import numpy as np
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from focuscrawl.relevance import ModelError, TopicModel, load_examples, train_topic_model
from focuscrawl.relevance.compounds import CompoundReader
from focuscrawl.relevance.linear import LinearScorer
from focuscrawl.learning.features import digit_shapes
from focuscrawl.relevance.links import MISSING, LinkedWeb, LinkExample, part_prior, train_link_model

COURSE_WORDS = "syllabus lecture homework exam assignment midterm grading textbook".split()
OTHER_WORDS = "research publications project funding laboratory group paper conference".split()


def _record(writer, url, status="200 OK", body=b"", headers=()):
    http = StatusAndHeaders(status, [("Content-Type", "text/html"), *headers], protocol="HTTP/1.0")
    writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))


def linked_web(path: Path, n_hubs: int = 8, seed: int = 0) -> tuple[Path, list[tuple[str, str]]]:
    """Hub pages on hosts a/b.example link to course pages (anchors like "CS 101 Intro"), to
    research pages ("Vision Group") and to pages never recorded (papers, pictures, other sites).
    Returns the WARC and its (url, label) rows."""
    rng = random.Random(seed)
    labels, n = [], 0
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for h in range(n_hubs):
            host = "a.example" if h % 2 else "b.example"
            links = []
            for _ in range(6):
                n += 1
                url = f"http://{host}/courses/cs{100 + n}.html"
                text = " ".join(rng.choice(COURSE_WORDS) for _ in range(40))
                _record(writer, url, body=f"<title>CS {100 + n}</title><p>{text}</p>".encode())
                labels.append((url, "course"))
                links.append(f"<a href='{url}'>CS {100 + n} {rng.choice(['Intro', 'Compilers', 'Networks'])}</a>")
                url = f"http://{host}/groups/{n}/index.html"
                text = " ".join(rng.choice(OTHER_WORDS) for _ in range(40))
                _record(writer, url, body=f"<title>Group {n}</title><p>{text}</p>".encode())
                labels.append((url, "other"))
                links.append(f"<a href='{url}'>{rng.choice(['Vision', 'Systems', 'Theory'])} research group</a>")
                links.append(f"<a href='http://{host}/papers/tr{n}.html'>technical report {n}</a>")
                links.append(f"<a href='http://elsewhere{n}.example/'>a friend's pictures</a>")
            hub = f"http://{host}/hub{h}.html"
            _record(writer, hub, body=("<title>Department</title><p>" + " ".join(links) + "</p>").encode())
            labels.append((hub, "other"))
        # a recorded redirect to a course page: the link through it is a course link
        _record(writer, "http://a.example/old-course", "301 Moved Permanently",
                headers=[("Location", "/courses/cs101.html")])
    return path, labels


def write_labels(path: Path, rows) -> Path:
    path.write_text("url\tlabel\n" + "".join(f"{u}\t{label}\n" for u, label in rows), encoding="utf-8")
    return path


@pytest.fixture
def recorded(tmp_path):
    warc, rows = linked_web(tmp_path / "web.warc.gz")
    return warc, write_labels(tmp_path / "labels.tsv", rows)


def test_linked_web_labels_links_by_their_targets():
    web = LinkedWeb()
    web.add_page("http://a.example/hub", [
        ("CS 1", "", "http://a.example/cs1"),            # labelled course page
        ("old", "", "http://a.example/old"),             # redirect to the course page
        ("pics", "", "http://a.example/pics.html"),      # never recorded: leads nowhere
        ("blank", "", "http://a.example/unlabelled"),    # recorded, no label: teaches nothing
        ("away", "", "http://b.example/x"),              # filtered host
    ])
    web.add_page("http://a.example/cs1", [])
    web.add_record("http://a.example/old", "http://a.example/cs1")
    web.add_record("http://a.example/unlabelled")
    labels = {"http://a.example/cs1": "course", "http://a.example/hub": "other"}
    links = web.examples(labels.get, keep_url=lambda url: "b.example" not in url)
    assert [(link.anchor, link.label) for link in links] == [("CS 1", "course"), ("old", "course"), ("pics", MISSING)]
    assert {link.source_label for link in links} == {"other"}
    assert [link.part for link in links] == [False, False, False]  # the hub is at the top of its host


def test_a_crawled_page_leaves_targets_it_never_fetched_unknown_and_failed_ones_dead():
    web = LinkedWeb()
    web.add_page("http://c.example/hub", [
        ("CS 1", "", "http://c.example/cs1"),        # fetched, labelled
        ("gone", "", "http://c.example/gone"),       # fetched: 404
        ("moved", "", "http://c.example/moved"),     # redirected to a failure
        ("later", "", "http://c.example/later"),     # never fetched: unknown, not dead
        ("blank", "", "http://c.example/blank"),     # fetched, no label
    ], source="crawl.db", crawled=True)
    web.add_page("http://c.example/cs1", [], source="crawl.db", crawled=True)
    web.add_failure("http://c.example/gone")
    web.add_record("http://c.example/moved", "http://c.example/timeout")
    web.add_failure("http://c.example/timeout")
    web.add_record("http://c.example/blank")
    web.add_page("http://c.example/hub", [("dup", "", "http://c.example/cs1")], source="again.db", crawled=True)
    links = web.examples({"http://c.example/cs1": "course"}.get)
    assert [(link.anchor, link.label) for link in links] == [("CS 1", "course"), ("gone", MISSING),
                                                             ("moved", MISSING)]
    assert web.tally == {"crawl.db": {"labelled": 1, "dead": 2, "unknown": 1, "unlabelled": 1}}  # the dup: once
    assert web.kinds["crawl.db"] == "crawl store"


def crawl_store(path: Path, rows) -> Path:
    """A crawl store of (url, final_url, status, title, links) rows, written as the crawl writes it."""
    from focuscrawl.items import PageItem
    from focuscrawl.parsing import Link
    from focuscrawl.store import CrawlStore

    with CrawlStore(path) as store:
        for url, final_url, status, title, links in rows:
            store.add_page(PageItem(url=url, final_url=final_url, status=status, title=title, text=title,
                                    links=[Link(u, anchor) for u, anchor in links]))
    return path


def test_a_crawl_store_gives_links_and_combines_with_a_warc(recorded, tmp_path):
    warc, labels = recorded
    hub_links = [(f"http://c.example/courses/c{i}.html", f"CS {i}") for i in range(12)]
    hub_links += [(f"http://c.example/groups/g{i}.html", "research group") for i in range(12)]
    hub_links += [("http://c.example/gone.html", "old course"), ("http://c.example/down.html", "lab"),
                  ("http://c.example/later.html", "never fetched")]
    rows = [("http://c.example/", "http://c.example/", 200, "Department", hub_links),
            ("http://c.example/gone.html", "http://c.example/gone.html", 404, "", []),
            ("http://c.example/down.html", "http://c.example/down.html", 0, "", [])]
    rows += [(u, u, 200, f"course {i}", [("http://c.example/", "home")]) for i, (u, _) in enumerate(hub_links[:24])]
    store = crawl_store(tmp_path / "crawl.db", rows)
    store_labels = write_labels(tmp_path / "store.tsv", [(u, "course" if "courses" in u else "other")
                                                         for u, _ in hub_links[:24]] + [("http://c.example/", "other")])
    examples = load_examples([store], labels_path=store_labels)
    got = {link.url: link.label for link in examples.links}
    assert got["http://c.example/gone.html"] == MISSING and got["http://c.example/down.html"] == MISSING
    assert "http://c.example/later.html" not in got  # never fetched: unknown, not dead
    assert sum(label == "course" for label in got.values()) == 12
    assert examples.link_sources[str(store)] == {"kind": "crawl store", "labelled": 48, "dead": 2, "unlabelled": 0,
                                                 "unknown": 1}
    # a WARC and a store together: the links of both
    both = tmp_path / "both.tsv"  # the WARC's labels, then the store's rows (without their header)
    both.write_text(Path(labels).read_text() + "".join(store_labels.read_text().splitlines(True)[1:]))
    mixed = load_examples([warc, store], labels_path=both)
    assert len(mixed.links) == len(load_examples([warc], labels_path=labels).links) + len(examples.links)
    assert [s["kind"] for s in mixed.link_sources.values()] == ["WARC", "crawl store"]
    model, report = train_topic_model(mixed, ["course"], cv_folds=0)
    assert model.link_pipeline is not None and report["links"]["part_prior"] is not None


def test_part_prior_says_how_a_found_pages_parts_pay_off_on_the_training_web():
    """WebKB's kind of web: a course page's parts (homework, syllabus) are not course pages, its
    other links often are; the demo's kind: a section's parts are on its topic too."""
    def links(part_on_topic: bool, n: int = 30) -> list[LinkExample]:
        out = []
        for i in range(n):
            out.append(LinkExample("hw", "", f"http://a.test/c{i}/hw.html", "course" if part_on_topic else MISSING,
                                   "course", True))
            out.append(LinkExample("CS", "", f"http://a.test/c{i + 100}/", "course" if i % 2 else "other",
                                   "course", False))
            out.append(LinkExample("x", "", f"http://b.test/{i}", "course", "other", False))  # not from a course page
        return out

    scores = np.full(90, 0.6)
    homework = part_prior(links(False), scores, ["course"])
    assert homework["parts"] == {"links": 30, "on_topic": 0} and homework["others"] == {"links": 30, "on_topic": 15}
    assert homework["weight"] == pytest.approx(-0.2 - 0.5)  # waste against half on topic
    sections = part_prior(links(True), scores, ["course"])
    assert sections["weight"] == pytest.approx(1.0 - 0.5)
    assert part_prior(links(True), np.full(90, 0.2), ["course"])["weight"] is None  # links rated too low
    assert part_prior(links(True, n=5), np.full(15, 0.6), ["course"])["weight"] is None  # too few


def test_warc_examples_carry_their_links_and_host_filters_apply(recorded):
    warc, labels = recorded
    examples = load_examples([warc], labels_path=labels)
    kinds = {link.label for link in examples.links}
    assert kinds == {"course", "other", MISSING}
    assert sum(link.label == "course" for link in examples.links) == 48
    assert any(link.url.endswith("/courses/cs101.html") for link in examples.links)
    only_a = load_examples([warc], labels_path=labels, include_host=r"^a\.")
    # links from b.example pages and links to other hosts are left out
    assert only_a.links and all("a.example/" in link.url for link in only_a.links)
    assert len(only_a.links) < len(examples.links)
    # without links, only the labelled pages are read, and the examples are the same
    plain = load_examples([warc], labels_path=labels, links=False)
    assert plain.links == [] and [e.url for e in plain] == [e.url for e in examples]


def test_link_model_ranks_links_to_the_topic_first(recorded):
    warc, labels = recorded
    examples = load_examples([warc], labels_path=labels)
    model, report = train_topic_model(examples, ["course"], cv_folds=3)
    links = report["links"]
    assert links["n_positive"] == 48 and links["n_missing"] == 96
    assert links["cv"]["average_precision"] > 0.9 > links["cv"]["base_rate"] * 3
    course, group, dead = model.score_links([
        ("CS 999 Databases", "", "http://c.example/courses/cs999.html"),
        ("Graphics research group", "", "http://c.example/groups/77/index.html"),
        ("technical report 12", "", "http://c.example/papers/tr12.html"),
    ])
    assert course > 0.5 > max(group, dead)


def test_numbers_in_anchors_and_paths_are_read_by_their_shape():
    """Words drop digits, so "Course 377" and "Course calendar" read alike; the shapes of numbers
    ("###", "a###", "##a") tell a course number or a term from a word, for numbers never seen."""
    assert digit_shapes("CSE 451: cs302.html, 96w/ and 1996") == ["###", "a###", "##a", "####"]
    assert digit_shapes("no numbers here") == []
    rng = random.Random(1)
    links = []
    for i in range(40):
        number = rng.randrange(100, 600)
        links.append(LinkExample(f"Course {number}", "", f"http://u.example/courses/{number}/", "course"))
        word = rng.choice(["policies", "staff", "news", "handbook", "forms", "rooms"])
        links.append(LinkExample(f"Course {word}", "", f"http://u.example/courses/{word}/", "other"))
    pipeline, _ = train_link_model(links, ["course"], cv_folds=0)
    numbered, worded = pipeline.predict_proba([("Course 777", "", "http://v.example/classes/777/"),
                                               ("Course calendar", "", "http://v.example/classes/calendar/")])[:, 1]
    assert numbered > 0.5 > worded


def test_too_few_positive_links_train_no_link_model():
    links = [LinkExample("a", "", f"http://x.example/{i}", "course" if i < 3 else "other") for i in range(40)]
    pipeline, report = train_link_model(links, ["course"])
    assert pipeline is None and "3 links to positive pages" in report["skipped"]


def test_link_model_survives_save_and_load_and_falls_back_without_it(recorded, tmp_path):
    warc, labels = recorded
    model, _ = train_topic_model(load_examples([warc], labels_path=labels), ["course"], cv_folds=0)
    model.save(tmp_path / "m.joblib")
    loaded = TopicModel.load(tmp_path / "m.joblib")
    link = [("CS 5 Compilers", "", "http://a.example/courses/cs5.html")]
    assert loaded.link_pipeline is not None and loaded.score_links(link) == model.score_links(link)
    # without a link model the topic model reads the link's words, compounds as their known parts
    plain = TopicModel(model.pipeline, model.metadata)
    read = CompoundReader.for_pipeline(model.pipeline)
    assert plain.score_links(link) == plain.score_many([(read("CS 5 Compilers"), " " + read("courses cs5 html"))])
    assert plain.score_links([]) == []


def test_a_damaged_link_model_is_a_clear_error(recorded, tmp_path):
    warc, labels = recorded
    model, _ = train_topic_model(load_examples([warc], labels_path=labels), ["course"], cv_folds=0)
    model.save(tmp_path / "m.joblib")
    payload = joblib.load(tmp_path / "m.joblib")
    payload["link_pipeline"] = "not a pipeline"
    joblib.dump(payload, tmp_path / "bad.joblib")
    with pytest.raises(ModelError, match="link model"):
        TopicModel.load(tmp_path / "bad.joblib")


@pytest.mark.slow
def test_train_command_reports_the_link_model(recorded, tmp_path):
    warc, labels = recorded
    base = [sys.executable, "-m", "focuscrawl", "train", str(warc), "--labels", str(labels), "--positive", "course",
            "--cv-folds", "3"]
    result = subprocess.run([*base, "-o", "m.joblib"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert ("link model: 192 labelled links, 48 to positive pages, 96 to dead URLs (never recorded, or failed "
            "when crawled)") in result.stdout
    assert f"from {warc} (WARC): 192 links, 96 of them dead; skipped" in result.stdout
    assert "average precision" in result.stdout
    assert "a found page's parts: the learner starts at none (too few links)" in result.stdout
    model = TopicModel.load(tmp_path / "m.joblib")
    assert model.link_pipeline is not None and model.learner_priors == {}
    model.metadata["links"]["part_prior"]["weight"] = -0.3
    assert model.learner_priors == {"part_of_hit": -0.3}
    result = subprocess.run([*base, "-o", "n.joblib", "--no-link-model"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "link model: none" in result.stdout
    assert TopicModel.load(tmp_path / "n.joblib").link_pipeline is None


def test_the_fast_scorer_computes_the_link_models_probabilities_exactly(recorded):
    warc, labels = recorded
    examples = load_examples([warc], labels_path=labels)
    model, _ = train_topic_model(examples, ["course"], cv_folds=0)
    docs = [link.document for link in examples.links] + [("", "", "http://new.example/"), ("?", "!", "http://x/?a")]
    expected = model.link_pipeline.predict_proba(docs)[:, 1]
    assert np.array_equal(LinearScorer.for_pipeline(model.link_pipeline)._proba(docs), expected)
    assert model.score_links(docs) == expected.tolist()
    assert [model.score_links([doc])[0] for doc in docs[:20]] == expected[:20].tolist()  # a page's links alone
