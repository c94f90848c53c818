"""Politeness of ``scrapy crawl focused`` on the WebKB replay, judged from the server's log.

    python bench/politeness.py [--budget 1000] [--model MODEL] [--out DIR]

The WebKB WARC (../shared/webkb) is served by a ReplayProxy (latency 5 ms) with robots.txt files
that disallow real, frequently linked path prefixes on the four department hosts and a few
others, and set ``Crawl-delay: 1`` on two department hosts; an exclusion file names one busy host
the crawl would otherwise reach. The crawl runs as its own process (DOWNLOAD_DELAY=0.05,
FOCUS_BUDGET=N) through the replay, and the server's log is audited with
``focuscrawl.politeness.audit.audit_report``: requests to disallowed paths, gaps shorter than a
host's required delay (end of one response to start of the next request), connections open at
once per host, Retry-After, requests to the excluded host. The crawl's own refusals (request log
``dropped`` reasons and the ``focus/refused/*`` stats) are printed beside them.

Everything is deterministic except timing. The topic model (``course``) is trained on the
non-department pages unless ``--model`` is given (reused from DIR/course.joblib when present).
Outputs in DIR: robots.json, exclude.txt, seeds.txt, server.jsonl, requests.jsonl, crawl.db,
crawl.log, report.json.
"""

from __future__ import annotations

import argparse
import email.utils
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from focuscrawl.politeness.audit import audit_report, crawl_delays, load_log  # noqa: E402
from focuscrawl.replay import RecordedWeb, ReplayProxy  # noqa: E402

WEBKB = ROOT.parent / "shared" / "webkb"
WARC = WEBKB / "webkb.warc.gz"
LABELS = WEBKB / "labels.tsv"
SEEDS = ["http://www.cs.cornell.edu/", "http://www.cs.utexas.edu/",
         "http://www.cs.washington.edu/", "http://www.cs.wisc.edu/"]
DOWNLOAD_DELAY = 0.05
LATENCY_MS = 5
CRAWL_DELAY_HOSTS = ("www.cs.cornell.edu", "www.cs.wisc.edu")
EXCLUDED_HOST = "www.wisc.edu"
# WebKB has no 429/503, so the replay throttles a few requests itself: {host: {n: (status,
# Retry-After)}} answers that host's n-th page request (robots.txt not counted) with that status.
# "date+S" sends an HTTP date S seconds (rounded up to a whole second) after the response.
THROTTLE = {
    "www.cs.washington.edu": {30: (503, "2"), 60: (429, "date+3"), 90: (503, "3")},
    "www.cs.wisc.edu": {10: (503, "2")},
}

# Real path prefixes of the WebKB hosts, chosen from the link graph and a crawl without rules so
# that each rule stands between the focused crawl and pages it would otherwise fetch.
DISALLOW = {
    "www.cs.cornell.edu": ["/Info/People/", "/Info/Department/"],
    "www.cs.utexas.edu": ["/users/UTCS/", "/users/lavender/", "/docs/"],
    "www.cs.washington.edu": ["/education/courses/5", "/homes/", "/htbin-post/"],
    "www.cs.wisc.edu": ["/~pubs/", "/~arch/", "/csl/", "/logs/"],
    "www.engr.wisc.edu": ["/ece/"],
    "www.cornell.edu": ["/Academic/Courses96/"],
    "www.csuglab.cornell.edu": ["/Info/Activities/"],
    "www.utexas.edu": ["/student/"],
}


class ThrottlingReplayProxy(ReplayProxy):
    """A ReplayProxy that answers the requests named in ``throttle`` with 429/503 and a
    Retry-After, and logs the Retry-After it sent (``retry_after``, as the audit reads it)."""

    def __init__(self, web, throttle: dict, **kwargs):
        super().__init__(web, **kwargs)
        self.throttle = throttle
        self._seen: Counter = Counter()
        self._sent_retry_after: dict[str, str] = {}

    def _lookup(self, url: str, path: str):
        from focuscrawl.replay.recorded import host_of

        host = host_of(url)
        if path != "/robots.txt" and host in self.throttle:
            self._seen[host] += 1
            hit = self.throttle[host].get(self._seen[host])
            if hit:
                status, value = hit
                if value.startswith("date+"):
                    value = email.utils.formatdate(math.ceil(time.time() + float(value[5:])), usegmt=True)
                self._sent_retry_after[url] = value
                return status, [("Content-Type", "text/plain"), ("Retry-After", value)], b"slow down\n"
        return super()._lookup(url, path)

    def _record(self, rec: dict) -> None:
        value = self._sent_retry_after.pop(rec.get("url"), None)
        if value is not None and rec.get("status") in (429, 503):
            rec = dict(rec, retry_after=value)
        super()._record(rec)


def strict_gaps(records: list[dict], required: dict[str, float], crawl_log: Path) -> list[dict]:
    """Every end-to-start gap below the required delay with no tolerance at all, with the time
    the crawl's request log says the previous response reached the crawler (its own clock)."""
    received = {}
    if crawl_log.is_file():
        for line in crawl_log.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line) if line.strip() else {}
            if rec.get("status") is not None and rec.get("url"):
                received.setdefault(rec["url"], rec["time"])
    by_host: dict[str, list[dict]] = {}
    for r in records:
        by_host.setdefault(r["host"], []).append(r)
    out = []
    for host, rs in by_host.items():
        need = required.get(host)
        if not need:
            continue
        rs.sort(key=lambda r: (r["t_start"], r["t_end"]))
        prev = rs[0]
        for r in rs[1:]:
            gap = r["t_start"] - prev["t_end"]
            if gap < need:
                got = received.get(prev["url"])
                out.append({"host": host, "required": need, "gap": round(gap, 4),
                            "prev_url": prev["url"], "prev_status": prev["status"],
                            "prev_t_end_server": prev["t_end"], "prev_received_crawl_log": got,
                            "url": r["url"], "t_start_server": r["t_start"],
                            "gap_from_crawl_receipt": None if got is None else round(r["t_start"] - got, 4)})
            if r["t_end"] >= prev["t_end"]:
                prev = r
    return sorted(out, key=lambda g: g["gap"])


def retry_after_waits(records: list[dict]) -> list[dict]:
    """For each 429/503 with a Retry-After: what it asked and how long the host then waited for
    the next request (end of that response to the start of the next one, server clock)."""
    from focuscrawl.politeness.audit import retry_after_seconds

    out = []
    for r in records:
        if r.get("status") not in (429, 503) or not r.get("retry_after"):
            continue
        later = [o["t_start"] for o in records if o["host"] == r["host"] and o["t_start"] >= r["t_end"]]
        out.append({"host": r["host"], "url": r["url"], "status": r["status"], "retry_after": r["retry_after"],
                    "asked": round(retry_after_seconds(r["retry_after"], now=r["t_end"]), 3),
                    "waited": round(min(later) - r["t_end"], 3) if later else None})
    return out


def build_robots() -> dict[str, str]:
    """{host: robots.txt text}: Disallow rules for everyone, Crawl-delay 1 on two hosts."""
    robots = {}
    for host, prefixes in DISALLOW.items():
        lines = ["# focuscrawl politeness benchmark", "User-agent: *"]
        lines += [f"Disallow: {p}" for p in prefixes]
        if host in CRAWL_DELAY_HOSTS:
            lines.append("Crawl-delay: 1")
        robots[host] = "\n".join(lines) + "\n"
    for host in CRAWL_DELAY_HOSTS:
        robots.setdefault(host, "User-agent: *\nCrawl-delay: 1\n")
    return robots


def train(out: Path) -> Path:
    path = out / "course.joblib"
    if path.is_file():
        print(f"reusing the topic model {path}", flush=True)
        return path
    print("training the course model on the non-department pages...", flush=True)
    subprocess.run([sys.executable, "-m", "scrapy", "train", str(WARC), "--labels", str(LABELS),
                    "--positive", "course", "--exclude-host", "cornell|utexas|washington|wisc",
                    "-o", str(path)], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return path


def crawl_stats(log_text: str) -> dict[str, int]:
    """The ``focus/refused/*`` and ``focus/robots/*`` counters of Scrapy's closing stats dump."""
    return {k: int(v) for k, v in re.findall(r"'(focus/(?:refused|robots|politeness)/[^']+)': (\d+)", log_text)}


def request_log_counts(path: Path) -> tuple[Counter, Counter, int]:
    """(dropped reasons, dropped reasons by host, requests that reached the network)."""
    from urllib.parse import urlsplit

    dropped, by_host, sent = Counter(), Counter(), 0
    if not path.is_file():
        return dropped, by_host, sent
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("event"):
            continue
        if rec.get("dropped"):
            dropped[rec["dropped"]] += 1
            by_host[(urlsplit(rec["url"]).netloc, rec["dropped"])] += 1
        else:
            sent += 1
    return dropped, by_host, sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=1000, help="FOCUS_BUDGET (default 1000)")
    parser.add_argument("--model", help="topic model (default: train one into DIR/course.joblib)")
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "focuscrawl-politeness"),
                        help="output folder (default: focuscrawl-politeness in the temp folder)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds allowed for the crawl")
    args = parser.parse_args()

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for name in ("server.jsonl", "requests.jsonl", "crawl.db", "crawl.log"):
        (out / name).unlink(missing_ok=True)
    robots = build_robots()
    (out / "robots.json").write_text(json.dumps(robots, indent=1) + "\n", encoding="utf-8")
    (out / "exclude.txt").write_text(f"# focuscrawl politeness benchmark\n{EXCLUDED_HOST}\n", encoding="utf-8")
    (out / "seeds.txt").write_text("\n".join(SEEDS) + "\n", encoding="utf-8")
    model = Path(args.model).resolve() if args.model else train(out)

    web = RecordedWeb.from_warcs([WARC])
    argv = [sys.executable, "-m", "scrapy", "crawl", "focused",
            "-a", f"seeds={out / 'seeds.txt'}", "-a", f"model={model}",
            "-s", f"FOCUS_BUDGET={args.budget}", "-s", f"DOWNLOAD_DELAY={DOWNLOAD_DELAY}",
            "-s", f"FOCUS_EXCLUDE_FILE={out / 'exclude.txt'}", "-s", f"FOCUS_STORE={out / 'crawl.db'}",
            "-s", f"FOCUS_CRAWL_LOG={out / 'requests.jsonl'}"]
    proxy = ThrottlingReplayProxy(web, THROTTLE, robots=robots, latency_ms=LATENCY_MS, log_path=str(out / "server.jsonl")).start()
    print(f"replaying {len(web)} responses at {proxy.url} (latency {LATENCY_MS} ms); crawling with a budget "
          f"of {args.budget} requests, DOWNLOAD_DELAY={DOWNLOAD_DELAY}...", flush=True)
    start = time.monotonic()
    try:
        with (out / "crawl.log").open("w", encoding="utf-8") as fh:
            result = subprocess.run(argv, cwd=ROOT, env=proxy.crawl_env(), stdout=fh,
                                    stderr=subprocess.STDOUT, timeout=args.timeout, check=False)
    finally:
        proxy.stop()
    wall = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"error: the crawl failed (exit {result.returncode}); see {out / 'crawl.log'}")

    records = load_log(out / "server.jsonl")
    report = audit_report(records, robots=robots, delays=DOWNLOAD_DELAY, excluded=[EXCLUDED_HOST])
    stats = crawl_stats((out / "crawl.log").read_text(encoding="utf-8", errors="replace"))
    dropped, dropped_by_host, sent = request_log_counts(out / "requests.jsonl")

    delays = crawl_delays(robots)
    waits = retry_after_waits(records)
    strict = strict_gaps(records, report["required_gap"], out / "requests.jsonl")
    robots_reqs = sum(1 for r in records if r.get("path") == "/robots.txt")
    cd_gaps = {h: g for h, g in report["min_gap"].items() if h in delays}
    other_gaps = {h: g for h, g in report["min_gap"].items() if h not in delays}
    min_other = min(other_gaps.items(), key=lambda kv: kv[1]) if other_gaps else (None, None)
    robots_hosts_hit = sorted(h for h in robots if h in report["requests_per_host"])
    vc = report["violation_counts"]
    statuses = Counter()
    for r in records:
        statuses[r.get("status")] += 1
    throttled = statuses.get(429, 0) + statuses.get(503, 0)

    summary = {
        "budget": args.budget, "wall_seconds": round(wall, 1),
        "crawl_span_seconds": round(max(r["t_end"] for r in records) - min(r["t_start"] for r in records), 1)
        if records else 0.0,
        "requests": len(records), "page_requests": len(records) - robots_reqs, "robots_requests": robots_reqs,
        "hosts_contacted": len(report["requests_per_host"]),
        "hosts_with_rules_contacted": robots_hosts_hit,
        "crawl_delay_hosts": delays,
        "min_gap_crawl_delay_hosts": cd_gaps,
        "min_gap_other_hosts": {"host": min_other[0], "gap": min_other[1]},
        "max_concurrency_one_host": max(report["max_concurrency"].values(), default=0),
        "responses_429_503": throttled,
        "gaps_below_required_no_tolerance": strict,
        "retry_after_waits": waits,
        "excluded_host": EXCLUDED_HOST,
        "requests_to_excluded_host": report["requests_per_host"].get(EXCLUDED_HOST, 0),
        "crawl_refused_stats": stats,
        "crawl_dropped_request_log": dict(dropped),
        "crawl_dropped_by_host": {f"{h} {why}": n for (h, why), n in sorted(dropped_by_host.items())},
        "crawl_requests_sent_request_log": sent,
    }
    full = {"summary": summary, "audit": report, "robots": robots, "argv": argv}
    (out / "report.json").write_text(json.dumps(full, indent=1) + "\n", encoding="utf-8")

    def row(name, value, want=""):
        print(f"| {name} | {value} | {want} |")

    print(f"\nWebKB replay, budget {args.budget}, DOWNLOAD_DELAY {DOWNLOAD_DELAY} s, latency {LATENCY_MS} ms; "
          f"wall {wall:.0f} s (crawl {summary['crawl_span_seconds']:.0f} s on the server's clock)\n")
    print("| figure (server log) | value | required |")
    print("|---|---|---|")
    row("requests (pages / robots.txt)", f"{summary['page_requests']} / {robots_reqs}")
    row("hosts contacted", f"{summary['hosts_contacted']} ({len(robots_hosts_hit)} of the {len(robots)} with rules)")
    row("requests to disallowed paths", vc["disallowed"], "0")
    row("requests before robots.txt was read", vc["robots_not_first"], "0")
    row("gaps below the host's required delay (audit, 0.05 s tolerance)", vc["gap"], "0")
    row("gaps below it with no tolerance (of all gaps)",
        f"{len(strict)} (of {sum(max(0, n - 1) for n in report['requests_per_host'].values())})", "0")
    for h, g in sorted(cd_gaps.items()):
        row(f"smallest gap, {h} (Crawl-delay {delays[h]:g})", f"{g:.3f} s", f"≥ {delays[h]:g} s")
    if min_other[0]:
        row("smallest gap, other hosts", f"{min_other[1]:.3f} s ({min_other[0]})", f"≥ {DOWNLOAD_DELAY:g} s")
    row("max connections open at once to one host", summary["max_concurrency_one_host"], "1")
    row("Retry-After violations", f"{vc['retry_after']} ({throttled} 429/503 responses served)", "0")
    for w in waits:
        asked = w["retry_after"] if str(w["retry_after"]).isdigit() else "HTTP date"
        row(f"waited after a {w['status']} with Retry-After: {asked} ({w['host']})",
            "no later request" if w["waited"] is None else f"{w['waited']:.3f} s", f"≥ {w['asked']:g} s")
    row(f"requests to the excluded host ({EXCLUDED_HOST})", summary["requests_to_excluded_host"], "0")
    row("crawl refused: robots (request log / stats)",
        f"{dropped.get('robots', 0)} / {stats.get('focus/refused/robots', 0)}")
    row("crawl refused: excluded (request log / stats)",
        f"{dropped.get('excluded', 0)} / {stats.get('focus/refused/excluded', 0)}")
    others = {k: v for k, v in dropped.items() if k not in ("robots", "excluded")}
    if others:
        row("crawl refused: other reasons", ", ".join(f"{k} {v}" for k, v in sorted(others.items())))
    print(f"\naudit: {'OK, no violation' if report['ok'] else 'VIOLATIONS'}; report in {out / 'report.json'}")
    for g in strict[:10]:
        print(f"  below {g['required']:g} s: {g['host']} {g['gap']:.3f} s after {g['prev_url']} "
              f"(server t_end {g['prev_t_end_server']:.3f}; crawl log has it received at "
              f"{g['prev_received_crawl_log']}: {g['gap_from_crawl_receipt']} s before the next start) -> {g['url']}")
    if not report["ok"]:
        for kind, vs in report["violations"].items():
            for v in vs[:10]:
                print(f"  [{kind}] {v['host']} {v['url']} t={v['t']:.3f}: {v['detail']}")


if __name__ == "__main__":
    main()
