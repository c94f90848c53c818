"""bench/compare_sims.py: two simulated screens judged by the suite's rule."""

from __future__ import annotations

import json

import pytest

from .conftest import load_bench


def screen(**recalls):
    return {case.replace("_", "/"): {"recall": values} for case, values in recalls.items()}


def test_a_rise_with_no_fall_holds_and_a_fall_past_its_noise_fails():
    compare = load_bench("compare_sims").compare
    before = screen(web_a=[0.20, 0.22, 0.21, 0.23], web_b=[0.90, 0.91, 0.90, 0.91])
    rows, mean_a, mean_b, holds = compare(before, screen(web_a=[0.40, 0.42, 0.41, 0.43], web_b=[0.90, 0.90, 0.91, 0.90]))
    assert holds and mean_b > mean_a
    assert [r["verdict"] for r in rows] == ["rises", "within noise"]
    # a bigger rise elsewhere does not buy a fall past the noise
    rows, mean_a, mean_b, holds = compare(before, screen(web_a=[0.60, 0.62, 0.61, 0.63], web_b=[0.80, 0.81, 0.80, 0.81]))
    assert mean_b > mean_a and not holds
    assert rows[1]["verdict"] == "falls"
    assert rows[1]["noise"] == pytest.approx(2 * (2 * (0.00577 / 2) ** 2) ** 0.5, rel=0.01)


def test_only_the_topics_in_both_screens_count(tmp_path, capsys):
    tool = load_bench("compare_sims")
    (tmp_path / "a.json").write_text(json.dumps(screen(web_a=[0.2, 0.3], web_c=[0.5, 0.5])))
    (tmp_path / "b.json").write_text(json.dumps(screen(web_a=[0.3, 0.4], web_d=[0.1, 0.1])))
    assert tool.main([str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "web/a" in out and "web/c" not in out and "over 1 topics" in out
    (tmp_path / "c.json").write_text("{")
    assert tool.main([str(tmp_path / "a.json"), str(tmp_path / "c.json")]) == 2
    assert capsys.readouterr().err.startswith("error:")
