"""`scrapy export` as a user runs it: a real `python -m scrapy` process in a project directory."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from focuscrawl.items import PageItem
from focuscrawl.settings import FEED_EXPORT_FIELDS
from focuscrawl.store import CrawlStore

pytestmark = pytest.mark.slow  # a scrapy export process a case

PAGES = [  # url, score, relevant, duplicate_of
    ("http://a.test/1", 0.95, True, None),
    ("http://a.test/2", 0.40, False, None),
    ("http://a.test/3", 0.70, True, None),
    ("http://a.test/3-copy", 0.70, True, "http://a.test/3"),
    ("http://a.test/4", 0.55, True, None),
]


def fill(path) -> None:
    with CrawlStore(path) as store:
        for url, score, relevant, duplicate_of in PAGES:
            store.add_page(PageItem(
                url=url, final_url=url, status=200, title=f"Tïtle {url[-1]}", text=f"text of {url}, with a comma\nand a line",
                score=score, relevant=relevant, fetched_at="2026-01-02T03:04:05+00:00", depth=1,
                content_hash="0" * 40, duplicate_of=duplicate_of, duplicate_kind="exact" if duplicate_of else None,
            ))


@pytest.fixture
def project(tmp_path):
    """A directory that is a focuscrawl project (scrapy.cfg), as after `scrapy startproject`."""
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = focuscrawl.settings\n")
    return tmp_path


def scrapy(cwd, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    return subprocess.run([sys.executable, "-m", "scrapy", "export", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_jsonl_has_relevant_unique_pages_with_the_feed_fields(project):
    fill(project / "crawl.db")  # ./crawl.db: no FOCUS_STORE, no JOBDIR
    result = scrapy(project, "-o", "out.jsonl")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "wrote 3 pages of crawl 1 to out.jsonl"
    rows = [json.loads(line) for line in (project / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["url"] for r in rows] == ["http://a.test/1", "http://a.test/3", "http://a.test/4"]
    assert all(list(r) == FEED_EXPORT_FIELDS for r in rows)
    assert rows[0]["title"] == "Tïtle 1" and rows[0]["score"] == 0.95
    assert "Tïtle" in (project / "out.jsonl").read_text(encoding="utf-8")  # utf-8, not \u escapes


def test_csv_with_min_score_from_a_jobdir_store(project):
    fill(project / "job" / "crawl.db")
    result = scrapy(project, "-o", "exports/out.csv", "-s", "JOBDIR=job", "--min-score", "0.6")
    assert result.returncode == 0, result.stderr
    assert "wrote 2 pages" in result.stdout
    with open(project / "exports" / "out.csv", newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    assert reader.fieldnames == FEED_EXPORT_FIELDS
    assert [r["url"] for r in rows] == ["http://a.test/1", "http://a.test/3"]
    assert rows[1]["text"] == "text of http://a.test/3, with a comma\nand a line"


def test_all_pages_from_focus_store_as_json_and_xml(project):
    fill(project / "elsewhere.db")
    result = scrapy(project, "-o", "all.json", "-s", "FOCUS_STORE=elsewhere.db", "--all")
    assert result.returncode == 0, result.stderr
    rows = json.loads((project / "all.json").read_text(encoding="utf-8"))
    assert [r["url"] for r in rows] == [p[0] for p in PAGES]
    assert rows[3]["duplicate_of"] == "http://a.test/3" and rows[1]["relevant"] is False
    result = scrapy(project, "-o", "out.xml", "--store", "elsewhere.db")
    assert result.returncode == 0, result.stderr
    urls = [e.findtext("url") for e in ET.parse(project / "out.xml").getroot()]
    assert urls == ["http://a.test/1", "http://a.test/3", "http://a.test/4"]


def test_outside_a_project_the_default_export_fields_are_used(tmp_path):
    """Outside a project focuscrawl's commands are the `focuscrawl` command's (never another
    project's `scrapy`)."""
    fill(tmp_path / "crawl.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    result = subprocess.run([sys.executable, "-m", "focuscrawl", "export", "-o", "out.jl"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "out.jl").read_text().splitlines()]
    assert len(rows) == 3 and all(list(r) == list(PageItem.EXPORT_FIELDS) for r in rows)


def test_o_appends_and_capital_o_overwrites_as_scrapys_feeds(project):
    fill(project / "crawl.db")
    for _ in range(2):
        assert scrapy(project, "-o", "out.jsonl").returncode == 0
    assert len((project / "out.jsonl").read_text().splitlines()) == 6
    result = scrapy(project, "-O", "out.jsonl")
    assert result.returncode == 0, result.stderr
    assert len((project / "out.jsonl").read_text().splitlines()) == 3
    both = scrapy(project, "-o", "a.jsonl", "-O", "b.jsonl")
    assert both.returncode == 2 and both.stderr.strip() == "error: use one of -o (append) and -O (overwrite)"


def test_file_colon_format_and_standard_output(project):
    fill(project / "crawl.db")
    result = scrapy(project, "-O", "pages.txt:csv")
    assert result.returncode == 0, result.stderr
    with open(project / "pages.txt", newline="", encoding="utf-8") as fh:
        assert [r["url"] for r in csv.DictReader(fh)] == ["http://a.test/1", "http://a.test/3", "http://a.test/4"]
    piped = scrapy(project, "-o", "-")
    assert piped.returncode == 0, piped.stderr
    assert [json.loads(line)["url"] for line in piped.stdout.splitlines()] == [
        "http://a.test/1", "http://a.test/3", "http://a.test/4"]
    assert piped.stderr.strip() == "wrote 3 pages of crawl 1 to standard output"
    as_json = scrapy(project, "-o", "-:json")
    assert [row["url"] for row in json.loads(as_json.stdout)][0] == "http://a.test/1"
    refused = scrapy(project, "-o", "s3://bucket/pages.jsonl")
    assert refused.returncode == 2 and "writes a local file or standard output" in refused.stderr


@pytest.mark.parametrize(
    "setup, args, message",
    [
        (None, ["-o", "out.jsonl"], "error: no crawl store at ./crawl.db"),
        (None, ["-o", "out.jsonl", "-s", "JOBDIR=job"], "error: no crawl store at job/crawl.db"),
        ("garbage", ["-o", "out.jsonl", "--store", "notes.txt"], "error: notes.txt is not a usable focuscrawl crawl store"),
        ("store", ["-o", "out.txt"], "error: cannot tell the output format from out.txt"),
        ("store", [], "error: no output file: use -o FILE"),
        ("store", ["-o", "out.csv", "--min-score", "high"], "error: --min-score must be a number"),
    ],
    ids=["no-store", "no-store-in-jobdir", "not-a-store", "unknown-extension", "no-output", "bad-score"],
)
def test_errors_are_one_line_and_exit_code_2(project, setup, args, message):
    if setup == "garbage":
        (project / "notes.txt").write_text("shopping list\n" * 100)
    elif setup == "store":
        fill(project / "crawl.db")
    result = scrapy(project, *args)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(message), result.stderr
    assert not list(project.glob("out.*"))


def test_the_stores_of_a_shared_crawls_workers_export_as_one(project):
    """Each worker of a shared crawl keeps its own store: exported together, a page two workers
    fetched (a lease that ran out mid-fetch) is written once."""
    fill(project / "w0.db")
    with CrawlStore(project / "w1.db") as store:
        for url, text in (("http://a.test/1", "again"), ("http://b.test/9", "new page")):
            store.add_page(PageItem(url=url, final_url=url, status=200, title="t", text=text, score=0.9,
                                    relevant=True, fetched_at="2026-01-02T03:04:05+00:00", depth=1,
                                    content_hash=f"{len(text):040d}"))
    result = scrapy(project, "-o", "out.jsonl", "--store", "w0.db", "--store", "w1.db")
    assert result.returncode == 0, result.stderr
    urls = [json.loads(line)["url"] for line in (project / "out.jsonl").read_text().splitlines()]
    assert urls == ["http://a.test/1", "http://a.test/3", "http://a.test/4", "http://b.test/9"]
    assert "of 2 stores" in result.stdout
    refused = scrapy(project, "-o", "out.jsonl", "--store", "w0.db", "--store", "w1.db", "--crawl", "1")
    assert refused.returncode == 2 and "several --store" in refused.stderr
