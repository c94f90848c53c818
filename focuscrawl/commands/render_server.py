"""``scrapy render-server``: Splash's HTTP API on Playwright and Chromium, until SIGINT or SIGTERM.

scrapy-splash code points ``SPLASH_URL`` at it (with ``focuscrawl.rendering.splash.compat`` for
current Scrapy) and renders with a current browser, no Docker, no QtWebKit. What it serves and
how: ``focuscrawl/rendering/server/``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import math
import os
import shutil
import signal
import sys

from focuscrawl.commandbase import CommandError, FocusCommand

LOGGER = "focuscrawl.rendering.server"


def parse_port(value) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        port = -1
    if not 0 <= port <= 65535:
        raise CommandError(f"--port must be a number from 0 to 65535, not {value!r}")
    return port


def parse_positive(option: str, value, kind=float):
    try:
        number = kind(value)
    except (TypeError, ValueError):
        number = -1
    if not (number > 0 and math.isfinite(number)):
        raise CommandError(f"{option} must be a positive {'whole ' if kind is int else ''}number, not {value!r}")
    return number


def find_browser(value: str | None) -> str | None:
    """The Chromium to launch: --browser, else Debian's, else None (Playwright's own download)."""
    from focuscrawl.rendering.server.options import DEFAULT_BROWSER

    if value:
        path = value if os.path.exists(value) else shutil.which(value)
        if not path:
            raise CommandError(f"no browser at {value} (--browser takes a Chromium executable)")
        return path
    return DEFAULT_BROWSER if os.path.exists(DEFAULT_BROWSER) else None


class Command(FocusCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return ("[--host ADDRESS] [--port N] [--max-contexts N] [--max-timeout S] [--browser PATH] [--no-env-proxy] "
                "[--allow-private-networks]")

    def short_desc(self) -> str:
        return "Serve Splash's HTTP API (render.html, render.json) with Chromium, for scrapy-splash"

    def long_desc(self) -> str:
        return (
            "A Splash-compatible rendering service on Playwright and Chromium: render.html and render.json "
            "(GET or POST, Splash's arguments url, wait, timeout, images, resource_timeout, proxy, headers, "
            "baseurl, js_source...) and _ping, with Splash's JSON errors (400 BadOption, 502 RenderError, "
            "504 GlobalTimeoutError). One browser, relaunched if it dies; each render in a fresh context, "
            "at most --max-contexts at once (others wait within their timeout). The environment's "
            "http_proxy/https_proxy/no_proxy are used unless a render names a proxy (--no-env-proxy: never). "
            "Point scrapy-splash at it with SPLASH_URL=http://HOST:PORT. One line per render on stderr. "
            "Ctrl-C or SIGTERM stops it. As the crawl, it refuses private networks (loopback, RFC 1918, "
            "link-local: the page, its redirects, every subresource, names resolving there) unless "
            "--allow-private-networks (or -s FOCUS_ALLOWED_NETWORKS=NET,... for some). It renders any public URL "
            "for whoever can reach it: keep it on 127.0.0.1."
        )

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("--host", default="127.0.0.1", metavar="ADDRESS",
                            help="address to listen on (default 127.0.0.1)")
        parser.add_argument("--port", default="8050", metavar="N",
                            help="port to listen on; 0 picks a free one (default 8050, as Splash)")
        parser.add_argument("--max-contexts", default="4", metavar="N",
                            help="renders at once, each in its own browser context (default 4)")
        parser.add_argument("--max-timeout", default="90", metavar="S",
                            help="the largest timeout a render may ask for, in seconds (default 90, as Splash)")
        parser.add_argument("--browser", metavar="PATH",
                            help="the Chromium to launch (default /usr/bin/chromium, else Playwright's own)")
        parser.add_argument("--no-env-proxy", action="store_true",
                            help="ignore http_proxy, https_proxy and all_proxy in the environment")
        parser.add_argument("--allow-private-networks", action="store_true",
                            help="render pages on loopback, private and link-local addresses (refused by default, "
                                 "as in the crawl; -s FOCUS_ALLOWED_NETWORKS=NET,... allows some)")

    def execute(self, args: list[str], opts) -> None:
        if args:
            raise CommandError(f"render-server takes no arguments, got {' '.join(args)!r}")
        port = parse_port(opts.port)
        max_contexts = parse_positive("--max-contexts", opts.max_contexts, int)
        max_timeout = parse_positive("--max-timeout", opts.max_timeout)
        from focuscrawl.rendering.server.app import RenderServer, serve  # MissingExtra without the render extra
        from playwright.async_api import Error as PlaywrightError
        browser = find_browser(opts.browser)
        from focuscrawl.safety import NetworkPolicy

        policy = NetworkPolicy.from_config(self.config())
        if opts.allow_private_networks:
            policy = NetworkPolicy(allow_all=True)
        try:
            server = RenderServer(opts.host, port, max_contexts=max_contexts, max_timeout=max_timeout,
                                  executable_path=browser, use_env_proxy=not opts.no_env_proxy, policy=policy)
        except ValueError as exc:  # a proxy variable that is not a proxy URL
            raise CommandError(f"{exc} (or use --no-env-proxy)") from None
        _log_to_stderr()
        if not _is_loopback(opts.host):
            print(f"warning: listening on {opts.host}: anyone who reaches it can make this machine fetch any URL",
                  file=sys.stderr, flush=True)
        try:
            asyncio.run(self._serve(server, serve))
        except OSError as exc:
            raise CommandError(f"cannot listen on {opts.host}:{port}: {exc.strerror or exc}") from None
        except PlaywrightError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            which = browser or "(Playwright's own)"
            raise CommandError(f"cannot launch the browser {which}: {first}") from None
        print(f"stopped after {server.renders} requests", flush=True)

    @staticmethod
    async def _serve(server, serve) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, stop.set)

        def ready(server) -> None:
            proxies = ", ".join(f"{scheme} via {proxy['server']}"
                                for scheme, proxy in server.browser.env_proxies.items())
            print(f"render server (Splash HTTP API) listening on {server.url}", flush=True)
            print(f"Chromium {server.browser_version}, {server.browser.max_contexts} renders at once, timeouts up to "
                  f"{server.max_timeout:g} s{', proxy ' + proxies if proxies else ''}", flush=True)
            policy = server.browser.rules.policy
            networks = ("private networks allowed" if policy.allow_all else "private networks refused" + (
                f" but {', '.join(map(str, policy.allowed))}" if policy.allowed else "")
                + " (--allow-private-networks)")
            print(networks, flush=True)
            print(f"use it with: SPLASH_URL={server.url}; Ctrl-C to stop", flush=True)

        try:
            await serve(server, stop, ready)
        finally:
            for number in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(number)


def _log_to_stderr() -> None:
    logger = logging.getLogger(LOGGER)
    if not any(getattr(handler, "_focus_render_server", False) for handler in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        handler._focus_render_server = True
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
