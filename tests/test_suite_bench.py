"""bench/suite.py's pure parts: rows from an evaluate report, the mean of runs, the learner's ratio to
its best peer, the table, reading peer results, skipping absent webs (no crawl)."""

from __future__ import annotations

import json
import math

import pytest

from .conftest import load_bench

suite = load_bench("suite")


def row(crawler, recall, run=0, web="tooldocs", topic="testing", harvest=None, per_minute=10.0, budget=1000):
    return {"web": web, "topic": topic, "crawler": crawler, "run": run, "requests": budget, "recall": recall,
            "harvest": harvest or {"100": 0.1, "500": 0.08, str(budget): recall / 10},
            "relevant_per_minute": per_minute, "seconds": 30.0}


def score(recall_at_budget, found=10, per_minute=None, budget=1000):
    """A crawler's entry of an evaluate report, as evaluate_strategies writes it."""
    points = [100, 200, 500, 1000] if budget == 1000 else [100, 200, budget]
    out = {"requests": budget, "found": found, "reachable_relevant": 100,
           "harvest": {str(n): found / n for n in points}, "recall": {str(n): recall_at_budget for n in points},
           "found_at": {str(n): found for n in points}, "curve": [0] * budget}
    if per_minute is not None:
        out.update(per_minute=per_minute, seconds=20.0)
    return out


def test_rows_of_a_report_are_each_crawl_and_the_simulated_baselines():
    report = {"budget": 300, "strategies": ["learned", "bfs"],
              "crawlers": {"strategy:learned": score(0.5, per_minute=40.0, budget=300),
                           "strategy:bfs": score(0.2, per_minute=20.0, budget=300),
                           "bfs": score(0.3, budget=300), "random": score(0.1, budget=300),
                           "oracle": score(1.0, budget=300)}}
    rows = suite.rows_of_report("demo", "astronomy", report)
    assert [(r["crawler"], r["run"]) for r in rows] == [("learned", 0), ("bfs", 0), ("sim-bfs", 0), ("sim-oracle", 0)]
    learned = rows[0]
    assert set(learned) == set(suite.ROW_KEYS)
    assert learned["recall"] == 0.5 and learned["relevant_per_minute"] == 40.0 and learned["seconds"] == 20.0
    assert set(learned["harvest"]) == {"100", "300"}  # no harvest@500 under a budget of 300
    assert rows[2]["relevant_per_minute"] is None and rows[2]["seconds"] is None
    for each in rows:  # our rows have the shape the peers write
        suite.check_row(each, "row")


def test_with_several_runs_each_crawl_is_a_row():
    runs = {"learned": [score(0.4, per_minute=1.0), score(0.6, per_minute=3.0)]}
    report = {"budget": 1000, "strategies": ["learned"], "runs": runs,
              "crawlers": {"strategy:learned": score(0.5, per_minute=2.0), "bfs": score(0.1), "oracle": score(1.0)}}
    rows = suite.rows_of_report("webkb", "course", report)
    assert [(r["crawler"], r["run"], r["recall"]) for r in rows[:2]] == [("learned", 0, 0.4), ("learned", 1, 0.6)]


def test_a_cell_is_the_mean_of_its_runs_with_the_standard_error():
    cells = suite.aggregate([row("learned", 0.4, 0, per_minute=10.0), row("learned", 0.6, 1, per_minute=20.0),
                             row("bfs", 0.3)])
    learned = cells[("tooldocs", "testing")]["learned"]
    assert learned.runs == 2 and learned.recall == pytest.approx(0.5)
    assert learned.recall_se == pytest.approx(math.sqrt(0.02 / 2))  # sample variance 0.02, over n = 2
    assert learned.per_minute == pytest.approx(15.0)
    assert learned.harvest["1000"] == pytest.approx(0.05)
    assert cells[("tooldocs", "testing")]["bfs"].recall_se is None


def test_the_learner_is_compared_with_its_best_peer_internal_or_external_never_a_simulation():
    rows = [row("learned", 0.5), row("bestfirst", 0.4), row("crawl4ai-bestfirst", 0.8), row("sim-oracle", 1.0),
            row("learned", 0.6, topic="performance"), row("shark", 0.3, topic="performance"),
            row("sim-oracle", 1.0, topic="performance")]
    ratio = suite.ratios(suite.aggregate(rows))
    assert ratio[("tooldocs", "testing")]["best_peer"] == "crawl4ai-bestfirst"
    assert ratio[("tooldocs", "testing")]["ratio"] == pytest.approx(0.625)
    assert ratio[("tooldocs", "performance")] == {"ratio": pytest.approx(2.0), "best_peer": "shark",
                                                  "best_peer_recall": 0.3}
    only_learner = suite.ratios(suite.aggregate([row("learned", 0.5), row("sim-bfs", 0.1)]))
    assert only_learner == {}


def test_the_mean_over_topics_weighs_each_topic_once_and_skips_what_a_topic_lacks():
    rows = [row("learned", 0.2, run=0), row("learned", 0.4, run=1), row("learned", 0.9, web="demo", topic="astronomy",
            budget=300, harvest={"100": 0.5, "300": 0.3})]
    means = suite.means(suite.aggregate(rows), ["learned"])["learned"]
    assert means["topics"] == 2
    assert means["recall"] == pytest.approx((0.3 + 0.9) / 2)
    assert means["h500"] == pytest.approx(0.08)  # the demo web has no harvest@500: the other topic's
    assert means["hB"] == pytest.approx((0.03 + 0.3) / 2)  # harvest at each web's own budget


def test_the_table_has_a_row_per_topic_a_column_per_crawler_the_mean_and_the_worst_ratio():
    rows = [row("learned", 0.5), row("bestfirst", 0.4), row("sim-bfs", 0.1), row("sim-oracle", 1.0),
            row("learned", 0.3, topic="performance"), row("bestfirst", 0.6, topic="performance"),
            row("crawl4ai-bestfirst", 0.45, topic="performance"),
            row("sim-bfs", 0.1, topic="performance"), row("sim-oracle", 1.0, topic="performance")]
    table = suite.format_table(rows)
    lines = table.splitlines()
    head = lines[0]
    assert [name for name in ("learned", "bestfirst", "crawl4ai-bestfirst", "BFS (sim)", "oracle (sim)")
            if name in head] == ["learned", "bestfirst", "crawl4ai-bestfirst", "BFS (sim)", "oracle (sim)"]
    assert head.index("bestfirst") < head.index("crawl4ai") < head.index("BFS (sim)")
    testing = next(line for line in lines if line.startswith("tooldocs/testing"))
    assert "0.500" in testing and "1.25 bestfirst" in testing
    performance = next(line for line in lines if line.startswith("tooldocs/performance"))
    assert "0.50 bestfirst" in performance
    mean = next(line for line in lines if line.startswith("mean over topics"))
    assert "0.400" in mean and "0.50 (worst)" in mean
    assert "worst 0.50 on tooldocs/performance (best peer bestfirst)" in table
    assert "crawl4ai-bestfirst 1 of 2" in table  # its mean is over one topic, and says so
    bars = [i for i, char in enumerate(head) if char == "|"]
    assert all([i for i, char in enumerate(line) if char == "|"] == bars
               for line in lines if "|" in line)  # the columns line up


def test_several_runs_show_the_standard_error():
    table = suite.format_table([row("learned", 0.4, 0), row("learned", 0.6, 1), row("bfs", 0.2)])
    assert "0.500±0.100" in table and "± its standard error" in table


def test_peer_results_are_read_and_checked(tmp_path):
    good = tmp_path / "crawl4ai.json"
    good.write_text(json.dumps({"peer": "crawl4ai", "version": "0.7.4", "rows": [row("crawl4ai-bestfirst", 0.88)]}))
    info, rows = suite.read_peer_results(good)
    assert info == {"peer": "crawl4ai", "version": "0.7.4", "file": str(good)}
    assert rows[0]["crawler"] == "crawl4ai-bestfirst"
    bad = {"no file": None, "not json": "{", "no rows": json.dumps({"peer": "x"}),
           "a row without recall": json.dumps({"peer": "x", "rows": [{k: v for k, v in row("p", 0.1).items()
                                                                      if k != "recall"}]}),
           "a string recall": json.dumps({"peer": "x", "rows": [{**row("p", 0.1), "recall": "0.1"}]}),
           "harvest keys that are not counts": json.dumps({"peer": "x", "rows": [{**row("p", 0.1),
                                                                                  "harvest": {"all": 0.1}}]})}
    for why, text in bad.items():
        path = tmp_path / f"{why}.json"
        if text is not None:
            path.write_text(text)
        with pytest.raises(suite.SuiteError, match="--peer-results"):
            suite.read_peer_results(path)


def test_bad_peer_results_and_options_are_one_error_line(tmp_path, capsys):
    clash = tmp_path / "clash.json"
    clash.write_text(json.dumps({"peer": "x", "rows": [row("bfs", 0.1)]}))
    assert suite.main(["--peer-results", str(clash), "--webs", "demo"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: --peer-results {clash}: crawler bfs is one the suite runs itself"]
    assert suite.main(["--strategies", "learned,nonesuch"]) == 2
    assert capsys.readouterr().err.startswith("error: --strategies 'learned,nonesuch'")
    assert suite.main(["--webs", "intranet"]) == 2
    assert capsys.readouterr().err.startswith("error: --webs 'intranet'")
    assert suite.main(["-s", "FOCUS_STRATEGY=bfs"]) == 2
    assert capsys.readouterr().err.startswith("error: -s FOCUS_STRATEGY")
    assert suite.main(["--latency-ms", "-5", "--webs", "demo"]) == 2
    assert capsys.readouterr().err.startswith("error: --latency-ms must not be negative")


def test_a_previous_report_is_shown_with_the_peers_without_crawling(tmp_path, capsys):
    ours = tmp_path / "suite.json"
    ours.write_text(json.dumps({"peer": "focuscrawl", "rows": [row("learned", 0.5), row("bestfirst", 0.4)]}))
    theirs = tmp_path / "crawl4ai.json"
    theirs.write_text(json.dumps({"peer": "crawl4ai", "rows": [row("crawl4ai-bestfirst", 1.0)]}))
    merged = tmp_path / "merged.json"
    assert suite.main(["--from", str(ours), "--peer-results", str(theirs), "-o", str(merged)]) == 0
    out = capsys.readouterr().out
    assert "crawl4ai-bestfirst" in out and "0.50 crawl4ai-bestfirst" in out
    report = json.loads(merged.read_text())
    assert len(report["rows"]) == 3 and report["peers"][0]["peer"] == "crawl4ai"
    assert report["summary"]["worst_ratio"]["best_peer"] == "crawl4ai-bestfirst"


def test_absent_webs_are_skipped_with_their_reason(tmp_path):
    found = suite.webs.suite(("webkb", "langdocs", "tooldocs"), shared=tmp_path / "shared", cache=tmp_path / "cache")
    assert found.webs == []
    assert set(found.skipped) == {"webkb", "langdocs", "tooldocs"}
    assert "webkb.warc.gz not found" in found.skipped["webkb"]
    assert "not built" in found.skipped["tooldocs"]


def test_topics_are_chosen_by_name_or_web_and_name(tmp_path):
    web = suite.webs.Web(name="tooldocs", warc=tmp_path / "w", labels=tmp_path / "l", aliases=None, seeds=("s",),
                         train_hosts="x", topics=suite.webs.DOC_TOPICS["tooldocs"])
    found = suite.webs.Suite(webs=[web])
    assert [t.name for _, t in suite.select(found, ["testing"])] == ["testing"]
    assert [t.name for _, t in suite.select(found, ["tooldocs/performance"])] == ["performance"]
    with pytest.raises(suite.SuiteError, match="no topic course"):
        suite.select(found, ["course"])


@pytest.mark.slow
def test_a_tiny_suite_crawls_through_scrapy_evaluate_and_tables_every_crawl(demo_web, demo_files, demo_model,
                                                                             tmp_path):
    web = suite.webs.Web(name="tiny", warc=demo_files["warc"], labels=demo_files["labels"], aliases=None,
                         seeds=tuple(demo_web.seeds), train_hosts="x", topics=(suite.webs.DEMO_TOPIC,), budget=30)
    (topic, report), = suite.evaluate_web(web, web.topics, ["learned", "bfs"], 1, tmp_path,
                                          models={"astronomy": demo_model})
    assert topic.name == "astronomy" and isinstance(report, dict), report
    assert "FOCUS_STRATEGY=bfs" in (tmp_path / "tiny-astronomy.log").read_text()  # evaluate's output, kept
    rows = suite.rows_of_report("tiny", "astronomy", report)
    assert [r["crawler"] for r in rows] == ["learned", "bfs", "sim-bfs", "sim-oracle"]
    learned = rows[0]
    assert 0 < learned["requests"] <= 30 and set(learned["harvest"]) == {"30"}
    assert learned["seconds"] > 0 and learned["relevant_per_minute"] >= 0
    table = suite.format_table(rows)
    assert table.splitlines()[3].startswith("tiny/astronomy") and "learned / best peer" in table
