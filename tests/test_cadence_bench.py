"""bench/cadence.py's pure parts: the crawl's stats from its output, relevant pages found by request
N, and where two crawls' orders part (no crawl)."""

from __future__ import annotations

from .conftest import load_bench

cadence = load_bench("cadence")


def test_the_stats_are_the_last_dump_of_the_crawl_output():
    output = ("INFO: Dumping Scrapy stats:\n{'focus/frontier/held': 3,\n 'focus/requests_released': 10}\n"
              "INFO: Dumping Scrapy stats:\n{'downloader/request_count': 12,\n 'focus/frontier/held': 1357,\n"
              " 'focus/requests_released': 1000,\n 'focus/requests_released/unseen': 8640,\n"
              " 'start_time': datetime.datetime(2026, 11, 28, 11, 0)}\n")
    assert cadence.crawl_stats(output) == {"focus/frontier/held": 1357.0, "focus/requests_released": 1000.0,
                                           "focus/requests_released/unseen": 8640.0}
    assert cadence.crawl_stats("no stats") == {}


def test_found_by_request_n_reads_the_curve_or_its_end():
    curve = [0, 0, 1, 1, 2]
    assert cadence.found_by(curve, (1, 3, 5, 50)) == {"1": 0, "3": 1, "5": 2, "50": 2}
    assert cadence.found_by([], (10,)) == {"10": 0}


def test_two_orders_part_at_their_first_different_request_and_share_a_set():
    a, b = ["s1", "s2", "x", "y"], ["s1", "s2", "y", "x"]
    assert cadence.first_difference(a, b) == 3
    assert cadence.first_difference(a, a) == 5
    assert cadence.shared(a, b, 3) == 2
    assert cadence.shared(a, b, 4) == 4


def test_pairs_are_grouped_within_one_speed_and_across_two():
    crawls = [{"latency_ms": 0.0, "run": 1, "order": ["a", "b", "c"]},
              {"latency_ms": 0.0, "run": 2, "order": ["a", "b", "d"]},
              {"latency_ms": 100.0, "run": 1, "order": ["a", "e", "f"]}]
    groups = cadence.summarise_pairs(cadence.divergence(crawls, 3))
    assert groups["0 ms"] == {"pairs": 1, "first_difference": 3, "shared": 2}
    assert groups["0 vs 100 ms"] == {"pairs": 2, "first_difference": 2, "shared": 1}


def test_bad_options_are_one_error_line(capsys):
    assert cadence.main(["--latencies", "fast"]) == 2
    assert capsys.readouterr().err.startswith("error: --latencies 'fast'")
    assert cadence.main(["--latencies", "-1"]) == 2
    assert capsys.readouterr().err.startswith("error: --latencies must be >= 0")
