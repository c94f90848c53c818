"""The render server's HTTP service (Splash's endpoints on aiohttp) and running it, in the
caller's event loop (``serve``) or a thread of its own (``ServerThread``, for tests and tools)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import resource
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from focuscrawl.extras import require

# the render extra's: a core install that imports this module is told which extra it lacks
require("aiohttp", "render", "the render server")

from aiohttp import web  # noqa: E402

from focuscrawl.rendering.network_rules import ServerRules  # noqa: E402
from focuscrawl.rendering.server.errors import (  # noqa: E402
    BadOption, GlobalTimeoutError, InternalError, SplashError, UnsupportedContentType)
from focuscrawl.rendering.server.options import (  # noqa: E402
    DEFAULT_BROWSER, DEFAULT_HOST, DEFAULT_MAX_CONTEXTS, DEFAULT_MAX_TIMEOUT, DEFAULT_PORT, SHUTDOWN_GRACE, ArgumentCache,
    RenderOptions, environment_proxies, parse_options)
from focuscrawl.safety import NetworkPolicy  # noqa: E402

logger = logging.getLogger(__name__)
from focuscrawl.rendering.server.pages import Browser  # noqa: E402


# --- the HTTP service -----------------------------------------------------------------------------
class RenderServer:
    """Splash's HTTP API on ``host:port`` (port 0: a free one, see ``url`` after ``start``)."""

    def __init__(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *,
                 max_contexts: int = DEFAULT_MAX_CONTEXTS, max_timeout: float = DEFAULT_MAX_TIMEOUT,
                 executable_path: str | None = DEFAULT_BROWSER, env: Mapping[str, str] | None = None,
                 use_env_proxy: bool = True, policy: NetworkPolicy | None = None):
        if max_contexts < 1:
            raise ValueError(f"max_contexts must be at least 1, not {max_contexts}")
        if not max_timeout > 0:
            raise ValueError(f"max_timeout must be positive, not {max_timeout}")
        self.host, self.port = host, port
        self.max_timeout = float(max_timeout)
        env_proxies = environment_proxies(os.environ if env is None else env) if use_env_proxy else {}
        # private networks refused unless the policy allows them (the crawl's rules: focuscrawl.safety)
        self.browser = Browser(executable_path, max_contexts, env_proxies, ServerRules(policy))
        self.cache = ArgumentCache()
        self.renders = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Launch the browser, then listen. OSError when the address is taken, PlaywrightError
        when the browser cannot be launched."""
        try:
            self.browser_version = await self.browser.start()
        except BaseException:
            await self.browser.close()  # the Playwright driver, started for nothing
            raise
        app = web.Application()
        for endpoint in ("render.html", "render.json"):
            handler = self._endpoint(endpoint)
            app.router.add_get(f"/{endpoint}", handler)
            app.router.add_post(f"/{endpoint}", handler)
        app.router.add_get("/_ping", self._ping)
        # stop() closes the browser first, so the renders under way end at once; this bounds the rest
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_GRACE)
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port).start()
        except OSError:
            await self.stop()
            raise
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        """Stop listening, end the renders under way (each answered 502), close the browser."""
        runner, self._runner = self._runner, None
        if runner is not None:
            for site in list(runner.sites):
                await site.stop()
        await self.browser.close()
        if runner is not None:
            await runner.cleanup()

    def _endpoint(self, endpoint: str):
        async def handle(request: web.Request) -> web.Response:
            return await self._handle(request, endpoint)
        return handle

    async def _ping(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                                  "active": self.browser.active, "queued": self.browser.queued,
                                  "browser_launches": self.browser.launches})

    async def _handle(self, request: web.Request, endpoint: str) -> web.Response:
        started = time.monotonic()
        url, saved, error = "", None, ""
        try:
            data = await _read_arguments(request)
            url = str(data.get("url") or "")
            saved = self.cache.apply(data)
            options = parse_options(data, endpoint, self.max_timeout)
            result = await self._render(options)
            if endpoint == "render.html":
                response = web.Response(text=result["html"], content_type="text/html", charset="utf-8")
            else:
                response = web.json_response(result, dumps=lambda value: json.dumps(value, ensure_ascii=False))
        except SplashError as exc:
            response, error = web.json_response(exc.body(), status=exc.status), f" {type(exc).__name__}"
        except Exception as exc:  # noqa: BLE001 - any other failure is one answer, never a dead server
            logger.exception("render of %s failed", url or "(no url)")
            response, error = web.json_response(InternalError(str(exc)).body(), status=500), " InternalError"
        if saved:
            response.headers["X-Splash-Saved-Arguments"] = saved
        self.renders += 1
        logger.info("%s %d%s %d ms %s", endpoint, response.status, error, (time.monotonic() - started) * 1000,
                    url[:300])
        return response

    async def _render(self, options: RenderOptions) -> dict:
        deadline = asyncio.timeout(options.timeout)  # waiting for a context counts, as in Splash
        try:
            async with deadline:
                return await self.browser.render(options)
        except TimeoutError:
            if deadline.expired():
                raise GlobalTimeoutError({"timeout": options.timeout}) from None
            raise


async def _read_arguments(request: web.Request) -> dict:
    """The query's arguments, and a POST body's (JSON object, form, or JavaScript as js_source)."""
    data: dict[str, Any] = {name: request.query.get(name) for name in request.query}
    if request.method != "POST" or not request.body_exists:
        return data
    content_type = request.content_type
    if content_type == "application/json":
        raw = await request.read()
        try:
            body = json.loads(raw.decode("utf-8")) if raw.strip() else {}
        except (UnicodeDecodeError, ValueError) as exc:
            raise BadOption({"type": "invalid_json", "description": "Can't decode JSON", "message": str(exc)}) from None
        if not isinstance(body, dict):
            raise BadOption({"type": "invalid_json", "description": "The JSON body must be an object of arguments"})
        data.update(body)
    elif content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await request.post()
        data.update((name, form.get(name)) for name in form if isinstance(form.get(name), str))
    elif content_type == "application/javascript":
        data["js_source"] = (await request.read()).decode("utf-8", "replace")
    else:
        raise UnsupportedContentType({"supported": ["application/json", "application/x-www-form-urlencoded",
                                                    "multipart/form-data", "application/javascript"],
                                      "received": content_type})
    return data


# --- running it -------------------------------------------------------------------------------------
async def serve(server: RenderServer, stop: asyncio.Event, on_ready: Callable[[RenderServer], None] | None = None):
    """Start ``server``, call ``on_ready``, serve until ``stop`` is set, then stop it cleanly."""
    await server.start()
    try:
        if on_ready is not None:
            on_ready(server)
        await stop.wait()
    finally:
        await server.stop()


class ServerThread:
    """A RenderServer on its own event loop in a daemon thread, for synchronous code and tests.

    >>> with ServerThread(port=0) as running:   # doctest: +SKIP
    ...     requests.get(running.url + "/render.html", params={"url": "http://127.0.0.1:8000/"})
    """

    def __init__(self, **kwargs):
        self.server = RenderServer(**kwargs)
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="render-server", daemon=True)

    @property
    def url(self) -> str:
        return self.server.url

    def start(self, timeout: float = 60.0) -> ServerThread:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"the render server did not start within {timeout:g} s")
        if self._error is not None:
            raise self._error
        return self

    def stop(self, timeout: float = 30.0) -> None:
        if self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def main():
            self._stop = asyncio.Event()
            await serve(self.server, self._stop, lambda _server: self._ready.set())

        try:
            self._loop.run_until_complete(main())
        except BaseException as exc:  # noqa: BLE001 - handed to start()'s caller
            self._error = exc
        finally:
            self._ready.set()
            self._loop.close()
