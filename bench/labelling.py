"""Labels chosen by the labelling queue against labels chosen at random, on WebKB.

A user starts from a handful of example pages, crawls, labels 50 of the pages the crawl found,
retrains (``scrapy train CRAWL.db -o NEW``: the model's own examples read again plus the labels)
and crawls again. WebKB's hand labels stand in for the person. Per target and run:

1. a starting model: ``--positives`` on-topic and ``--negatives`` off-topic pages drawn (seeded by
   the run) from the misc universities' labelled pages, as JSON lines, ``scrapy train``;
2. crawl 1: ``scrapy evaluate`` with it from the four departments' home pages, the store kept;
3. two copies of the store, labelled ``--labels-per-run`` pages each: by the queue (``LabelQueue``,
   ten at a time, as a person works through ``scrapy label``) and at random from the same pool
   (the queue's: fetched pages with text, no duplicates). A page WebKB left unlabelled is skipped,
   as a person would skip it, and does not count;
4. ``scrapy train STORE -o MODEL`` on each copy;
5. F1 at 0.5 of the starting model and of both retrained models on the four departments' labelled
   pages (the pages either copy labelled left out, so all three are judged on the same pages);
6. crawl 2 with each retrained model: harvest@500 and recall@1000.

    python bench/labelling.py ../shared/webkb --targets course,faculty --runs 3 -o labelling.json
    python bench/labelling.py --summarise labelling.json more-runs.json

Everything runs in a fresh folder under ``--workdir``; the report is JSON, and a table is printed
with, per figure, the queue's paired difference from random over the runs (mean, standard error,
runs won): a crawl's own noise is ten points of recall, so one run per arm decides nothing.
``--summarise`` prints the table of reports already written (several: their runs together).
``--ceiling N`` measures, per run, how far a better page model can move the second crawl: the
starting model and an oracle (trained on its examples plus every department page with its WebKB
label: it has seen the answers) each crawl N times, and nothing is labelled.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from focuscrawl.labelling import OFF_TOPIC, ON_TOPIC, SKIP
from focuscrawl.labelling.queue import LabelQueue
from focuscrawl.relevance import TopicModel, load_examples, read_labels
from focuscrawl.store import CrawlStore

HELD_OUT = "cornell|utexas|washington|wisc"
SEEDS = ["http://www.cs.cornell.edu/", "http://www.cs.utexas.edu/", "http://www.cs.washington.edu/",
         "http://www.cs.wisc.edu/"]
BATCH = 10


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("webkb", type=Path, nargs="?", help="the folder with webkb.warc.gz, labels.tsv and aliases.tsv")
    parser.add_argument("--summarise", nargs="+", type=Path, metavar="REPORT",
                        help="print the table of these reports' runs instead of running")
    parser.add_argument("--targets", default="course,faculty")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--first-run", type=int, default=1)
    parser.add_argument("--labels-per-run", type=int, default=50)
    parser.add_argument("--positives", type=int, default=20, help="on-topic example pages to start from")
    parser.add_argument("--negatives", type=int, default=80, help="off-topic example pages to start from")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--train-option", action="append", default=[], metavar="OPTION",
                        help="an option for the retraining `scrapy train` (e.g. --train-option=--no-link-model)")
    parser.add_argument("--random-draws", type=int, default=5,
                        help="random choices of labels per run whose retrained models' F1 is averaged")
    parser.add_argument("--workdir", type=Path, default=Path("labelling-runs"))
    parser.add_argument("--first-crawl-only", action="store_true",
                        help="stop after each run's first crawl (its store is what the labels are chosen from)")
    parser.add_argument("--reuse", action="store_true",
                        help="take a run's starting model and first crawl from --workdir when they are there")
    parser.add_argument("--ceiling", type=int, default=0, metavar="N",
                        help="crawl N times with the starting model and with an oracle page model instead of labelling")
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for every crawl")
    args = parser.parse_args(argv)
    if args.summarise:
        print_table([run for path in args.summarise for run in json.loads(path.read_text())["runs"]])
        return 0
    if args.webkb is None:
        parser.error("give the WebKB folder (or --summarise REPORT)")
    args.workdir.mkdir(parents=True, exist_ok=True)
    warc, labels_tsv = args.webkb / "webkb.warc.gz", args.webkb / "labels.tsv"
    truth = read_labels(labels_tsv)
    seeds = args.workdir / "seeds.txt"
    seeds.write_text("\n".join(SEEDS) + "\n")
    print("reading the example pages and the departments' pages...", flush=True)
    misc = load_examples([warc], labels_path=labels_tsv, exclude_host=HELD_OUT, links=False)
    departments = load_examples([warc], labels_path=labels_tsv, include_host=HELD_OUT, links=False)

    results = []
    for target in [t.strip() for t in args.targets.split(",") if t.strip()]:
        for run in range(args.first_run, args.first_run + args.runs):
            started = time.monotonic()
            result = one_run(args, target, run, misc, departments, truth, warc, labels_tsv, seeds)
            result["seconds"] = round(time.monotonic() - started, 1)
            results.append(result)
            print(json.dumps(result), flush=True)
            if args.output:
                args.output.write_text(json.dumps({"args": _args(args), "runs": results}, indent=1) + "\n")
    if not (args.first_crawl_only or args.ceiling):
        print_table(results)
    return 0


def one_run(args, target, run, misc, departments, truth, warc, labels_tsv, seeds) -> dict:
    folder = args.workdir / f"{target}-{run}"
    base, crawl = folder / "start.joblib", folder / "crawl1.db"
    reuse = args.reuse and base.exists() and (folder / "crawl1.json").exists()
    if not reuse:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    rng = random.Random(run)
    positives = [e for e in misc if e.label == target]
    negatives = [e for e in misc if e.label != target]
    start = rng.sample(positives, args.positives) + rng.sample(negatives, args.negatives)
    if reuse:
        first = crawl_scores(args, folder / "crawl1.json")
    else:
        examples = folder / "examples.jsonl"
        with examples.open("w", encoding="utf-8") as out:
            for e in start:
                out.write(json.dumps({"url": e.url, "title": e.title, "text": e.text, "label": e.label}) + "\n")
        scrapy(["train", str(examples), "--positive", target, "-o", str(base)], folder / "train-start.log")
        first = evaluate(args, target, base, crawl, folder / "crawl1.json", warc, labels_tsv, seeds)
    if args.first_crawl_only:
        return {"target": target, "run": run, "crawl1": first}
    if args.ceiling:
        return {"target": target, "run": run, "crawl1": first,
                **ceiling(args, folder, target, start, departments, warc, labels_tsv, seeds)}
    # the queue, and --random-draws random choices of as many pages (the first one crawls again; the
    # F1 of random labels is the mean over the draws: one draw is a noisy baseline)
    arms = ["queue", "random"] + [f"random-{d}" for d in range(2, args.random_draws + 1)]
    chosen = {}
    for how in arms:
        store_path = folder / f"{how}.db"
        shutil.copy(crawl, store_path)
        chosen[how] = label(store_path, TopicModel.load(base), how, truth, target, args.labels_per_run, rng)
        scrapy(["train", str(store_path), "-o", str(folder / f"{how}.joblib"), *args.train_option],
               folder / f"train-{how}.log")
    judged = {url for picks in chosen.values() for url, _ in picks}
    test = [e for e in departments if e.url not in judged]
    result = {"target": target, "run": run, "crawl1": first, "test_pages": len(test),
              "f1": {"start": f1(TopicModel.load(base), test, target)}}
    for how in arms:
        picks = chosen[how]
        result[how] = {"labelled": len(picks), "on_topic": sum(1 for _, lab in picks if lab == ON_TOPIC),
                       "hosts": len({url.split("/")[2] for url, _ in picks})}
        result["f1"][how] = f1(TopicModel.load(folder / f"{how}.joblib"), test, target)
    draws = [result["f1"][how]["f1"] for how in arms if how.startswith("random")]
    result["f1"]["random_mean"] = round(statistics.mean(draws), 4)
    for how in ("queue", "random"):
        result[how]["crawl2"] = evaluate(args, target, folder / f"{how}.joblib", folder / f"crawl2-{how}.db",
                                         folder / f"crawl2-{how}.json", warc, labels_tsv, seeds)
    return result


def ceiling(args, folder: Path, target: str, start, departments, warc, labels_tsv, seeds) -> dict:
    """The starting model and an oracle (its examples plus every department page, labelled),
    each crawling ``args.ceiling`` times: the spread of one model's crawls, and the most a better
    page model could add."""
    examples = folder / "oracle.jsonl"
    with examples.open("w", encoding="utf-8") as out:
        for e in [*start, *departments]:
            out.write(json.dumps({"url": e.url, "title": e.title, "text": e.text, "label": e.label}) + "\n")
    oracle = folder / "oracle.joblib"
    scrapy(["train", str(examples), "--positive", target, "-o", str(oracle), "--no-link-model", "--cv-folds", "0"],
           folder / "train-oracle.log")
    out = {"oracle_f1": f1(TopicModel.load(oracle), departments, target)}
    for name, model in (("start", folder / "start.joblib"), ("oracle", oracle)):
        out[name] = [evaluate(args, target, model, folder / f"ceiling-{name}-{i}.db", folder / f"ceiling-{name}-{i}.json",
                              warc, labels_tsv, seeds) for i in range(args.ceiling)]
    return out


def label(store_path: Path, model, how: str, truth, target: str, wanted: int, rng) -> list[tuple[str, str]]:
    """Label ``wanted`` pages of the store, chosen ``how``, with WebKB's labels as the person."""
    picks = []
    with CrawlStore(store_path, create=False) as store:
        queue = LabelQueue(store, model)
        pool = None if how == "queue" else rng.sample(queue.pool(), len(queue.pool()))  # every random arm draws anew
        while len(picks) < wanted:
            batch = queue.next(BATCH) if how == "queue" else [pool.pop() for _ in range(min(BATCH, len(pool)))]
            if not batch:
                break
            for page in batch:
                url = page.url if how == "queue" else page["url"]
                final_url = page.final_url if how == "queue" else page.get("final_url")
                known = truth.get(url, final_url)
                if known is None:
                    store.add_label(url, SKIP, who="bench: no WebKB label")
                    continue
                value = ON_TOPIC if known == target else OFF_TOPIC
                store.add_label(url, value, who="bench: WebKB labels")
                picks.append((url, value))
                if len(picks) >= wanted:
                    break
    return picks


def f1(model, pages, target: str) -> dict:
    scores = model.score_many([(e.title, e.text) for e in pages])
    tp = sum(1 for e, s in zip(pages, scores) if s >= 0.5 and e.label == target)
    fp = sum(1 for e, s in zip(pages, scores) if s >= 0.5 and e.label != target)
    fn = sum(1 for e, s in zip(pages, scores) if s < 0.5 and e.label == target)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {"f1": round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0,
            "precision": round(precision, 4), "recall": round(recall, 4)}


def evaluate(args, target, model, store, report, warc, labels_tsv, seeds) -> dict:
    argv = ["evaluate", str(warc), "--labels", str(labels_tsv), "--aliases", str(warc.parent / "aliases.tsv"),
            "--positive", target, "--seeds", str(seeds), "--model", str(model), "--budget", str(args.budget),
            "--random-runs", "1", "-o", str(report), "-s", f"FOCUS_STORE={store}"]
    for item in args.set:
        argv += ["-s", item]
    scrapy(argv, report.with_suffix(".log"))
    return crawl_scores(args, report)


def crawl_scores(args, report: Path) -> dict:
    crawler = json.loads(report.read_text())["crawlers"]["focuscrawl"]
    return {"harvest@500": round(crawler["harvest"].get("500", 0.0), 4),
            "recall@1000": round(crawler["recall"].get("1000", crawler["recall"][str(args.budget)]), 4),
            "found": crawler["found"]}


def scrapy(argv: list[str], log: Path) -> None:
    with log.open("w", encoding="utf-8") as out:
        result = subprocess.run([sys.executable, "-m", "scrapy", *argv], stdout=out, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise SystemExit(f"scrapy {argv[0]} failed (exit {result.returncode}); see {log}")


def print_table(results: list[dict]) -> None:
    print("\n| target | run | F1 start | F1 queue | F1 random (mean of draws) | h@500 crawl 1 | h@500 queue | h@500 random "
          "| r@1000 crawl 1 | r@1000 queue | r@1000 random | on-topic labels q / r |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        print(f"| {r['target']} | {r['run']} | {r['f1']['start']['f1']:.3f} | {r['f1']['queue']['f1']:.3f} | "
              f"{r['f1']['random_mean']:.3f} | {r['crawl1']['harvest@500']:.3f} | "
              f"{r['queue']['crawl2']['harvest@500']:.3f} | {r['random']['crawl2']['harvest@500']:.3f} | "
              f"{r['crawl1']['recall@1000']:.1%} | {r['queue']['crawl2']['recall@1000']:.1%} | "
              f"{r['random']['crawl2']['recall@1000']:.1%} | {r['queue']['on_topic']} / {r['random']['on_topic']} |")
    for target in sorted({r["target"] for r in results}):
        rs = [r for r in results if r["target"] == target]
        mean = lambda f: statistics.mean(f(r) for r in rs)  # noqa: E731
        print(f"{target}: mean F1 start {mean(lambda r: r['f1']['start']['f1']):.3f}, queue "
              f"{mean(lambda r: r['f1']['queue']['f1']):.3f}, random {mean(lambda r: r['f1']['random_mean']):.3f}; "
              f"harvest@500 queue {mean(lambda r: r['queue']['crawl2']['harvest@500']):.3f}, random "
              f"{mean(lambda r: r['random']['crawl2']['harvest@500']):.3f}; recall@1000 queue "
              f"{mean(lambda r: r['queue']['crawl2']['recall@1000']):.1%}, random "
              f"{mean(lambda r: r['random']['crawl2']['recall@1000']):.1%} ({len(rs)} runs)")
    print("\n| queue - random, paired over runs | target | runs | mean | standard error | queue better in |")
    print("|---|---|---:|---:|---:|---:|")
    figures = {"F1": lambda r, arm: r["f1"]["queue"]["f1"] if arm == "queue" else r["f1"]["random_mean"],
               "harvest@500": lambda r, arm: r[arm]["crawl2"]["harvest@500"],
               "recall@1000": lambda r, arm: r[arm]["crawl2"]["recall@1000"]}
    for name, figure in figures.items():
        for target in [*sorted({r["target"] for r in results}), "all"]:
            rs = [r for r in results if target in ("all", r["target"])]
            d = [figure(r, "queue") - figure(r, "random") for r in rs]
            se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")
            print(f"| {name} | {target} | {len(d)} | {statistics.mean(d):+.3f} | {se:.3f} | "
                  f"{sum(x > 0 for x in d)} of {len(d)} |")


def _args(args) -> dict:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}


if __name__ == "__main__":
    raise SystemExit(main())
