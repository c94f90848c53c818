"""The crawl backends' contract (``focuscrawl.backends.CrawlBackend``), one suite driven over each:
the in-process one (``LocalBackend``, with JOBDIR) and the Redis one (``SharedBackend``, a real
``redis-server``: those cases are slow). The scheduler reads nothing else of them."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from focuscrawl.backends import CrawlBackend, backend_class
from focuscrawl.backends.local import LocalBackend
from focuscrawl.config import LOCAL_BACKEND, SHARED_BACKEND, ConfigError, FocusConfig
from focuscrawl.frontier import Entry
from focuscrawl.frontier.admission import Admission
from focuscrawl.learning import LinkRewardLearner, link_context, link_features
from focuscrawl.politeness import DelayPolicy
from focuscrawl.politeness.gate import HostGate
from focuscrawl.scheduling.requests import RequestSerializer

BACKENDS = [pytest.param("local", id="local"), pytest.param("shared", id="shared", marks=pytest.mark.slow)]


class Part:
    """A stateful part a restarted crawl may take up (``focuscrawl.scheduling.persistence.Stateful``)."""

    def __init__(self, name: str, value=None):
        self.name = name
        self.value = value

    def state(self):
        return self.value

    def restore(self, state) -> None:
        self.value = state


class Crawl:
    """One process's view of a crawl: a backend built as the scheduler builds it, bound and opened."""

    def __init__(self, settings: dict, kept: list | None = None):
        self.crawler = get_crawler(settings_dict=settings)
        self.config = FocusConfig.from_settings(self.crawler.settings)
        self.backend = build_from_crawler(backend_class(self.config), self.crawler, config=self.config,
                                          serializer=RequestSerializer())
        self.gate = HostGate(DelayPolicy(minimum=0.0), agent="focuscrawl", obey_robots=False)
        self.admission = Admission(self.config, self.gate.robots, self.backend.exclusion)
        self.admission.seen = self.backend.seen
        self.learner = LinkRewardLearner()
        self.backend.bind(self.gate, self.admission, kept or [])
        self.enqueued: list[str] = []
        self.backend.open(learner=self.learner, enqueue=self._enqueue, apply_robots=lambda host: None,
                          use_learner=lambda learner: None, use_strategy=lambda strategy: None)

    def _enqueue(self, request: Request) -> bool:
        self.enqueued.append(request.url)
        return True

    def queue(self, url: str, priority: float = 1.0) -> None:
        """``url`` admitted and queued, as the scheduler's enqueue_request does."""
        assert self.backend.seen.add(url)
        request = Request(url)
        vector = self.learner.vectorise(link_features(link_context(url, request.meta)))
        pruned = self.backend.frontier.push(url.split("/")[2], Entry(priority, url, request, vector,
                                                                     self.backend.frontier.version))
        self.backend.queued(request, pruned)

    def release(self) -> tuple[str, Entry] | None:
        """The best URL popped and released for download, as the scheduler's next_request does."""
        popped = self.backend.frontier.pop(1e12)
        if popped is not None:
            host, entry = popped
            self.gate.start(host, entry.payload)
            self.backend.released(host, entry.url, entry.payload)
        return popped

    def close(self) -> None:
        self.backend.close(self.learner, None)


@pytest.fixture(params=BACKENDS)
def settings(request, tmp_path) -> dict:
    if request.param == "local":
        return {"FOCUS_BACKEND": LOCAL_BACKEND, "JOBDIR": str(tmp_path / "job")}
    return {"FOCUS_BACKEND": SHARED_BACKEND, "FOCUS_FRONTIER_URL": request.getfixturevalue("redis_url"),
            "FOCUS_CRAWL_ID": "contract", "JOBDIR": str(tmp_path / "job")}


def test_a_backend_is_the_one_its_settings_name(settings):
    crawl = Crawl(settings)
    assert isinstance(crawl.backend, CrawlBackend)
    assert type(crawl.backend).__module__ + "." + type(crawl.backend).__name__ == settings["FOCUS_BACKEND"]
    assert crawl.backend.shared == ("FOCUS_FRONTIER_URL" in settings)
    crawl.close()


def test_the_default_backend_follows_the_frontier_url():
    assert FocusConfig().backend_path == LOCAL_BACKEND
    assert FocusConfig(frontier_url="redis://127.0.0.1:1/0").backend_path == SHARED_BACKEND
    assert FocusConfig(backend="my.Backend", frontier_url="redis://127.0.0.1:1/0").backend_path == "my.Backend"
    assert backend_class(FocusConfig()) is LocalBackend
    with pytest.raises(ConfigError, match="FOCUS_BACKEND=focuscrawl.nothing.Here cannot be loaded"):
        backend_class(FocusConfig(backend="focuscrawl.nothing.Here"))
    with pytest.raises(ConfigError, match="is not a crawl backend .* it has no from_crawler, check"):
        backend_class(FocusConfig(backend="focuscrawl.frontier.Entry"))
    with pytest.raises(ConfigError, match="is not a crawl backend"):
        backend_class(FocusConfig(backend="focuscrawl.config.LOCAL_BACKEND"))


def test_the_frontier_gives_the_best_url_first_and_the_seen_set_remembers(settings):
    crawl = Crawl(settings)
    crawl.queue("http://a.test/low", 1.0)
    crawl.queue("http://b.test/high", 5.0)
    assert len(crawl.backend.frontier) == 2
    assert "http://a.test/low" in crawl.backend.seen and not crawl.backend.seen.add("http://a.test/low")
    host, entry = crawl.release()
    assert (host, entry.url) == ("b.test", "http://b.test/high")
    assert entry.payload.url == "http://b.test/high"
    crawl.close()


def test_the_budget_counts_every_release(settings):
    crawl = Crawl(settings)
    for k in range(3):
        crawl.queue(f"http://h{k}.test/page")
    assert crawl.backend.crawl_released() == 0
    while crawl.release() is not None:
        pass
    assert crawl.backend.released_here == 3
    assert crawl.backend.crawl_released() == 3
    crawl.close()


def test_work_runs_out_when_nothing_is_queued_or_in_work(settings):
    crawl = Crawl(settings)
    assert not crawl.backend.more_work() and not crawl.backend.refill(crawl.learner)
    assert crawl.backend.tick(0.0, crawl.learner, None) is False  # nothing learned elsewhere
    assert crawl.backend.work_time() >= 0.0
    crawl.close()


def test_the_exclusion_list_is_the_files(settings, tmp_path):
    listed = tmp_path / "exclude.txt"
    listed.write_text(".asked-us.test\n")
    crawl = Crawl({**settings, "FOCUS_EXCLUDE_FILE": str(listed)})
    assert crawl.backend.exclusion.excludes("http://www.asked-us.test/") == "domain asked-us.test"
    assert crawl.backend.exclusion.excludes("http://fine.test/") is None
    crawl.close()


def test_a_restarted_crawl_takes_up_the_seen_set_the_queue_and_the_budget(settings):
    first = Crawl(settings)
    first.queue("http://a.test/1")
    first.queue("http://a.test/2", 2.0)
    first.queue("http://b.test/1", 3.0)
    host, entry = first.release()
    assert entry.url == "http://b.test/1"
    first.backend.done({entry.url})
    first.close()
    again = Crawl(settings)
    assert {"http://a.test/1", "http://a.test/2", "http://b.test/1"} <= {
        url for url in ("http://a.test/1", "http://a.test/2", "http://b.test/1") if url in again.backend.seen}
    assert again.backend.crawl_released() == 1
    urls = []
    while (popped := again.release()) is not None:
        urls.append(popped[1].url)
        again.backend.frontier.release(popped[0], 0.0)
    assert sorted(urls) == ["http://a.test/1", "http://a.test/2"]  # the page done is not fetched again
    again.close()


def test_a_restart_with_jobdir_takes_up_the_processs_own_parts(settings):
    """The parts the scheduler asks to be kept (URL aliases, the revisit plan, hosts rendered) are
    given back to their ``restore`` by a restart with the same JOBDIR, and by none without it."""
    first = Crawl(settings, kept=[Part("aliases", "learned"), Part("render_hosts", "marked")])
    first.close()
    aliases, render_hosts = Part("aliases"), Part("render_hosts")
    Crawl(settings, kept=[aliases, render_hosts]).close()
    assert (aliases.value, render_hosts.value) == ("learned", "marked")
    without = {k: v for k, v in settings.items() if k != "JOBDIR"}
    Crawl(without, kept=[Part("aliases", "learned")]).close()
    part = Part("aliases")
    Crawl(without, kept=[part]).close()
    assert part.value is None


def test_a_damaged_worker_state_starts_afresh(tmp_path, caplog):
    from focuscrawl.backends.worker_state import WORKER_STATE, WorkerState

    (tmp_path / WORKER_STATE).write_bytes(b"not a pickle")
    part = Part("aliases")
    assert WorkerState(str(tmp_path), [part], 60.0).restore() == 0
    assert part.value is None and "starts afresh" in caplog.text


def test_a_continuous_crawl_is_accepted_by_both_backends():
    config = FocusConfig(recrawl=True, frontier_url="redis://127.0.0.1:1/0")
    for name in ("LocalBackend", "SharedBackend"):
        cls = backend_class(FocusConfig(backend=f"focuscrawl.backends.{name.removesuffix('Backend').lower()}.{name}"))
        cls.check(config)


def test_a_shared_backend_without_a_revisit_keeper_is_refused_a_continuous_crawl():
    from focuscrawl.scheduling.recrawl import plan_keeper

    class Shared:
        shared = True

    with pytest.raises(ConfigError, match="has no revisit_keeper"):
        plan_keeper(Shared(), _revisits())


def _revisits():
    from focuscrawl.freshness import RevisitPlan
    from focuscrawl.scheduling.revisits import Revisits

    return Revisits(RevisitPlan(min_interval=1.0), 0.5)


def test_the_revisit_plan_is_kept_where_the_backend_says(settings):
    from focuscrawl.scheduling import plan_keepers as events

    crawl = Crawl(settings)
    revisits = _revisits()
    keeper = crawl.backend.revisit_keeper(revisits)
    assert keeper.keeps_state == (not crawl.backend.shared)  # a shared crawl's plan is not the worker's
    keeper.report(events.visit("http://a.test/", 200, revisit=False, text_hash="h", weight=0.9, at=1.0))
    now, held = 100.0, False
    for _ in range(5):  # a shared crawl's worker takes the plan up at a sync, its commands answered later
        if (held := keeper.hold(now)):
            break
        crawl.backend.frontier.flush()
        now += 2.0
    assert held and keeper.pages() == 1 and "http://a.test/" in revisits.plan
    keeper.close()
    crawl.close()


def test_duplicate_indexes_and_a_crawl_joined_again(settings):
    cls = backend_class(FocusConfig.from_settings(get_crawler(settings_dict=settings).settings))
    config = FocusConfig.from_settings(get_crawler(settings_dict=settings).settings)
    stored = {k: v for k, v in settings.items() if k.startswith("FOCUS_")}
    if not cls.shared:
        assert cls.duplicate_indexes(config, threshold=0.9, num_perm=64, shingle_size=3) is None  # the store's
        assert not cls.continues(config, stored)
        return
    one = cls.duplicate_indexes(config, threshold=0.9, num_perm=64, shingle_size=3)
    other = cls.duplicate_indexes(config, threshold=0.9, num_perm=64, shingle_size=3)
    assert one[0].find_or_add("http://a.test/", "hash") is None
    assert other[0].find_or_add("http://b.test/", "hash") == "http://a.test/"  # every worker sees the same
    assert cls.continues(config, stored)
    assert not cls.continues(config, {**stored, "FOCUS_CRAWL_ID": "another"})


def test_a_workers_own_state_round_trips_through_its_jobdir(tmp_path):
    from focuscrawl.backends.worker_state import WorkerState

    state = WorkerState(str(tmp_path / "job"), [Part("aliases", "learned")], checkpoint_seconds=3600.0)
    state.save_if_due(0.0)  # not due yet: nothing written
    assert WorkerState(str(tmp_path / "job"), [Part("aliases")], 3600.0).restore() == 0
    state.save()
    part = Part("aliases")
    assert WorkerState(str(tmp_path / "job"), [part, Part("render_hosts")], 3600.0).restore() == 1
    assert part.value == "learned"


@pytest.mark.slow
def test_workers_of_a_shared_crawl_take_up_each_others_conclusions(redis_url):
    """Worker B re-spells ``/dir`` as ``/dir/`` (no redirect spent) once A has learned the host's
    slash rule, and routes a host A's renders marked straight to the browser, over a real Redis."""
    from types import SimpleNamespace

    from focuscrawl.frontier.aliases import HostAliases
    from focuscrawl.rendering.decide import RenderHosts
    from focuscrawl.scheduling.aliases import UrlAliases
    from focuscrawl.scheduling.rendering import RenderRouting

    def parts():
        return (UrlAliases(SimpleNamespace(stats=None), HostAliases(min_evidence=2)),
                RenderRouting("auto", RenderHosts(mark_after=2), None, None, None))

    settings = {"FOCUS_BACKEND": SHARED_BACKEND, "FOCUS_FRONTIER_URL": redis_url, "FOCUS_CRAWL_ID": "conclusions"}
    (aliases_a, render_a), (aliases_b, render_b) = parts(), parts()
    a, b = Crawl(settings, kept=[aliases_a, render_a]), Crawl(settings, kept=[aliases_b, render_b])
    aliases_a.aliases.redirected("http://a.test/x", "http://a.test/x/")
    aliases_a.aliases.redirected("http://a.test/y", "http://a.test/y/")
    for _ in range(2):
        render_a.hosts.rendered("app.test", 5, 0, 400, 20)
    assert aliases_b.aliases.canonical("http://a.test/dir") == "http://a.test/dir"
    a.backend.tick(10.0, a.learner, None)
    b.backend.tick(10.0, b.learner, None)
    assert aliases_b.aliases.canonical("http://a.test/dir") == "http://a.test/dir/"
    assert render_b.hosts.route("app.test")
    # B's own evidence against the rule wins for B; A's rule is unchanged, and a late worker takes it up
    aliases_b.aliases.fetched("http://a.test/served-plain", "digest")
    b.backend.tick(20.0, b.learner, None)
    a.backend.tick(20.0, a.learner, None)
    assert aliases_b.aliases.canonical("http://a.test/dir") == "http://a.test/dir"
    assert aliases_a.aliases.canonical("http://a.test/dir") == "http://a.test/dir/"
    (aliases_c, render_c) = parts()
    c = Crawl(settings, kept=[aliases_c, render_c])
    c.backend.tick(30.0, c.learner, None)
    assert aliases_c.aliases.canonical("http://a.test/dir") == "http://a.test/dir/"
    assert render_c.hosts.needs_rendering("app.test")
    for crawl in (a, b, c):
        crawl.close()


def test_a_local_crawl_shares_nothing(tmp_path):
    from focuscrawl.rendering.decide import RenderHosts
    from focuscrawl.scheduling.rendering import RenderRouting

    routing = RenderRouting("auto", RenderHosts(mark_after=2), None, None, None)
    crawl = Crawl({"FOCUS_BACKEND": LOCAL_BACKEND}, kept=[routing])
    for _ in range(2):
        routing.hosts.rendered("app.test", 5, 0, 400, 20)
    crawl.backend.tick(10.0, crawl.learner, None)
    crawl.close()
    assert routing.hosts.shared_view() == {"app.test": "1"}  # never asked before: nothing was given out
