"""bench/draw_examples.py: a few on-topic pages drawn from a JSON-lines example set."""

from __future__ import annotations

import json

from .conftest import load_bench


def write_examples(path, labels):
    path.write_text("".join(json.dumps({"url": f"http://a.test/{i}", "title": "", "text": "t", "label": label}) + "\n"
                            for i, label in enumerate(labels)), encoding="utf-8")


def test_draws_on_topic_pages_only_relabelled_and_reproducibly(tmp_path):
    tool = load_bench("draw_examples")
    examples = tmp_path / "examples.jsonl"
    write_examples(examples, ["testing", "other", "testing+performance", "performance", "testing"] * 4)
    out = tmp_path / "ten.jsonl"
    assert tool.main([str(examples), "-o", str(out), "--label", "testing,testing+performance", "--count", "5"]) == 0
    drawn = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(drawn) == 5 and {page["label"] for page in drawn} == {"testing"}
    on_topic = {f"http://a.test/{i}" for i in range(20) if i % 5 in (0, 2, 4)}
    assert {page["url"] for page in drawn} <= on_topic
    again = tmp_path / "again.jsonl"
    tool.main([str(examples), "-o", str(again), "--label", "testing,testing+performance", "--count", "5"])
    assert again.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")


def test_no_page_of_the_label_is_one_error_line(tmp_path, capsys):
    tool = load_bench("draw_examples")
    examples = tmp_path / "examples.jsonl"
    write_examples(examples, ["other", "other"])
    assert tool.main([str(examples), "-o", str(tmp_path / "out.jsonl"), "--label", "text"]) == 2
    assert capsys.readouterr().err.startswith("error: no page")
    assert tool.main([str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--label", "text"]) == 2
    assert capsys.readouterr().err.startswith("error: cannot read")


def test_the_contrast_is_other_pages_of_the_drawn_pages_sites(tmp_path):
    tool = load_bench("draw_examples")
    examples = tmp_path / "examples.jsonl"
    lines = [{"url": f"http://{host}/{i}", "title": "", "text": "t", "label": label}
             for i, (host, label) in enumerate([("a.test", "text"), ("a.test", "other"), ("b.test", "other"),
                                                ("a.test", "other"), ("a.test", "text")])]
    examples.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out, contrast = tmp_path / "ten.jsonl", tmp_path / "contrast.jsonl"
    assert tool.main([str(examples), "-o", str(out), "--label", "text", "--contrast", str(contrast)]) == 0
    others = [json.loads(line) for line in contrast.read_text(encoding="utf-8").splitlines()]
    assert sorted(page["url"] for page in others) == ["http://a.test/1", "http://a.test/3"]
