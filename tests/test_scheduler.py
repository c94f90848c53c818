"""FocusScheduler's frontier holds packed requests (RequestCodec): few live objects, cold runs for
deep hosts, and the requests that leave equal the ones that came in. The scheduler is built as a
crawl builds it (``from_crawler``) and driven through its parts; a stand-in downloader takes the
reactor's place."""

import gc
import time
from types import SimpleNamespace

import numpy as np
import pytest
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from focuscrawl import signals as focus_signals
from focuscrawl.frontier import Entry
from focuscrawl.learning import link_context, link_features
from focuscrawl.learning.learner import page_reward
from focuscrawl.meta import link_parent
from focuscrawl.scheduler import FocusScheduler
from focuscrawl.scheduling.downloader import DownloaderAdapter
from focuscrawl.scheduling.aliases import UrlAliases
from focuscrawl.scheduling.policies import HeadCheck, Patience
from focuscrawl.scheduling.rescoring import ROBOTS_PRIORITY
from focuscrawl.urls import canonicalize

#: meta keys the scheduler adds when it releases a request
RELEASE_KEYS = {"download_slot", "focus_host", "focus_priority", "focus_features", "focus_explain"}


class LinkSpider(Spider):
    name = "links"

    def parse(self, response):
        return None

    def parse_other(self, response):
        return None

    def fetch_failed(self, failure):
        return None


class FakeCall:
    """A pending reactor call the test runs by hand."""

    def __init__(self, func):
        self.func, self.cancelled, self.called = func, False, False

    def active(self):
        return not (self.cancelled or self.called)

    def cancel(self):
        self.cancelled = True

    def run(self):
        self.called = True
        self.func()


class StillDownloader(DownloaderAdapter):
    """No reactor in these tests: wake-ups are dropped, calls for a later turn are kept (``calls``)
    for the test to run by hand."""

    def __init__(self, crawler):
        super().__init__(crawler)
        self.calls: list[FakeCall] = []

    def wake_at(self, monotonic_at, now, soon=False):
        pass

    def call_soon(self, func):
        self.calls.append(FakeCall(func))
        return self.calls[-1]


def built(**settings):
    """A scheduler as a crawl builds it, with the stand-in downloader."""
    crawler = get_crawler(LinkSpider, {"ROBOTSTXT_OBEY": False, "FOCUS_PATIENCE": 0, **settings})
    scheduler = FocusScheduler.from_crawler(crawler)
    scheduler.downloader = StillDownloader(crawler)
    return scheduler


def make_scheduler(**settings):
    scheduler = built(**settings)
    # the spider open() hands the scheduler and its parts (open() needs a running engine)
    scheduler.spider = scheduler.serializer.spider = scheduler.robots.spider = LinkSpider()
    return scheduler


def opened(spider=None, **settings):
    """A scheduler opened as a crawl opens it (with JOBDIR: resumed from it), a stand-in engine."""
    scheduler = built(**settings)
    scheduler.crawler.engine = SimpleNamespace(downloader=SimpleNamespace(_delay=1.0, _jitter=0.5,
                                                                          per_slot_settings={}))
    scheduler.open(spider or LinkSpider())
    return scheduler


def policy(scheduler, cls):
    """The scheduler's release policy of the class ``cls``."""
    return next(policy for policy in scheduler.policies if isinstance(policy, cls))


def head_check(scheduler) -> HeadCheck:
    return policy(scheduler, HeadCheck)


def link_requests(spider, count):
    """Requests as the spider yields them, and a few odd ones: other callbacks, no errback, seed
    and extra meta, a non-canonical URL, headers, cookies and cb_kwargs, dont_filter, priorities."""
    out = []
    for i in range(count):
        host = f"h{i % 3}.test"
        url = f"http://{host}/section-{i % 7}/page-{i}.html"
        meta = {"depth": i % 5, "focus_link": {
            "anchor": f"anchor words {i}", "context": "text around the link " * (i % 3), "parent_url": f"http://{host}/",
            "parent_score": (i % 10) / 10, "hops": i % 4, "link_score": round((i % 13) / 13, 4)}}
        kwargs = {"callback": spider.parse, "errback": spider.fetch_failed, "meta": meta}
        if i % 11 == 0:
            kwargs.update(callback=spider.parse_other, errback=None, priority=i % 4, dont_filter=True)
        if i % 13 == 0:
            kwargs["meta"] = {"depth": 0, "focus_link": {"anchor": "", "hops": 0}}
        if i % 17 == 0:
            meta["redirect_times"] = 1
            meta["redirect_urls"] = [f"http://{host}/moved-{i}"]
        if i % 19 == 0:
            url = f"http://{host}/search?q={i}&a=1"  # canonical form sorts the query
        if i % 23 == 0:
            kwargs.update(headers={"X-Test": str(i)}, cookies={"c": str(i)}, cb_kwargs={"n": i})
        out.append(Request(url, **kwargs))
    return out


def fields(request):
    return (request.url, request.callback, request.errback, request.priority, request.dont_filter,
            dict(request.headers), request.cookies, request.cb_kwargs, request.method,
            {k: v for k, v in request.meta.items() if k not in RELEASE_KEYS})


def kept_as_objects(frontier) -> int:
    """Entries the frontier keeps as live objects (not packed)."""
    return sum(1 for _ in frontier.rich_entries())


def cold(frontier) -> int:
    """Records in the host queues' cold runs."""
    return sum(queue.cold_size() for _, queue in frontier.queues())


def free(scheduler, request):
    """The request left the downloader (its response in); its host is free again at once."""
    host = request.meta["focus_host"]
    assert scheduler.gate.inflight[host] is request
    assert scheduler.gate.finished(host, request, got_response=True, robots_status=None, now=0.0) is not None
    assert host not in scheduler.gate.inflight
    scheduler.frontier.release(host, 0.0)


def release_all(scheduler):
    out = []
    while (request := scheduler.next_request()) is not None:
        out.append(request)
        free(scheduler, request)
    return out


def test_queued_requests_are_packed_records_and_leave_equal():
    scheduler = make_scheduler()
    spider = scheduler.spider
    requests = link_requests(spider, 600)
    for request in requests:
        assert scheduler.enqueue_request(request)
    robots = Request("http://h0.test/robots.txt", callback=scheduler.robots.fetched, dont_filter=True,
                     meta={"focus_robots_for": "h0.test"})
    scheduler.enqueue_request(robots)
    assert kept_as_objects(scheduler.frontier) == 1  # only the robots.txt request is kept as an object
    assert cold(scheduler.frontier) > 400  # 200 URLs a host: most in cold runs

    released = release_all(scheduler)
    assert released[0] is robots  # first in its host's queue, handed back as itself
    by_url = {r.url: r for r in requests}
    assert sorted(r.url for r in released[1:]) == sorted(by_url)
    for request in released[1:]:
        original = by_url[request.url]
        assert request is not original and fields(request) == fields(original)
        canonical = canonicalize(original.url)
        idx, val = request.meta["focus_features"]
        expected = scheduler.learner.vectorise(link_features(link_context(canonical, original.meta)))
        assert np.array_equal(idx, expected[0]) and np.array_equal(val, expected[1])
        assert idx.dtype == np.int32 and val.dtype == np.float32 and idx.flags.writeable
    assert scheduler.released == 600  # robots.txt fetches not counted


def test_rescoring_and_requeue_keep_packed_requests_whole():
    scheduler = make_scheduler()
    requests = link_requests(scheduler.spider, 300)
    for request in requests:
        scheduler.enqueue_request(request)
    frontier = scheduler.frontier
    frontier.version += 1  # the learner moved on: every entry is stale
    assert frontier.rescore_stale(scheduler.rescorer.rescore, limit=10**6) == 300
    host, entry = frontier.pop(0.0, rescore=scheduler.rescorer.rescore)
    frontier.requeue(host, entry)  # e.g. held back for politeness per IP: back as its record
    frontier.release(host, 0.0)
    released = release_all(scheduler)
    by_url = {r.url: r for r in requests}
    assert sorted(r.url for r in released) == sorted(by_url)
    assert all(fields(r) == fields(by_url[r.url]) for r in released)


def test_rescoring_packed_entries_reads_no_request_and_gives_the_same_priorities():
    packed, plain = make_scheduler(), make_scheduler(FOCUS_FRONTIER_PACK=False)
    rebuilt = []
    from_dict = packed.frontier.codec.from_dict
    packed.frontier.codec.from_dict = lambda d: rebuilt.append(d) or from_dict(d)
    for scheduler in (packed, plain):
        for request in link_requests(scheduler.spider, 120):
            scheduler.enqueue_request(request)
        # the learner learns: the yield of h0.test and of the links found on its home page move
        scheduler.learner.observe("http://h0.test/section-1/page-1.html", "http://h0.test/", None, 1.0, True)
        scheduler.frontier.version += 1
        assert scheduler.frontier.rescore_stale(scheduler.rescorer.rescore, limit=10**6) == 120
    assert rebuilt == []  # re-scoring read features and parents only
    priorities = [sorted((e.url, round(e.priority, 9)) for _, e in s.frontier.entries()) for s in (packed, plain)]
    assert priorities[0] == priorities[1]


def test_packing_is_on_by_default_and_off_the_frontier_holds_the_objects():
    crawler = get_crawler(LinkSpider, {"ROBOTSTXT_OBEY": False, "FOCUS_PATIENCE": 0})
    assert FocusScheduler.from_crawler(crawler).frontier.codec is not None
    scheduler = make_scheduler(FOCUS_FRONTIER_PACK=False)
    assert scheduler.frontier.codec is None
    requests = link_requests(scheduler.spider, 60)
    for request in requests:
        scheduler.enqueue_request(request)
    assert kept_as_objects(scheduler.frontier) == 60
    assert sorted(map(id, release_all(scheduler))) == sorted(map(id, requests))  # the same objects


def test_request_dicts_are_those_of_scrapy():
    """The serializer's fast request dict (names of the spider's callbacks cached) is exactly
    Scrapy's ``to_dict``, and whatever it cannot name goes to ``to_dict`` (which raises)."""
    scheduler = make_scheduler()
    for request in link_requests(scheduler.spider, 60):
        assert scheduler.serializer.to_dict(request) == request.to_dict(spider=scheduler.spider)
    robots = Request("http://h0.test/robots.txt", callback=scheduler.robots.fetched)
    with pytest.raises(ValueError):
        scheduler.serializer.to_dict(robots)


def test_a_checkpoint_while_a_head_check_is_in_flight_keeps_the_page_request(tmp_path):
    scheduler = make_scheduler(FOCUS_HEAD_CHECK=True, JOBDIR=str(tmp_path / "job"))
    spider = scheduler.spider
    get = Request("http://h0.test/data", callback=spider.parse, errback=spider.fetch_failed,
                  meta={"depth": 1, "focus_link": {"anchor": "data", "parent_url": "http://h0.test/"}})
    assert scheduler.enqueue_request(get)
    head = scheduler.next_request()
    assert head.method == "HEAD" and head.callback == head_check(scheduler).head_checked
    kept = scheduler.backend.persistence.unfinished["http://h0.test/data"]
    assert kept.method == "GET" and kept.url == get.url and kept.callback == spider.parse
    # the HEAD's callbacks are the policy's: only the GET can be saved
    scheduler.backend.persistence.checkpoint(scheduler.learner, scheduler.released)
    assert scheduler.stats.get_value("focus/checkpoints") == 1
    state, _ = scheduler.backend.persistence.job.load()
    (row,) = state["entries"]
    assert row[0] == "h0.test" and row[1] == float("inf") and row[2]["method"] == "GET"
    assert row[2]["url"] == get.url and row[2]["callback"] == "parse"


def test_a_head_check_that_finds_no_page_refuses_it_and_forgets_it_as_in_flight(tmp_path):
    """Not HTML: the GET is refused (request_refused, head_not_html) and no longer a request in
    flight that a resume would fetch first."""
    from scrapy.http import Response

    scheduler = make_scheduler(FOCUS_HEAD_CHECK=True, JOBDIR=str(tmp_path / "job"))
    refused = []
    scheduler.crawler.signals.connect(lambda request, reason, **kw: refused.append((request.url, reason)),
                                      signal=focus_signals.request_refused, weak=False)
    assert scheduler.enqueue_request(Request("http://h0.test/data", callback=scheduler.spider.parse,
                                             meta={"depth": 1}))
    head = scheduler.next_request()
    assert list(scheduler.backend.persistence.unfinished) == ["http://h0.test/data"]
    response = Response(head.url, status=200, headers={"Content-Type": "application/zip"}, request=head)
    assert head.callback(response) is None
    assert refused == [("http://h0.test/data", "head_not_html")]
    assert scheduler.backend.persistence.unfinished == {}
    assert scheduler.stats.get_value("focus/refused/head_not_html") == 1


def test_a_duplicate_is_refused_silently_and_another_spelling_or_a_redirect_to_it_is_reported():
    scheduler = make_scheduler()
    refused = []
    scheduler.crawler.signals.connect(lambda request, reason, **kw: refused.append((request.url, reason)),
                                      signal=focus_signals.request_refused, weak=False)
    parse = scheduler.spider.parse
    assert scheduler.enqueue_request(Request("http://h0.test/a?x=1&y=2", callback=parse))
    assert not scheduler.enqueue_request(Request("http://h0.test/a?x=1&y=2", callback=parse))
    assert not scheduler.enqueue_request(Request("http://h0.test/a?y=2&x=1", callback=parse))
    assert not scheduler.enqueue_request(Request("http://h0.test/a?x=1&y=2", callback=parse,
                                                 meta={"redirect_times": 1}))
    assert scheduler.enqueue_request(Request("http://h0.test/a?x=1&y=2", callback=parse, dont_filter=True))
    assert refused == [("http://h0.test/a?y=2&x=1", "canonical_duplicate"),
                       ("http://h0.test/a?x=1&y=2", "redirect_target_seen")]
    assert scheduler.stats.get_value("focus/dupes_filtered") == 3
    assert len(scheduler.frontier) == 2 and len(scheduler.admission.seen) == 1


def flat_out(scheduler):
    """The crawler as patience measures it: working flat out (its own work the bottleneck, so a
    wait up to FOCUS_PATIENCE is worth it)."""
    patience = policy(scheduler, Patience)
    patience.work = lambda: 1e6
    start = time.monotonic()
    patience.load.released(start - 1.0, 0.0)
    patience.load.released(start - 0.5, 0.0)
    return scheduler


def test_patience_waits_only_for_a_busy_host_that_can_be_free_within_it():
    """A clearly better URL at a host with a request in flight is waited for when that host's
    delay after its response fits in FOCUS_PATIENCE, not when it does not (a long Crawl-delay):
    the same rule as for a host waiting out its delay."""
    scheduler = flat_out(make_scheduler(FOCUS_PATIENCE=2.0))
    spider = scheduler.spider
    for host, priority, name in [("a.test", 5.0, "best"), ("a.test", 4.0, "next"), ("b.test", 1.0, "poor")]:
        url = f"http://{host}/{name}"
        scheduler.frontier.push(host, Entry(priority, url, Request(url, callback=spider.parse)))
    assert scheduler.next_request().url == "http://a.test/best"  # a.test now has a request in flight
    assert list(scheduler.gate.inflight) == ["a.test"]
    assert scheduler.next_request() is None  # b.test's poor URL waits for a.test's next
    assert scheduler.stats.get_value("focus/frontier/held") == 1
    scheduler.gate.delays.set_crawl_delay(scheduler.gate.timing_of("a.test"), 10.0)
    assert scheduler.next_request().url == "http://b.test/poor"  # a.test is 10 s away: no wait


def test_patience_never_holds_a_seed():
    """A seed is where the user told the crawl to start: it goes out even when a clearly better URL
    waits at a busy host (the same set-up holds a link found on a page)."""
    scheduler = flat_out(make_scheduler(FOCUS_PATIENCE=2.0))
    spider = scheduler.spider
    for host, priority, name, depth in [("a.test", 5.0, "best", 1), ("a.test", 4.0, "next", 1),
                                        ("c.test", 1.0, "", 0), ("b.test", 0.5, "link", 1)]:
        url = f"http://{host}/{name}"
        scheduler.frontier.push(host, Entry(priority, url, Request(url, callback=spider.parse, meta={"depth": depth})))
    assert scheduler.next_request().url == "http://a.test/best"  # a.test now has a request in flight
    assert scheduler.next_request().url == "http://c.test/"  # the seed goes
    assert scheduler.next_request() is None  # b.test's link waits for a.test's next
    assert scheduler.stats.get_value("focus/frontier/held") == 1


def test_patience_never_holds_while_the_crawler_is_idle():
    """A crawler doing nothing (a real web's delays the bottleneck) sends the worse URL rather
    than wait a second for the better one: the crawl is not idle while work is ready."""
    scheduler = make_scheduler(FOCUS_PATIENCE=2.0, DOWNLOAD_DELAY=1.0)
    patience = policy(scheduler, Patience)
    patience.work = lambda: 0.03
    start = time.monotonic()
    for k in range(3):
        patience.load.released(start - 3.0 + k, 0.01 * k)
    spider = scheduler.spider
    for host, priority, name in [("a.test", 5.0, "best"), ("a.test", 4.0, "next"), ("b.test", 1.0, "poor")]:
        url = f"http://{host}/{name}"
        scheduler.frontier.push(host, Entry(priority, url, Request(url, callback=spider.parse)))
    assert scheduler.next_request().url == "http://a.test/best"
    assert scheduler.next_request().url == "http://b.test/poor"
    assert not scheduler.stats.get_value("focus/frontier/held")


def test_what_exists_when_the_crawl_opens_is_frozen_for_the_garbage_collector_until_it_closes():
    """Full collections would walk Scrapy, Twisted and the models on every pass (~100 ms stalls of
    the reactor in a WebKB crawl): frozen at open, unfrozen at close."""
    scheduler = opened()
    try:
        assert gc.get_freeze_count() > 0
    finally:
        scheduler.close("finished")
    assert gc.get_freeze_count() == 0
    # an application that froze objects itself keeps them frozen: the scheduler leaves the collector alone
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        opened().close("finished")
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_open_takes_the_delays_over_from_the_downloader():
    """The frontier enforces every delay: the downloader's own are set to zero at open."""
    scheduler = opened()
    try:
        downloader = scheduler.crawler.engine.downloader
        assert (downloader._delay, downloader._jitter) == (0.0, 0.0)
    finally:
        scheduler.close("finished")


def test_the_learner_starts_from_the_priors_for_the_spiders_topic_model():
    """The links' scores come from a link model or from the topic model reading their words: the
    learner starts from LINK_PRIORS for the one the spider's model has (known only at open)."""
    from focuscrawl.learning import LinkRewardLearner

    for link_pipeline in (object(), None):
        spider = LinkSpider()
        spider.model = SimpleNamespace(link_pipeline=link_pipeline)
        scheduler = opened(spider)
        try:
            expected = LinkRewardLearner(link_model=link_pipeline is not None).model.coef_
            assert (scheduler.learner.model.coef_ == expected).all()
        finally:
            scheduler.close("finished")
    assert LinkRewardLearner(link_model=True).model.coef_.tolist() != LinkRewardLearner(link_model=False).model.coef_.tolist()


def test_background_rescoring_of_a_large_frontier_is_spread_over_reactor_turns(monkeypatch):
    """A learner update re-scores up to half the frontier; at 15-30 us an entry, doing it in one go
    at 10^5-10^6 queued URLs stalled every download and callback 0.3-0.7 s. One chunk now runs at
    once, the rest in later reactor turns; a newer update never queues a second call, and close()
    cancels what is pending. The updates come as a crawl sends them: the page_scored signal."""
    from focuscrawl.scheduling import rescoring

    monkeypatch.setattr(rescoring, "CHUNK", 40)
    scheduler = opened()
    try:
        calls = scheduler.downloader.calls
        for request in link_requests(scheduler.spider, 300):
            scheduler.enqueue_request(request)
        wasted = SimpleNamespace(score=None, relevant=False, final_url=None)
        request = Request("http://h0.test/gone.html", meta={"focus_host": "h0.test"})

        def learner_moves_on():
            scheduler.learner.version += 1
            scheduler.crawler.signals.send_catch_log(focus_signals.page_scored, request=request, response=None,
                                                     page=wasted, spider=scheduler.spider)

        learner_moves_on()
        first = scheduler.frontier.rescored
        assert 40 <= first < 150 and len(calls) == 1  # one chunk (whole hosts of 100) now, the rest later
        while calls[-1].active():
            calls[-1].run()
        # the pass (256 entries: half the frontier, at least 256) took three chunks of one host each
        assert scheduler.frontier.rescored == 300 and len(calls) == 2

        learner_moves_on()
        learner_moves_on()  # a pass is pending: the new one takes it on, no second call
        assert sum(call.active() for call in calls) == 1
    finally:
        scheduler.close("finished")
    assert not any(call.active() for call in calls) and calls[-1].cancelled


# --- checkpoint and resume (JOBDIR) ---------------------------------------------------------------

def release(scheduler):
    """The next request, its host free again at once."""
    request = scheduler.next_request()
    free(scheduler, request)
    return request


def drained(frontier):
    """(host, url, priority, request fields, features) of every entry, in pop order; and versions."""
    out, versions = [], set()
    while (popped := frontier.pop(0.0)) is not None:
        host, entry = popped
        features = None if entry.features is None else tuple(map(tuple, entry.features))
        out.append((host, entry.url, entry.priority, fields(entry.payload), features))
        versions.add(entry.version)
        frontier.release(host, 0.0)
    return out, versions


@pytest.fixture
def killed(tmp_path, monkeypatch):
    """A crawl killed after a checkpoint: the scheduler held packed requests (most in cold runs),
    one kept as an object, a robots.txt request and one released whose item was not stored yet;
    since the checkpoint it released two more (journal): one done, the other in flight. Every
    packed request decoded is counted (decoding reads the blob's features and parent first)."""
    from focuscrawl import request_codec

    unpacked = []
    read = request_codec._unpack_link
    monkeypatch.setattr(request_codec, "_unpack_link", lambda blob, copy=True: unpacked.append(len(blob)) or read(blob, copy))
    jobdir = tmp_path / "job"
    scheduler = make_scheduler(JOBDIR=str(jobdir))
    spider = scheduler.spider
    requests = link_requests(spider, 600)
    for request in requests:
        assert scheduler.enqueue_request(request)
    kept = Request("http://h1.test/kept", callback=spider.parse_other, meta={"depth": 1})
    scheduler.frontier.push("h1.test", Entry(-1.0, kept.url, kept, (("odd", 1.0),)))  # not a vector: not packed
    unfinished = release(scheduler)
    scheduler.enqueue_request(Request("http://h2.test/robots.txt", callback=scheduler.robots.fetched,
                                      dont_filter=True, meta={"focus_robots_for": "h2.test"}))
    assert cold(scheduler.frontier) > 400
    before = len(unpacked)
    scheduler.backend.persistence.checkpoint(scheduler.learner, scheduler.released)
    unpacked_by_checkpoint = unpacked[before:]
    assert release(scheduler).meta["focus_robots_for"] == "h2.test"
    done, in_flight = release(scheduler), release(scheduler)
    # its item went through the pipelines (what item_scraped tells the scheduler)
    scheduler.backend.persistence.done({canonicalize(done.url)})
    assert set(scheduler.backend.persistence.unfinished) == {canonicalize(unfinished.url), canonicalize(in_flight.url)}
    left, _ = drained(scheduler.frontier)  # what the frontier held at the kill
    unpacked.clear()
    by_url = {canonicalize(r.url): r for r in requests + [kept]}
    return SimpleNamespace(jobdir=jobdir, spider=spider, left=left, by_url=by_url, unpacked=unpacked,
                           unpacked_by_checkpoint=unpacked_by_checkpoint, released=scheduler.released,
                           first=[canonicalize(unfinished.url), canonicalize(in_flight.url)])


def resumed_queue(killed, **settings):
    """The frontier of a scheduler resumed from the killed crawl's JOBDIR, drained; its snapshot."""
    scheduler = opened(killed.spider, JOBDIR=str(killed.jobdir), **settings)
    try:
        assert scheduler.released == killed.released  # the snapshot's, plus those journaled since
        queue = drained(scheduler.frontier)
        return queue, scheduler.backend.persistence.job.load()[0]
    finally:
        scheduler.close("finished")


def assert_resumed_equal(killed, queue, versions, same_order=True):
    """First the two requests in flight (at the checkpoint, at the kill: first in line, no features),
    then what the frontier held at the kill, equal, the request kept as an object too."""
    assert sorted(url for _, url, *_ in queue[:2]) == sorted(killed.first)
    assert all(priority == float("inf") and features is None for _, _, priority, _, features in queue[:2])
    assert versions == {-1}  # all stale: re-scored as they surface
    queue = queue[2:]
    assert [row[2] for row in queue] == [row[2] for row in killed.left]
    for host in ("h0.test", "h1.test", "h2.test"):
        mine = [row for row in queue if row[0] == host]
        expected = [row for row in killed.left if row[0] == host]
        if not same_order:  # re-pushed one by one in the order of the rows: equal priorities in any order
            mine, expected = sorted(mine, key=repr), sorted(expected, key=repr)
        for got, want in zip(mine, expected, strict=True):
            assert got[:4] == want[:4]
            if got[1] != "http://h1.test/kept":  # not a vector, so rebuilt from the link on resume
                assert got[4] == want[4]
    assert all(fields(killed.by_url[url]) == request_fields for _, url, _, request_fields, _ in queue)


def test_a_checkpoint_decodes_no_packed_request_and_a_resume_gives_them_back_equal(killed):
    assert killed.unpacked_by_checkpoint == []  # no Request built: the records are written as they are
    (queue, versions), snapshot = resumed_queue(killed)
    # resumed with no request decoded but the one in flight at the kill (it goes first, without
    # features); then each decoded as it leaves
    assert len(killed.unpacked) == 1 + len(queue)
    assert_resumed_equal(killed, queue, versions)
    assert snapshot["format"] == 2 and snapshot["entries"] == []  # the resume's checkpoint: every entry packed


@pytest.mark.parametrize(("previous_format", "pack"), [(True, True), (True, False), (False, False)])
def test_a_snapshot_of_the_previous_format_or_read_with_packing_turned_off_resumes(killed, previous_format, pack):
    """The previous format: every entry as a row of the dict form, no format marker."""
    import pickle

    from focuscrawl.jobdir import SNAPSHOT
    from focuscrawl.request_codec import packed_rows

    if previous_format:
        path = killed.jobdir / SNAPSHOT
        with open(path, "rb") as handle:
            state = pickle.load(handle)
        state["entries"] = list(packed_rows(state.pop("packed"))) + state["entries"]
        del state["format"]
        with open(path, "wb") as handle:
            pickle.dump(state, handle)
    (queue, versions), snapshot = resumed_queue(killed, FOCUS_FRONTIER_PACK=pack)
    # pushed one by one in the order of the rows, as before: equal priorities within a host in any order
    assert_resumed_equal(killed, queue, versions, same_order=False)
    # the resume's own checkpoint; without packing, as before packing: every entry a row
    assert snapshot["format"] == 2 and len(snapshot["packed"]) == (3 if pack else 0)
    assert len(snapshot["entries"]) == (0 if pack else len(queue))


def test_urls_queued_after_the_snapshot_are_scored_on_resume_by_the_learner_it_saved(tmp_path):
    """The journal's URLs go through admission again on resume, and are scored by the learner the
    snapshot brought back, not by a new one (what the crawl had learned is not lost for them)."""
    jobdir = str(tmp_path / "job")
    scheduler = make_scheduler(JOBDIR=jobdir)
    parse = scheduler.spider.parse
    for i in range(40):  # h0.test's pages were relevant, h1.test's were not
        host = f"h{i % 2}.test"
        scheduler.learner.observe(f"http://{host}/seen-{i}.html", f"http://{host}/", None, float(i % 2 == 0),
                                  i % 2 == 0, wasted=False)
    scheduler.backend.persistence.checkpoint(scheduler.learner, scheduler.released)
    late = [Request(f"http://h{i % 2}.test/late-{i}.html", callback=parse,
                    meta={"depth": 1, "focus_link": {"anchor": "notes", "parent_url": f"http://h{i % 2}.test/"}})
            for i in range(6)]
    for request in late:
        assert scheduler.enqueue_request(request)  # journaled: enq
    scheduler.backend.persistence.job.flush()  # as the next release does
    expected = {e.url: e.priority for _, e in scheduler.frontier.entries()}
    fresh = make_scheduler().learner
    unlearned = {url: fresh.score(e.features, url, link_parent(e.payload.meta))
                 for url, e in ((e.url, e) for _, e in scheduler.frontier.entries())}
    assert all(abs(expected[url] - unlearned[url]) > 1e-6 for url in expected)  # the test can tell them apart

    resumed = opened(JOBDIR=jobdir)
    try:
        got = {e.url: e.priority for _, e in resumed.frontier.entries()}
        assert got == pytest.approx(expected, rel=1e-9, abs=0)
        assert resumed.learner.version == scheduler.learner.version
    finally:
        resumed.close("finished")


def _filled_for_rescoring(scheduler):
    """A packed frontier over many hosts: links with parents, seeds without one, a few entries
    without features; then a learner that has seen pages there (dynamic evidence varies)."""
    spider, learner = scheduler.spider, scheduler.learner
    rng = np.random.default_rng(5)
    for i in range(600):
        host = f"h{i % 37}.test"
        url = f"http://{host}/s{i % 5}/{'d/' * (i % 2)}p{i}.html"
        parent = None if i % 9 == 0 else f"http://{host}/hub{i % 4}.html"
        meta = {"depth": 1, "focus_link": {"anchor": f"a{i}", "context": "", "parent_url": parent,
                                           "parent_score": 0.5, "hops": 0, "link_score": 0.5}}
        request = Request(url, callback=spider.parse, meta=meta if parent else {})
        features = None if i % 50 == 7 else learner.vectorise(
            [("bias", 1.0), (f"word:{i % 23}", float(rng.random())), ("depth:1", 1.0)])
        scheduler.frontier.push(host, Entry(float(rng.random()), url, request, features, scheduler.frontier.version))
    for i in range(0, 600, 7):  # pages fetched at some hosts, prefixes and hubs
        host = f"h{i % 37}.test"
        learner.observe(f"http://{host}/s{i % 5}/x{i}.html", f"http://{host}/hub{i % 4}.html",
                        [("bias", 1.0), (f"word:{i % 23}", 1.0)], page_reward(float(rng.random()), i % 3 == 0), i % 3 == 0,
                        wasted=i % 5 == 0)
    scheduler.frontier.version += 1


def test_rescoring_packed_entries_from_their_bytes_gives_the_priorities_of_scoring_one_by_one(monkeypatch):
    from focuscrawl.frontier import entries as frontier_entries

    fast, slow = make_scheduler(), make_scheduler()
    for scheduler in (fast, slow):
        _filled_for_rescoring(scheduler)
    expected = {}
    for _, e in slow.frontier.entries():  # unpacked in full: the Request gives the parent
        expected[e.url] = ROBOTS_PRIORITY if e.features is None else slow.learner.score(
            e.features, e.url, link_parent(e.payload.meta))
    # a plain function, not the PackedRescorer: the frontier unpacks every entry and hands them over
    assert slow.frontier.rescore_stale(lambda entries: slow.rescorer.rescore(entries), limit=10**6) == 600
    previews, built_entries = [], []
    preview = fast.frontier._preview
    fast.frontier._preview = lambda url, blob: previews.append(url) or preview(url, blob)
    monkeypatch.setattr(frontier_entries, "Entry", lambda *a: built_entries.append(a) or Entry(*a))
    assert fast.frontier.rescore_stale(fast.rescorer.rescore, limit=10**6) == 600
    assert previews == [] and built_entries == []  # no preview, no Entry per record
    monkeypatch.undo()
    got = {e.url: e.priority for _, e in fast.frontier.entries()}
    assert got == {e.url: e.priority for _, e in slow.frontier.entries()}  # exactly: the entry path's floats
    # score() adds the same terms in another order (as the entry path always did): equal to ~1 ulp
    assert got == pytest.approx(expected, rel=1e-12, abs=0)
    assert len(set(got.values())) > 300


def test_a_link_to_an_ipv6_literal_is_queued_not_raised():
    # loopback allowed: by default these are refused at admission (tests/test_network_guard.py)
    scheduler = make_scheduler(FOCUS_ALLOWED_NETWORKS="::1,127.0.0.0/8")
    spider = scheduler.spider
    for url in ("http://[::1]/y", "http://[::ffff:127.0.0.1]/v", "http://[::1]:8080/x"):
        assert scheduler.enqueue_request(Request(url, callback=spider.parse, meta={"depth": 1}))
    assert len(scheduler.frontier) == 3


def test_a_queued_url_is_respelled_by_a_rule_learned_later_and_survives_being_held_back():
    """Queued before its host's slash rule was learned, a URL leaves the frontier with the slash;
    held back first (patience), it is not lost as a duplicate of its own new spelling; a second
    spelling of the same page queued meanwhile is dropped once the first is released."""
    scheduler = flat_out(make_scheduler(FOCUS_PATIENCE=2.0))
    spider = scheduler.spider
    for url, priority in [("http://a.test/dir", 1.0), ("http://a.test/dir/index.html", 0.9),
                          ("http://b.test/best", 5.0), ("http://b.test/next", 4.0)]:
        scheduler.frontier.push(url.split("/")[2], Entry(priority, url, Request(url, callback=spider.parse)))
    for n in range(2):
        policy(scheduler, UrlAliases).aliases.redirected(f"http://a.test/d{n}", f"http://a.test/d{n}/")
        policy(scheduler, UrlAliases).aliases.fetched(f"http://a.test/x{n}/", f"digest{n}")
        policy(scheduler, UrlAliases).aliases.fetched(f"http://a.test/x{n}/index.html", f"digest{n}")
    best = scheduler.next_request()
    assert best.url == "http://b.test/best"
    assert scheduler.next_request() is None  # a.test's URL held for b.test's next
    free(scheduler, best)
    assert scheduler.next_request().url == "http://b.test/next"
    first = scheduler.next_request()
    assert first.url == "http://a.test/dir/" and first.meta["focus_alias_of"] == "http://a.test/dir"
    free(scheduler, first)
    assert scheduler.next_request() is None  # dir/index.html is dir/, released already
    assert scheduler.stats.get_value("focus/aliases/dropped") == 1


def test_a_head_check_that_finds_a_document_lets_its_get_through():
    """PDF and office documents are read as pages (FOCUS_DOCUMENTS): the HEAD says go."""
    from scrapy.http import Response

    scheduler = make_scheduler(FOCUS_HEAD_CHECK=True)
    assert scheduler.enqueue_request(Request("http://h0.test/data", callback=scheduler.spider.parse,
                                             meta={"depth": 1}))
    head = scheduler.next_request()
    response = Response(head.url, status=200, headers={"Content-Type": "application/pdf"}, request=head)
    (get,) = head.callback(response)
    assert get.method == "GET" and get.url == "http://h0.test/data"
    off = make_scheduler(FOCUS_HEAD_CHECK=True, FOCUS_DOCUMENTS=False)
    off.enqueue_request(Request("http://h0.test/data", callback=off.spider.parse, meta={"depth": 1}))
    head = off.next_request()
    assert head.callback(Response(head.url, status=200, headers={"Content-Type": "application/pdf"},
                                  request=head)) is None


def test_the_per_page_bounds_come_from_the_settings():
    scheduler = make_scheduler(FOCUS_LEARNER_NODES=50, FOCUS_URL_ALIASES_PAGES=40)
    assert (scheduler.learner.max_nodes, policy(scheduler, UrlAliases).aliases.max_pages) == (50, 40)
    for i in range(120):
        scheduler.learner.observe(f"http://h0.test/p{i}.html", "http://h0.test/", None, 0.1, False)
    assert len(scheduler.learner.nodes) <= 50 and "http://h0.test/p119.html" in scheduler.learner.nodes


def test_a_spent_budget_closes_the_crawl_as_focus_budget_with_scrapys_scheduler_stats():
    """The crawl's end is named as Scrapy's own limits name theirs, and tools that read Scrapy's
    scheduler/enqueued and scheduler/dequeued find them."""
    from scrapy.exceptions import CloseSpider

    scheduler = make_scheduler(FOCUS_BUDGET=2, DOWNLOAD_DELAY=0)
    spider = scheduler.spider
    for i in range(4):
        assert scheduler.enqueue_request(Request(f"http://h{i}.test/", callback=spider.parse))
    scheduler._on_spider_idle()  # budget not spent: nothing to say
    released = [scheduler.next_request() for _ in range(3)]
    assert released[2] is None and all(released[:2])
    stats = scheduler.stats.get_stats()
    assert (stats["scheduler/enqueued"], stats["scheduler/dequeued"]) == (4, 2)
    with pytest.raises(CloseSpider) as closed:
        scheduler._on_spider_idle()
    assert closed.value.reason == "focus_budget"


def test_a_project_spiders_topic_model_reaches_the_learner_by_its_signal():
    """Under focuscrawl.Addon the topic model is the spider middleware's, announced when the spider
    opens (the scheduler is open by then): the learner starts from its link model as it would
    from the focused spider's."""
    from focuscrawl import signals as focus_signals

    scheduler = opened()
    try:
        assert not scheduler.learner.learn_words  # by default the links' words are a link model's
        model = SimpleNamespace(link_pipeline=None, learner_priors=None)  # a topic model without one
        scheduler.crawler.signals.send_catch_log(focus_signals.topic_model, model=model)
        assert scheduler.learner.learn_words  # so the learner learns the words itself
    finally:
        scheduler.close("finished")


def test_the_learner_is_rewarded_by_each_scored_page_s_rank_among_the_crawl_s_pages():
    """The page_scored signal's page is rewarded by the learner's ``page_reward``: each scored page
    counts in its ranks (waste does not), and a page not found is worth its rank, not its score."""
    from focuscrawl.learning.ranks import RANK_REWARD

    scheduler = opened()
    try:
        for i, score in enumerate((0.01, 0.02, 0.03, None, 0.04)):
            page = SimpleNamespace(score=score, relevant=False, final_url=None)
            request = Request(f"http://h0.test/{i}.html", meta={"focus_host": "h0.test"})
            scheduler.crawler.signals.send_catch_log(focus_signals.page_scored, request=request, response=None,
                                                     page=page, hit=False, spider=scheduler.spider)
        learner = scheduler.learner
        assert learner.ranks.scored == 4
        # the best of four pages scored at 0.04: worth nearly a quarter of a hit, not 0.01
        assert learner.nodes["http://h0.test/4.html"].reward == pytest.approx(RANK_REWARD * 3.5 / 4)
        assert learner.nodes["http://h0.test/3.html"].reward < 0  # waste
    finally:
        scheduler.close("finished")


def test_each_release_counts_the_requests_whose_pages_the_spider_has_not_seen_yet():
    """What a decision could not know: requests in the downloader, and responses queued for or in
    a callback (``focus/requests_released/unseen``, summed over releases); none without an engine."""
    from collections import deque

    scheduler = make_scheduler()
    assert scheduler.downloader.unseen() == 0  # no engine: a scheduler driven by hand
    slot = SimpleNamespace(queue=deque(["response"]), active={"in a callback"})
    scheduler.crawler.engine = SimpleNamespace(downloader=SimpleNamespace(active={"a", "b", "c"}),
                                               scraper=SimpleNamespace(slot=slot))
    spider = scheduler.spider
    for host in ("a.test", "b.test"):
        url = f"http://{host}/page"
        scheduler.frontier.push(host, Entry(1.0, url, Request(url, callback=spider.parse)))
    assert scheduler.next_request() is not None
    assert scheduler.stats.get_value("focus/requests_released/unseen") == 5
    slot.queue.clear()
    assert scheduler.next_request() is not None
    assert scheduler.stats.get_value("focus/requests_released/unseen") == 9
    assert scheduler.stats.get_value("focus/requests_released") == 2
