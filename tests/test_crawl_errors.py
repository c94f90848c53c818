"""`scrapy crawl focused` with bad arguments: one clear `error:` line, exit code 2, no traceback,
and nothing fetched."""

from __future__ import annotations

import pytest

from .conftest import run_scrapy

pytestmark = pytest.mark.slow  # a scrapy crawl process a case


def crawl(cwd, *args):
    return run_scrapy(["crawl", "focused", *args, "-s", "LOG_LEVEL=ERROR"], cwd=cwd, timeout=120)


def assert_one_error(result, *words):
    assert result.returncode == 2, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in errors[0]


def test_missing_model(tmp_path):
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={tmp_path / 'none.joblib'}"),
                     "not found")


def test_corrupt_model(tmp_path):
    bad = tmp_path / "bad.joblib"
    bad.write_bytes(b"\x80\x04 this is not a model")
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={bad}"), "not a readable")


def test_no_model_given(tmp_path):
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/"), "no topic model")


@pytest.mark.parametrize("content", ["", "# only a comment\n\n"])
def test_empty_seeds_file(tmp_path, demo_model, content):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(content)
    assert_one_error(crawl(tmp_path, "-a", f"seeds={seeds}", "-a", f"model={demo_model}"), "holds no URL")


def test_seeds_that_are_not_urls(tmp_path, demo_model):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("www.example.test\n")
    assert_one_error(crawl(tmp_path, "-a", f"seeds={seeds}", "-a", f"model={demo_model}"), "not an http(s) URL")


def test_bad_threshold(tmp_path, demo_model):
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}", "-a", "threshold=high"),
                     "threshold")


@pytest.mark.parametrize("setting, words", [
    ("FOCUS_CRAWL_DELAY_OVER_CAP=bogus", "FOCUS_CRAWL_DELAY_OVER_CAP"),
    ("DOWNLOAD_DELAY=-1", "DOWNLOAD_DELAY"),
    ("FOCUS_BUDGET=lots", "FOCUS_BUDGET"),
    ("FOCUS_RELEVANCE_THRESHOLD=7", "FOCUS_RELEVANCE_THRESHOLD"),
    ("FOCUS_REWARD_THRESHOLD=lots", "FOCUS_REWARD_THRESHOLD"),
    ("FOCUS_REWARD_THRESHOLD=1.5", "FOCUS_REWARD_THRESHOLD"),
    ("FOCUS_EXCLUDE_FILE=/nonexistent/exclude.txt", "exclusion list"),
])
def test_bad_settings(tmp_path, demo_model, setting, words):
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}", "-s", setting), words)


# --- the preflight (focuscrawl/preflight.py): every configured part checked before the start ---------
def _closed_port() -> int:
    import socket

    with socket.socket() as sock:  # bound, then closed: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Service:
    """A local HTTP server answering every GET with ``status`` and ``body``, counting requests."""

    def __init__(self, status: int = 200, body: bytes = b"<html>hello</html>"):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.paths: list[str] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                service.paths.append(self.path)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_unreachable_redis(tmp_path, demo_model):
    port = _closed_port()
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}",
                           "-s", f"FOCUS_FRONTIER_URL=redis://127.0.0.1:{port}/0"),
                     "FOCUS_FRONTIER_URL", "Redis does not answer", "redis-server")


def test_render_always_without_a_browser(tmp_path, demo_model):
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}", "-s", "FOCUS_RENDER=always",
                           "-s", f"FOCUS_RENDER_BROWSER={tmp_path / 'no-chromium'}"),
                     "FOCUS_RENDER=always", "no Chromium", "FOCUS_RENDER_BROWSER")


@pytest.mark.parametrize("render", ["auto", "always"])
def test_splash_backend_without_splash_url(tmp_path, demo_model, render):
    """The backend chosen explicitly is not quietly downgraded to plain fetching."""
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}",
                           "-s", "FOCUS_RENDER_BACKEND=splash", "-s", f"FOCUS_RENDER={render}"),
                     "FOCUS_RENDER_BACKEND=splash needs SPLASH_URL")


def test_splash_url_with_nothing_listening(tmp_path, demo_model):
    url = f"http://127.0.0.1:{_closed_port()}"
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}",
                           "-s", "FOCUS_RENDER_BACKEND=splash", "-s", f"SPLASH_URL={url}"),
                     f"SPLASH_URL={url}", "no render service answers", "scrapy render-server")


@pytest.mark.parametrize("status, body", [(200, b"<html>a web server</html>"), (404, b"not found")])
def test_splash_url_that_is_not_splash(tmp_path, demo_model, status, body):
    """A web server (or a proxy) at SPLASH_URL: refused at the start, asked only its _ping, and
    asked directly even with a proxy in the environment."""
    with _Service(status, body) as service, _Service(405, b"proxy says no") as proxy:
        result = run_scrapy(["crawl", "focused", "-a", f"seeds={service.url}/", "-a", f"model={demo_model}",
                             "-s", "FOCUS_ALLOW_PRIVATE_NETWORKS=True", "-s", "FOCUS_RENDER_BACKEND=splash",
                             "-s", f"SPLASH_URL={service.url}", "-s", "LOG_LEVEL=ERROR"],
                            cwd=tmp_path, env={"http_proxy": proxy.url}, timeout=120)
        assert_one_error(result, f"SPLASH_URL={service.url}", "Splash")
        assert service.paths == ["/_ping"]
        assert proxy.paths == []


def test_store_that_is_a_folder(tmp_path, demo_model):
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}",
                           "-s", f"FOCUS_STORE={tmp_path}"), "FOCUS_STORE", "is a folder")


def test_store_that_is_not_a_database(tmp_path, demo_model):
    store = tmp_path / "crawl.db"
    store.write_text("these are my notes, not a crawl store\n" * 100)
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}",
                           "-s", f"FOCUS_STORE={store}"), "FOCUS_STORE", "not a crawl store")


def test_jobdir_that_is_a_file(tmp_path, demo_model):
    jobdir = tmp_path / "job"
    jobdir.write_text("")
    assert_one_error(crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}", "-s", f"JOBDIR={jobdir}"),
                     "JOBDIR", "not a folder")


def test_every_failure_is_reported_at_once(tmp_path):
    """A user fixes everything in one go: one line for each part that cannot work."""
    result = crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={tmp_path / 'none.joblib'}",
                   "-s", f"FOCUS_FRONTIER_URL=redis://127.0.0.1:{_closed_port()}/0", "-s", f"FOCUS_STORE={tmp_path}")
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 3, result.stderr
    assert "Traceback" not in result.stderr


def test_a_request_log_and_output_that_cannot_be_written(tmp_path, demo_model):
    """Asked for, they are not quietly left out (the request log was disabled with a warning, an
    output file failed with a traceback)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = crawl(tmp_path, "-a", "seeds=http://a.test/", "-a", f"model={demo_model}",
                   "-s", f"FOCUS_CRAWL_LOG={blocker / 'requests.jsonl'}", "-O", str(blocker / "out.jsonl"))
    assert result.returncode == 2, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "FOCUS_CRAWL_LOG" in errors[0] and "-o " in errors[1] and "not a folder" in errors[1]
