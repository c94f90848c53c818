"""Every focuscrawl setting (``FOCUS_*``), its default and its check, in one place.

``FocusConfig.from_settings(settings)`` reads a Scrapy ``Settings`` (or any mapping with ``get``):
each value is converted and checked, and a bad one raises ``ConfigError`` naming the setting, so
``scrapy crawl`` prints one line before the crawl starts. The defaults below are the only ones:
the crawl's parts take their values from a ``FocusConfig``, and ``FocusConfig()`` is the default
configuration. Scrapy's own settings that the crawl reads (``DOWNLOAD_DELAY``, ``DOWNLOAD_SLOTS``,
``ROBOTSTXT_OBEY``, ``ROBOTSTXT_USER_AGENT``, ``JOBDIR``) keep their defaults in the add-on
(``focuscrawl/addon.py``), which puts them in Scrapy's settings; the fields that mirror them take
their defaults from there.

Free of Scrapy's crawler (it only borrows Scrapy's list of non-HTML extensions), so the cores
and their tests can use it.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

# the one Scrapy import: its list of non-HTML extensions, the default of FOCUS_DENY_EXTENSIONS
from scrapy.linkextractors import IGNORED_EXTENSIONS

from focuscrawl import BOT_NAME
from focuscrawl.addon import SETTINGS as _scrapy_defaults

#: the document extensions read as pages (focuscrawl.parsing.documents); .doc is not among them
DOCUMENT_EXTENSIONS = ("docx", "odt", "pdf")

class ConfigError(ValueError):
    """A setting with a value focuscrawl cannot use; the message names the setting."""


# --- converters: raw value (as -s, a settings module or a dict gives it) -> checked value ----------
def _number(kind: type, minimum: float | None = 0, maximum: float | None = None) -> Callable[[str, Any], Any]:
    def convert(name: str, raw: Any) -> Any:
        if isinstance(raw, bool):
            raise ConfigError(f"{name} must be a number, not {raw!r}")
        try:
            value = kind(raw)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"{name} must be a number, not {raw!r}") from None
        if kind is float and value != value:
            raise ConfigError(f"{name} must be a number, not {raw!r}")
        if minimum is not None and value < minimum:
            raise ConfigError(f"{name} must be at least {minimum}, not {value}")
        if maximum is not None and value > maximum:
            raise ConfigError(f"{name} must be at most {maximum}, not {value}")
        return value
    return convert


def _probability(name: str, raw: Any) -> float:
    value = _number(float)(name, raw)
    if value > 1:
        raise ConfigError(f"{name} is a probability (0 to 1), not {value}")
    return value


def _similarity(name: str, raw: Any) -> float:
    """A probability above 0 (a Jaccard similarity of 0 would make every page a duplicate)."""
    value = _probability(name, raw)
    if value == 0:
        raise ConfigError(f"{name} must be above 0, not {value}")
    return value


def _optional(convert: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    return lambda name, raw: None if raw is None or raw == "" else convert(name, raw)


def _bool(name: str, raw: Any) -> bool:
    """As Scrapy's ``getbool``: a bool, 0/1, or the strings true/false/0/1."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{name} must be true or false, not {raw!r}")


def _list(name: str, raw: Any) -> tuple[str, ...]:
    """As Scrapy's ``getlist``: a list, or a comma-separated string."""
    if isinstance(raw, str):
        raw = raw.split(",")
    try:
        return tuple(str(item).strip() for item in raw if str(item).strip())
    except TypeError:
        raise ConfigError(f"{name} must be a list, not {raw!r}") from None


def _networks(name: str, raw: Any) -> tuple[str, ...]:
    """A list of networks (CIDR) or single addresses, as ``_list`` reads it; each normalised."""
    values = []
    for item in _list(name, raw):
        try:
            values.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ConfigError(f"{name} must list networks (10.0.0.0/8) or addresses, not {item!r}") from None
    return tuple(values)


def _choice(*choices: str) -> Callable[[str, Any], str]:
    def convert(name: str, raw: Any) -> str:
        if raw not in choices:
            raise ConfigError(f"{name} must be {' or '.join(repr(c) for c in choices)}, not {raw!r}")
        return raw
    return convert


def _text(name: str, raw: Any) -> str:
    if not isinstance(raw, str):
        raise ConfigError(f"{name} must be a string, not {raw!r}")
    return raw


def _redis_url(name: str, raw: Any) -> str:
    """A ``redis://`` (or ``rediss://``, ``unix://``) URL; its server is reached only when the crawl starts."""
    text = _text(name, raw).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("redis", "rediss", "unix") or not (parts.hostname or parts.path):
        raise ConfigError(f"{name} must be a redis://HOST:PORT/DB URL, not {raw!r}")
    try:
        parts.port  # noqa: B018 - raises on a port out of range
        database = parts.path.strip("/") if parts.scheme != "unix" else "0"
        if database and int(database) < 0:
            raise ValueError
    except ValueError:
        raise ConfigError(f"{name} must be a redis://HOST:PORT/DB URL (a port and a database number), "
                          f"not {raw!r}") from None
    return text


def _crawl_id(name: str, raw: Any) -> str:
    """A name for Redis keys: letters, digits, '.', '_' and '-' (no ':' or braces, which structure keys)."""
    text = _text(name, raw).strip()
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", text):
        raise ConfigError(f"{name} must be 1-64 letters, digits, '.', '_' or '-', not {raw!r}")
    return text


def _components(name: str, raw: Any) -> tuple[tuple[Any, float | None], ...]:
    """A component dict as Scrapy's ``DOWNLOADER_MIDDLEWARES`` (class path or class: an order, or
    None to turn it off), from a dict, (path, order) pairs, or JSON as ``-s`` gives it."""
    if isinstance(raw, str):
        import json

        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise ConfigError(f"{name} must be a dict of class paths and orders, not {raw!r}") from None
    try:
        pairs = tuple((path, order) for path, order in (raw.items() if isinstance(raw, Mapping) else raw))
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a dict of class paths and orders, not {raw!r}") from None
    for path, order in pairs:
        if order is not None and (isinstance(order, bool) or not isinstance(order, int | float)):
            raise ConfigError(f"{name}[{path!r}] must be a number (its order) or None, not {order!r}")
    return pairs


#: settings that are component dicts (Scrapy settings hold them as dicts)
COMPONENT_SETTINGS = frozenset({"FOCUS_RELEASE_POLICIES_BASE", "FOCUS_RELEASE_POLICIES"})


#: FOCUS_STRATEGY's choices (focuscrawl/learning/strategies.py implements them)
STRATEGIES = ("learned", "bestfirst", "shark", "bfs")


#: the crawl's backends (FOCUS_BACKEND's default, by FOCUS_FRONTIER_URL)
LOCAL_BACKEND = "focuscrawl.backends.local.LocalBackend"
SHARED_BACKEND = "focuscrawl.backends.shared.SharedBackend"


def setting(name: str, default: Any, convert: Callable[[str, Any], Any], doc: str) -> Any:
    """A FocusConfig field read from the setting ``name``."""
    if isinstance(default, list | set | dict):
        raise TypeError("mutable defaults are written as tuples")
    return field(default=default, metadata={"setting": name, "convert": convert, "doc": doc})


@dataclass(frozen=True)
class FocusConfig:
    # --- relevance ---------------------------------------------------------------------------
    relevance_threshold: float = setting(
        "FOCUS_RELEVANCE_THRESHOLD", 0.5, _probability,
        "Pages scoring at least this probability are relevant: they become exported items.")
    reward_threshold: float | None = setting(
        "FOCUS_REWARD_THRESHOLD", None, _optional(_probability),
        "Pages scoring at least this count as found for the link learner (full reward; the "
        "hops-since-relevant count restarts). None: the model's even-odds score (its training "
        "share of negatives, e.g. 0.83 for WebKB's course), stricter than the items' threshold "
        "for a minority topic, so that chasing borderline pages does not lead the crawl to more "
        "look-alikes.")
    link_evidence: float = setting(
        "FOCUS_LINK_EVIDENCE", 1.0, _number(float),
        "Weight of the link model's log-odds for the link that led to a page, added to the "
        "page's own: a course's syllabus reads like the course, the link to it does not. The sum "
        "is the item's score (against FOCUS_RELEVANCE_THRESHOLD), the learner's hit (against "
        "FOCUS_REWARD_THRESHOLD) and, as a probability, the parent score of the page's links; "
        "items keep both parts. 0: the page alone. Seeds have no link.")
    model: str | None = setting(
        "FOCUS_MODEL", None, _optional(_text),
        "Path of the topic model (joblib); the spider argument -a model= overrides it.")
    grow_model: bool | None = setting(
        "FOCUS_GROW_MODEL", None, _optional(_bool),
        "Grow the topic model from the crawl's own pages (self-training, in a worker thread, as the "
        "fetched pages double from FOCUS_GROW_FIRST): the pages it counts as found against every other "
        "page fetched. None: as the model's metadata says (scrapy train --grow).")
    grow_first: int = setting(
        "FOCUS_GROW_FIRST", 100, _number(int, 10),
        "Fetched pages before the first round of FOCUS_GROW_MODEL; each later round comes at twice as many.")
    grow_max_pages: int = setting(
        "FOCUS_GROW_MAX_PAGES", 4000, _number(int, 100),
        "Fetched pages FOCUS_GROW_MODEL keeps to train from (the first 5,000 characters of each; the "
        "oldest dropped first): its memory bound.")
    grow_round_seconds: float = setting(
        "FOCUS_GROW_ROUND_SECONDS", 120.0, _number(float, 1.0),
        "Time limit of one FOCUS_GROW_MODEL round in its worker thread: a round past it is given up, "
        "the model kept, and the model grows no more (the next round would have twice the pages).")
    grow_save: bool = setting(
        "FOCUS_GROW_SAVE", True, _bool,
        "Write each grown model beside the crawl's model (NAME.grown.joblib), for scrapy label, "
        "scrapy console and scrapy train CRAWL.db.")
    # --- output ------------------------------------------------------------------------------
    store: str | None = setting(
        "FOCUS_STORE", None, _optional(_text),
        "SQLite crawl store; None: JOBDIR/crawl.db with JOBDIR, else ./crawl.db.")
    crawl_log: str | None = setting(
        "FOCUS_CRAWL_LOG", None, _optional(_text), "JSON-lines log of every request (None: no log).")
    near_dup_threshold: float = setting(
        "FOCUS_NEAR_DUP_THRESHOLD", 0.9, _similarity, "Jaccard similarity of two near-duplicates.")
    minhash_permutations: int = setting(
        "FOCUS_MINHASH_PERMUTATIONS", 128, _number(int, 16), "MinHash permutations.")
    shingle_size: int = setting("FOCUS_SHINGLE_SIZE", 5, _number(int, 1), "Words in a shingle.")
    # --- budget and frontier -----------------------------------------------------------------
    budget: int = setting(
        "FOCUS_BUDGET", 0, _number(int),
        "Stop after this many requests (robots.txt fetches not counted; a render is one request, "
        "the scripts and data its page loads are counted apart: focus/render/requests). 0: no limit.")
    frontier_capacity: int = setting(
        "FOCUS_FRONTIER_CAPACITY", 1_000_000, _number(int, 1),
        "URLs the frontier holds; past it the lowest-priority are pruned (spilled with JOBDIR).")
    learner_nodes: int = setting(
        "FOCUS_LEARNER_NODES", 200_000, _number(int, 1),
        "Fetched pages the link learner keeps so that credit can flow back along their paths to the "
        "links that led there (about 0.6 KB a page; the least recently credited are forgotten first).")
    memory_trim_seconds: float = setting(
        "FOCUS_MEMORY_TRIM_SECONDS", 60.0, _number(float),
        "Hand memory freed after a big page back to the OS every this many seconds (glibc's malloc_trim; "
        "focuscrawl/memory.py), so a long crawl's resident memory is what it holds. 0: never.")
    frontier_url: str | None = setting(
        "FOCUS_FRONTIER_URL", None, _optional(_redis_url),
        "redis://HOST:PORT/DB of a frontier shared by several crawler processes (focuscrawl/distributed): "
        "each started with it joins one crawl. None: the frontier lives in this process.")
    backend: str | None = setting(
        "FOCUS_BACKEND", None, _optional(_text),
        "Class path of the crawl's state (frontier, seen set, exclusion list, budget, leases: "
        "focuscrawl/backends). None: the shared one (focuscrawl.backends.shared.SharedBackend) when "
        "FOCUS_FRONTIER_URL is set, else the in-process one (focuscrawl.backends.local.LocalBackend).")
    crawl_id: str = setting(
        "FOCUS_CRAWL_ID", "focus", _crawl_id,
        "The shared crawl's name: its Redis keys start with it, so several crawls share one Redis.")
    worker_timeout: float = setting(
        "FOCUS_WORKER_TIMEOUT", 30.0, _number(float, 1.0),
        "Seconds a worker of a shared crawl may go silent before it is taken for dead: its hosts are "
        "handed to others and its pages not done are queued again (it heartbeats 6 times as often).")
    shared_link_cache: int = setting(
        "FOCUS_SHARED_LINK_CACHE", 200_000, _number(int),
        "Queued URLs of a shared crawl whose link features (~0.5 KB each) a worker keeps, so that "
        "re-scoring them reads only their ~100-byte records from Redis (the rest from Redis once); "
        "the oldest forgotten first.")
    frontier_pack: bool = setting(
        "FOCUS_FRONTIER_PACK", True, _bool,
        "Keep queued URLs packed as bytes (a few hundred bytes each, deflated in deep hosts) "
        "instead of live Requests (~2.5 KB): a full frontier fits in well under 1 GB. False "
        "spends a little less CPU.")
    # --- traps and scope ---------------------------------------------------------------------
    max_depth: int = setting("FOCUS_MAX_DEPTH", 30, _number(int), "Most links followed from a seed.")
    max_url_length: int = setting("FOCUS_MAX_URL_LENGTH", 1024, _number(int), "Longest URL fetched.")
    max_repeated_segments: int = setting(
        "FOCUS_MAX_REPEATED_SEGMENTS", 3, _number(int), "Most repeats of one path segment.")
    host_budget: int = setting("FOCUS_HOST_BUDGET", 0, _number(int), "Most URLs admitted per host (0: no limit).")
    allowed_domains: tuple[str, ...] = setting(
        "FOCUS_ALLOWED_DOMAINS", (), _list, "Crawl only these domains and their subdomains (empty: all).")
    deny_extensions: tuple[str, ...] = setting(
        "FOCUS_DENY_EXTENSIONS", tuple(sorted(set(IGNORED_EXTENSIONS) - set(DOCUMENT_EXTENSIONS))), _list,
        "Extensions never fetched (Scrapy's list of non-HTML types, less the documents focuscrawl "
        "reads: see FOCUS_DOCUMENTS).")
    documents: bool = setting(
        "FOCUS_DOCUMENTS", True, _bool,
        "Read PDF, Word (.docx) and OpenDocument (.odt) documents as pages: scored, stored and "
        "followed. A link to one is followed only when promising (FOCUS_DOCUMENT_LINK_SCORE, or "
        "found on a relevant page), never blindly. Off: links to them are dropped.")
    document_link_score: float | None = setting(
        "FOCUS_DOCUMENT_LINK_SCORE", None, _optional(_number(float, None)),
        "The link score (its anchor, context and URL words) from which a document is worth its "
        "request (empty: the topic model's even-odds score).")
    max_redirects: int = setting(
        "FOCUS_MAX_REDIRECTS", 3, _number(int),
        "Redirect hops followed for a page (each hop goes back through the frontier).")
    url_aliases: bool = setting(
        "FOCUS_URL_ALIASES", True, _bool,
        "Learn per host which spellings of a URL it serves one page at (a redirect from /dir to "
        "/dir/, the same page at /dir/ and /dir/index.html, or at www.host and host: "
        "focuscrawl/frontier/aliases.py) and fetch its queued and future URLs in one spelling.")
    url_aliases_pages: int = setting(
        "FOCUS_URL_ALIASES_PAGES", 100_000, _number(int, 1),
        "Fetched pages whose spellings and content hashes are kept as evidence for URL aliases until "
        "another spelling of the page pairs with them (about 0.2 KB a page; the oldest forgotten first: "
        "a host's rules are learned from its first pages).")
    exclude_file: str | None = setting(
        "FOCUS_EXCLUDE_FILE", None, _optional(_text),
        "Exclusion list (hosts, domains, URL patterns; '#' comments), re-read when it changes.")
    exclude_check_seconds: float = setting(
        "FOCUS_EXCLUDE_CHECK_SECONDS", 5.0, _number(float), "How often the exclusion list is checked for changes.")
    # --- sitemaps and HEAD checks ------------------------------------------------------------
    follow_sitemaps: bool = setting(
        "FOCUS_FOLLOW_SITEMAPS", True, _bool, "Read the sitemaps robots.txt lists.")
    sitemap_max_urls: int = setting("FOCUS_SITEMAP_MAX_URLS", 10_000, _number(int), "URLs read from one sitemap.")
    follow_feeds: bool = setting(
        "FOCUS_FOLLOW_FEEDS", True, _bool,
        "Read the RSS and Atom feeds pages announce (<link rel=alternate>): their entries are URLs "
        "to visit and, with FOCUS_RECRAWL, signals that a page changed.")
    feed_max_entries: int = setting("FOCUS_FEED_MAX_ENTRIES", 500, _number(int, 1), "Entries read from one feed.")
    # --- revisits: a continuous crawl keeps what it found fresh ---------------------------------
    recrawl: bool = setting(
        "FOCUS_RECRAWL", False, _bool,
        "Continuous crawl: revisit the pages found (and the feeds and sitemaps read) to keep them "
        "fresh, with conditional requests, at intervals chosen from each page's estimated change "
        "rate and relevance (focuscrawl/freshness/). The crawl then ends only at its budget, "
        "CLOSESPIDER_TIMEOUT or a stop.")
    recrawl_share: float = setting(
        "FOCUS_RECRAWL_SHARE", 0.3, _number(float, 0.01, 1.0),
        "The share of the requests revisits may take while URLs never fetched are queued (all of "
        "them once none is).")
    recrawl_policy: str = setting(
        "FOCUS_RECRAWL_POLICY", "optimal", _choice("optimal", "uniform", "proportional"),
        "How revisits are spread over the pages: 'optimal', for the freshness of the pages "
        "weighted by relevance (Cho & Garcia-Molina); or the two baselines it is measured against, "
        "which know nothing of relevance and keep every page fetched, and spend the whole share "
        "round robin: 'uniform', every page as often; 'proportional', in proportion to its change rate.")
    recrawl_min_interval: float = setting(
        "FOCUS_RECRAWL_MIN_INTERVAL", 60.0, _number(float),
        "The shortest time between two visits of one page, in seconds.")
    recrawl_reallocate_seconds: float = setting(
        "FOCUS_RECRAWL_REALLOCATE_SECONDS", 5.0, _number(float, 0.1),
        "How often the revisit intervals are recomputed from the pages' change rates and the request rate.")
    # --- rendering (focuscrawl/rendering) ---------------------------------------------------------
    render: str = setting(
        "FOCUS_RENDER", "auto", _choice("auto", "always", "never"),
        "JavaScript-built pages: auto renders a page whose HTML looks like an application shell "
        "(and goes straight to the browser for a host whose renders keep adding links or text); "
        "always renders every page; never renders none.")
    render_backend: str = setting(
        "FOCUS_RENDER_BACKEND", "playwright", _choice("playwright", "splash"),
        "What renders: playwright (Chromium through scrapy-playwright) or splash (scrapy-splash "
        "requests to SPLASH_URL: a Splash, or `scrapy render-server`).")
    render_browser: str | None = setting(
        "FOCUS_RENDER_BROWSER", None, _optional(_text),
        "The Chromium executable (empty: Playwright's own if installed, else chromium on the PATH).")
    render_timeout: float = setting(
        "FOCUS_RENDER_TIMEOUT", 20.0, _number(float, 1.0),
        "The longest a render may take, in seconds (a host's renders get less once a few of them have "
        "shown what they take: rendering/health.py).")
    render_settle: float = setting(
        "FOCUS_RENDER_SETTLE", 0.5, _number(float, 0.0, 10.0),
        "After the page loads, how long the document must go without changing before it is read "
        "(seconds; the wait ends at FOCUS_RENDER_TIMEOUT whatever the page does).")
    render_max_bytes: int = setting(
        "FOCUS_RENDER_MAX_BYTES", 4 * 1024 * 1024, _number(int, 1024),
        "A rendered page's subresources larger than this are not loaded, and a page whose "
        "document grows past it is cut.")
    render_other_hosts: bool = setting(
        "FOCUS_RENDER_OTHER_HOSTS", False, _bool,
        "Let a rendered page load scripts and data from other hosts (CDNs, APIs). Off: only its own "
        "host is contacted, one request at a time, and only what its robots.txt allows.")
    render_contexts: int = setting(
        "FOCUS_RENDER_CONTEXTS", 2, _number(int, 1),
        "Pages rendered at once (each in its own browser context, in one browser process).")
    render_max_browser_mb: int = setting(
        "FOCUS_RENDER_MAX_BROWSER_MB", 1024, _number(int, 64),
        "The browser is restarted between renders when its processes hold more memory than this (MB).")
    head_check: bool = setting(
        "FOCUS_HEAD_CHECK", False, _bool,
        "Send a HEAD first to URLs whose extension does not say 'page'; skip them unless HTML.")
    release_policies_base: tuple[tuple[Any, float | None], ...] = setting(
        "FOCUS_RELEASE_POLICIES_BASE", (
            ("focuscrawl.scheduling.aliases.UrlAliases", 100),
            ("focuscrawl.scheduling.policies.Patience", 200),
            ("focuscrawl.scheduling.policies.HeadCheck", 300),
            ("focuscrawl.scheduling.recrawl.Recrawl", 400),
            # last: a request held back by another policy is not made a render
            ("focuscrawl.scheduling.rendering.RenderRouting", 900),
            ("focuscrawl.scheduling.rendering.RenderContinuation", 950),
        ), _components,
        "focuscrawl's own release policies (class path: order), each switched on by its own "
        "setting: what the scheduler asks, in ascending order, about a request on its way out "
        "(focuscrawl/scheduling/release.py). Set FOCUS_RELEASE_POLICIES instead.")
    release_policies: tuple[tuple[Any, float | None], ...] = setting(
        "FOCUS_RELEASE_POLICIES", (), _components,
        "Release policies of a project's own (class path: order), merged over "
        "FOCUS_RELEASE_POLICIES_BASE as Scrapy merges DOWNLOADER_MIDDLEWARES; None turns one off. "
        "Each is built from_crawler(crawler, scheduler) and answers review(host, entry, request, now) "
        "with the request to send or None to hold it (focuscrawl/scheduling/release.py).")
    # --- politeness --------------------------------------------------------------------------
    politeness_per_ip: bool = setting(
        "FOCUS_POLITENESS_PER_IP", False, _bool,
        "One connection per IP address too (host names on one server share its delay); names "
        "are resolved once per host, on this machine.")
    robots_cache_seconds: float = setting(
        "FOCUS_ROBOTS_CACHE_SECONDS", 86400.0, _number(float), "How long a robots.txt is trusted.")
    robots_error_retry_seconds: float = setting(
        "FOCUS_ROBOTS_ERROR_RETRY_SECONDS", 600.0, _number(float),
        "How long a host whose robots.txt answered 5xx or was unreachable is treated as disallowed.")
    max_crawl_delay: float = setting(
        "FOCUS_MAX_CRAWL_DELAY", 30.0, _number(float), "Cap on a robots.txt Crawl-delay.")
    crawl_delay_over_cap: str = setting(
        "FOCUS_CRAWL_DELAY_OVER_CAP", "cap", _choice("cap", "skip"),
        "A host asking for more than the cap: 'cap' crawls it at the cap, 'skip' does not crawl it.")
    adaptive_delay_factor: float = setting(
        "FOCUS_ADAPTIVE_DELAY_FACTOR", 2.0, _number(float),
        "The per-host delay is at least this times the mean of its last 5 response times.")
    backoff_base: float = setting(
        "FOCUS_BACKOFF_BASE", 5.0, _number(float),
        "After 429/503 without Retry-After: exponential back-off from this many seconds...")
    backoff_max: float = setting("FOCUS_BACKOFF_MAX", 3600.0, _number(float), "... up to this many.")
    max_wait: float = setting(
        "FOCUS_MAX_WAIT", 300.0, _number(float),
        "Finish rather than wait longer than this for a host to become ready (back-offs, "
        "robots.txt answering 5xx); with JOBDIR the waiting URLs are kept for a resumed crawl.")
    checkpoint_seconds: float = setting(
        "FOCUS_CHECKPOINT_SECONDS", 30.0, _number(float), "JOBDIR checkpoint period.")
    # --- the web console (focuscrawl/observe/console.py) ---------------------------------------
    console_port: int = setting(
        "FOCUS_CONSOLE_PORT", 0, _number(int, 0, 65535),
        "Serve the web console on this port while the crawl runs (its URL, with a random token, is "
        "logged at INFO): the harvest curve, hosts, the frontier's best URLs, the latest relevant "
        "pages and the labelling queue. 0: no console.")
    console_host: str = setting(
        "FOCUS_CONSOLE_HOST", "127.0.0.1", _text,
        "The address the console listens on; another than 127.0.0.1 shows the crawl (token "
        "required still) to whoever reaches that address.")
    # --- progress: the crawl's live figures (focuscrawl/observe/progress.py) ----------------------
    progress_seconds: float = setting(
        "FOCUS_PROGRESS_SECONDS", 5.0, _number(float),
        "Show the crawl's progress every this many seconds: requests, pages, relevant pages found, "
        "harvest overall and recent, frontier, hosts active/waiting/blocked, time left to the "
        "budget; a live panel on a terminal, a log line otherwise; the figures also go to the stats "
        "(focus/progress/*). 0: off.")
    progress_panel: str = setting(
        "FOCUS_PROGRESS_PANEL", "auto", _choice("auto", "always", "never"),
        "How progress is shown: auto, a live panel when stderr is a terminal and a log line "
        "otherwise; always, the panel (even when stderr is not a terminal); never, the log line.")
    progress_window: int = setting(
        "FOCUS_PROGRESS_WINDOW", 200, _number(int, 1),
        "The recent requests the recent harvest and the time left to the budget are measured over.")
    # --- network safety (focuscrawl/safety) --------------------------------------------------
    allow_private_networks: bool = setting(
        "FOCUS_ALLOW_PRIVATE_NETWORKS", False, _bool,
        "Fetch from non-public addresses too. By default a URL whose host is a loopback, private "
        "(RFC 1918, fc00::/7), link-local (169.254.0.0/16, fe80::/10: cloud metadata), carrier-grade "
        "NAT, multicast, reserved or documentation address, in any spelling (::ffff:127.0.0.1, "
        "2130706433, 0x7f.1), is refused at admission, and so is a name resolving to one (checked on "
        "the address connected to) or a response from one: counted as "
        "focus/refused/private_network/<kind>. Through an explicit proxy (http_proxy, "
        "meta['proxy']) the proxy resolves names: only addresses in URLs are checked. The DNS "
        "resolver reads this and FOCUS_ALLOWED_NETWORKS from the project and command-line "
        "settings (Scrapy builds it once per process, before a spider's custom_settings).")
    allowed_networks: tuple[str, ...] = setting(
        "FOCUS_ALLOWED_NETWORKS", (), _networks,
        "Non-public networks (CIDR) or addresses fetched all the same, e.g. 10.0.0.0/8 for an "
        "intranet crawl or 127.0.0.1 for a local test server; every other one stays refused.")
    # --- the order: the strategy, patience and the link learner -------------------------------
    strategy: str = setting(
        "FOCUS_STRATEGY", "learned", _choice(*STRATEGIES),
        "What orders the frontier: 'learned', the link-reward learner; or a classic focused crawler "
        "to compare it with (focuscrawl/learning/strategies.py): 'bestfirst', the score of the best "
        "page found linking to a URL; 'shark', shark-search (Hersovici et al. 1998); 'bfs', "
        "breadth-first by discovery order. The frontier, admission, politeness and robots.txt are "
        "the same for all.")
    patience: float = setting(
        "FOCUS_PATIENCE", 2.0, _number(float),
        "The longest a request is held for a URL scoring FOCUS_PATIENCE_MARGIN more at a host that "
        "will be free soon (0: never hold), or for one the remaining budget can buy "
        "(FOCUS_PATIENCE_PRICE: focuscrawl/scheduling/policies.py Patience). Seeds are never held.")
    patience_margin: float = setting("FOCUS_PATIENCE_MARGIN", 0.25, _number(float, None), "See FOCUS_PATIENCE.")
    patience_price: str = setting(
        "FOCUS_PATIENCE_PRICE", "budget", _choice("budget", "time", "request"),
        "What a wait for a better URL is priced in (see FOCUS_PATIENCE). 'budget' (with "
        "FOCUS_BUDGET): a ready request is held when its URL is below the best the remaining "
        "requests can still buy (the best R / (F + g R) of the frontier: R requests left, F URLs "
        "queued, g new URLs found per request) and one at or above it is at a host free within "
        "FOCUS_PATIENCE, since sending it spends a request the budget needs; and, as 'time', "
        "while the wait costs no time. Without FOCUS_BUDGET it is 'time'. 'time': held only while "
        "the better URL's host is free before a request sent now would be through the crawler "
        "(fast on a fast server, never on a web whose hosts' delays bound the crawl). 'request': "
        "held whenever a URL scoring FOCUS_PATIENCE_MARGIN more is at a host free within "
        "FOCUS_PATIENCE (more relevant pages per request, fewer per minute).")
    credit_decay: float = setting(
        "FOCUS_CREDIT_DECAY", 0.5, _number(float), "Credit passed back per ancestor hop of a relevant page.")
    exploration: float = setting(
        "FOCUS_EXPLORATION", 0.3, _number(float),
        "Weight of the exploration bonus of hosts, path prefixes and pages whose links are untried.")
    hub_cap: float = setting(
        "FOCUS_HUB_CAP", 1.5, _number(float),
        "What a page's fetched children can add to its value at most, in relevant pages: a hub "
        "that led to many is worth up to FOCUS_CREDIT_DECAY x this more than its own reward, so "
        "one big hub does not drown the rest.")
    learning_rate: float = setting(
        "FOCUS_LEARNING_RATE", 0.05, _number(float),
        "Step size of the online link model (AdaGrad): larger learns from fewer pages, noisier. "
        "AdaGrad's first steps for a feature are its largest, and most link words are seen once or "
        "twice: measured on WebKB, at 0.2 the learned part of a priority ranked the frontier no "
        "better than chance.")

    # --- Scrapy's settings the crawl reads (their defaults: focuscrawl/addon.py) ---------------
    download_delay: float = _scrapy_defaults["DOWNLOAD_DELAY"]
    per_host_delays: tuple[tuple[str, float], ...] = ()
    obey_robots: bool = _scrapy_defaults["ROBOTSTXT_OBEY"]
    robots_agent: str = BOT_NAME
    jobdir: str | None = None

    @property
    def backend_path(self) -> str:
        """The class path of the crawl's backend: FOCUS_BACKEND, or the default for FOCUS_FRONTIER_URL."""
        if self.backend:
            return self.backend
        return SHARED_BACKEND if self.frontier_url else LOCAL_BACKEND

    @classmethod
    def from_settings(cls, settings: Any) -> FocusConfig:
        """Every setting read and checked; raises ConfigError naming the first bad one."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            name = f.metadata.get("setting")
            if name is None:
                continue
            raw = settings.get(name)
            if raw is not None:
                values[f.name] = f.metadata["convert"](name, raw)
        values.update(_scrapy_settings(settings))
        return cls(**values)

    @classmethod
    def settings(cls) -> list[tuple[str, Any, str]]:
        """(setting name, default, what it does) of every FOCUS_* setting, for documents and help."""
        return [(f.metadata["setting"], f.default, f.metadata["doc"])
                for f in dataclasses.fields(cls) if "setting" in f.metadata]


def _scrapy_settings(settings: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    delay = settings.get("DOWNLOAD_DELAY")
    if delay is not None:
        values["download_delay"] = _number(float)("DOWNLOAD_DELAY", delay)
    slots = settings.get("DOWNLOAD_SLOTS") or {}
    if isinstance(slots, str):  # -s DOWNLOAD_SLOTS='{"host": {"delay": 2}}'
        import json

        try:
            slots = json.loads(slots)
        except ValueError:
            raise ConfigError(f"DOWNLOAD_SLOTS must be a dict, not {slots!r}") from None
    try:
        values["per_host_delays"] = tuple(
            (host, _number(float)(f"DOWNLOAD_SLOTS[{host!r}]['delay']", slot["delay"]))
            for host, slot in dict(slots).items() if "delay" in slot)
    except (TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError("DOWNLOAD_SLOTS must map hosts to dicts with a numeric 'delay'") from None
    obey = settings.get("ROBOTSTXT_OBEY")
    if obey is not None:
        values["obey_robots"] = _bool("ROBOTSTXT_OBEY", obey)
    values["robots_agent"] = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or BOT_NAME
    values["jobdir"] = settings.get("JOBDIR") or None
    return values


#: The default configuration: what a part built without settings uses.
DEFAULTS = FocusConfig()
