"""``scrapy train`` run as a user runs it: a real subprocess from a folder outside the project."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from focuscrawl.relevance import TopicModel

pytestmark = pytest.mark.slow  # a scrapy train process a case

COURSE_WORDS = "syllabus lecture homework exam assignment midterm grading textbook".split()
OTHER_WORDS = "research publications project funding laboratory group paper conference".split()


def corpus(n_per_label: int = 12) -> list[dict]:
    rng = random.Random(0)
    pages = []
    for label, words in (("course", COURSE_WORDS), ("other", OTHER_WORDS)):
        for i in range(n_per_label):
            text = " ".join(rng.choice(words * 2 + ["the", "university", "page"]) for _ in range(50))
            host = "a.example" if i % 2 else "b.example"
            pages.append({"url": f"http://{host}/{label}/{i}.html", "label": label,
                          "html": f"<title>{label} {i}</title><p>{text}</p>".encode()})
    return pages


def write_warc(path: Path, pages: list[dict]) -> Path:
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for p in pages:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.0")
            writer.write_record(writer.create_warc_record(
                p["url"], "response", payload=io.BytesIO(p["html"]), http_headers=headers))
    return path


def scrapy(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    # outside a project focuscrawl's commands are the `focuscrawl` command's
    return subprocess.run([sys.executable, "-m", "focuscrawl", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def assert_one_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]


@pytest.fixture
def inputs(tmp_path):
    pages = corpus()
    folder = tmp_path / "examples"
    for p in pages:
        (folder / p["label"]).mkdir(parents=True, exist_ok=True)
        (folder / p["label"] / p["url"].rsplit("/", 1)[1]).write_bytes(p["html"])
    warc = write_warc(tmp_path / "pages.warc.gz", pages)
    labels = tmp_path / "labels.tsv"
    rows = ["url\tlabel\tuniversity"] + [f"{p['url']}\t{p['label']}\tmisc" for p in pages]
    labels.write_text("\n".join(rows) + "\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    return {"folder": folder, "warc": warc, "labels": labels, "work": work}


def test_train_from_a_folder(inputs):
    result = scrapy(["train", str(inputs["folder"]), "--positive", "course",
                     "-o", "models/course.joblib", "--cv-folds", "3"], inputs["work"])
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    out = result.stdout
    assert "course" in out and "(positive)" in out and "other" in out
    assert "cross-validated (3 folds): precision" in out and "F1" in out
    assert "model written to models/course.joblib" in out
    model = TopicModel.load(inputs["work"] / "models" / "course.joblib")
    assert model.positive_labels == ["course"]
    assert model.score("CS 1", "syllabus homework exam lecture") > 0.5


def test_train_from_a_warc_with_host_filter(inputs):
    result = scrapy(["train", str(inputs["warc"]), "--labels", str(inputs["labels"]),
                     "--positive", "course", "--include-host", r"^a\.", "-o", "m.joblib"],
                    inputs["work"])
    assert result.returncode == 0, result.stderr
    assert "examples: 12 " in result.stdout
    assert "skipped (host filtered): 12" in result.stdout
    assert (inputs["work"] / "m.joblib").is_file()


@pytest.mark.parametrize("args,fragments", [
    ([], ["no examples given"]),
    (["{folder}", "-o", "m.joblib"], ["--positive"]),
    (["{folder}", "--positive", "course"], ["-o models/NAME.joblib"]),
    (["missing.warc.gz", "--positive", "course", "-o", "m.joblib"], ["no such file", "missing.warc.gz"]),
    (["{folder}", "--positive", "courses", "-o", "m.joblib"],
     ["unknown label 'courses'", "labels present: course, other"]),
    (["{warc}", "--positive", "course", "-o", "m.joblib"], ["--labels"]),
    (["{warc}", "--labels", "{nolabels}", "--positive", "course", "-o", "m.joblib"],
     ["has a label"]),
    (["{warc}", "--labels", "{badlabels}", "--positive", "course", "-o", "m.joblib"],
     ["'url' and 'label' columns"]),
    (["{folder}/course", "--positive", "course", "-o", "m.joblib"], ["has no examples"]),
    (["{folder}", "--positive", "course", "-o", "m.joblib", "--cv-folds", "many"], ["--cv-folds"]),
    (["{folder}", "--positive", "course", "-o", "m.joblib", "--include-host", "("],
     ["regular expression"]),
    (["{labels}", "--positive", "course", "-o", "m.joblib"], ["unknown format"]),
    (["{folder}", "--positive", "course", "-o", "{folder}"], ["is a folder"]),
])
def test_user_errors_are_one_line(inputs, tmp_path, args, fragments):
    (tmp_path / "nolabels.tsv").write_text("url\tlabel\nhttp://elsewhere/\tcourse\n", encoding="utf-8")
    (tmp_path / "badlabels.tsv").write_text("address\tkind\nhttp://a/\tcourse\n", encoding="utf-8")
    names = {**{k: str(v) for k, v in inputs.items()},
             "nolabels": str(tmp_path / "nolabels.tsv"), "badlabels": str(tmp_path / "badlabels.tsv")}
    result = scrapy(["train", *[a.format(**names) for a in args]], inputs["work"])
    assert_one_error(result, *fragments)
    assert not (inputs["work"] / "m.joblib").exists()


def test_all_positive_examples_is_an_error_without_the_background(inputs):
    result = scrapy(["train", str(inputs["folder"]), "--positive", "course,other", "-o", "m.joblib",
                     "--no-background"], inputs["work"])
    assert_one_error(result, "negative")


def test_on_topic_examples_alone_train_against_the_background(inputs):
    result = scrapy(["train", str(inputs["folder"] / "course"), "-o", "m.joblib", "--cv-folds", "3"],
                    inputs["work"])
    assert "has no examples" in result.stderr  # a label folder's files are not a folder of label folders
    result = scrapy(["train", str(inputs["folder"]), "--positive", "course,other", "-o", "m.joblib",
                     "--cv-folds", "3"], inputs["work"])
    assert result.returncode == 0, result.stderr
    assert "background pages stand for the rest of the web" in result.stdout
    assert "Debian" in result.stdout and "licence" in result.stdout
    model = TopicModel.load(inputs["work"] / "m.joblib")
    assert model.metadata["off_topic"]["kind"] == "background"
    assert model.metadata["off_topic"]["pages"] == model.metadata["n_negative"] > 100
    assert model.even_odds_score == 0.5  # the background's size is no base rate
    assert model.score("CS 1", "syllabus homework exam lecture") > 0.5
    assert model.score("mail", "a mail transfer agent for Debian systems, with sound and graphics") < 0.5


def test_on_topic_examples_alone_read_links_by_the_words_their_sites_lack(inputs):
    """--contrast: the other pages of the sites (here the WARC, labels ignored) tell the course
    pages' own words from the sites'."""
    import json

    ten = inputs["work"] / "ten.jsonl"
    ten.write_text("".join(json.dumps({"url": p["url"], "html": p["html"].decode(), "label": "course"}) + "\n"
                           for p in corpus()[:8]), encoding="utf-8")
    result = scrapy(["train", str(ten), "--positive", "course", "--contrast", str(inputs["warc"]),
                     "-o", "m.joblib", "--cv-folds", "0"], inputs["work"])
    assert result.returncode == 0, result.stderr
    assert "links read by the words at least half the 8 pages use and the 16 contrast pages" in result.stdout
    assert "unlabelled" not in result.stdout  # the page classifier is the background's alone
    assert "unlabelled" not in TopicModel.load(inputs["work"] / "m.joblib").metadata["off_topic"]
    result = scrapy(["train", str(ten), "--positive", "course", "--contrast", str(inputs["warc"]),
                     "--unlabelled-contrast", "-o", "m.joblib", "--cv-folds", "0"], inputs["work"])
    assert result.returncode == 0, result.stderr
    assert "unlabelled: the 16 contrast pages are the other side too" in result.stdout
    assert "Elkan & Noto 2008" in result.stdout and "held-out examples count as found" in result.stdout
    model = TopicModel.load(inputs["work"] / "m.joblib")
    unlabelled = model.metadata["off_topic"]["unlabelled"]  # what stood for the other side, and c
    assert unlabelled["pages"] == 16 and 0 < unlabelled["c"] <= 1 and unlabelled["held_out"] == 8
    assert model.metadata["examples_per_class"]["unlabelled"] == 16 and model.even_odds_score == 0.5
    links = model.metadata["links"]
    assert links["kind"] == "query" and set(links["words"]) <= set(COURSE_WORDS) | {"course"}  # their URLs say it
    assert links["contrast"]["pages"] == 16 and "pages.warc.gz" in links["contrast"]["source"]
    cases = (([str(inputs["folder"]), "--positive", "course", "--contrast", str(inputs["warc"])],
              "--contrast is for on-topic examples alone"),
             ([str(ten), "--positive", "course", "--contrast", "nowhere.jsonl"], "no such file"),
             ([str(ten), "--positive", "course", "--unlabelled-contrast"], "give them with --contrast PATH"))
    for args, fragment in cases:
        assert_one_error(scrapy(["train", *args, "-o", "e.joblib"], inputs["work"]), fragment)
    assert not (inputs["work"] / "e.joblib").exists()


def test_train_from_words(inputs):
    result = scrapy(["train", "--query", "course syllabus lecture homework", "-o", "q.joblib"], inputs["work"])
    assert result.returncode == 0, result.stderr
    assert "query: 4 word(s)" in result.stdout and "syllabus" in result.stdout
    model = TopicModel.load(inputs["work"] / "q.joblib")
    assert model.metadata["start"] == "query" and model.metadata["query"] == "course syllabus lecture homework"
    assert model.score("CS 302", "lectures, homework and the syllabus of the course") > 0.9
    assert model.score("Jane Doe", "my research interests") < 0.1


@pytest.mark.parametrize("args,fragments", [
    (["--query", "  ", "-o", "q.joblib"], ["--query is empty"]),
    (["--query", "a ; !", "-o", "q.joblib"], ["no word to look for"]),
    (["--query", "course"], ["-o models/NAME.joblib"]),
    (["{folder}", "--query", "course", "-o", "q.joblib"], ["no EXAMPLES"]),
])
def test_query_errors_are_one_line(inputs, args, fragments):
    result = scrapy(["train", *[a.format(folder=inputs["folder"]) for a in args]], inputs["work"])
    assert_one_error(result, *fragments)
    assert not (inputs["work"] / "q.joblib").exists()


# --- on-topic pages by URL ---------------------------------------------------------------------
@pytest.fixture
def little_site():
    """A real HTTP server on 127.0.0.1: two course pages, one page robots.txt disallows, a 404 and
    a redirect to a link-local address; every request logged with its User-Agent."""
    import http.server
    import threading

    seen = []
    course = b"<title>CS 302</title><p>syllabus lecture homework exam midterm grading</p>"

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers.get("User-Agent")))
            if self.path == "/robots.txt":
                self._send(200, b"User-agent: *\nDisallow: /private/\n", "text/plain")
            elif self.path in ("/cs302.html", "/cs401.html", "/private/cs500.html"):
                self._send(200, course, "text/html")
            elif self.path == "/away":
                self.send_response(302)
                self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
                self.end_headers()
            else:
                self._send(404, b"gone", "text/html")

        def _send(self, status, body, kind):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def no_proxy_env() -> dict:
    return {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
            and k != "SCRAPY_SETTINGS_MODULE"}


def test_train_from_urls_fetches_politely_and_keeps_the_pages(little_site, tmp_path):
    root, seen = little_site
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{root}/cs302.html\n# a comment\n{root}/cs401.html\n{root}/private/cs500.html\n"
                    f"{root}/missing.html\n{root}/away\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "focuscrawl", "train", "--urls", str(urls), "-o", "m.joblib",
                             "--cv-folds", "0", "-s", "FOCUS_ALLOWED_NETWORKS=127.0.0.0/8", "-s", "DOWNLOAD_DELAY=0"],
                            cwd=tmp_path, env=no_proxy_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"skipped {root}/private/cs500.html: robots.txt disallows it" in out
    assert f"skipped {root}/missing.html: HTTP 404" in out
    assert f"skipped {root}/away: refused: private_network/link_local" in out
    assert "2 page(s) fetched" in out and "background pages stand for the rest of the web" in out
    assert ("/private/cs500.html", ) not in [(p,) for p, _ in seen]  # never asked for
    assert seen[0][0] == "/robots.txt" and [p for p, _ in seen].count("/robots.txt") == 1
    assert all(agent and "focuscrawl" in agent.lower() for _, agent in seen)
    model = TopicModel.load(tmp_path / "m.joblib")
    assert model.metadata["n_positive"] == 2 and model.positive_labels == ["on-topic"]
    assert (tmp_path / "m.joblib.urls.jsonl").read_text().count("\n") == 2
    assert model.metadata["sources"][0]["paths"] == [str(tmp_path / "m.joblib.urls.jsonl")]


def test_urls_that_all_fail_are_one_error_line(little_site, tmp_path):
    root, seen = little_site
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{root}/cs302.html\n", encoding="utf-8")
    # loopback is a private network: refused unless allowed
    result = subprocess.run([sys.executable, "-m", "focuscrawl", "train", "--urls", str(urls), "-o", "m.joblib"],
                            cwd=tmp_path, env=no_proxy_env(), capture_output=True, text=True, timeout=120)
    assert_one_error(result, "none of the 1 URL(s)", "private_network/loopback")
    assert seen == [] and not (tmp_path / "m.joblib").exists()
    (tmp_path / "empty.txt").write_text("# nothing\n", encoding="utf-8")
    result = scrapy(["train", "--urls", str(tmp_path / "empty.txt"), "-o", "m.joblib"], tmp_path)
    assert_one_error(result, "lists no URL")
    result = scrapy(["train", "--urls", str(tmp_path / "absent.txt"), "-o", "m.joblib"], tmp_path)
    assert_one_error(result, "cannot read --urls")


def test_retraining_a_model_from_words_keeps_what_its_crawl_found(inputs, tmp_path):
    from focuscrawl.items import PageItem
    from focuscrawl.store import CrawlStore

    work = inputs["work"]
    result = scrapy(["train", "--query", "syllabus homework", "-o", "q.joblib"], work)
    assert result.returncode == 0, result.stderr
    rng = random.Random(5)
    with CrawlStore(work / "crawl.db") as db:
        db.begin_crawl(model=str(work / "q.joblib"))
        for i in range(30):
            course = i % 3 == 0
            words = COURSE_WORDS if course else OTHER_WORDS
            db.add_page(PageItem(url=f"http://c.test/{i}", final_url=f"http://c.test/{i}", status=200, title=f"p{i}",
                                 text=" ".join(rng.choice(words) for _ in range(40)), score=0.9 if course else 0.1,
                                 relevant=course))
    result = scrapy(["train", "crawl.db", "-o", "grown.joblib", "--cv-folds", "0"], work)
    assert result.returncode == 0, result.stderr
    assert "from what its crawl found" in result.stdout
    model = TopicModel.load(work / "grown.joblib")
    assert (model.metadata["n_positive"], model.metadata["n_negative"]) == (10, 20)
    assert model.metadata["query"] == "syllabus homework" and model.metadata["off_topic"]["kind"] == "examples"
    # it learned the words the query did not name
    assert model.score("x", "midterm grading textbook") > 0.5 > model.score("x", "funding laboratory conference")
    assert "grown" not in model.metadata["retrained_from_crawl"]
    # a crawl that grew the model (FOCUS_GROW_MODEL) judged its pages by the grown one: recorded
    grown = TopicModel.load(work / "q.joblib")
    grown.metadata["grown"] = [{"round": 1, "pages": 100}]
    grown.save(work / "q.grown.joblib")
    result = scrapy(["train", "crawl.db", "-o", "again.joblib", "--cv-folds", "0"], work)
    assert result.returncode == 0, result.stderr
    assert "grew the model in 1 round(s)" in result.stdout
    record = TopicModel.load(work / "again.joblib").metadata["retrained_from_crawl"]["grown"]
    assert record["model"].endswith("q.grown.joblib") and record["rounds"] == [{"round": 1, "pages": 100}]
