"""The demo web (deterministic, well-formed, learnable, written faithfully to WARC and TSV)
and the steps of ``scrapy demo`` that stand on their own."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from urllib.parse import urlsplit

import pytest
from protego import Protego

from focuscrawl.commandbase import CommandError
from focuscrawl.commands.demo import (
    Command, DemoRun, format_summary, host_regex, read_jsonl, run_step, summarize,
)
from focuscrawl.demo import DemoWeb, generate_web
from focuscrawl.demo.responses import response as _response


@pytest.fixture(scope="module")
def web() -> DemoWeb:
    return generate_web(seed=0)


def host(url: str) -> str:
    return urlsplit(url).netloc


# --- shape --------------------------------------------------------------------------------------


def test_same_seed_same_web_and_other_seed_differs():
    a, b, c = generate_web(seed=3), generate_web(seed=3), generate_web(seed=4)
    assert a.records == b.records and a.labels == b.labels and a.seeds == b.seeds
    assert a.records != c.records


def test_sizes_hosts_and_label_balance(web):
    assert 400 <= len(web.labels) <= 600
    hosts = Counter(host(u) for u in web.labels)
    assert len(hosts) == 9 and all(50 <= n <= 75 for n in hosts.values())  # 8 of the catalogue, the app host
    share = Counter(web.labels.values())["astronomy"] / len(web.labels)
    assert 0.2 <= share <= 0.45
    assert set(web.labels.values()) == {"astronomy", "other"}
    # both sides of the split hold on-topic and off-topic pages
    for side in (web.train_hosts, web.crawl_hosts):
        side_labels = Counter(l for u, l in web.labels.items() if host(u) in side)
        assert side_labels["astronomy"] >= 30 and side_labels["other"] >= 80
    assert all(h.endswith(".test") for h in hosts)


def test_train_and_crawl_hosts_are_disjoint_and_seeds_are_crawl_home_pages(web):
    assert set(web.train_hosts).isdisjoint(web.crawl_hosts)
    assert set(web.train_hosts) | set(web.crawl_hosts) == {host(u) for u in web.labels}
    assert web.seeds == [f"http://{h}/" for h in web.crawl_hosts]
    assert all(web.records[s][0] == 200 for s in web.seeds)


def test_small_webs_keep_both_roles():
    tiny = generate_web(seed=1, hosts=2, pages_per_host=20)
    assert tiny.train_hosts and tiny.crawl_hosts
    with pytest.raises(ValueError):
        generate_web(topic="knitting")


# --- links ---------------------------------------------------------------------------------------


def test_every_link_target_is_recorded_a_redirect_or_a_deliberate_404(web):
    targets = {t for url in web.labels for t in web.links(url)}
    unknown = [t for t in targets if t not in web.records]
    assert unknown == []
    statuses = Counter(web.records[t][0] for t in targets)
    assert set(statuses) == {200, 301, 404}
    assert {t for t in targets if web.records[t][0] == 404} == set(web.missing)
    assert 3 <= len(web.missing) <= 6
    assert len(web.redirects) == 2
    for old, new in web.redirects.items():
        status, headers, _ = web.records[old]
        assert status == 301 and ("Location", new) in headers and web.records[new][0] == 200


def test_topical_pages_cluster_under_hubs_that_link_across_hosts(web):
    relevant = web.relevant_urls()

    def share_relevant(urls):
        urls = [u for u in urls if u in web.labels]
        return sum(u in relevant for u in urls) / len(urls)

    topical_out = [t for u in relevant for t in web.links(u)]
    other_out = [t for u in web.labels if u not in relevant for t in web.links(u)]
    # a relevant page's links lead to relevant pages far more often than an irrelevant page's
    assert share_relevant(topical_out) > 2 * share_relevant(other_out)
    cross = [(u, t) for u in relevant for t in web.links(u) if host(t) != host(u)]
    assert len({host(t) for _, t in cross}) >= 4
    # topic words travel in URL paths, with noise both ways
    astro_paths = sum("astronomy" in u or "sky" in u or "observing" in u or "space" in u for u in relevant)
    assert 0.5 < astro_paths / len(relevant) < 1.0
    assert any("star" in urlsplit(u).path for u in web.labels if u not in relevant)


def test_duplicates_exact_and_near(web):
    kinds = Counter(kind for _, _, kind in web.duplicates)
    assert kinds == {"exact": 2, "near": 2}
    for copy, original, kind in web.duplicates:
        assert web.labels[copy] == web.labels[original] == "astronomy"
        a, b = web.records[copy][2], web.records[original][2]
        if kind == "exact":
            assert a == b
        else:
            assert a != b
            para = [line for line in b.decode().splitlines() if line.startswith("<p>")][0]
            assert para.encode() in a or para.split(" Related")[0].encode() in a


# --- robots.txt --------------------------------------------------------------------------------


def test_robots_disallow_relevant_looking_pages_and_one_crawl_delay(web):
    assert set(web.robots) == {host(u) for u in web.labels}
    for h, text in web.robots.items():
        assert web.records[f"http://{h}/robots.txt"][2].decode() == text
    assert len(web.disallowed) >= 6
    for url in web.disallowed:
        assert not Protego.parse(web.robots[host(url)]).can_fetch(url, "focuscrawl")
        assert web.labels[url] == "astronomy"
        assert any(url in web.links(u) for u in web.labels if u not in web.disallowed)
    delays = [Protego.parse(t).crawl_delay("focuscrawl") for t in web.robots.values()]
    assert sorted(d for d in delays if d) == [1.0]
    assert set(web.disallowed) & web.reachable_relevant(web.seeds) == set()


# --- charsets ------------------------------------------------------------------------------------


def test_one_host_serves_windows_1252_correctly_labelled(web):
    cp = [(u, r) for u, r in web.records.items() if "windows-1252" in dict(r[1])["Content-Type"]]
    assert cp and len({host(u) for u, _ in cp}) == 1
    texts = [r[2].decode("windows-1252") for _, r in cp]
    assert any("\u2014" in t or "\u20ac" in t for t in texts)
    assert any("Besançon" in t for t in texts)
    with pytest.raises(UnicodeDecodeError):
        b"".join(r[2] for _, r in cp).decode("utf-8")
    # and one host declares its charset only in <meta>
    meta_only = [u for u, r in web.records.items() if dict(r[1])["Content-Type"] == "text/html"]
    assert meta_only and all(b'<meta charset="utf-8">' in web.records[u][2] for u in meta_only)


# --- reachability ------------------------------------------------------------------------------


def test_reachable_relevant_on_a_hand_checked_small_web():
    def page(*hrefs):
        return _response(200, "text/html; charset=utf-8",
                         "".join(f'<a href="{h}">x</a>' for h in hrefs).encode())

    a, b, c, d, e, f, g, h, i = (f"http://s.test/{n}.html" for n in "abcdefghi")
    other = "http://o.test/"
    records = {
        a: page("/b.html", "/c.html", "/d.html", "/f.html", "/g.html#top", other),
        b: page("/a.html"),
        c: page("/h.html"),  # behind robots: h is only linked from here
        d: _response(301, "text/html", b"", [("Location", "/e.html")]),
        e: page(),
        f: _response(404, "text/html", b"gone"),
        h: page(),
        i: page(),  # relevant, recorded, but nothing links to it
        other: page("http://o.test/private/x.html"),
        "http://o.test/private/x.html": page(),
    }
    web = DemoWeb(
        records=records,
        labels={a: "other", b: "astronomy", c: "astronomy", e: "astronomy", h: "astronomy",
                i: "astronomy", other: "other", "http://o.test/private/x.html": "astronomy"},
        robots={"s.test": "User-agent: *\nDisallow: /c.html\n", "o.test": "User-agent: *\nDisallow: /private/\n"},
        seeds=[a], train_hosts=[], crawl_hosts=["s.test"],
    )
    assert web.reachable_relevant([a]) == {b, e}
    assert web.reachable_relevant([h, i]) == {h, i}
    assert web.relevant_urls(["s.test"]) == {b, c, e, h, i}


def test_most_relevant_crawl_host_pages_are_reachable_from_the_seeds(web):
    """By a crawl that renders the JavaScript host's pages and reads the PDFs' links; one that does
    neither misses the pages only they link to."""
    reachable = web.reachable_relevant(web.seeds, rendered=True) & web.relevant_urls(web.crawl_hosts)
    candidates = web.relevant_urls(web.crawl_hosts) - set(web.disallowed)
    assert len(reachable) >= 0.9 * len(candidates) and len(reachable) >= 60
    plain = web.reachable_relevant(web.seeds) & web.relevant_urls(web.crawl_hosts)
    assert len(plain) < len(reachable)


# --- output files --------------------------------------------------------------------------------


def test_warc_round_trips_through_warcio(web, tmp_path):
    from warcio.archiveiterator import ArchiveIterator

    path = web.write_warc(tmp_path / "demo.warc.gz")
    with open(path, "rb") as fh:
        assert fh.read(2) == b"\x1f\x8b"
    seen = {}
    with open(path, "rb") as fh:
        for rec in ArchiveIterator(fh):
            assert rec.rec_headers.protocol == "WARC/1.0"
            if rec.rec_type != "response":
                continue
            url = rec.rec_headers.get_header("WARC-Target-URI")
            headers = [(k, v) for k, v in rec.http_headers.headers]
            seen[url] = (int(rec.http_headers.get_statuscode()), headers, rec.content_stream().read())
    assert seen == web.records
    assert any(u.endswith("/robots.txt") for u in seen)


def test_labels_tsv(web, tmp_path):
    path = web.write_labels(tmp_path / "labels.tsv")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "url\tlabel\thost"
    rows = [line.split("\t") for line in lines[1:]]
    assert {u: l for u, l, _ in rows} == web.labels
    assert all(h == host(u) for u, _, h in rows)


# --- the topic is learnable across hosts --------------------------------------------------------


def test_a_tfidf_classifier_trained_on_train_hosts_generalises_to_crawl_hosts(web):
    import lxml.html
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    def text(url):
        _, headers, body = web.records[url]
        charset = "windows-1252" if "windows-1252" in dict(headers)["Content-Type"] else "utf-8"
        doc = lxml.html.fromstring(body.decode(charset))
        return " ".join(doc.xpath("//title//text()|//main//text()"))

    # the HTML pages whose words are in their HTML (not the app shells, nor the PDFs)
    hidden = set(web.javascript_pages) | set(web.documents)
    train = [u for u in web.labels if host(u) in web.train_hosts and u not in hidden]
    test = [u for u in web.labels if host(u) in web.crawl_hosts and u not in hidden]
    model = make_pipeline(TfidfVectorizer(sublinear_tf=True), LogisticRegression(max_iter=1000))
    model.fit([text(u) for u in train], [web.labels[u] == "astronomy" for u in train])
    predicted = model.predict([text(u) for u in test])
    accuracy = sum(p == (web.labels[u] == "astronomy") for p, u in zip(predicted, test)) / len(test)
    assert accuracy >= 0.9
    # not one magic word: no single word appears in every relevant page
    relevant_words = [set(re.findall(r"[a-z]{3,}", text(u).lower())) for u in web.relevant_urls() - hidden]
    assert not set.intersection(*relevant_words) - {"the", "and"}


# --- scrapy demo: the steps that do not need the other commands ----------------------------------

def test_demo_writes_the_web_and_serves_it_through_the_replay_proxy(tmp_path):
    pytest.importorskip("focuscrawl.replay")
    out = tmp_path / "out.txt"
    with open(out, "w", encoding="utf-8") as fh:
        run = DemoRun(tmp_path / "run", out=fh)
        web = run.generate()
        assert run.seeds.read_text().split() == web.seeds
        assert run.labels.is_file() and run.warc.is_file()
        proxy = run.start_proxy()
        try:
            opener = urllib.request.build_opener(
                urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy.port}"}))
            cp1252 = next(u for u, r in web.records.items() if "windows-1252" in dict(r[1])["Content-Type"])
            for url in (web.seeds[0], cp1252, web.disallowed[0], f"http://{web.crawl_hosts[0]}/robots.txt"):
                with opener.open(url) as resp:
                    assert resp.status == 200 and resp.read() == web.records[url][2]
            old, new = next(iter(web.redirects.items()))
            with opener.open(old) as resp:
                assert resp.geturl() == new
            with pytest.raises(urllib.error.HTTPError) as err:
                opener.open(web.missing[0])
            assert err.value.code == 404
        finally:
            run.stop_proxy()
    log = read_jsonl(run.server_log)
    assert [rec["status"] for rec in log] == [200, 200, 200, 200, 301, 200, 404]
    assert "listening on 127.0.0.1:" in out.read_text()


def test_summary_counts_pages_once_and_ignores_robots_requests(web):
    relevant = sorted(web.relevant_urls(web.crawl_hosts) & web.reachable_relevant(web.seeds))
    copy, original, _ = next(d for d in web.duplicates if d[1] in relevant and d[2] == "exact")
    old, new = next((o, n) for o, n in web.redirects.items() if n in relevant)
    picked = [u for u in relevant if u not in (original, new)][:8]
    export = [{"url": u, "final_url": u} for u in picked]
    export += [{"url": copy, "final_url": copy}, {"url": original, "final_url": original},
               {"url": old, "final_url": new}, {"url": web.seeds[0], "final_url": web.seeds[0]}]
    log = [{"method": "GET", "url": f"http://{h}/robots.txt", "status": 200} for h in web.crawl_hosts]
    log += [{"method": "GET", "url": u, "status": 200} for u in picked + [copy, original, old, new]]
    log += [{"method": "CONNECT", "url": "www.x.test:443", "status": 405}, {"method": "GET", "url": "", "status": 400}]

    s = summarize(web, export, log)
    assert s.requests == len(picked) + 4
    assert (s.exported, s.exported_relevant) == (len(picked) + 4, len(picked) + 3)
    assert s.found == s.found_reachable == len(picked) + 2  # the copy and its original are one page
    # reachable by a crawl that renders and reads documents, as focuscrawl's does
    reachable = {u for u in web.reachable_relevant(web.seeds, rendered=True) if host(u) in web.crawl_hosts}
    pairs_inside = sum(c in reachable and o in reachable for c, o, _ in web.duplicates)
    assert pairs_inside >= 2 and s.reachable == len(reachable) - pairs_inside
    assert s.precision == pytest.approx((len(picked) + 3) / (len(picked) + 4))
    assert s.recall == pytest.approx(s.found / s.reachable)
    text = format_summary(s, [("relevant pages (export)", "run/export.jsonl")])
    assert f"requests answered by the server (robots.txt excluded): {s.requests}" in text
    assert "relevant pages (export)  run/export.jsonl" in text
    assert f"found by rendering: {s.found_rendered} of {s.rendered_relevant}" in text and s.rendered_relevant > 10
    assert f"PDFs read: {s.found_documents} of {s.documents_relevant}" in text
    empty = summarize(web, [], [])
    assert (empty.precision, empty.per_request) == (None, None) and "n/a" in format_summary(empty)


def test_a_failing_step_names_itself_and_its_log(tmp_path):
    streamed = tmp_path / "streamed.txt"
    log = tmp_path / "logs" / "train.log"
    with open(streamed, "w", encoding="utf-8") as out:
        with pytest.raises(CommandError) as err:
            run_step("train", [sys.executable, "-c", "print('learning'); raise SystemExit(3)"], log, out=out)
        run_step("export", [sys.executable, "-c", "print('ok')"], tmp_path / "logs" / "export.log", out=out)
    assert str(err.value) == f"step 'train' failed (exit code 3); see {log}"
    assert log.read_text() == "learning\n"
    assert streamed.read_text() == "   learning\n   ok\n"


def test_options_are_checked_before_anything_runs(tmp_path):
    cmd = Command()
    for option, value in (("budget", "lots"), ("budget", "0"), ("delay", "-1"), ("seed", "x")):
        opts = argparse.Namespace(dir=str(tmp_path / "d"), budget="10", seed="0", delay="0")
        setattr(opts, option, value)
        with pytest.raises(CommandError, match=f"--{option}"):
            cmd.execute([], opts)
    assert not (tmp_path / "d").exists()


def test_host_regex_matches_exactly_the_train_hosts(web):
    pattern = re.compile(host_regex(web.train_hosts))
    assert all(pattern.search(h) for h in web.train_hosts)
    assert not any(pattern.search(h) for h in web.crawl_hosts)
    assert not pattern.search("www.stargazers-club.test.evil")


# --- end to end: needs every part of the job (train, replay, crawl, export) ----------------------


@pytest.mark.e2e
def test_scrapy_demo_end_to_end(tmp_path):
    for module in ("focuscrawl.commands.train", "focuscrawl.commands.export", "focuscrawl.commands.replay",
                   "focuscrawl.commands.evaluate", "focuscrawl.spiders.focused", "focuscrawl.scheduler"):
        pytest.importorskip(module)
    run_dir = tmp_path / "demo-run"
    proc = subprocess.run(
        [sys.executable, "-m", "focuscrawl", "demo", "--dir", str(run_dir), "--budget", "120", "--delay", "0"],
        capture_output=True, text=True, timeout=240, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "== summary" in proc.stdout
    web = generate_web(seed=0)
    log = read_jsonl(run_dir / "server-log.jsonl")
    fetched = {rec["url"] for rec in log}
    assert not fetched & set(web.disallowed)
    s = summarize(web, read_jsonl(run_dir / "export.jsonl"), log)
    assert 0 < s.requests <= 120 + 5  # a few in flight when the budget ran out
    assert s.precision is not None and s.precision >= 0.8
    assert s.found >= 30
