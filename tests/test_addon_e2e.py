"""focuscrawl in someone else's Scrapy project: a fresh ``scrapy startproject`` whose spider has its
own callback (its own items, its own link following), crawled over the demo web through the replay
proxy with and without ``ADDONS = {"focuscrawl.Addon": 0}``, judged from the server's log; a
second fresh project, without the add-on, lists none of focuscrawl's commands; the Python API runs
a crawl from a script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from focuscrawl.politeness.audit import audit_report, load_log
from focuscrawl.replay import RecordedWeb, ReplayProxy
from focuscrawl.replay.linkgraph import LinkGraph, SamePage
from focuscrawl.replay.metrics import Relevance, counted_requests, found_at, found_curve

ROOT = Path(__file__).resolve().parents[1]
BUDGET = 80
DELAY = 0.05
#: focuscrawl's commands, none of which another project's `scrapy -h` may list
FOCUSCRAWL_COMMANDS = ("train", "export", "replay", "evaluate", "demo", "render-server", "render_server", "explain",
                  "label", "console")

SPIDER = textwrap.dedent('''
    import scrapy


    class FollowSpider(scrapy.Spider):
        """A plain spider: it keeps a record of each page and follows every link."""
        name = "follow"

        def __init__(self, seeds="", **kwargs):
            super().__init__(**kwargs)
            self.start_urls = [url for url in seeds.split(",") if url]

        def parse(self, response):
            yield {"page": response.url, "heading": response.css("title::text").get(),
                   "focus_relevant": response.meta.get("focus_relevant")}
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse)
''')


def scrapy(args, cwd, env=None, timeout=300):
    """``python -m scrapy`` as a user runs it in their project (this tree's focuscrawl importable)."""
    full = {k: v for k, v in os.environ.items() if k not in ("SCRAPY_SETTINGS_MODULE", "http_proxy", "https_proxy")}
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [full.get("PYTHONPATH")])])
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=timeout)


def listed_commands(help_text: str) -> set[str]:
    """The command names ``scrapy -h`` lists."""
    return {line.split()[0] for line in help_text.splitlines() if line.startswith("  ") and line.split()}


def new_project(where: Path, name: str) -> Path:
    result = scrapy(["startproject", name], cwd=where)
    assert result.returncode == 0, result.stderr
    return where / name


def crawl_project(project: Path, demo_web, seeds: str, out: Path, extra: list[str]):
    log = out / "server.jsonl"
    web = RecordedWeb.from_records(demo_web.records)
    with ReplayProxy(web, robots=demo_web.robots, log_path=str(log)) as proxy:
        result = scrapy(["crawl", "follow", "-a", f"seeds={seeds}", "-O", str(out / "items.jsonl"),
                         "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", "LOG_LEVEL=INFO", *extra],
                        cwd=project, env={"http_proxy": proxy.url})
    assert result.returncode == 0, result.stderr[-3000:]
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    return {"server": load_log(log), "stderr": result.stderr, "items": items}


@pytest.fixture(scope="module")
def crawls(demo_web, demo_model, tmp_path_factory):
    """The same project's spider crawled twice: Scrapy's scheduler, then focuscrawl's add-on."""
    where = tmp_path_factory.mktemp("project")
    project = new_project(where, "shop")
    (project / "shop" / "spiders" / "follow.py").write_text(SPIDER)
    seeds = ",".join(demo_web.seeds)
    plain_out, focused_out = where / "plain", where / "focused"
    plain_out.mkdir()
    focused_out.mkdir()
    # Scrapy's own stop after as many pages as the focused crawl's budget
    plain = crawl_project(project, demo_web, seeds, plain_out, ["-s", f"CLOSESPIDER_PAGECOUNT={BUDGET}"])
    settings = project / "shop" / "settings.py"
    settings.write_text(settings.read_text().replace("ADDONS = {}", 'ADDONS = {"focuscrawl.Addon": 0}')
                        + f'\nFOCUS_MODEL = {str(demo_model)!r}\n')
    focused = crawl_project(project, demo_web, seeds, focused_out,
                            ["-s", f"FOCUS_BUDGET={BUDGET}", "-s", f"FOCUS_STORE={focused_out / 'crawl.db'}"])
    return {"project": project, "plain": plain, "focused": focused, "focused_out": focused_out}


@pytest.mark.slow
@pytest.mark.e2e
def test_the_addon_finds_at_least_twice_the_on_topic_pages_in_as_many_requests(crawls, demo_web):
    graph = LinkGraph.from_web(RecordedWeb.from_records(demo_web.records))
    relevance = Relevance(demo_web.labels, [demo_web.topic], SamePage.for_graph(graph))
    focused = found_curve(counted_requests(crawls["focused"]["server"]), relevance)
    plain = found_curve(counted_requests(crawls["plain"]["server"]), relevance)
    assert len(counted_requests(crawls["focused"]["server"])) == BUDGET
    assert len(counted_requests(crawls["plain"]["server"])) >= BUDGET
    assert found_at(focused, BUDGET) >= 2 * found_at(plain, BUDGET), (found_at(focused, BUDGET),
                                                                         found_at(plain, BUDGET))


@pytest.mark.slow
@pytest.mark.e2e
def test_the_spiders_own_items_are_its_output_and_the_pages_are_stored(crawls):
    focused = crawls["focused"]
    items = focused["items"]
    assert items and all(set(item) == {"page", "heading", "focus_relevant"} for item in items)
    assert any(item["focus_relevant"] for item in items) and not all(item["focus_relevant"] for item in items)
    assert "'finish_reason': 'focus_budget'" in focused["stderr"]
    assert "'scheduler/dequeued':" in focused["stderr"] and "'scheduler/enqueued':" in focused["stderr"]
    from focuscrawl.store import CrawlStore

    with CrawlStore(str(crawls["focused_out"] / "crawl.db"), create=False) as store:
        stored = list(store.iter_pages())
    assert len(stored) >= len(items) * 0.9 and any(page["relevant"] for page in stored)
    # the links' words reached the frontier: pages below the seeds were scored with their links' evidence
    assert any(page["link_score"] is not None for page in stored)


@pytest.mark.slow
@pytest.mark.e2e
def test_the_addon_crawl_is_polite_and_quiet(crawls, demo_web):
    focused = crawls["focused"]
    report = audit_report(focused["server"], robots=demo_web.robots, delays=DELAY)
    assert not any(report["violation_counts"].values()), report["violations"]
    warnings = [line for line in focused["stderr"].splitlines() if "WARNING" in line]
    assert not warnings, warnings


@pytest.mark.slow
def test_the_addon_defaults_show_in_the_projects_settings(crawls, tmp_path):
    project = crawls["project"]
    settings = project / "shop" / "settings.py"
    text = settings.read_text()
    settings.write_text(text + '\nCOMMANDS_MODULE = "focuscrawl.commands"\nDOWNLOAD_DELAY = 2\n')
    try:
        def get(name, *extra):
            result = scrapy(["settings", "--get", name, *extra], cwd=project)
            assert result.returncode == 0, result.stderr
            return result.stdout.strip()

        assert get("FOCUS_RELEVANCE_THRESHOLD") == "0.5"
        assert get("SCHEDULER") == "focuscrawl.scheduler.FocusScheduler"
        assert get("DOWNLOAD_DELAY") == "2"  # the project's own wins over the add-on's
        assert get("FOCUS_BUDGET", "-s", "FOCUS_BUDGET=7") == "7"
        commands = listed_commands(scrapy(["-h"], cwd=project).stdout)
        assert {"train", "export", "render-server"} <= commands and "render_server" not in commands
    finally:
        settings.write_text(text)


@pytest.mark.slow
def test_another_project_lists_none_of_focuscrawls_commands(tmp_path):
    """focuscrawl's metadata as this tree's pyproject.toml makes it (first on the path, so it stands
    for the installed one) puts no command into a project that does not ask for them."""
    meta = tmp_path / "meta"
    meta.mkdir()
    made = subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "egg_info", "--egg-base",
                           str(meta)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr[-2000:]
    entry_points = (meta / "focuscrawl.egg-info" / "entry_points.txt").read_text()
    assert "scrapy.commands" not in entry_points and "focuscrawl = focuscrawl.cli:main" in entry_points
    project = new_project(tmp_path, "other")
    listed = scrapy(["-h"], cwd=project, env={"PYTHONPATH": os.pathsep.join([str(meta), str(ROOT)])})
    assert listed.returncode == 0, listed.stderr
    commands = listed_commands(listed.stdout)
    assert "crawl" in commands and "startproject" in commands
    assert not commands & set(FOCUSCRAWL_COMMANDS), commands & set(FOCUSCRAWL_COMMANDS)


@pytest.mark.slow
@pytest.mark.e2e
def test_the_python_api_streams_the_relevant_pages(demo_web, demo_model, tmp_path, monkeypatch):
    from focuscrawl import CrawlError, FocusCrawl

    web = RecordedWeb.from_records(demo_web.records)
    monkeypatch.chdir(tmp_path)
    with ReplayProxy(web, robots=demo_web.robots) as proxy:
        monkeypatch.setenv("http_proxy", proxy.url)
        crawl = FocusCrawl(demo_web.seeds, model=str(demo_model), budget=40,
                           settings={"DOWNLOAD_DELAY": DELAY, "FOCUS_STORE": str(tmp_path / "api.db")})
        items = list(crawl.items())
    assert items and all(item["score"] >= 0.5 for item in items)
    assert crawl.finish_reason == "focus_budget" and crawl.stats["focus/requests_released"] == 40
    with pytest.raises(CrawlError, match="no seeds given|cannot read seeds"):
        FocusCrawl("", model=str(demo_model)).run()
    with pytest.raises(CrawlError, match="model"):
        FocusCrawl(demo_web.seeds, model=str(tmp_path / "missing.joblib")).run()


@pytest.mark.slow
@pytest.mark.e2e
def test_the_readmes_python_example_runs(demo_web, demo_model, tmp_path):
    """The README's example, as a script, with the demo web's seeds and model for its own."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### From Python"):]
    start = section.index("```python\n") + len("```python\n")
    example = section[start:section.index("\n```", start)]
    assert example.count("seeds = ") == 1 and example.count("model = ") == 1
    lines = [f"seeds = {list(demo_web.seeds)!r}" if line.startswith("seeds = ") else
             f"model = {str(demo_model)!r}" if line.startswith("model = ") else line
             for line in example.splitlines()]
    (tmp_path / "example.py").write_text("\n".join(lines) + "\n")
    web = RecordedWeb.from_records(demo_web.records)
    with ReplayProxy(web, robots=demo_web.robots) as proxy:
        env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
        env.update(http_proxy=proxy.url, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])]))
        result = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert len(lines) > 5 and all(float(line.split()[0]) >= 0.5 for line in lines[:-1])
    assert lines[-1].startswith("focus_budget ") and lines[-1].endswith(" relevant pages")
    assert (tmp_path / "api.db").is_file()


@pytest.mark.slow
def test_the_focuscrawl_command_brings_its_commands_into_any_project(tmp_path):
    """`focuscrawl CMD` (python -m focuscrawl) in another project: that project's settings, with
    focuscrawl's commands, its focused spider and its add-on."""
    project = new_project(tmp_path, "other")

    def focuscrawl(*args):
        env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
        result = subprocess.run([sys.executable, "-m", "focuscrawl", *args], cwd=project, env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    assert {"train", "export", "render-server", "crawl"} <= listed_commands(focuscrawl("-h"))
    assert focuscrawl("settings", "--get", "BOT_NAME").strip() == "other"  # the project's settings
    assert focuscrawl("settings", "--get", "FOCUS_RELEVANCE_THRESHOLD").strip() == "0.5"
    assert "focused" in focuscrawl("list").split()
