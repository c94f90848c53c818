"""The host gate: when a host may be contacted (pure: the clock is passed in as ``now``)."""

import pickle

import pytest

from focuscrawl.politeness import DelayPolicy, RobotsState
from focuscrawl.politeness.delay import SAFETY_MARGIN
from focuscrawl.politeness.gate import (
    GO,
    IP_POLL_SECONDS,
    ROBOTS_POLL_SECONDS,
    ROBOTS_SETTLE_TIMEOUT,
    HostGate,
    PerIpLimit,
    Verdict,
    resolve_ip,
)

ROBOTS = b"User-agent: *\nDisallow: /private\n"
DELAY = 1.0


def make_gate(**kwargs) -> HostGate:
    """A one-second delay (no adaptive part), back-off from 5 s up to 60 s, Crawl-delay capped at
    30 s; robots.txt trusted 100 s, a failing one retried after 10 s."""
    delays = DelayPolicy(minimum=DELAY, adaptive_factor=0.0, backoff_base=5.0, backoff_max=60.0, max_crawl_delay=30.0)
    kwargs.setdefault("robots_cache", 100.0)
    kwargs.setdefault("robots_retry", 10.0)
    return HostGate(delays, agent="focuscrawl", **kwargs)


def allowed(gate: HostGate, host: str = "a.test", body: bytes = ROBOTS, now: float = 0.0):
    return gate.robots_response(host, 200, body, now)


class Req:
    """A request in flight (the gate only compares identities)."""


# --- a URL leaves the frontier ------------------------------------------------------------------

def test_robots_txt_is_fetched_once_and_the_host_waits_while_it_is():
    gate = make_gate()
    assert gate.check("a.test", "http://a.test/x", now=10.0) == Verdict("fetch_robots")
    assert gate.robots["a.test"].state is RobotsState.FETCHING
    assert gate.check("a.test", "http://a.test/y", now=10.0) == Verdict("wait", 10.0 + ROBOTS_POLL_SECONDS,
                                                                        "robots_pending")
    assert ROBOTS_POLL_SECONDS == 0.25
    # the robots.txt request itself goes
    assert gate.check("a.test", "http://a.test/robots.txt", now=10.0, robots_request=True) == GO
    allowed(gate, now=11.0)
    assert gate.check("a.test", "http://a.test/private/x", now=11.0) == Verdict("refuse", reason="robots")
    assert gate.check("a.test", "http://a.test/public", now=11.0) == GO
    # trusted for robots_cache seconds, then fetched again
    assert gate.check("a.test", "http://a.test/public", now=110.9) == GO
    assert gate.check("a.test", "http://a.test/public", now=111.0) == Verdict("fetch_robots")


def test_a_failing_robots_txt_disallows_until_it_is_tried_again_and_a_missing_one_allows_all():
    gate = make_gate()
    gate.robots_unreachable("a.test", now=20.0)
    assert gate.check("a.test", "http://a.test/x", now=21.0) == Verdict("wait", 30.0, "robots_pending")
    assert gate.check("a.test", "http://a.test/x", now=30.0) == Verdict("fetch_robots")
    gate.robots_response("b.test", 503, b"", now=20.0)
    assert gate.check("b.test", "http://b.test/x", now=29.95) == Verdict("wait", 30.2, "robots_pending")
    gate.robots_response("c.test", 404, b"", now=20.0)
    assert gate.check("c.test", "http://c.test/private/x", now=21.0) == GO


def test_robots_txt_not_obeyed_is_never_fetched():
    gate = make_gate(obey_robots=False)
    assert gate.check("a.test", "http://a.test/private/x", now=0.0) == GO
    assert gate.robots == {}


# --- what the downloader reports ------------------------------------------------------------------

def test_a_finished_request_frees_its_host_after_the_delay():
    gate = make_gate()
    request = Req()
    gate.start("a.test", request)
    assert gate.inflight == {"a.test": request} and gate.busy()
    gate.response("a.test", 0.1, 200, None, now=100.0)
    assert gate.finished("a.test", request, got_response=True, robots_status=None, now=100.5) == pytest.approx(
        100.5 + DELAY + SAFETY_MARGIN)
    assert gate.inflight == {} and not gate.busy()
    assert list(gate.timing_of("a.test").latencies) == [0.1]


def test_crawl_delay_is_applied_and_capped():
    gate = make_gate()
    assert gate.apply_crawl_delay("a.test", allowed(gate, body=b"User-agent: *\nCrawl-delay: 5\n")) is None
    assert gate.timing_of("a.test").crawl_delay == 5.0
    request = Req()
    gate.start("a.test", request)
    assert gate.finished("a.test", request, got_response=True, robots_status=None, now=50.0) == pytest.approx(55.01)
    # over the cap: capped, and the delay asked for is returned (the scheduler counts it, or skips the host)
    assert gate.apply_crawl_delay("b.test", allowed(gate, "b.test", b"User-agent: *\nCrawl-delay: 100\n")) == 100.0
    assert gate.timing_of("b.test").crawl_delay == 30.0
    gate.start("b.test", request)
    assert gate.finished("b.test", request, got_response=True, robots_status=None, now=50.0) == pytest.approx(80.01)
    # none, or one for another agent: nothing applied
    assert gate.apply_crawl_delay("c.test", allowed(gate, "c.test")) is None
    assert gate.apply_crawl_delay("d.test", allowed(gate, "d.test", b"User-agent: otherbot\nCrawl-delay: 9\n")) is None
    assert gate.timing_of("c.test").crawl_delay == gate.timing_of("d.test").crawl_delay == 0.0


@pytest.mark.parametrize(("status", "retry_after", "ready_at"), [
    (429, b"7", 107.0),  # Retry-After, from the response
    (503, None, 105.0),  # no Retry-After: the back-off base
    (503, b"600", 160.0),  # Retry-After beyond the back-off maximum: the maximum
    (200, b"7", 100.5 + DELAY + SAFETY_MARGIN),  # Retry-After on a success means nothing
])
def test_429_and_503_back_off(status, retry_after, ready_at):
    gate = make_gate()
    request = Req()
    gate.start("a.test", request)
    gate.response("a.test", 0.1, status, retry_after, now=100.0)
    assert gate.finished("a.test", request, got_response=True, robots_status=None, now=100.5) == pytest.approx(ready_at)


def test_back_off_doubles_for_errors_in_a_row_and_a_success_resets_it():
    gate = make_gate()
    ready = []
    for now, status in [(100.0, 503), (200.0, 503), (300.0, 200), (400.0, 429)]:
        request = Req()
        gate.start("a.test", request)
        gate.response("a.test", 0.1, status, None, now=now)
        ready.append(gate.finished("a.test", request, got_response=True, robots_status=None, now=now) - now)
    assert ready == pytest.approx([5.0, 10.0, DELAY + SAFETY_MARGIN, 5.0])


def test_a_network_error_backs_off():
    gate = make_gate()
    ready = []
    for now in (100.0, 200.0):
        request = Req()
        gate.start("a.test", request)
        ready.append(gate.finished("a.test", request, got_response=False, robots_status=None, now=now))
    assert ready == [105.0, 210.0]
    assert gate.timing_of("a.test").consecutive_errors == 2


def test_only_the_request_in_flight_frees_its_host():
    gate = make_gate()
    mine, other = Req(), Req()
    gate.start("a.test", mine)
    assert gate.finished("a.test", other, got_response=False, robots_status=None, now=1.0) is None
    assert gate.finished("b.test", mine, got_response=True, robots_status=None, now=1.0) is None
    assert gate.inflight == {"a.test": mine}
    assert gate.timing_of("a.test").consecutive_errors == 0  # the other's network error is not the host's
    assert gate.finished("a.test", mine, got_response=True, robots_status=None, now=1.0) == pytest.approx(2.01)
    assert gate.finished("a.test", mine, got_response=True, robots_status=None, now=1.0) is None  # once


def test_soon_free_hosts_are_those_in_flight_whose_delay_ends_within_the_horizon():
    gate = make_gate()
    for host in ("a.test", "b.test"):
        gate.start(host, Req())
    gate.apply_crawl_delay("b.test", allowed(gate, "b.test", b"User-agent: *\nCrawl-delay: 10\n"))
    assert gate.soon_free(now=0.0, horizon=2.0) == ["a.test"]
    assert gate.soon_free(now=0.0, horizon=0.5) == []
    assert sorted(gate.soon_free(now=0.0, horizon=11.0)) == ["a.test", "b.test"]


# --- robots.txt responses hold their host until applied ---------------------------------------------

@pytest.mark.parametrize("status", [200, 404, 503])
def test_a_robots_txt_response_holds_its_host_until_its_rules_are_applied(status):
    """So that the first page request already obeys the Crawl-delay it brings."""
    gate = make_gate()
    robots = Req()
    gate.start("a.test", robots)
    assert gate.finished("a.test", robots, got_response=True, robots_status=status, now=50.0) is None
    assert gate.inflight == {} and gate.busy() and gate.robots_pending == {"a.test": 50.0}
    gate.apply_crawl_delay("a.test", allowed(gate, body=b"User-agent: *\nCrawl-delay: 4\n", now=50.2))
    assert gate.robots_settled("a.test") == pytest.approx(54.01)  # from when the response ended
    assert not gate.busy()
    assert gate.robots_settled("a.test") is None  # settled once


def test_a_robots_txt_that_failed_on_the_network_holds_its_host_too():
    gate = make_gate()
    robots = Req()
    gate.start("a.test", robots)
    assert gate.finished("a.test", robots, got_response=False, robots_status=0, now=50.0) is None
    assert gate.robots_settled("a.test") == 55.0  # the network error's back-off


def test_a_redirected_robots_txt_does_not_hold_its_host():
    """The redirect's target is fetched later (through the frontier), as another request."""
    gate = make_gate()
    robots = Req()
    gate.start("a.test", robots)
    assert gate.finished("a.test", robots, got_response=True, robots_status=301, now=50.0) == pytest.approx(51.01)
    assert not gate.busy() and gate.robots_pending == {}
    assert gate.robots_settled("a.test") is None


def test_a_robots_txt_response_whose_rules_never_come_stops_holding_its_host():
    gate = make_gate()
    robots = Req()
    gate.start("a.test", robots)
    gate.finished("a.test", robots, got_response=True, robots_status=200, now=50.0)
    assert ROBOTS_SETTLE_TIMEOUT == 60.0
    assert gate.overdue_robots(now=110.0) == []
    assert gate.busy()
    assert gate.overdue_robots(now=110.5) == ["a.test"]
    assert not gate.busy() and gate.overdue_robots(now=500.0) == []
    assert gate.robots_settled("a.test") is None  # the late callback frees nothing twice


# --- politeness per IP --------------------------------------------------------------------------------

def test_two_host_names_on_one_ip_wait_for_each_other():
    addresses = {"a.test": "10.0.0.1", "b.test": "10.0.0.1", "c.test": "10.0.0.2"}
    resolved = []
    gate = make_gate(obey_robots=False, per_ip=PerIpLimit(lambda host: resolved.append(host) or addresses[host]))
    request = Req()
    assert gate.check("a.test", "http://a.test/", now=100.0) == GO
    gate.start("a.test", request)
    assert gate.check("b.test", "http://b.test/", now=100.0) == Verdict("wait", 100.0 + IP_POLL_SECONDS, "ip")
    assert gate.check("c.test", "http://c.test/", now=100.0) == GO  # another server
    ready_at = gate.finished("a.test", request, got_response=True, robots_status=None, now=100.5)
    assert ready_at == pytest.approx(101.51)
    gate.free("a.test", ready_at)
    # the server's delay holds both its names
    assert gate.check("b.test", "http://b.test/", now=101.0) == Verdict("wait", ready_at, "ip")
    assert gate.check("a.test", "http://a.test/", now=101.0) == Verdict("wait", ready_at, "ip")
    assert gate.check("b.test", "http://b.test/", now=ready_at) == GO
    gate.start("b.test", Req())
    assert gate.check("a.test", "http://a.test/", now=200.0) == Verdict("wait", 200.0 + IP_POLL_SECONDS, "ip")
    assert resolved == ["a.test", "b.test", "c.test"]  # each name resolved once


def test_freeing_another_host_does_not_free_the_server():
    limit = PerIpLimit({"a.test": "ip", "b.test": "ip"}.get)
    limit.start("a.test")
    limit.free("b.test", 5.0)  # b.test's request was not the one in flight there
    assert limit.busy == {"ip": "a.test"}
    assert limit.blocked_until("b.test", now=10.0) == pytest.approx(10.0 + IP_POLL_SECONDS)
    limit.free("a.test", 3.0)
    assert limit.busy == {} and limit.ready_at == {"ip": 5.0}  # the later of the two
    assert limit.blocked_until("b.test", now=10.0) is None


def test_an_address_with_a_port_resolves_without_it():
    assert resolve_ip("127.0.0.1:8080") == "127.0.0.1"
    assert resolve_ip("127.0.0.1") == "127.0.0.1"


# --- checkpoints ----------------------------------------------------------------------------------

def test_state_and_restore_round_trip_and_reset_back_off():
    gate = make_gate()
    body = b"User-agent: *\nDisallow: /private\nCrawl-delay: 5\n"
    gate.apply_crawl_delay("a.test", allowed(gate, body=body))
    request = Req()
    gate.start("a.test", request)
    gate.response("a.test", 0.5, 429, b"400", now=100.0)
    gate.finished("a.test", request, got_response=True, robots_status=None, now=100.5)
    assert gate.timing_of("a.test").backoff_until == 160.0  # Retry-After 400, capped at 60
    gate.robots_unreachable("b.test", now=100.0)
    gate.robots_response("c.test", 404, b"", now=100.0)

    state = pickle.loads(pickle.dumps(gate.state()))  # as a checkpoint keeps it
    assert state["robots"] == {"a.test": (body.decode(), 200)}  # parsed rules only
    restored = make_gate()
    assert restored.restore(state["timing"], state["robots"], now=1000.0) == ["a.test"]
    timing = restored.timing_of("a.test")
    assert timing.backoff_until == 0.0  # a monotonic clock does not survive a restart
    assert list(timing.latencies) == [0.5] and timing.crawl_delay == 5.0
    assert restored.check("a.test", "http://a.test/private/x", now=1000.0) == Verdict("refuse", reason="robots")
    assert restored.check("a.test", "http://a.test/public", now=1000.0) == GO
    assert restored.check("b.test", "http://b.test/", now=1000.0) == Verdict("fetch_robots")
    assert restored.check("c.test", "http://c.test/", now=1000.0) == Verdict("fetch_robots")
    restored.start("a.test", request)
    assert restored.finished("a.test", request, got_response=True, robots_status=None, now=1000.0) == pytest.approx(
        1005.01)
    # the restored rules are trusted for robots_cache seconds from the restore
    assert restored.check("a.test", "http://a.test/public", now=1100.0) == Verdict("fetch_robots")


def test_a_hosts_state_travels_to_another_process_on_its_own_clocks():
    """A shared crawl hands a host from one worker to the next with its timing and robots.txt:
    times travel as durations and wall-clock instants, since monotonic clocks are per process."""
    from focuscrawl.politeness import DelayPolicy
    from focuscrawl.politeness.gate import HostGate
    from focuscrawl.politeness.robots import RobotsState

    first = HostGate(DelayPolicy(minimum=1.0), agent="focuscrawl")
    first.robots_response("h", 200, b"User-agent: *\nDisallow: /private\nCrawl-delay: 2\n", now=100.0)
    first.response("h", 0.5, 429, b"30", now=100.0)
    state = first.host_state("h", now=101.0, wall=5000.0)
    second = HostGate(DelayPolicy(minimum=1.0), agent="focuscrawl")
    assert second.take_host_state("h", state, now=7.0, wall=5000.5)
    rules = second.robots["h"]
    assert rules.state is RobotsState.PARSED and not rules.allows("http://h/private/x", "focuscrawl")
    timing = second.timing_of("h")
    assert list(timing.latencies) == [0.5] and timing.backoff_until == pytest.approx(7.0 + 29.0)
    # rules fetched here later than the other process's are kept
    third = HostGate(DelayPolicy(minimum=1.0), agent="focuscrawl")
    third.robots_response("h", 200, b"User-agent: *\nDisallow:\n", now=50.0)
    assert not third.take_host_state("h", state, now=50.0, wall=5000.5)
    assert third.robots["h"].allows("http://h/private/x", "focuscrawl")
    # an unreachable robots.txt travels as unreachable
    fourth = HostGate(DelayPolicy(minimum=1.0), agent="focuscrawl")
    fourth.robots_unreachable("u", now=10.0)
    moved = HostGate(DelayPolicy(minimum=1.0), agent="focuscrawl")
    assert moved.take_host_state("u", fourth.host_state("u", now=10.0, wall=1000.0), now=3.0, wall=1000.0)
    assert moved.robots["u"].state is RobotsState.UNREACHABLE
