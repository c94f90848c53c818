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


def test_all_positive_examples_is_an_error(inputs):
    result = scrapy(["train", str(inputs["folder"]), "--positive", "course,other", "-o", "m.joblib"],
                    inputs["work"])
    assert_one_error(result, "negative")
