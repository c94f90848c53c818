"""The core install (``pip install focuscrawl``, no extras) imports, runs its commands and crawls,
and a feature whose extra it lacks is refused in one line that names the extra.

The core install lives in a venv of its own: ``CORE_INSTALL_PYTHON`` names its Python (``.ci/run``
builds one from the wheel it has just built and checked); without it the test builds one, which
takes minutes (pip's cache helps), so the test is ``slow``.
"""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest

from focuscrawl.demo import generate_web
from focuscrawl.replay import RecordedWeb, ReplayProxy

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[1]
#: what the extras install: none of it may be importable in the core venv
OPTIONAL = ("playwright", "scrapy_playwright", "matplotlib", "redis")
#: the modules only a feature of an extra imports (each raises MissingExtra on import)
EXTRA_MODULES = {"focuscrawl.backends.shared", "focuscrawl.distributed.batch", "focuscrawl.distributed.conclusions",
                 "focuscrawl.distributed.crawl", "focuscrawl.distributed.dedup", "focuscrawl.distributed.frontier",
                 "focuscrawl.distributed.learner_sync", "focuscrawl.distributed.revisits", "focuscrawl.distributed.scripts",
                 "focuscrawl.distributed.seen",
                 "focuscrawl.rendering.server.app", "focuscrawl.rendering.server.pages"}


@pytest.fixture(scope="module")
def core_python(tmp_path_factory) -> str:
    given = os.environ.get("CORE_INSTALL_PYTHON")
    if given:
        return given
    folder = tmp_path_factory.mktemp("core-venv")
    venv.EnvBuilder(with_pip=True).create(folder)
    python = str(folder / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "--quiet", str(ROOT)], capture_output=True,
                             text=True, timeout=1500)
    assert install.returncode == 0, install.stderr[-3000:]
    return python


def run(python: str, args: list[str], cwd: Path, env: dict | None = None, timeout: float = 300):
    """``args`` run with the core venv's Python, its scripts first on the PATH, nothing of this
    checkout importable (the installed package is the one tested)."""
    full = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "http_proxy", "https_proxy")}
    full["PATH"] = os.pathsep.join([str(Path(python).parent), full.get("PATH", "")])
    full.update(env or {})
    return subprocess.run([python, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout)


def one_error_line(result, extra: str) -> str:
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    # (a crawl's log has begun by then: Scrapy's version lines come before it)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr[-2000:]
    assert f"pip install 'focuscrawl[{extra}]'" in errors[0] and "Traceback" not in result.stderr
    return errors[0]


def test_the_core_install_imports_everything_but_the_extras_parts(core_python, tmp_path):
    script = f"""
import importlib, importlib.util, pkgutil, sys
import focuscrawl
for name in {OPTIONAL!r}:
    assert importlib.util.find_spec(name) is None, name + " is installed: not a core venv"
assert "site-packages" in focuscrawl.__file__, focuscrawl.__file__
extra_modules = {sorted(EXTRA_MODULES)!r}
done = []
for module in pkgutil.walk_packages(focuscrawl.__path__, "focuscrawl."):
    if module.name in extra_modules:
        try:
            importlib.import_module(module.name)
        except ImportError as exc:
            assert "pip install 'focuscrawl[" in str(exc), (module.name, exc)
            continue
        raise AssertionError(module.name + " imported without its extra")
    importlib.import_module(module.name)
    done.append(module.name)
assert not [m for m in {OPTIONAL!r} if m in sys.modules]
print(len(done))
"""
    result = run(core_python, ["-c", script], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(result.stdout.split()[-1]) > 100  # the package's modules, every one imported


def test_commands_and_a_crawl_on_the_core_install(core_python, tmp_path):
    focuscrawl = str(Path(core_python).parent / "focuscrawl")
    listing = run(core_python, [focuscrawl, "--help"], tmp_path)
    assert listing.returncode == 0, listing.stderr[-3000:]
    for command in ("crawl", "train", "export", "demo", "render-server"):
        assert f"  {command} " in listing.stdout, listing.stdout

    web = generate_web(seed=0, hosts=4, pages_per_host=25, javascript_host=False, documents=False)
    warc, labels, seeds = web.write_warc(tmp_path / "web.warc.gz"), web.write_labels(tmp_path / "labels.tsv"), \
        tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{s}\n" for s in web.seeds))
    model = tmp_path / "model.joblib"
    hosts = "|".join(h.replace(".", r"\.") for h in web.train_hosts)
    trained = run(core_python, [focuscrawl, "train", str(warc), "--labels", str(labels), "--positive", web.topic,
                                "--include-host", f"^({hosts})$", "--cv-folds", "2", "-o", str(model)], tmp_path)
    assert trained.returncode == 0, trained.stdout[-2000:] + trained.stderr[-2000:]

    store = tmp_path / "crawl.db"
    crawl = [focuscrawl, "crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={model}",
             "-s", f"FOCUS_STORE={store}", "-s", "DOWNLOAD_DELAY=0", "-s", "FOCUS_BUDGET=30"]
    server_log = tmp_path / "server.jsonl"
    with ReplayProxy(RecordedWeb.from_records(web.records), robots=web.robots, log_path=str(server_log)) as proxy:
        crawled = run(core_python, crawl, tmp_path, env={"http_proxy": proxy.url})
        assert crawled.returncode == 0, crawled.stderr[-3000:]
        # what the core install lacks is refused before the crawl makes a request
        before = server_log.read_text().count("\n")
        always = run(core_python, [*crawl, "-s", "FOCUS_RENDER=always"], tmp_path, env={"http_proxy": proxy.url})
        assert one_error_line(always, "render").startswith("error: FOCUS_RENDER=always needs")
        shared = run(core_python, [*crawl, "-s", "FOCUS_FRONTIER_URL=redis://127.0.0.1:9/0"], tmp_path,
                     env={"http_proxy": proxy.url})
        one_error_line(shared, "redis")
        assert server_log.read_text().count("\n") == before
    assert 25 <= before <= 40  # the budget, robots.txt and a request or two in flight
    assert "rendering pages in a browser needs focuscrawl's render extra" in crawled.stderr  # auto mode: a warning

    exported = run(core_python, [focuscrawl, "export", "-s", f"FOCUS_STORE={store}", "-o", str(tmp_path / "out.jsonl")],
                   tmp_path)
    assert exported.returncode == 0 and (tmp_path / "out.jsonl").read_text().strip(), exported.stderr[-2000:]
    one_error_line(run(core_python, [focuscrawl, "export", "-s", f"FOCUS_STORE={store}", "--plot",
                                     str(tmp_path / "curve.png")], tmp_path), "plot")
    assert not (tmp_path / "curve.png").exists()
    one_error_line(run(core_python, [focuscrawl, "render-server", "--port", "0"], tmp_path), "render")

