"""``scrapy label`` and ``scrapy export --labels`` as a person runs them: real ``python -m scrapy``
processes on a small crawl store, answers fed on standard input or typed as single keys on a
pseudo-terminal."""

from __future__ import annotations

import csv
import os
import pty
import random
import re
import select
import signal
import subprocess
import sys
import termios
import time
from datetime import datetime, timedelta, timezone

import pytest

from focuscrawl.items import PageItem
from focuscrawl.labelling.queue import LabelQueue
from focuscrawl.relevance import Example, TopicModel, train_topic_model
from focuscrawl.relevance.examples import read_labels
from focuscrawl.store import CrawlStore

pytestmark = pytest.mark.slow  # a scrapy label process a case

COURSE = "syllabus lecture homework exam assignment midterm grading textbook".split()
RESEARCH = "research publications project funding laboratory group paper conference".split()
PAGES = 12
MODEL = "models/course.joblib"  # as the crawl recorded it: relative to where it ran


def words(rng: random.Random, topic: list[str], other: list[str], mix: float, n: int) -> str:
    return " ".join(rng.choice(other) if rng.random() < mix else rng.choice(topic + ["the", "page"]) for _ in range(n))


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    rng = random.Random(0)
    examples = [Example(f"http://train.test/{label}/{i}", f"{label} {i}", words(rng, topic, [], 0.0, 60), label)
                for label, topic in (("course", COURSE), ("research", RESEARCH)) for i in range(10)]
    model, _ = train_topic_model(examples, ["course"], cv_folds=2, link_model=False)
    path = tmp_path_factory.mktemp("model") / "course.joblib"
    model.save(path)
    return path


@pytest.fixture
def project(tmp_path, model_file):
    """A focuscrawl project folder holding a crawl store of one crawl made with models/course.joblib:
    pages of three hosts mixing both topics' words (the model is unsure of them), each page's text
    long enough that its extract stops before its last word, ``endmark<i>``."""
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = focuscrawl.settings\n")
    (tmp_path / "models").mkdir()
    (tmp_path / MODEL).write_bytes(model_file.read_bytes())
    rng = random.Random(1)
    with CrawlStore(tmp_path / "crawl.db") as store:
        store.begin_crawl(model=MODEL)
        for i in range(PAGES):
            url = f"http://h{i % 3}.test/s{i % 2}/page{i}.html"
            topic, other = (COURSE, RESEARCH) if i % 2 else (RESEARCH, COURSE)
            store.add_page(PageItem(url=url, final_url=url, status=200, title=f"Page {i}",
                                    text=words(rng, topic, other, 0.35, 120) + f" endmark{i}", score=0.5,
                                    fetched_at="2026-01-02T03:04:05+00:00", content_hash=f"{i:040x}"))
    return tmp_path


def scrapy(cwd, *args, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=cwd, env=environ, input=stdin,
                          capture_output=True, text=True, timeout=120)


def shown(stdout: str) -> list[str]:
    """The URLs of the pages shown, in order."""
    return re.findall(r"^(http://\S+)$", stdout, re.MULTILINE)


def labels_in(path, history: bool = False) -> list[dict]:
    with CrawlStore(path, create=False) as store:
        return store.labels(history=history)


def assert_one_error(result: subprocess.CompletedProcess, fragment: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert result.stderr.startswith("error: ") and fragment in result.stderr, result.stderr


# --- labelling from standard input ------------------------------------------------------------

def test_answers_reach_the_store_with_who_and_when(project):
    before = datetime.now(timezone.utc) - timedelta(seconds=2)
    result = scrapy(project, "label", "--who", "alice", stdin="o\nf\nskip\non-topic\n")
    assert result.returncode == 0, result.stderr
    urls = shown(result.stdout)
    assert len(urls) == 5  # four answered, the fifth shown when the empty answer (end of input) came
    given = labels_in(project / "crawl.db")
    assert [(g["url"], g["label"]) for g in given] == list(zip(urls, ["on-topic", "off-topic", "skip", "on-topic"]))
    assert {g["who"] for g in given} == {"alice"} and {g["crawl"] for g in given} == {1}
    for g in given:
        assert before <= datetime.fromisoformat(g["at"]) <= datetime.now(timezone.utc)
    assert result.stdout.strip().splitlines()[-1] == (
        "4 labels this session (2 on-topic, 1 off-topic, 1 skip); the store holds 2 on-topic, 1 off-topic, 1 skip")


def test_each_page_shows_title_url_score_why_and_extract_and_v_shows_the_whole_text(project):
    result = scrapy(project, "label", stdin="v\no\n")
    assert result.returncode == 0, result.stderr
    first = shown(result.stdout)[0]
    number = int(first.rsplit("page", 1)[1].split(".")[0])
    block = result.stdout.split(first, 1)[1]
    assert result.stdout.split(first, 1)[0].rstrip().endswith(f"Page {number}")
    assert re.search(r"^score 0\.\d\d · crawl 1 · the model ", block, re.MULTILINE)
    text = CrawlStore(project / "crawl.db", create=False).get_page(first)["text"]
    assert " ".join(text.split()[:5]) in block  # the extract: the start of the main text
    assert result.stdout.count(f"endmark{number}") == 1  # not in the extract; once, from the pager
    assert labels_in(project / "crawl.db")[0]["url"] == first


def test_who_defaults_to_the_login_name_and_the_model_to_the_crawls(project):
    result = scrapy(project, "label", stdin="o\n", env={"LOGNAME": "carol", "USER": "carol"})
    assert result.returncode == 0, result.stderr
    assert f"by the model {MODEL}" in result.stdout.splitlines()[0]
    assert [g["who"] for g in labels_in(project / "crawl.db")] == ["carol"]


def test_skip_keeps_the_page_out_of_the_next_queue(project, model_file):
    first = scrapy(project, "label", stdin="s\n")
    skipped = shown(first.stdout)[0]
    second = scrapy(project, "label", "--batch", "4", stdin="s\n" * PAGES)
    assert second.returncode == 0, second.stderr
    assert "nothing left to label" in second.stdout
    urls = shown(second.stdout)
    assert skipped not in urls and len(urls) == len(set(urls)) == PAGES - 1  # every other page, once
    with CrawlStore(project / "crawl.db", create=False) as store:
        assert LabelQueue(store, TopicModel.load(model_file)).next(n=100) == []


def test_quitting_or_being_killed_midway_keeps_what_was_labelled(project):
    result = scrapy(project, "label", stdin="o\nq\nf\n")
    assert result.returncode == 0, result.stderr
    assert [g["label"] for g in labels_in(project / "crawl.db")] == ["on-topic"]
    assert result.stdout.strip().splitlines()[-1].startswith("1 label this session (1 on-topic, 0 off-topic")

    environ = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    process = subprocess.Popen([sys.executable, "-m", "scrapy", "label"], cwd=project, env=environ,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        process.stdin.write("f\n")
        process.stdin.flush()
        while "→ off-topic" not in (line := process.stdout.readline()):
            assert line, "the command ended before it labelled"
        process.kill()  # SIGKILL: no clean-up runs
    finally:
        process.wait(timeout=30)
    assert [g["label"] for g in labels_in(project / "crawl.db")] == ["on-topic", "off-topic"]


def test_undo_takes_the_last_label_back_and_shows_the_page_again(project):
    result = scrapy(project, "label", stdin="o\nu\nf\ns\nu\nu\nu\n")
    assert result.returncode == 0, result.stderr
    urls = shown(result.stdout)
    a, b, c = urls[0], urls[1], urls[4]
    # A o, B u -> A again, f, B s, C u -> B again, u -> A again (its off-topic undone), u: nothing left
    assert urls == [a, b, a, b, c, b, a] and len({a, b, c}) == 3
    assert "nothing to undo in this session" in result.stdout
    assert labels_in(project / "crawl.db", history=True) == []  # a mistaken key leaves no judgement
    assert result.stdout.strip().splitlines()[-1].startswith("0 labels this session")

    again = scrapy(project, "label", stdin="o\n")
    assert shown(again.stdout)[0] == a  # back in the queue, at its place


def test_undo_leaves_an_earlier_label_and_a_later_one_alone(project):
    url = "http://h0.test/s0/page0.html"
    with CrawlStore(project / "crawl.db", create=False) as store:
        earlier = store.add_label(url, "off-topic", who="bob")
        mine = store.add_label(url, "on-topic", who="alice")
        assert store.remove_label(mine) is True
        assert store.label_of(url) == "off-topic" and store.labels(history=True) == [earlier]
        mine = store.add_label(url, "on-topic", who="alice")
        later = store.add_label(url, "skip", who="carol")  # another labeller, meanwhile
        assert store.remove_label(mine) is False
        assert store.labels(history=True) == [earlier, mine, later]


@pytest.mark.parametrize(
    "setup, args, message",
    [
        (None, ["--store", "none.db"], "no crawl store at none.db"),
        ("garbage", ["--store", "notes.txt"], "notes.txt is not a usable focuscrawl crawl store"),
        (None, ["--model", "models/missing.joblib"], "model file not found: models/missing.joblib"),
        ("corrupt-model", [], "is not a readable focuscrawl model"),
        ("no-model", [], "names a topic model: give one with --model PATH"),
        (None, ["--crawl", "7"], "holds no crawl 7 (its crawls: 1)"),
    ],
    ids=["no-store", "not-a-store", "missing-model", "corrupt-model", "crawl-without-model", "unknown-crawl"],
)
def test_a_bad_store_or_model_is_one_line(project, setup, args, message):
    if setup == "garbage":
        (project / "notes.txt").write_text("shopping list\n" * 100)
    elif setup == "corrupt-model":
        (project / MODEL).write_bytes(b"not a model" * 100)
    elif setup == "no-model":
        (project / "crawl.db").unlink()
        with CrawlStore(project / "crawl.db") as store:
            store.add_page(PageItem(url="http://a.test/", final_url="http://a.test/", status=200, text="words"))
    result = scrapy(project, "label", *args, stdin="o\n")
    assert_one_error(result, message)
    assert result.stdout == ""


# --- on a terminal: single keys ---------------------------------------------------------------

def read_until(fd: int, wanted: str, seen: bytearray, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while wanted.encode() not in seen:
        assert time.monotonic() < deadline, f"no {wanted!r} in {seen.decode(errors='replace')[-600:]!r}"
        if select.select([fd], [], [], 0.2)[0]:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the command ended and closed the terminal
                chunk = b""
            assert chunk, f"the command ended before {wanted!r}: {seen.decode(errors='replace')[-600:]!r}"
            seen += chunk


def run_on_a_terminal(project, keys: list[tuple[bytes, str]], env: dict) -> tuple[str, int, list]:
    """Run ``scrapy label`` on a pseudo-terminal, send each key once the text before it is shown;
    (everything the terminal showed, the exit status, the terminal's modes after the exit)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    environ.update(env, TERM="dumb", COLUMNS="100")
    pid, fd = pty.fork()
    if pid == 0:  # the child: the pseudo-terminal is its controlling terminal
        os.chdir(project)
        os.execve(sys.executable, [sys.executable, "-m", "scrapy", "label", "--who", "tty"], environ)
    seen = bytearray()
    try:
        for key, before in keys:
            read_until(fd, before, seen)
            os.write(fd, key)
        read_until(fd, " this session (", seen)
        _, status = os.waitpid(pid, 0)
        modes = termios.tcgetattr(fd)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(fd)
    return seen.decode(errors="replace"), status, modes


def test_single_keys_on_a_terminal_label_without_enter_and_the_terminal_is_restored(project):
    pager_saw = project / "pager-terminal.txt"
    output, status, modes = run_on_a_terminal(project, [
        (b"v", "q quit"),
        (b"o", "endmark"),  # the pager showed the whole text
        (b"f", "→ on-topic"),
        (b"q", "→ off-topic"),
    ], env={"PAGER": f"stty -a </dev/tty >{pager_saw}; cat", "MANPAGER": ""})
    assert os.waitstatus_to_exitcode(status) == 0, output
    urls = list(dict.fromkeys(re.findall(r"http://h\d\.test/s\d/page\d+\.html", output)))  # plain or in rich's panels
    given = labels_in(project / "crawl.db")
    assert [(g["url"], g["label"], g["who"]) for g in given] == [(urls[0], "on-topic", "tty"),
                                                                  (urls[1], "off-topic", "tty")]
    assert "2 labels this session (1 on-topic, 1 off-topic, 0 skip)" in output
    # line editing and echo were back while the pager ran, and after the command
    assert re.search(r"(?<!-)icanon", pager_saw.read_text()) and re.search(r"(?<![-\w])echo ", pager_saw.read_text())
    assert modes[3] & termios.ICANON and modes[3] & termios.ECHO


def test_ctrl_c_on_a_terminal_ends_the_session_keeping_its_labels(project):
    output, status, modes = run_on_a_terminal(project, [(b"s", "q quit"), (b"\x03", "→ skip")], env={})
    assert os.waitstatus_to_exitcode(status) == 0, output
    assert "Traceback" not in output
    assert [g["label"] for g in labels_in(project / "crawl.db")] == ["skip"]
    assert modes[3] & termios.ICANON and modes[3] & termios.ECHO


# --- export --labels --------------------------------------------------------------------------

def label_some(path) -> None:
    """Labels in two crawls, with a correction and a title holding a tab and a double quote."""
    with CrawlStore(path, create=False) as store:
        store.begin_crawl(model=MODEL)
        store.add_page(PageItem(url="http://h0.test/s0/page0.html", final_url="http://h0.test/s0/page0.html",
                                status=200, title='A "quoted"\ttitle\n', text="words"))
        store.add_label("http://h0.test/s0/page0.html", "off-topic", who="bob", crawl=1)
        store.add_label("http://h1.test/s1/page1.html", "on-topic", who="alice", crawl=1)
        store.add_label("http://h0.test/s0/page0.html", "on-topic", who="alice", crawl=2)
        store.add_label("http://h2.test/s0/page2.html", "skip", who="alice", crawl=1)
        store.add_label("http://h1.test/s1/page1.html", "off-topic", who="bob", crawl=1)


def read_tsv(text: str) -> list[dict]:
    lines = text.splitlines()
    assert lines[0] == "url\tlabel\twho\tat\tcrawl\ttitle"
    return list(csv.DictReader(lines, delimiter="\t"))


def test_export_labels_writes_each_pages_latest_label_as_tsv(project):
    label_some(project / "crawl.db")
    result = scrapy(project, "export", "--labels", "-o", "out/labels.tsv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "wrote 3 labels of every crawl to out/labels.tsv"
    rows = read_tsv((project / "out" / "labels.tsv").read_text(encoding="utf-8"))
    assert [(r["url"], r["label"], r["who"], r["crawl"]) for r in rows] == [
        ("http://h0.test/s0/page0.html", "on-topic", "alice", "2"),  # crawl 2's page, judged last
        ("http://h2.test/s0/page2.html", "skip", "alice", "1"),
        ("http://h1.test/s1/page1.html", "off-topic", "bob", "1"),  # a correction of alice's on-topic
    ]
    assert rows[0]["title"] == 'A "quoted" title' and rows[2]["title"] == "Page 1"
    assert all(datetime.fromisoformat(r["at"]).tzinfo for r in rows)

    # the round trip: scrapy train --labels reads what export wrote (a skip is no label)
    assert read_labels(project / "out" / "labels.tsv").exact == {r["url"]: r["label"] for r in rows
                                                                 if r["label"] != "skip"}


def test_export_labels_to_stdout_by_crawl_and_with_history(project):
    label_some(project / "crawl.db")
    one = scrapy(project, "export", "--labels", "--crawl", "1")
    assert one.returncode == 0, one.stderr
    assert [(r["url"], r["label"]) for r in read_tsv(one.stdout)] == [
        ("http://h0.test/s0/page0.html", "off-topic"),  # crawl 1's judgement; crawl 2's page has its own
        ("http://h2.test/s0/page2.html", "skip"),
        ("http://h1.test/s1/page1.html", "off-topic"),
    ]
    history = scrapy(project, "export", "--label-history")
    assert [(r["label"], r["who"]) for r in read_tsv(history.stdout)] == [
        ("off-topic", "bob"), ("on-topic", "alice"), ("on-topic", "alice"), ("skip", "alice"), ("off-topic", "bob")]


def test_export_labels_of_a_store_without_labels_is_a_header(project):
    result = scrapy(project, "export", "--labels", "-o", "labels.tsv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "wrote 0 labels of every crawl to labels.tsv"
    assert (project / "labels.tsv").read_text() == "url\tlabel\twho\tat\tcrawl\ttitle\n"
    assert_one_error(scrapy(project, "export", "--labels", "--crawl", "9"), "holds no crawl 9")
