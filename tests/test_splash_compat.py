"""scrapy-splash 0.11.1 works on current Scrapy through focuscrawl.rendering.splash.compat, and a
real scrapy-splash crawl renders a JavaScript-built page through ``scrapy render-server``.

``install()`` patches scrapy-splash's classes for the whole process, so every check runs in a
fresh interpreter; the crawl and the render server are real processes talking over 127.0.0.1."""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

if importlib.util.find_spec("scrapy_splash") is None:  # not imported here: it fails before install()
    pytest.skip("scrapy-splash is not installed", allow_module_level=True)

from tests.render_site import LINKS, Site  # noqa: E402

PROJECT = Path(__file__).resolve().parents[1]
TESTS = PROJECT / "tests"
CHROMIUM = "/usr/bin/chromium"
needs_browser = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")
# slow: a real Chromium behind scrapy-splash
pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]
PROXY_VARIABLES = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}


def clean_env() -> dict:
    """This environment without proxies (the render server would use them) and with the checkout
    importable."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT), env.get("PYTHONPATH")]))
    return env


def run_python(code: str, timeout: float = 60) -> dict:
    """Run ``code`` in a fresh interpreter; the JSON object it prints last."""
    result = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, env=clean_env(), capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr
    return {**json.loads(result.stdout.strip().splitlines()[-1]), "_stderr": result.stderr}


def test_install_makes_scrapy_splash_importable_and_says_once_what_it_patched():
    answer = run_python("""
import json, logging
logging.basicConfig(level=logging.INFO, format="LOG %(name)s %(message)s")
import scrapy.utils.url
try:
    import scrapy_splash
    plain = "ok"
except ImportError as exc:
    plain = str(exc)
from focuscrawl.rendering.splash import compat as splash_compat
first, second = splash_compat.install(), splash_compat.install()
import scrapy_splash
from scrapy.utils.misc import load_object
settings = splash_compat.splash_settings("http://127.0.0.1:8050", merge_with={"DOWNLOADER_MIDDLEWARES": {"my.Mw": 1}})
loaded = {path: load_object(path).__module__ for name in ("DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES")
          for path in settings[name] if "splash" in path}
loaded[settings["REQUEST_FINGERPRINTER_CLASS"]] = load_object(settings["REQUEST_FINGERPRINTER_CLASS"]).__module__
print(json.dumps({"plain": plain, "first": first, "second": second, "settings": settings, "loaded": loaded,
                  "lent_back": not hasattr(scrapy.utils.url, "canonicalize_url"),
                  "same_request": splash_compat.SplashRequest is scrapy_splash.SplashRequest}))
""")
    assert answer["first"] == answer["second"] and answer["same_request"] and answer["lent_back"]
    if answer["plain"] != "ok":  # scrapy-splash#332 unreleased: the import needed the patch
        assert "canonicalize_url" in answer["plain"]
        assert any("canonicalize_url" in patch for patch in answer["first"])
    logged = [line for line in answer["_stderr"].splitlines() if line.startswith("LOG focuscrawl")]
    assert len(logged) == (1 if answer["first"] else 0), logged  # said once, not at every install()

    settings = answer["settings"]
    assert settings["SPLASH_URL"] == "http://127.0.0.1:8050"
    assert settings["DOWNLOADER_MIDDLEWARES"]["my.Mw"] == 1  # the project's own are kept
    orders = {path.rsplit(".", 1)[1]: order for path, order in settings["DOWNLOADER_MIDDLEWARES"].items()}
    assert orders["SplashCookiesMiddleware"] == 723 and orders["SplashMiddleware"] == 725  # scrapy-splash's
    assert set(answer["loaded"].values()) <= {"scrapy_splash.middleware", "scrapy_splash.request"}


def test_the_patched_middlewares_fit_current_scrapy():
    answer = run_python("""
import inspect, json
from focuscrawl.rendering.splash.compat import install
install()
import scrapy_splash
from scrapy_splash.middleware import SafeRobotsTxtMiddleware
from scrapy.core.spidermw import SpiderMiddlewareManager
from scrapy.utils.deprecate import argument_is_required
dedup = scrapy_splash.SplashDeduplicateArgsMiddleware
classes = (scrapy_splash.SplashMiddleware, scrapy_splash.SplashCookiesMiddleware, SafeRobotsTxtMiddleware)
asks_spider = {f"{cls.__name__}.{name}": argument_is_required(getattr(cls, name), "spider")
               for cls in classes for name in ("process_request", "process_response") if hasattr(cls, name)}
output = SpiderMiddlewareManager._get_process_spider_output(dedup())  # raised TypeError before the patch
print(json.dumps({"asks_spider": asks_spider, "output_async": inspect.isasyncgenfunction(output),
                  "start_async": inspect.isasyncgenfunction(dedup.process_start),
                  "slot_key": scrapy_splash.SplashMiddleware._get_slot_key.__code__.co_names}))
""")
    assert not any(answer["asks_spider"].values()), answer["asks_spider"]
    assert answer["output_async"] and answer["start_async"]
    assert "get_slot_key" in answer["slot_key"] and "_get_slot_key" not in answer["slot_key"]


def test_a_scrapy_splash_that_needs_no_patch_is_left_alone():
    # scrapy-splash as it will be once fixed upstream: install() must find nothing to do
    answer = run_python("""
import json, scrapy.utils.url, w3lib.url
scrapy.utils.url.canonicalize_url = w3lib.url.canonicalize_url  # a fixed import
import scrapy_splash
from scrapy_splash.middleware import SafeRobotsTxtMiddleware
del scrapy.utils.url.canonicalize_url
class Fixed:
    async def process_start(self, start):
        async for item in start:
            yield item
    async def process_spider_output_async(self, response, result, spider=None):
        async for item in result:
            yield item
    def _get_slot_key(self, request):
        return self.crawler.engine.downloader.get_slot_key(request)
    def process_request(self, request, spider=None):
        return None
    def process_response(self, request, response, spider=None):
        return response
    async def robots(self, request, spider=None):
        return None
dedup, splash, cookies = (scrapy_splash.SplashDeduplicateArgsMiddleware, scrapy_splash.SplashMiddleware,
                          scrapy_splash.SplashCookiesMiddleware)
dedup.process_start, dedup.process_spider_output_async = Fixed.process_start, Fixed.process_spider_output_async
splash._get_slot_key = Fixed._get_slot_key
for cls in (splash, cookies):
    cls.process_request, cls.process_response = Fixed.process_request, Fixed.process_response
SafeRobotsTxtMiddleware.process_request = Fixed.robots
before = {name: getattr(splash, name) for name in ("_get_slot_key", "process_request", "process_response")}
from focuscrawl.rendering.splash.compat import install
patched = install()
print(json.dumps({"patched": patched, "untouched": all(getattr(splash, k) is v for k, v in before.items())}))
""")
    assert answer["patched"] == [] and answer["untouched"]


# --- a real crawl through the render server ----------------------------------------------------------
def render_server_command() -> list[str]:
    """``scrapy render-server``, as a user runs it (pyproject registers the command)."""
    return [sys.executable, "-m", "scrapy", "render-server"]


class Command:
    """``scrapy render-server --port 0`` as a process, its output lines read as they come."""

    def __init__(self, *args: str):
        self.process = subprocess.Popen([*render_server_command(), "--port", "0", *args], cwd=PROJECT, env=clean_env(),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        for stream, kept in ((self.process.stdout, self.stdout), (self.process.stderr, self.stderr)):
            threading.Thread(target=self._read, args=(stream, kept), daemon=True).start()

    def _read(self, stream, kept: list[str]) -> None:
        for line in stream:
            kept.append(line)
            self.lines.put(line)

    def wait_for_url(self, timeout: float = 45) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                assert self.process.poll() is None, "".join(self.stderr)
                continue
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if found:
                return found.group(1)
        raise AssertionError(f"the render server did not start: {''.join(self.stdout + self.stderr)}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture(scope="module")
def site():
    running = Site().start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def render_command():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}")
    command = Command("--max-contexts", "2", "--allow-private-networks")  # the site is on 127.0.0.1
    try:
        command.url = command.wait_for_url()
        yield command
    finally:
        command.kill()


@needs_browser
def test_a_scrapy_splash_crawl_sees_the_links_the_pages_scripts_built(site, render_command, tmp_path):
    result = subprocess.run([sys.executable, str(TESTS / "render_splash_crawl.py"), render_command.url, site.url,
                             str(tmp_path)], cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-3000:]

    for spider in ("upstream", "compat"):  # scrapy-splash's own settings, and splash_settings()
        lines = (tmp_path / f"items-{spider}.jsonl").read_text().splitlines()
        items = {item["kind"]: item for item in map(json.loads, lines)}
        page, rendered = items["page"], items["json"]
        assert page["url"] == f"{site.url}/app.html?{spider}" and page["status"] == 200  # the page's, not Splash's
        assert page["title"] == "Built by script"
        assert page["links"] == ["/inline-link", *LINKS["links"]]  # built by the page's scripts
        assert rendered["url"] == f"{site.url}{LINKS['links'][0]}"  # a link only the script built, rendered
        assert rendered["title"] == "seen by 0 links" and rendered["script"] == 1  # its js_source ran

    log = result.stderr
    assert "Traceback" not in log and "] ERROR:" not in log, log[-3000:]
    warned = [line for line in log.splitlines() if "Warning" in line and "splash" in line.lower()]
    assert not warned, warned  # no deprecation from scrapy-splash's patched parts
    assert "dupefilter/filtered" not in log

    rendered = "".join(render_command.stderr)  # the server's log: one line per render, by endpoint
    for spider in ("upstream", "compat"):
        assert re.search(rf"render\.html 200 \d+ ms {re.escape(site.url)}/app\.html\?{spider}", rendered), rendered
    assert len(re.findall(rf"render\.json 200 \d+ ms {re.escape(site.url)}/from-json-1", rendered)) == 2


@needs_browser
def test_the_render_server_command_stops_cleanly_on_sigterm(site, render_command):
    drivers = _children(render_command.process.pid)
    assert drivers, "no Playwright driver under the render server"
    answer: list = []
    query = urllib.parse.urlencode({"url": f"{site.url}/hang?stopping", "timeout": 30})
    in_flight = threading.Thread(target=lambda: answer.append(_get(f"{render_command.url}/render.html?{query}")))
    in_flight.start()
    assert site.wait_for("/hang?stopping")

    started = time.monotonic()
    render_command.process.send_signal(signal.SIGTERM)
    assert render_command.process.wait(30) == 0, "".join(render_command.stderr)
    assert time.monotonic() - started < 10  # the render under way does not hold the stop
    in_flight.join(10)
    status, error = answer[0]
    assert status == 502 and error["type"] == "RenderError" and "stopping" in error["info"]["text"]
    time.sleep(0.2)  # the reader threads take the last lines
    assert re.search(r"stopped after \d+ requests", "".join(render_command.stdout))
    assert not [pid for pid in drivers if os.path.exists(f"/proc/{pid}") and _state(pid) != "Z"]  # nothing left


def test_the_command_refuses_bad_options_in_one_line():
    result = subprocess.run([*render_server_command(), "--port", "70000"], cwd=PROJECT, env=clean_env(),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["error: --port must be a number from 0 to 65535, not '70000'"]


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as answer:
        return answer.code, json.loads(answer.read())


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    if int(stat.read().rsplit(b")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return "gone"
