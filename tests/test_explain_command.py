"""`scrapy explain` as a user runs it: a real `python -m scrapy` process over a crawl store and over
the JOBDIR frontier checkpoint of a real (tiny) crawl."""

from __future__ import annotations

import json
import math
import pickle
import shutil

import pytest

from focuscrawl.items import PageItem
from focuscrawl.learning import link_context, link_features
from focuscrawl.meta import LINK
from focuscrawl.replay import RecordedWeb, ReplayProxy
from focuscrawl.request_codec import packed_rows
from focuscrawl.store import CrawlStore
from focuscrawl.urls import canonicalize

from .conftest import run_scrapy

pytestmark = pytest.mark.slow  # a scrapy explain process a case

WHY = [["parent_score", 0.4512], ["host_yield", 0.2101], ["u:telescope", 0.1003], ["exploration", 0.05]]


def explain(cwd, *args):
    return run_scrapy(["explain", *args], cwd=cwd, timeout=120)


def json_lines(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def checkpoint_rows(state) -> list[tuple]:
    """Every (host, priority, request dict, features) row of a checkpoint, its packed records too."""
    return state["entries"] + list(packed_rows(state.get("packed", ())))


# --- over a crawl store ---------------------------------------------------------------------------
@pytest.fixture
def store(tmp_path):
    path = tmp_path / "crawl.db"
    with CrawlStore(path) as db:
        db.add_page(PageItem(
            url="http://a.test/guide?b=2&a=1", final_url="http://a.test/guide?b=2&a=1", status=200,
            title="A guide", score=0.9132, page_score=0.8, link_score=0.7245, relevant=True, fetched_at="2026-01-02T03:04:05+00:00", depth=2,
            referrer="http://a.test/", extra={"priority": 1.2345, "why": WHY},
        ))
        db.add_page(PageItem(
            url="http://a.test/old", final_url="http://b.test/new", status=200, score=0.12, relevant=False,
            fetched_at="2026-01-02T03:05:00+00:00", depth=1, referrer="http://a.test/",
            extra={"priority": 0.31, "why": [["host_unseen", 0.2], ["bias", 0.1]]},
        ))
        db.add_page(PageItem(url="http://a.test/", final_url="http://a.test/", status=200, score=0.5, relevant=True,
                             fetched_at="2026-01-02T03:00:00+00:00"))  # a seed fetched before explanations existed
    return path


def test_fetched_url_shows_when_status_score_priority_why_depth_referrer(store, tmp_path):
    result = explain(tmp_path, "http://a.test/guide?b=2&a=1", "--store", str(store))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "fetched 2026-01-02T03:04:05+00:00" in out
    assert "status 200, score 0.9132 (page 0.8000, link 0.7245), relevant" in out
    assert "priority at dequeue 1.2345" in out
    assert "why: parent_score +0.4512, host_yield +0.2101, u:telescope +0.1003" in out
    assert "exploration" not in out  # --top defaults to 3
    assert "depth 2, referrer http://a.test/" in out
    assert "Traceback" not in result.stderr


def test_store_found_by_final_url_and_canonical_spelling_as_json(store, tmp_path):
    # ./crawl.db is the default store; the query string is reordered and carries a tracking parameter
    result = explain(tmp_path, "http://a.test/guide?a=1&b=2&utm_source=x", "http://b.test/new", "--json",
                     "--top", "4")
    assert result.returncode == 0, result.stderr
    guide, moved = json_lines(result)
    assert guide["found"] and guide["frontier"] is None
    (page,) = guide["fetched"]
    assert page["url"] == "http://a.test/guide?b=2&a=1"
    assert page["priority"] == 1.2345 and page["why"] == WHY and page["score"] == 0.9132 and page["relevant"]
    assert (page["page_score"], page["link_score"]) == (0.8, 0.7245)
    (page,) = moved["fetched"]
    assert page["url"] == "http://a.test/old" and page["final_url"] == "http://b.test/new"
    assert page["relevant"] is False and page["priority"] == 0.31


def test_page_without_a_recorded_explanation_says_so(store, tmp_path):
    result = explain(tmp_path, "http://a.test/", "--store", str(store))
    assert result.returncode == 0, result.stderr
    assert "priority at dequeue (not recorded); why: (not recorded)" in result.stdout
    assert "referrer (seed)" in result.stdout


def test_a_fetched_page_says_which_words_made_its_score(tmp_path):
    from focuscrawl.relevance.query import build_query_model

    model_path = tmp_path / "q.joblib"
    build_query_model("course syllabus homework", background_docs=["software"] * 3).save(model_path)
    path = tmp_path / "crawl.db"
    with CrawlStore(path) as db:
        db.begin_crawl(model=str(model_path))
        db.add_page(PageItem(url="http://a.test/cs302", final_url="http://a.test/cs302", status=200, title="CS 302",
                             text="The syllabus, then homework every week.", score=0.7, relevant=True))
    result = explain(tmp_path, "http://a.test/cs302", "--store", str(path))
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if "page words" in line)
    assert "syllabus +" in line and "homework +" in line and "course" not in line.split(";")[0]
    assert str(model_path) in line and "FOCUS_GROW_MODEL" in line
    (answer,) = json_lines(explain(tmp_path, "http://a.test/cs302", "--store", str(path), "--json"))
    assert {term for term, _ in answer["fetched"][0]["words"]} == {"syllabus", "homework"}
    assert "made from the words 'course syllabus homework'" in line
    # a crawl that grew the model: its words are explained by what it grew into
    grown = build_query_model("syllabus homework", background_docs=["software"] * 3)
    grown.metadata["grown"] = [{"round": 1}, {"round": 2}]
    grown.save(tmp_path / "q.grown.joblib")
    result = explain(tmp_path, "http://a.test/cs302", "--store", str(path))
    line = next(line for line in result.stdout.splitlines() if "page words" in line)
    assert "q.grown.joblib" in line and "grown by the crawl from its pages in 2 round(s)" in line
    (tmp_path / "q.grown.joblib").unlink()
    model_path.unlink()  # a model that is gone: the page is explained all the same, its words are not
    result = explain(tmp_path, "http://a.test/cs302", "--store", str(path))
    assert result.returncode == 0 and "page words not explained: model file not found" in result.stdout


def test_unknown_url_is_one_line_and_exit_code_1(store, tmp_path):
    result = explain(tmp_path, "http://a.test/guide?b=2&a=1", "http://nowhere.test/page", "--store", str(store))
    assert result.returncode == 1
    assert result.stderr == ""
    missing = [line for line in result.stdout.splitlines() if "nowhere.test" in line]
    assert missing == [f"http://nowhere.test/page: not found (in neither the crawl store {store})"]
    assert "priority at dequeue 1.2345" in result.stdout  # the known URL is still explained
    result = explain(tmp_path, "http://nowhere.test/page", "--store", str(store), "--json")
    assert result.returncode == 1
    assert json_lines(result) == [{"url": "http://nowhere.test/page", "found": False, "fetched": [], "frontier": None}]


@pytest.mark.parametrize("content", [b"", b"this is not sqlite at all" * 100])
def test_missing_or_corrupt_store_is_one_error_line(tmp_path, content):
    path = tmp_path / "bad.db"
    if content:
        path.write_bytes(content)
    result = explain(tmp_path, "http://a.test/", "--store", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("error: "), result.stderr


def test_bad_usage_is_one_error_line(store, tmp_path):
    for args in (["--store", str(store)], ["http://a.test/", "--store", str(store), "--top", "0"],
                 ["http://a.test/", "--jobdir", str(tmp_path / "no-such-dir")]):
        result = explain(tmp_path, *args)
        assert result.returncode == 2, args
        assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("error: "), result.stderr


# --- over a real crawl's JOBDIR ------------------------------------------------------------------
@pytest.fixture(scope="module")
def job(demo_web, demo_files, demo_model, tmp_path_factory):
    """A tiny real crawl with JOBDIR, checkpointing at every dequeue and at close."""
    out = tmp_path_factory.mktemp("explain-crawl")
    seeds = demo_files["seeds"]
    jobdir = out / "job"
    with ReplayProxy(RecordedWeb.from_records(demo_web.records), robots=demo_web.robots) as proxy:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={demo_model}", "-s", f"JOBDIR={jobdir}",
             "-s", "FOCUS_BUDGET=30", "-s", "FOCUS_CHECKPOINT_SECONDS=0", "-s", "DOWNLOAD_DELAY=0.05",
             "-s", "LOG_LEVEL=INFO"],
            cwd=out, env={"http_proxy": proxy.url},
        )
    assert result.returncode == 0, result.stderr[-3000:]
    with open(jobdir / "focus-frontier.pickle", "rb") as handle:
        state = pickle.load(handle)
    return {"out": out, "jobdir": jobdir, "state": state}


@pytest.mark.e2e
def test_frontier_url_is_re_explained_by_the_checkpointed_learner(job):
    state = job["state"]
    learner = state["learner"]
    waiting = [e for e in checkpoint_rows(state) if not math.isinf(e[1]) and e[3] is not None]
    assert len(waiting) > 5
    host, priority, request_dict, features = waiting[len(waiting) // 2]
    url = request_dict["url"]
    result = explain(job["out"], url, "--jobdir", str(job["jobdir"]), "--json", "--top", "4")
    assert result.returncode == 0, result.stderr
    (answer,) = json_lines(result)
    entry = answer["frontier"]
    assert answer["found"] and answer["fetched"] == []  # waiting: not in the store
    parent = canonicalize(request_dict["meta"][LINK]["parent_url"])
    canonical = canonicalize(url)
    assert entry["priority_stored"] == pytest.approx(priority, abs=1e-4)
    assert entry["priority_now"] == pytest.approx(learner.score(features, canonical, parent), abs=1e-4)
    # the frontier stores hashed vectors; names for the explanation come from the link's context
    named = link_features(link_context(canonical, request_dict["meta"]))
    assert entry["priority_now"] == pytest.approx(learner.score(named, canonical, parent), abs=1e-4)
    assert entry["why_now"] == [list(p) for p in learner.explain(named, canonical, parent, top=4)]
    assert len(entry["why_now"]) == 4
    finite = [e[1] for e in checkpoint_rows(state) if not math.isinf(e[1])]
    assert entry["rank"] == sum(1 for p in finite if p > priority)
    assert entry["frontier_size"] == len(finite)
    stats = learner.hosts.get(host)
    expected = {"fetched": stats.fetched, "relevant": stats.relevant, "wasted": stats.wasted} if stats else None
    assert entry["host"] == host and entry["host_stats"] == expected
    assert entry["parent"] == request_dict["meta"][LINK]["parent_url"]


@pytest.mark.e2e
def test_frontier_url_as_text_with_s_jobdir(job):
    entries = sorted((e for e in checkpoint_rows(job["state"]) if not math.isinf(e[1])), key=lambda e: -e[1])
    best_host, best_priority, request_dict, _ = entries[0]
    result = explain(job["out"], request_dict["url"], "-s", f"JOBDIR={job['jobdir']}")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{request_dict['url']}: waiting in the frontier (checkpoint ")
    assert f"priority stored {best_priority:.4f}, now " in lines[1]
    assert f"rank 1 of {len(entries)} waiting (0 with a higher priority)" in lines[1]
    assert lines[2].startswith("  why now (learned): ") and len(lines[2].split(", ")) == 3
    assert lines[3].startswith(f"  host {best_host}: ")
    assert lines[4].startswith("  depth ")


@pytest.mark.e2e
def test_fetched_url_of_the_crawl_is_explained_from_jobdir_store(job):
    with CrawlStore(job["jobdir"] / "crawl.db", create=False) as db:
        pages = [p for p in db.iter_pages() if p["extra"].get("why") and p["depth"] > 0]
    assert pages
    page = pages[-1]
    result = explain(job["out"], page["url"], "--jobdir", str(job["jobdir"]), "--json")
    assert result.returncode == 0, result.stderr
    (answer,) = json_lines(result)
    (fetched,) = answer["fetched"]
    assert fetched["priority"] == page["extra"]["priority"]
    assert fetched["why"] == page["extra"]["why"][:3] and fetched["why"]
    assert fetched["fetched_at"] == page["fetched_at"] and fetched["referrer"] == page["referrer"]
    result = explain(job["out"], "http://unknown.test/", "--jobdir", str(job["jobdir"]))
    assert result.returncode == 1 and result.stderr == ""
    assert result.stdout.strip() == (f"http://unknown.test/: not found (in neither the crawl store "
                                     f"{job['jobdir'] / 'crawl.db'} nor the frontier checkpoint "
                                     f"{job['jobdir'] / 'focus-frontier.pickle'})")


@pytest.mark.e2e
@pytest.mark.parametrize("damage", ["truncated", "garbage", "foreign"])
def test_corrupt_checkpoint_is_one_error_line(job, tmp_path, damage):
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    shutil.copy(job["jobdir"] / "crawl.db", jobdir / "crawl.db")
    checkpoint = jobdir / "focus-frontier.pickle"
    original = (job["jobdir"] / "focus-frontier.pickle").read_bytes()
    if damage == "truncated":
        checkpoint.write_bytes(original[: len(original) // 2])
    elif damage == "garbage":
        checkpoint.write_bytes(b"\x00not a pickle\xff" * 50)
    else:
        checkpoint.write_bytes(pickle.dumps({"entries": "nope"}))
    url = checkpoint_rows(job["state"])[0][2]["url"]
    result = explain(tmp_path, url, "--jobdir", str(jobdir))
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"error: {checkpoint}"), result.stderr


def test_url_queued_after_the_checkpoint_is_found_in_the_journal(tmp_path):
    """A crawl killed between checkpoints: the journal knows what the snapshot does not."""
    from focuscrawl.frontier import SeenSet
    from focuscrawl.jobdir import JobDir
    from focuscrawl.learning import LinkRewardLearner

    job = JobDir(str(tmp_path / "job"))
    state = {"entries": [], "seen": SeenSet(), "learner": LinkRewardLearner(), "released": 3, "timing": {},
             "host_admitted": {}, "robots": {}}
    job.save(state)
    meta = {"depth": 2, LINK: {"anchor": "comet atlas", "parent_url": "http://a.test/", "parent_score": 0.9}}
    job.append(("enq", {"url": "http://a.test/comets.html", "meta": meta}))
    job.append(("enq", {"url": "http://a.test/done.html", "meta": meta}))
    job.append(("done", "http://a.test/done.html"))
    job.close()
    result = explain(tmp_path, "http://a.test/comets.html", "http://a.test/done.html", "--jobdir",
                     str(tmp_path / "job"), "--json")
    answers = {a["url"]: a for a in json_lines(result)}
    queued = answers["http://a.test/comets.html"]["frontier"]
    assert queued is not None and queued["anchor"] == "comet atlas" and queued["priority_now"] is not None
    assert answers["http://a.test/done.html"]["found"] is False  # fetched since the checkpoint: not waiting


def test_the_model_note_says_a_model_was_calibrated_for_unlabelled_pages(tmp_path):
    from focuscrawl.commands.explain import _crawl_model
    from focuscrawl.relevance.query import build_query_model

    model = build_query_model("course syllabus", background_docs=["software"] * 3)
    model.metadata.update(start="pages", n_positive=10,
                          off_topic={"kind": "background", "unlabelled": {"pages": 200, "c": 0.00172}})
    model.save(tmp_path / "ten.joblib")

    class Store:
        def crawl_model(self):
            return str(tmp_path / "ten.joblib"), 1

    _, note = _crawl_model(Store())
    assert "made from 10 on-topic page(s) against the background corpus and 200 unlabelled page(s) of their " \
           "sites, calibrated by c = 0.00172" in note


def test_a_page_judged_by_its_links_too_says_which_words_they_named(tmp_path):
    from focuscrawl.parsing.html import Link
    from focuscrawl.relevance.query import build_query_model

    model_path = tmp_path / "q.joblib"
    build_query_model("course syllabus homework", background_docs=["software"] * 3).save(model_path)
    path = tmp_path / "crawl.db"
    links = [Link(url="http://a.test/cs302/syllabus.html", anchor="Syllabus", context=""),
             Link(url="http://a.test/cs302/hw/", anchor="Homework", context=""),
             Link(url="http://a.test/~bob/", anchor="Bob", context="")]
    with CrawlStore(path) as db:
        db.begin_crawl(model=str(model_path))
        db.add_page(PageItem(url="http://a.test/cs302", final_url="http://a.test/cs302", status=200, title="CS 302",
                             text="Welcome.", score=0.6, relevant=True, links=links))
        assert db.links_of("http://a.test/cs302")[0] == ("Syllabus", "", "http://a.test/cs302/syllabus.html")
        assert db.links_of("http://a.test/elsewhere") == []
    result = explain(tmp_path, "http://a.test/cs302", "--store", str(path))
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if "words its links name" in line)
    assert "syllabus +" in line and "homework +" in line
    (answer,) = json_lines(explain(tmp_path, "http://a.test/cs302", "--store", str(path), "--json"))
    assert {term for term, _ in answer["fetched"][0]["link_words"]} == {"syllabus", "homework"}
