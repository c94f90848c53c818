"""Shared fixtures: a generated demo web served by the replay proxy on 127.0.0.1, a topic model
trained on some of its hosts, and a helper that runs a real ``scrapy crawl`` against it."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# A test run started in the background by a non-interactive shell (a CI script's ``cmd &``) has
# SIGINT ignored, and every process it starts inherits that: the tests that stop a crawl, a
# console or a labelling session as Ctrl-C does would wait in vain. A handler here is reset to
# the default in the processes started, as an ignored signal is not.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

PROJECT = Path(__file__).resolve().parents[1]
SHARED = PROJECT.parent / "shared"

#: fixtures that start a server process for the test (a real redis-server): a test using one,
#: directly or through another fixture, is slow
SLOW_FIXTURES = frozenset({"redis_server"})


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by the marks
def pytest_collection_modifyitems(config, items):
    """The fast tier (``pytest -m "not slow"``) is the cores, contracts and parsers: a test is
    slow when it says so (``@pytest.mark.slow``, a module's ``pytestmark``: crawls, browsers,
    soaks, ``scrapy`` subprocesses), when it is an end-to-end crawl (``e2e``), or when it needs a
    server process (``SLOW_FIXTURES``)."""
    slow = pytest.mark.slow
    for item in items:
        if item.get_closest_marker("slow") is not None:
            continue
        if item.get_closest_marker("e2e") is not None or SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(slow)


@pytest.fixture(scope="session")
def demo_web():
    """The demo web of the crawl tests: its HTML hosts. The JavaScript-only host and the PDFs are
    left out, so that every request a crawl makes is one the crawler sends (a render's page loads
    its own scripts and data); tests/test_demo_rendering_web.py, tests/test_rendering_e2e.py and
    the `scrapy demo` test exercise them."""
    from focuscrawl.demo import generate_web

    return generate_web(seed=0, javascript_host=False, documents=False)


@pytest.fixture(scope="session")
def demo_files(demo_web, tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    warc = demo_web.write_warc(folder / "demo.warc.gz")
    labels = demo_web.write_labels(folder / "labels.tsv")
    seeds = folder / "seeds.txt"  # the crawl hosts' home pages, one a line
    seeds.write_text("\n".join(demo_web.seeds) + "\n")
    return {"dir": folder, "warc": Path(warc), "labels": Path(labels), "seeds": seeds}


@pytest.fixture(scope="session")
def demo_model(demo_web, demo_files):
    """A topic model trained on the demo web's training hosts only (the crawl hosts are unseen)."""
    from focuscrawl.relevance import load_examples, train_topic_model

    hosts = "|".join(h.replace(".", r"\.") for h in demo_web.train_hosts)
    examples = load_examples([str(demo_files["warc"])], labels_path=str(demo_files["labels"]),
                             include_host=f"^({hosts})$")
    model, _report = train_topic_model(examples, [demo_web.topic], cv_folds=3)
    path = demo_files["dir"] / "model.joblib"
    model.save(str(path))
    return path


def load_bench(name: str):
    """A script of ``bench/`` (not a package) as a module, for tests of its parts. It is registered
    in ``sys.modules`` (once), so what it hands to worker processes pickles by name."""
    module_name = f"focuscrawl_bench_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = Path(__file__).resolve().parents[1] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def _scrapy_env(env: dict | None) -> dict:
    full_env = dict(os.environ)
    full_env.pop("http_proxy", None)
    full_env.pop("https_proxy", None)
    full_env.setdefault("SCRAPY_SETTINGS_MODULE", "focuscrawl.settings")
    full_env.update(env or {})
    return full_env


def run_scrapy(args: list[str], cwd: Path, env: dict | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run ``python -m scrapy ARGS`` the way a user would, bounded in time."""
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=cwd, env=_scrapy_env(env),
                          capture_output=True, text=True, timeout=timeout)


# a parent of its own, so that its children's peak RSS is the crawl's alone (pytest's
# RUSAGE_CHILDREN keeps the largest of every child the session waited for)
_MEASURED = ("import resource, subprocess, sys\n"
             "done = subprocess.run([sys.executable, '-m', 'scrapy', *sys.argv[1:]])\n"
             "print(f'\\nmax RSS KiB: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}', file=sys.stderr)\n"
             "sys.exit(done.returncode)\n")


def run_scrapy_measured(args: list[str], cwd: Path, env: dict | None = None,
                        timeout: float = 240) -> tuple[subprocess.CompletedProcess, int]:
    """``run_scrapy``, and the crawl's peak resident memory in KiB."""
    result = subprocess.run([sys.executable, "-c", _MEASURED, *args], cwd=cwd, env=_scrapy_env(env),
                            capture_output=True, text=True, timeout=timeout)
    found = re.search(r"max RSS KiB: (\d+)\s*$", result.stderr)
    assert found, result.stderr[-2000:]
    return result, int(found.group(1))


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real ``redis-server`` on 127.0.0.1 for the session (no persistence), stopped at the end;
    the tests that need one are skipped where it is not installed (``.ci/run`` installs it)."""
    from tests.redis_server import RedisServer

    server = RedisServer.start(tmp_path_factory.mktemp("redis"))
    if server is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server):
    """The session's Redis, emptied: ``redis://127.0.0.1:PORT/0``."""
    redis_server.flush()
    return redis_server.url
