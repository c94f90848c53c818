"""Nothing lost, nothing fetched twice, at any kill: one crawl killed with SIGKILL at ten random
moments and resumed each time, against the same crawl never killed (bench/chaos.py runs the loop;
here on a smaller demo web, so the eleven runs take about a minute).

- every relevant page the store holds is in the feeds of the runs together, none twice, and no
  feed line is torn;
- no page answered 200 is fetched again unless it was in flight at a kill (answered within
  IN_FLIGHT seconds before it);
- the request log names every page answered 200 (but those in flight) and has no torn line;
- the chaos crawl fetched every page the reference fetched and found the same relevant pages
  (judged by their own words: the order of a crawl changes which link led to a page);
- the store holds one crawl.
"""

from __future__ import annotations

import pytest

from .conftest import load_bench

KILLS = 10


@pytest.fixture(scope="module")
def chaos(tmp_path_factory):
    bench = load_bench("chaos")
    out = tmp_path_factory.mktemp("chaos")
    # the HTML hosts and the PDFs: a page of the JavaScript-only host is fetched twice by design
    # (plainly, then rendered), which is not what this loop counts as fetched twice
    web, robots, seeds, model = bench.demo_setup(out / "demo", hosts=6, pages_per_host=30, javascript_host=False)
    return bench.chaos_loop(web, robots, seeds, model, out, kills=KILLS, seed=0)


@pytest.mark.e2e
def test_the_crawl_was_killed_ten_times_and_finished(chaos):
    assert chaos["kills"] == KILLS, chaos["kill_points"]
    assert chaos["exit_codes"][:-1] == [-9] * KILLS and chaos["exit_codes"][-1] == 0


@pytest.mark.e2e
def test_no_relevant_page_is_lost_or_exported_twice(chaos):
    assert chaos["relevant_unique"] > 0
    assert chaos["lost"] == []
    assert chaos["fed_twice"] == []
    assert chaos["feed_torn"] == 0


@pytest.mark.e2e
def test_no_page_is_fetched_twice_unless_in_flight_at_a_kill(chaos):
    assert chaos["fetched_twice_not_in_flight"] == []


@pytest.mark.e2e
def test_the_request_log_survives_the_kills(chaos):
    assert chaos["unlogged"] == []
    assert chaos["log_torn"] == 0


@pytest.mark.e2e
def test_the_killed_crawl_found_what_the_crawl_never_killed_found(chaos):
    assert chaos["missing_vs_reference"] == []
    assert chaos["relevant_by_words_missing"] == []
    assert chaos["relevant_by_words"] == chaos["reference_relevant_by_words"] > 0


@pytest.mark.e2e
def test_the_store_holds_one_crawl(chaos):
    assert chaos["crawl_ids"] == [1]
