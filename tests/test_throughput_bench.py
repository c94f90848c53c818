"""bench/throughput.py explains its ratio from the server's log: its host-use line must count right."""

from __future__ import annotations

from .conftest import load_bench


def _row(host: str, start: float, end: float) -> dict:
    return {"host": host, "t_start": start, "t_end": end, "url": f"http://{host}/"}


def test_host_use_counts_hosts_per_window_and_the_busiest_hosts_gaps():
    bench = load_bench("throughput")
    # host a: three requests, 2 ms each, 20 ms apart (gaps 18 ms); host b: one request in the
    # first 100 ms window and one in the second; host c: once, in the second window
    log = [_row("a", 0.000, 0.002), _row("a", 0.020, 0.022), _row("a", 0.040, 0.042),
           _row("b", 0.010, 0.011), _row("b", 0.150, 0.151), _row("c", 0.160, 0.170)]
    line = bench.host_use(log, busiest=1)
    # window 0 holds a and b, window 1 holds b and c
    assert line.startswith("2.0 hosts per 100 ms; busiest 1 hosts: 3 requests, ")
    assert "median gap 18.0 ms" in line
    assert "median service 2.00 ms" in line
    # with two busiest hosts, b's 139 ms gap joins a's two 18 ms gaps: the median stays 18 ms
    assert "busiest 2 hosts: 5 requests, median gap 18.0 ms" in bench.host_use(log, busiest=2)
