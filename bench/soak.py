"""Soak: ``scrapy crawl focused`` for a long while on a generated hostile web; memory, crashes, politeness.

    python bench/soak.py [--minutes 20] [--seed 0] [--hosts 1000] [--out DIR] [--jobdir]
                         [--probe-types] [--probe-tracemalloc] [-s NAME=VALUE ...]

The web (bench/soakweb.py: 10^5 pages over 10^3 hosts with traps, slow hosts, huge and gzipped
bodies and a gzip bomb, lying charsets, 5xx and 429, robots.txt of every sort, redirect loops) is
generated on request by a forward proxy on 127.0.0.1 (bench/soakproxy.py) that logs every request
in the replay's format. The crawl runs the way a user runs it, as its own process::

    scrapy crawl focused -a seeds=seeds.txt -a model=model.joblib -O items.jsonl
        -s FOCUS_STORE=crawl.db -s FOCUS_CRAWL_LOG=requests.jsonl [-s JOBDIR=job]

with focuscrawl's default settings (DOWNLOAD_DELAY 1 s, 16 requests at once), and is stopped with
SIGINT after ``--minutes`` (as Ctrl-C would; a second SIGINT, then SIGKILL, if it does not stop).
The topic model is trained at the start on the demo web's training hosts (reused from
DIR/model.joblib); the soak web is written from the same vocabulary, so it scores its pages.

While it runs, the crawler's resident memory (/proc/PID/status VmRSS; VmHWM for the peak) and
its CPU time (/proc/PID/stat: on a shared machine, whether it got the CPU it wanted) are sampled
every ``--sample-seconds``, and a probe inside the crawler (bench/soakprobe.py, a Scrapy
extension; ``--no-probe`` leaves it out) writes the size of every structure that can grow every
30 s, so that growth can be traced to a part (``--probe-tracemalloc``: to the lines that allocated
it, at the cost of a slower crawl). At the end it prints the memory curve, the drift of
the second half (max/min and last/first of the memory held, the lowest sample of each minute: a big
page's parse takes tens of MiB for a few seconds, which single samples show beside it; target: within
``--drift``, 10%), requests and pages per
second, the answers by status and by hostile kind, the crawl's refusals and errors, whether it
crashed (exit code, ``Traceback``/``Unhandled`` in its log), the structures that grew in the second
half, and the verdict of the politeness audit (``focuscrawl.politeness.audit``) on the proxy's
log, with each host's robots.txt as a polite crawler must read it (404: allow all; 5xx: disallow
all). Exit code 1 when a target fails. Outputs in DIR: server.jsonl, requests.jsonl, crawl.log,
crawl.db, items.jsonl, probe.jsonl, memory.jsonl, report.json.

A run shorter than a few minutes measures start-up more than a steady state: ``--minutes 1`` is a
smoke test of the machinery, not of the drift.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from focuscrawl.politeness.audit import audit_report, format_report, load_log  # noqa: E402
from soakprobe import rss_kib  # noqa: E402
from soakproxy import SoakProxy  # noqa: E402
from soakweb import SoakWeb, big_gzip, gzip_bomb, varied_block  # noqa: E402

DEFAULT_DELAY = 1.0  # DOWNLOAD_DELAY as focuscrawl.Addon sets it (focuscrawl/addon.py)
MAX_CRAWL_DELAY = 30.0  # FOCUS_MAX_CRAWL_DELAY's default: a longer Crawl-delay is crawled at it
STOP_GRACE = 120.0  # seconds a crawl may take to stop after SIGINT (slow hosts, 30 s download timeout)
OUTPUTS = ("server.jsonl", "requests.jsonl", "crawl.log", "crawl.db", "items.jsonl", "probe.jsonl",
           "memory.jsonl", "report.json")


def train_model(path: Path) -> Path:
    """A topic model trained on the demo web's training hosts (as tests/conftest.py does)."""
    if path.is_file():
        print(f"reusing the topic model {path}", flush=True)
        return path
    from focuscrawl.demo import generate_web
    from focuscrawl.relevance import load_examples, train_topic_model

    print("training the topic model on the demo web's training hosts...", flush=True)
    demo = generate_web(seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        warc = demo.write_warc(Path(tmp) / "demo.warc.gz")
        labels = demo.write_labels(Path(tmp) / "labels.tsv")
        hosts = "|".join(h.replace(".", r"\.") for h in demo.train_hosts)
        examples = load_examples([str(warc)], labels_path=str(labels), include_host=f"^({hosts})$")
        model, _ = train_topic_model(examples, [demo.topic], cv_folds=3)
    model.save(str(path))
    return path


def crawl_argv(out: Path, model: Path, args) -> list[str]:
    argv = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"seeds={out / 'seeds.txt'}",
            "-a", f"model={model}", "-O", str(out / "items.jsonl"),
            "-s", f"FOCUS_STORE={out / 'crawl.db'}", "-s", f"FOCUS_CRAWL_LOG={out / 'requests.jsonl'}"]
    if args.jobdir:
        argv += ["-s", f"JOBDIR={out / 'job'}"]
    if args.probe:
        extensions = {"soakprobe.SoakProbe": 0}  # the add-on adds focuscrawl's own beside it
        argv += ["-s", f"EXTENSIONS={json.dumps(extensions)}", "-s", f"SOAK_PROBE_FILE={out / 'probe.jsonl'}",
                 "-s", f"SOAK_PROBE_TYPES={args.probe_types}", "-s", f"SOAK_PROBE_TRACEMALLOC={args.probe_tracemalloc}"]
    for setting in args.set:
        argv += ["-s", setting]
    return argv


def setting(args, name: str, default: float) -> float:
    for s in args.set:
        key, _, value = s.partition("=")
        if key == name:
            return float(value)
    return default


# --- running ---------------------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far, from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()  # the command name may hold spaces
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # fields 14 and 15 of stat(5)


def run_crawl(argv: list[str], env: dict, out: Path, proxy: SoakProxy, seconds: float, every: float) -> dict:
    """Run the crawl for ``seconds``, sampling its memory; stop it with SIGINT. Returns what
    happened: exit code, how it stopped, the samples."""
    samples = []
    start = time.monotonic()
    with (out / "crawl.log").open("w", encoding="utf-8") as log, (out / "memory.jsonl").open("w") as mem:
        proc = subprocess.Popen(argv, cwd=out, env=env, stdout=log, stderr=subprocess.STDOUT)
        print(f"crawler pid {proc.pid}; sampling VmRSS every {every:g} s for {seconds / 60:g} min", flush=True)
        try:
            return _watch(proc, mem, proxy, seconds, every, start, samples)
        finally:
            if proc.poll() is None:  # the bench itself was stopped: never leave a crawler behind
                proc.kill()
                proc.wait()


def _watch(proc, mem, proxy: SoakProxy, seconds: float, every: float, start: float, samples: list) -> dict:
    """Sample until the crawler exits; SIGINT at ``seconds``, again after STOP_GRACE, SIGKILL 30 s later."""
    next_print = start + 60
    stopped, signals_sent = "exited by itself", []
    while proc.poll() is None:
        now = time.monotonic()
        if now - start >= seconds and not signals_sent:
            proc.send_signal(signal.SIGINT)
            signals_sent.append(("SIGINT", round(now - start, 1)))
            stopped = "SIGINT"
        elif len(signals_sent) == 1 and now - start >= seconds + STOP_GRACE:
            proc.send_signal(signal.SIGINT)  # Scrapy's second Ctrl-C: stop without finishing
            signals_sent.append(("SIGINT", round(now - start, 1)))
            stopped = "second SIGINT (did not stop within the grace)"
        elif len(signals_sent) == 2 and now - start >= seconds + STOP_GRACE + 30:
            proc.kill()
            signals_sent.append(("SIGKILL", round(now - start, 1)))
            stopped = "SIGKILL (did not stop after two SIGINTs)"
        mem_now, cpu = rss_kib(str(proc.pid)), cpu_seconds(proc.pid)
        if mem_now.get("VmRSS"):
            answered, pages = proxy.snapshot()
            sample = {"t": round(now - start, 1), "rss_kib": mem_now["VmRSS"], "hwm_kib": mem_now.get("VmHWM"),
                      "cpu_s": cpu, "requests": answered, "pages": pages, "stopping": bool(signals_sent)}
            samples.append(sample)
            mem.write(json.dumps(sample) + "\n")
            mem.flush()
            if now >= next_print:
                next_print += 60
                print(f"  {sample['t'] / 60:5.1f} min  RSS {sample['rss_kib'] / 1024:7.1f} MiB  "
                      f"requests {answered:7d}  load {os.getloadavg()[0]:.2f}", flush=True)
        time.sleep(min(every, 1.0) if signals_sent else every)
    return {"exit_code": proc.returncode, "stopped": stopped, "signals": signals_sent,
            "wall_seconds": round(time.monotonic() - start, 1), "samples": samples}


# --- reading what happened ---------------------------------------------------------------------------

def crawl_stats(log_text: str) -> dict[str, float]:
    """The numeric entries of Scrapy's last stats dump."""
    dump = log_text.rsplit("Dumping Scrapy stats:", 1)
    if len(dump) < 2:
        return {}
    return {k: float(v) for k, v in re.findall(r"'([^']+)': (-?\d+(?:\.\d+)?)[,}]", dump[1].split("\n}", 1)[0] + "}")}


def crash_evidence(log_text: str, limit: int = 3) -> dict:
    """Tracebacks and unhandled errors in the crawl's log: counts and the first few, trimmed."""
    lines = log_text.splitlines()
    tracebacks = [i for i, line in enumerate(lines) if "Traceback" in line]
    unhandled = [line for line in lines if "Unhandled" in line]
    excerpts = []
    for i in tracebacks[:limit]:
        block = [lines[i]]
        for line in lines[i + 1: i + 80]:
            block.append(line)
            if line and not line.startswith((" ", "\t", "Traceback", "During", "The above")) and len(block) > 2:
                break
        excerpts.append("\n".join([lines[i - 1]] + block if i else block))
    return {"tracebacks": len(tracebacks), "unhandled": len(unhandled), "errors": log_text.count("] ERROR:"),
            "excerpts": excerpts, "unhandled_lines": unhandled[:limit]}


#: the window of the memory the crawler holds: the lowest sample in it
HELD_WINDOW_S = 60.0


def held(samples: list[dict], window: float = HELD_WINDOW_S) -> list[float]:
    """The memory the crawler holds, sample by sample: the lowest resident memory (KiB) in each
    ``window`` seconds. A page of megabytes takes tens of MiB while it is parsed and gives them
    back within seconds; what the crawl keeps, and any leak, is in every sample of a window."""
    out, start = [], 0
    for end in range(len(samples)):
        while samples[end]["t"] - samples[start]["t"] >= window:
            start += 1
        if samples[end]["t"] - samples[0]["t"] >= window - 1e-9:
            out.append(min(s["rss_kib"] for s in samples[start:end + 1]))
    return out


def drift(samples: list[dict], until: float) -> dict:
    """Second half of the run (before SIGINT): min, max, first, last resident memory and the ratios,
    of every sample and of the memory held (``held``: the target is judged on it)."""
    half = [s for s in samples if until / 2 <= s["t"] <= until and not s["stopping"]]
    if len(half) < 2:
        return {"samples": len(half)}
    rss = [s["rss_kib"] for s in half]
    kept = held(half) or [min(rss)]
    return {"samples": len(half), "from_s": half[0]["t"], "to_s": half[-1]["t"],
            "min_mib": round(min(rss) / 1024, 1), "max_mib": round(max(rss) / 1024, 1),
            "first_mib": round(rss[0] / 1024, 1), "last_mib": round(rss[-1] / 1024, 1),
            "max_over_min": round(max(rss) / min(rss), 4), "last_over_first": round(rss[-1] / rss[0], 4),
            "held_first_mib": round(kept[0] / 1024, 1), "held_last_mib": round(kept[-1] / 1024, 1),
            "held_max_over_min": round(max(kept) / min(kept), 4),
            "held_last_over_first": round(kept[-1] / kept[0], 4)}


def load_probe(path: Path) -> list[dict]:
    return load_log(path) if path.is_file() else []


def memory_table(samples: list[dict], probes: list[dict], row_every: float) -> list[str]:
    """One row every ``row_every`` seconds: RSS, its peak so far, requests and pages (200) in the row,
    and what the probe saw nearest that time."""
    rows = ["|    t | RSS MiB | peak MiB | CPU % | requests | 200s | req/s | frontier |   seen | dedup | blocks k |",
            "|-----:|--------:|---------:|------:|---------:|-----:|------:|---------:|-------:|------:|---------:|"]
    last = {"t": 0.0, "requests": 0, "pages": 0, "cpu_s": 0.0}
    next_t = row_every
    for i, s in enumerate(samples):
        final = i == len(samples) - 1
        if s["t"] < next_t and not final:
            continue
        while next_t <= s["t"]:
            next_t += row_every
        probe = min(probes, key=lambda p: abs(p["t"] - s["t"])) if probes else {}
        sizes = probe.get("sizes", {})
        span = max(1e-9, s["t"] - last["t"])
        cpu = 100 * ((s.get("cpu_s") or 0) - (last.get("cpu_s") or 0)) / span
        rows.append(f"| {_mmss(s['t'])} | {s['rss_kib'] / 1024:7.1f} | {(s['hwm_kib'] or 0) / 1024:8.1f} | "
                    f"{cpu:5.0f} | "
                    f"{s['requests'] - last['requests']:8d} | {s['pages'] - last['pages']:4d} | "
                    f"{(s['requests'] - last['requests']) / span:5.1f} | {sizes.get('frontier', ''):>8} | "
                    f"{sizes.get('seen', ''):>6} | {sizes.get('dedup_near', ''):>5} | "
                    f"{round(probe['blocks'] / 1000) if probe.get('blocks') else '':>8} |"
                    + (" stopping" if s["stopping"] else ""))
        last = s
    return rows


def _mmss(t: float) -> str:
    return f"{int(t // 60):2d}:{int(t % 60):02d}"


def growth(probes: list[dict], until: float) -> tuple[list[tuple[str, int, int]], list[tuple[str, int, int]]]:
    """What grew over the second half, as (name, at its start, at its end): the structures and
    object types (most growth relative to size first), and the allocation sites (KiB, most first;
    with --probe-tracemalloc)."""
    half = [p for p in probes if until / 2 <= p["t"] <= until and not p.get("final")]
    if len(half) < 2:
        return [], []
    first, last = half[0], half[-1]
    keys = set(first.get("sizes", {})) | set(last.get("sizes", {}))
    out = [(k, first["sizes"].get(k, 0), last["sizes"].get(k, 0)) for k in keys]
    out.append(("python_blocks", first.get("blocks", 0), last.get("blocks", 0)))
    out += [(f"type:{k}", first.get("types", {}).get(k, 0), v) for k, v in last.get("types", {}).items()]
    structures = sorted((g for g in out if g[2] > g[1]), key=lambda g: (g[2] - g[1]) / max(1, g[1]), reverse=True)
    sites = [(k, first.get("malloc", {}).get(k, 0), v) for k, v in last.get("malloc", {}).items()]
    return structures, sorted((g for g in sites if g[2] > g[1]), key=lambda g: g[2] - g[1], reverse=True)


def audit(server_log: Path, web: SoakWeb, delay: float) -> tuple[dict, list[dict]]:
    records = load_log(server_log)
    hosts = {r["host"] for r in records if r.get("host")}
    robots = {h: web.robots_for_audit(h) for h in hosts}
    report = audit_report([r for r in records if r.get("host")], robots=robots, delays=delay,
                          max_crawl_delay=MAX_CRAWL_DELAY)
    return report, records


# --- main --------------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0, help="how long the crawl runs (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="the generated web's seed (default 0)")
    parser.add_argument("--hosts", type=int, default=1000, help="hosts of the generated web (default 1000)")
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "focuscrawl-soak"),
                        help="output folder (default: focuscrawl-soak in the temp folder; its outputs are replaced)")
    parser.add_argument("--model", help="topic model (default: train one into DIR/model.joblib)")
    parser.add_argument("--jobdir", action="store_true", help="crawl with -s JOBDIR=DIR/job (checkpoints)")
    parser.add_argument("--sample-seconds", type=float, default=5.0, help="memory sampling period (default 5)")
    parser.add_argument("--drift", type=float, default=0.10, help="allowed second-half drift (default 0.10)")
    parser.add_argument("--no-probe", dest="probe", action="store_false", help="leave the in-crawler probe out")
    parser.add_argument("--probe-types", action="store_true", help="the probe also counts objects by type")
    parser.add_argument("--probe-tracemalloc", action="store_true",
                        help="the probe also traces allocations (where growth comes from; slows the crawl)")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="extra setting for the crawl (e.g. DOWNLOAD_DELAY=0.5)")
    args = parser.parse_args()
    # a SIGTERM (timeout, a supervisor) ends the bench through its finally clauses: the crawler
    # is killed and the proxy stopped, nothing is left running
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS:
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / "job", ignore_errors=True)
    model = Path(args.model).resolve() if args.model else train_model(out / "model.joblib")
    web = SoakWeb(seed=args.seed, hosts=args.hosts)
    (out / "seeds.txt").write_text("\n".join(web.seeds()) + "\n", encoding="utf-8")
    varied_block(), gzip_bomb(), big_gzip()  # built now, not while the crawl waits on the proxy
    delay = setting(args, "DOWNLOAD_DELAY", DEFAULT_DELAY)
    argv = crawl_argv(out, model, args)
    load_before = os.getloadavg()

    proxy = SoakProxy(web, log_path=str(out / "server.jsonl")).start()
    env = proxy.crawl_env()
    env["PYTHONPATH"] = os.pathsep.join([str(BENCH), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    print(f"soak web: {len(web)} pages over {len(web.profiles)} hosts (seed {args.seed}) at {proxy.url}; "
          f"{len(web.seeds())} seeds; load average {load_before[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    try:
        run = run_crawl(argv, env, out, proxy, 60 * args.minutes, args.sample_seconds)
        proxy.wait_idle(timeout=10)
    finally:
        proxy.stop()
    load_after = os.getloadavg()

    # --- what happened
    log_text = (out / "crawl.log").read_text(encoding="utf-8", errors="replace")
    stats = crawl_stats(log_text)
    crash = crash_evidence(log_text)
    samples, probes = run["samples"], load_probe(out / "probe.jsonl")
    until = next((t for name, t in run["signals"]), samples[-1]["t"] if samples else 0.0)
    half = drift(samples, until)
    grew, sites = growth(probes, until)
    report, records = audit(out / "server.jsonl", web, delay)
    page_records = [r for r in records if r.get("path") != "/robots.txt"]
    span = (max(r["t_end"] for r in records) - min(r["t_start"] for r in records)) if records else 0.0
    statuses = Counter(r["status"] for r in records)
    items = sum(1 for _ in (out / "items.jsonl").open()) if (out / "items.jsonl").is_file() else 0

    flat = half.get("held_max_over_min", 0) and half["held_max_over_min"] <= 1 + args.drift
    ran_through = run["stopped"] == "SIGINT" and bool(run["signals"])
    no_crash = run["exit_code"] == 0 and not crash["tracebacks"] and not crash["unhandled"] and ran_through
    verdicts = {"memory flat in the second half": bool(flat), "no crash": no_crash, "audit clean": report["ok"]}

    # --- printing
    row_every = max(args.sample_seconds, 60 * args.minutes / 20)
    print(f"\n## Soak: {args.minutes:g} min, {len(web)} pages over {len(web.profiles)} hosts, seed {args.seed}"
          f"{', JOBDIR' if args.jobdir else ''}; DOWNLOAD_DELAY {delay:g} s; load average {load_before[0]:.2f} "
          f"before, {load_after[0]:.2f} after ({os.cpu_count()} CPUs)\n")
    print("\n".join(memory_table(samples, probes, row_every)))
    peak = max((s["hwm_kib"] or 0 for s in samples), default=0) / 1024
    print(f"\nsecond half ({_mmss(half.get('from_s', 0))}-{_mmss(half.get('to_s', 0))}): memory held (the lowest "
          f"sample of each minute) {half.get('held_first_mib')} -> {half.get('held_last_mib')} MiB, max/min "
          f"{half.get('held_max_over_min')} (target <= {1 + args.drift:g}), last/first {half.get('held_last_over_first')}; "
          f"every sample {half.get('min_mib')}-{half.get('max_mib')} MiB, max/min {half.get('max_over_min')}, "
          f"last/first {half.get('last_over_first')}; peak (VmHWM) {peak:.0f} MiB")
    print(f"requests {len(records)} ({len(records) - len(page_records)} robots.txt) in {span:.0f} s: "
          f"{len(records) / max(span, 1e-9):.1f} requests/s, {statuses.get(200, 0) / max(span, 1e-9):.1f} pages "
          f"(200)/s; {len({r['host'] for r in records})} hosts; items exported {items}")
    cpu = [s for s in samples if s.get("cpu_s") is not None]
    if len(cpu) >= 2:
        print(f"crawler CPU: {cpu[-1]['cpu_s']:.0f} s over {cpu[-1]['t']:.0f} s "
              f"({100 * cpu[-1]['cpu_s'] / max(cpu[-1]['t'], 1e-9):.0f}% of one CPU)")
    print("statuses: " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0]))))
    print("answers by kind: " + ", ".join(f"{k}: {v}" for k, v in proxy.kinds.most_common()))
    aborted = sum(1 for r in records if r.get("aborted"))
    print(f"bodies cut by the crawler mid-transfer: {aborted}")
    refused = {k.split("/", 2)[2]: int(v) for k, v in stats.items() if k.startswith("focus/refused/")}
    print("refused: " + (", ".join(f"{k}: {v}" for k, v in sorted(refused.items(), key=lambda kv: -kv[1])) or "-"))
    errors = {k.rsplit("/", 1)[-1]: int(v) for k, v in stats.items()
              if k.startswith(("downloader/exception_type_count/", "spider_exceptions/"))}
    print("download errors: "
          + (", ".join(f"{k}: {v}" for k, v in sorted(errors.items(), key=lambda kv: -kv[1])) or "-"))
    print(f"log: {int(stats.get('log_count/ERROR', 0))} ERROR, {int(stats.get('log_count/WARNING', 0))} WARNING; "
          f"stats memusage/max {stats.get('memusage/max', 0) / 2**20:.0f} MiB")
    print(f"crawler: exit code {run['exit_code']}, stopped by {run['stopped']} "
          f"(signals {run['signals']}, wall {run['wall_seconds']:.0f} s); tracebacks {crash['tracebacks']}, "
          f"'Unhandled' {crash['unhandled']}")
    for excerpt in crash["excerpts"]:
        print("  " + excerpt.replace("\n", "\n  ")[-3000:])
    if grew:
        print("grew in the second half (probe; start -> end): " + ", ".join(
            f"{name} {a} -> {b}" for name, a, b in grew[:14]))
    if sites:
        print("allocation sites that grew in the second half (KiB held; start -> end):\n  " + "\n  ".join(
            f"{name} {a} -> {b} (+{b - a})" for name, a, b in sites[:15]))
    print("politeness audit: " + format_report(report, limit=5).replace("\n", "\n  "))
    print("\n| target | result |\n|---|---|")
    for name, ok in verdicts.items():
        print(f"| {name} | {'PASS' if ok else 'FAIL'} |")

    full = {"args": vars(args), "argv": argv, "load_before": load_before, "load_after": load_after,
            "run": {k: v for k, v in run.items() if k != "samples"}, "drift": half, "growth": grew,
            "allocation_growth": sites,
            "requests": len(records), "span_seconds": span, "statuses": {str(k): v for k, v in statuses.items()},
            "kinds": dict(proxy.kinds), "aborted": aborted, "stats": stats, "crash": crash, "items": items,
            "audit": {k: report[k] for k in ("ok", "violation_counts", "violations")}, "verdicts": verdicts}
    (out / "report.json").write_text(json.dumps(full, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"\noutputs in {out}")
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
