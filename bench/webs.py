"""The webs of the benchmark suite: where each is, what to crawl, what to train on, what counts.

One catalogue for every benchmark that crawls more than WebKB (``bench/suite.py``, the simulation,
the external peers), so that each reads the same seeds, training hosts, topics and budgets:

- ``webkb``: WebKB (``../shared/webkb``), a real 1996 web of four university departments; train on
  the "misc" universities, crawl from the four department roots.
- ``demo``: the demo web ``scrapy demo`` generates (seed 0) without its JavaScript host, astronomy;
  train on its train hosts, crawl from its seeds.
- ``langdocs`` and ``tooldocs``: public documentation webs rebuilt from Debian's packages by
  ``../shared/webs/NAME/get-NAME.sh DEST`` (README there); train on the hosts whose split is
  ``train``, crawl from the portal; a page labelled ``A+B`` is relevant to both topics.

Each topic also carries the words a user would write for it: the keyword input of peers that
start from words (crawl4ai's keyword scorer), written down here once.

A web whose files are absent is skipped with its reason (``Suite.skipped``), never an error: the
suite runs on whatever of it this machine has. ``python bench/webs.py --build`` rebuilds the
documentation webs into the cache (``BENCH_CACHE``, default ``~/.cache/focus-bench``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _shared() -> Path:
    """The shared data folder: BENCH_SHARED, else ``shared`` beside the checkout or beside the
    folder of worktrees it sits in (/work/main and /work/wt/NAME both find /work/shared)."""
    if "BENCH_SHARED" in os.environ:
        return Path(os.environ["BENCH_SHARED"])
    candidates = [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
    return next((path for path in candidates if path.is_dir()), candidates[0])


SHARED = _shared()
CACHE = Path(os.environ.get("BENCH_CACHE", Path.home() / ".cache" / "focus-bench"))
BUDGET = 1000
DEMO_BUDGET = 300  # the demo web is ~630 pages: 1,000 requests would fetch all of it
WEBKB_HELD_OUT = ("cornell", "utexas", "washington", "wisc")


@dataclass(frozen=True)
class Topic:
    name: str
    positive: tuple[str, ...]  # the labels that count as relevant
    words: str  # what a user would type for it (keyword peers, starts from words)


@dataclass(frozen=True)
class Web:
    name: str
    warc: Path
    labels: Path
    aliases: Path | None
    seeds: tuple[str, ...]
    train_hosts: str  # a regex over host names: the hosts whose pages are the training examples
    topics: tuple[Topic, ...]
    budget: int = BUDGET

    def topic(self, name: str) -> Topic:
        for topic in self.topics:
            if topic.name == name:
                return topic
        raise KeyError(f"web {self.name} has no topic {name!r}")

    def cache(self, *parts: str) -> Path:
        """A path in this web's cache folder (models, examples, reports)."""
        path = CACHE / "suite" / self.name
        return path.joinpath(*parts)


@dataclass
class Suite:
    webs: list[Web] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # web name -> why it is not here

    def pairs(self):
        """Every (web, topic) of the suite, in order."""
        return [(web, topic) for web in self.webs for topic in web.topics]


WEBKB_TOPICS = (
    Topic("course", ("course",), "course syllabus lecture homework assignment exam class"),
    Topic("faculty", ("faculty",), "professor faculty research interests publications associate professor"),
    Topic("student", ("student",), "student graduate phd candidate advisor homepage"),
    Topic("project", ("project",), "project research group members publications software"),
)
DOC_TOPICS = {
    "langdocs": (
        Topic("concurrency", ("concurrency",), "thread mutex atomic concurrency lock async"),
        Topic("text", ("text",), "regex string unicode text pattern match"),
    ),
    "tooldocs": (
        Topic("testing", ("testing",), "test testing debug ctest check assert"),
        Topic("performance", ("performance",), "performance tuning optimization speed cache benchmark"),
    ),
}
DEMO_TOPIC = Topic("astronomy", ("astronomy",), "astronomy telescope star galaxy planet orbit")


def webkb(shared: Path = SHARED) -> Web | str:
    folder = shared / "webkb"
    warc = folder / "webkb.warc.gz"
    if not warc.is_file():
        return f"{warc} not found"
    return Web(
        name="webkb", warc=warc, labels=folder / "labels.tsv", aliases=folder / "aliases.tsv",
        seeds=tuple(f"http://www.cs.{u}.edu/" for u in WEBKB_HELD_OUT),
        train_hosts=r"^(?!.*(" + "|".join(WEBKB_HELD_OUT) + r"))", topics=WEBKB_TOPICS,
    )


def documentation_web(name: str, cache: Path = CACHE) -> Web | str:
    folder = cache / name
    warc, labels, hosts = folder / "webs.warc.gz", folder / "labels.tsv", folder / "hosts.tsv"
    if not (warc.is_file() and labels.is_file() and hosts.is_file()):
        return f"{folder} not built (python bench/webs.py --build)"
    with hosts.open(encoding="utf-8", newline="") as handle:
        train = [row["host"] for row in csv.DictReader(handle, delimiter="\t") if row["split"] == "train"]
    with labels.open(encoding="utf-8", newline="") as handle:
        present = {row["label"] for row in csv.DictReader(handle, delimiter="\t")}
    # a page about both topics is labelled "A+B": relevant to each
    topics = tuple(Topic(t.name, tuple(sorted(label for label in present if t.name in label.split("+"))), t.words)
                   for t in DOC_TOPICS[name])
    seeds = tuple(line.strip() for line in (folder / "seeds.txt").read_text(encoding="utf-8").splitlines()
                  if line.strip())
    return Web(
        name=name, warc=warc, labels=labels, aliases=folder / "aliases.tsv", seeds=seeds,
        train_hosts=host_regex(train), topics=topics,
    )


def demo_web(cache: Path = CACHE, seed: int = 0) -> Web | str:
    """The demo web, generated once into the cache (it depends only on its seed and the code),
    without its JavaScript host: the replay's link graph, which recall is counted over, holds the
    links written in the pages, and the pages only a browser reaches would be found past it
    (recall above 1). What rendering finds is measured apart (``bench/rendering.py``)."""
    from focuscrawl.demo import generate_web

    folder = cache / "suite" / "demo" / f"web-{seed}-static"
    warc, labels, seeds_path, train_path = (folder / "demo.warc.gz", folder / "labels.tsv",
                                            folder / "seeds.txt", folder / "train-hosts.txt")
    if not (warc.is_file() and labels.is_file() and seeds_path.is_file() and train_path.is_file()):
        folder.mkdir(parents=True, exist_ok=True)
        web = generate_web(seed=seed, javascript_host=False)
        web.write_warc(warc)
        web.write_labels(labels)
        seeds_path.write_text("".join(f"{s}\n" for s in web.seeds), encoding="utf-8")
        train_path.write_text("".join(f"{h}\n" for h in web.train_hosts), encoding="utf-8")
    return Web(
        name="demo", warc=warc, labels=labels, aliases=None,
        seeds=tuple(seeds_path.read_text(encoding="utf-8").split()),
        train_hosts=host_regex(train_path.read_text(encoding="utf-8").split()),
        topics=(DEMO_TOPIC,), budget=DEMO_BUDGET,
    )


WEB_NAMES = ("webkb", "demo", "langdocs", "tooldocs")


def suite(names=WEB_NAMES, shared: Path = SHARED, cache: Path = CACHE) -> Suite:
    """The webs of ``names`` this machine has; the others in ``skipped`` with the reason."""
    found = Suite()
    for name in names:
        if name == "webkb":
            web = webkb(shared)
        elif name == "demo":
            web = demo_web(cache)
        elif name in DOC_TOPICS:
            web = documentation_web(name, cache)
        else:
            raise ValueError(f"unknown web {name!r} (known: {', '.join(WEB_NAMES)})")
        if isinstance(web, str):
            found.skipped[name] = web
        else:
            found.webs.append(web)
    return found


def host_regex(hosts) -> str:
    return "^(" + "|".join(re.escape(h) for h in hosts) + ")$"


# --- training from example pages only ---------------------------------------------------------


def write_examples(web: Web, path: Path | None = None) -> Path:
    """The training hosts' labelled pages as JSON lines ({url, title, text, label}): example pages
    without the web graph they came from, as a user would hand them to ``scrapy train``."""
    from focuscrawl.relevance import load_examples

    path = path or web.cache("examples.jsonl")
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    examples = load_examples([web.warc], labels_path=web.labels, include_host=web.train_hosts, links=False)
    partial = path.with_suffix(".partial")
    with partial.open("w", encoding="utf-8") as out:
        for example in examples:
            out.write(json.dumps({"url": example.url, "title": example.title, "text": example.text,
                                  "label": example.label}) + "\n")
    partial.replace(path)
    return path


def train_model(web: Web, topic: Topic, models: Path | None = None, force: bool = False) -> Path:
    """``scrapy train EXAMPLES.jsonl --positive ...``: the topic model from example pages only."""
    model = (models or web.cache("models")) / f"{topic.name}.joblib"
    if model.is_file() and not force:
        return model
    model.parent.mkdir(parents=True, exist_ok=True)
    examples = write_examples(web)
    command = [sys.executable, "-m", "scrapy", "train", str(examples), "--positive", ",".join(topic.positive),
               "-o", str(model)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"training {web.name}/{topic.name} failed: {done.stderr.strip()[-500:]}")
    return model


def build_documentation_webs(cache: Path = CACHE, shared: Path = SHARED) -> None:
    for name in DOC_TOPICS:
        script = shared / "webs" / name / f"get-{name}.sh"
        if (cache / name / "webs.warc.gz").is_file():
            print(f"{name}: already built in {cache / name}")
        elif not script.is_file():
            print(f"{name}: {script} not found, skipped")
        else:
            subprocess.run(["bash", str(script), str(cache / name)], check=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true", help="rebuild the documentation webs into the cache")
    parser.add_argument("--train", action="store_true", help="train every topic's model from example pages")
    args = parser.parse_args(argv)
    if args.build:
        build_documentation_webs()
    found = suite()
    for web in found.webs:
        for topic in web.topics:
            model = train_model(web, topic) if args.train else web.cache("models", f"{topic.name}.joblib")
            print(f"{web.name:9} {topic.name:12} seeds {len(web.seeds)}  budget {web.budget}  model {model}")
    for name, why in found.skipped.items():
        print(f"{name:9} skipped: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
