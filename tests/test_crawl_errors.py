"""`scrapy crawl focused` with bad arguments: one clear `error:` line, exit code 2, no traceback,
and nothing fetched."""

from __future__ import annotations

import pytest

from .conftest import run_scrapy

pytestmark = pytest.mark.slow  # a scrapy crawl process a case


def crawl(cwd, *args):
    return run_scrapy(["crawl", "focused", *args, "-s", "LOG_LEVEL=ERROR"], cwd=cwd, timeout=120)


def assert_one_error(result, *words):
    assert result.returncode == 2, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in errors[0]


def test_missing_model(tmp_path):
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={tmp_path / 'none.joblib'}"),
                     "not found")


def test_corrupt_model(tmp_path):
    bad = tmp_path / "bad.joblib"
    bad.write_bytes(b"\x80\x04 this is not a model")
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={bad}"), "not a readable")


def test_no_model_given(tmp_path):
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/"), "no topic model")


@pytest.mark.parametrize("content", ["", "# only a comment\n\n"])
def test_empty_seeds_file(tmp_path, demo_model, content):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(content)
    assert_one_error(crawl(tmp_path, "-a", f"seeds={seeds}", "-a", f"model={demo_model}"), "holds no URL")


def test_seeds_that_are_not_urls(tmp_path, demo_model):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("www.example.test\n")
    assert_one_error(crawl(tmp_path, "-a", f"seeds={seeds}", "-a", f"model={demo_model}"), "not an http(s) URL")


def test_bad_threshold(tmp_path, demo_model):
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}", "-a", "threshold=high"),
                     "threshold")


@pytest.mark.parametrize("setting, words", [
    ("FOCUS_CRAWL_DELAY_OVER_CAP=bogus", "FOCUS_CRAWL_DELAY_OVER_CAP"),
    ("DOWNLOAD_DELAY=-1", "DOWNLOAD_DELAY"),
    ("FOCUS_BUDGET=lots", "FOCUS_BUDGET"),
    ("FOCUS_RELEVANCE_THRESHOLD=7", "FOCUS_RELEVANCE_THRESHOLD"),
    ("FOCUS_REWARD_THRESHOLD=lots", "FOCUS_REWARD_THRESHOLD"),
    ("FOCUS_REWARD_THRESHOLD=1.5", "FOCUS_REWARD_THRESHOLD"),
    ("FOCUS_EXCLUDE_FILE=/nonexistent/exclude.txt", "exclusion list"),
])
def test_bad_settings(tmp_path, demo_model, setting, words):
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}", "-s", setting), words)
