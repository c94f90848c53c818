"""When a page is worth a browser: the shell test for one page, and what each host has shown.

A render costs a browser's time and memory, so in ``auto`` mode (``FOCUS_RENDER``) a page is
fetched plainly first and rendered only when its HTML looks like an application shell: few words
and few links, and a sign that a script builds the rest (an empty mount point, a ``<noscript>``
asking for JavaScript, a framework's data blob, or several scripts around almost nothing). A page
with no script at all has nothing a browser could add, and one with words and links is read as
it is, whatever its scripts.

``RenderHosts`` learns per host: renders that added links or text (against the page's plain
version) mark the host, and its later pages go straight to the browser, saving the plain fetch
each would cost; every ``probe_every``-th page of a marked host is still fetched plainly, and
probes that are not shells, or renders that add nothing, unmark it (sites change, and a host
whose home page is a shell may serve plain articles). In a crawl shared between workers, each
worker gives out the marks its own renders concluded (``shared_view``) and takes up the others'
(``take_shared``) for hosts it has rendered no page of. Pure: no Scrapy, no browser.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from focuscrawl.parsing.appshell import AppSignals

RENDER_MODES = ("auto", "always", "never")
RENDER_BACKENDS = ("playwright", "splash")


@dataclass(frozen=True, slots=True)
class ShellRules:
    """A page is a shell when a strong signal comes with at most ``max_words`` words (or twice as
    many and at most ``max_links`` links: a server-rendered menu around nothing), or when
    ``min_scripts`` scripts come with at most ``bare_words`` words and ``max_links`` links."""

    max_words: int = 80
    max_links: int = 3
    min_scripts: int = 3
    bare_words: int = 25


DEFAULT_RULES = ShellRules()


def shell_reason(words: int, links: int, app: AppSignals, rules: ShellRules = DEFAULT_RULES) -> str | None:
    """Why a page of ``words`` words and ``links`` links with ``app``'s signals should be rendered,
    or None when its HTML is to be read as it is."""
    if not app.scripts:
        return None
    strong = bool(app.empty_mount or app.asks_for_javascript or app.data_blob)
    thin = words <= rules.max_words or (links <= rules.max_links and words <= 2 * rules.max_words)
    bare = app.scripts >= rules.min_scripts and words <= rules.bare_words and links <= rules.max_links
    if not ((strong and thin) or bare):
        return None
    return f"app shell: {', '.join(app.describe())}; {words} words, {links} links"


def gained(plain_words: int, plain_links: int, words: int, links: int, *, min_links: int = 3,
           min_words: int = 50) -> bool:
    """A render added what the plain page lacked: ``min_links`` more links, or ``min_words`` more
    words and at least half as many again."""
    return links - plain_links >= min_links or (words - plain_words >= min_words and words >= 1.5 * plain_words)


@dataclass(slots=True)
class _Host:
    renders: int = 0  # renders compared with the page's plain version
    gains: int = 0  # of which added links or text
    misses: int = 0  # renders that added nothing and probes that were no shell, in a row
    marked: bool = False
    routed: int = 0  # pages routed while marked (every probe_every-th is a probe)
    why: str = ""


@dataclass
class RenderHosts:
    """Per host: does it need a browser? ``mark_after`` renders that gained mark it (and at least
    half of its renders gained); ``unmark_after`` misses in a row unmark it."""

    mark_after: int = 2
    unmark_after: int = 3
    probe_every: int = 8
    max_hosts: int = 100_000
    hosts: OrderedDict[str, _Host] = field(default_factory=OrderedDict)
    marked_ever: int = 0
    _sharing: bool = field(default=False, init=False, repr=False)  # set by the first ``shared_view``
    _touched: set[str] = field(default_factory=set, init=False, repr=False)  # marks changed since asked
    _published: set[str] = field(default_factory=set, init=False, repr=False)  # hosts given out as marked

    def _host(self, host: str) -> _Host:
        state = self.hosts.get(host)
        if state is None:
            state = self.hosts[host] = _Host()
            if len(self.hosts) > self.max_hosts:  # the oldest hosts go first: a long crawl's memory stays bounded
                self.hosts.popitem(last=False)
        return state

    def route(self, host: str) -> str | None:
        """Why ``host``'s next page goes straight to the browser, or None: fetched plainly (a host
        not marked, or a marked host's probe)."""
        state = self.hosts.get(host)
        if state is None or not state.marked:
            return None
        state.routed += 1
        if self.probe_every > 0 and state.routed % self.probe_every == 0:
            return None
        return state.why

    def rendered(self, host: str, plain_words: int, plain_links: int, words: int, links: int) -> bool:
        """A page of ``host`` rendered after its plain version was a shell: True when the render
        gained. Marks the host once renders have shown it needs them."""
        state = self._host(host)
        state.renders += 1
        if gained(plain_words, plain_links, words, links):
            state.gains += 1
            state.misses = 0
            if not state.marked and state.gains >= self.mark_after and 2 * state.gains >= state.renders:
                state.marked = True
                self.marked_ever += 1
                state.why = f"host needs rendering ({state.gains} of {state.renders} renders added links or text)"
                self._touch(host)
            return True
        self._missed(state, host)
        return False

    def plain_page(self, host: str, shell: bool) -> None:
        """A page of ``host`` fetched plainly: on a marked host, one that is no shell counts against it."""
        state = self.hosts.get(host)
        if state is not None and state.marked and not shell:
            self._missed(state, host)

    def _missed(self, state: _Host, host: str) -> None:
        state.misses += 1
        if state.marked and state.misses >= self.unmark_after:
            state.marked = False
            state.routed = 0
            state.why = ""
            self._touch(host)

    def _touch(self, host: str) -> None:
        if self._sharing:
            self._touched.add(host)

    # --- sharing with the other workers of a crawl -------------------------------------------------
    def shared_view(self) -> dict[str, str]:
        """Hosts whose mark this process's own renders set or cleared since last asked (every
        host they marked, the first time): host -> "1" marked, "" no longer."""
        if not self._sharing:
            self._sharing = True
            self._touched.update(h for h, s in self.hosts.items() if s.marked)
        view = {}
        for host in self._touched:
            state = self.hosts.get(host)
            if state is None or not state.renders:
                continue  # a mark taken from others, or a host forgotten: not this process's word
            if state.marked != (host in self._published):
                view[host] = "1" if state.marked else ""
                (self._published.add if state.marked else self._published.discard)(host)
        self._touched.clear()
        return view

    def take_shared(self, conclusions: dict[str, str]) -> None:
        """Other workers' marks: a host this process has no evidence of (no render compared, no
        probe missed) is marked or unmarked as they say; its own evidence keeps winning."""
        for host, value in conclusions.items():
            state = self.hosts.get(host)
            if state is not None and (state.renders or state.misses):
                continue
            if value:
                state = state or self._host(host)
                if not state.marked:
                    state.marked, state.routed = True, 0
                    state.why = "host needs rendering (another worker's renders added links or text)"
            elif state is not None and state.marked:
                state.marked, state.routed, state.why = False, 0, ""

    def needs_rendering(self, host: str) -> bool:
        state = self.hosts.get(host)
        return state is not None and state.marked

    def explain(self, host: str) -> str:
        state = self.hosts.get(host)
        if state is None or not state.renders:
            return "no page of this host rendered yet"
        verdict = "pages go to the browser" if state.marked else "pages fetched plainly"
        return f"{verdict}: {state.gains} of {state.renders} renders added links or text"

    def stats(self) -> dict[str, int]:
        return {"hosts_marked": sum(1 for s in self.hosts.values() if s.marked), "hosts_marked_ever": self.marked_ever}

    def adopt(self, other: RenderHosts) -> None:
        """What a resumed crawl's hosts showed before (JOBDIR)."""
        self.hosts, self.marked_ever = other.hosts, other.marked_ever

    def __getstate__(self) -> dict:  # JOBDIR: what each host has shown survives a resume
        return {"mark_after": self.mark_after, "unmark_after": self.unmark_after, "probe_every": self.probe_every,
                "max_hosts": self.max_hosts, "marked_ever": self.marked_ever,
                "hosts": {h: (s.renders, s.gains, s.misses, s.marked, s.routed, s.why) for h, s in self.hosts.items()}}

    def __setstate__(self, state: dict) -> None:
        hosts = state.pop("hosts")
        self.__init__(**{k: v for k, v in state.items() if k != "marked_ever"})
        self.marked_ever = state.get("marked_ever", 0)
        for host, values in hosts.items():
            self.hosts[host] = _Host(*values)
