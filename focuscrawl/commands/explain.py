"""``scrapy explain URL...``: why a URL was (or would be) fetched when it was.

Two sources answer, whichever the crawl left behind:

- the crawl store, for a URL already fetched: when, with what status and score, its priority at
  dequeue and the features that made it (``extra`` = {"priority", "why"}, written by the spider);
- the JOBDIR frontier checkpoint (``focus-frontier.pickle``), for a URL still waiting: its
  priority as stored, its priority and top features if the checkpointed learner scored it now,
  its rank in the frontier and what its host has yielded so far;
- a continuous crawl's revisit plan (FOCUS_RECRAWL), for a page kept fresh: from the checkpoint,
  or, for a shared crawl (FOCUS_FRONTIER_URL, FOCUS_CRAWL_ID), from the snapshot in its Redis.

A URL matches a stored page by its requested or final URL, as given or canonicalised.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

from focuscrawl.commandbase import CommandError, FocusCommand
from focuscrawl.jobdir import JobDirError
from focuscrawl.learning import link_context, link_features
from focuscrawl.meta import DEPTH, LinkMeta, link_parent
from focuscrawl.observe.explanation import format_why, waiting_explanation
from focuscrawl.scheduling.persistence import Checkpoint, read_checkpoint
from focuscrawl.store import CrawlStore, StoreError, resolve_store_path
from focuscrawl.urls import canonicalize, host_key

CHECKPOINT_FILE = "focus-frontier.pickle"  # focuscrawl.scheduler.CHECKPOINT_FILE (not imported: it pulls in Twisted's reactor)
DEFAULT_TOP = 3


def load_checkpoint(path: str) -> Checkpoint:
    """The crawl's checkpoint, read as a resumed crawl reads it (``scrapy explain``, the console);
    CommandError, in one line, when it cannot be read or is not a focuscrawl frontier's."""
    try:
        checkpoint = read_checkpoint(os.path.dirname(path))
    except JobDirError as exc:
        cause = exc.__cause__ or exc
        if isinstance(cause, OSError):
            raise CommandError(f"cannot read the frontier checkpoint {path}: {cause.strerror or cause}") from None
        reason = str(cause).splitlines()[0] if str(cause) else type(cause).__name__
        raise CommandError(f"{path} is not a usable frontier checkpoint ({reason})") from None
    state = checkpoint.state
    learner = state.get("learner") if isinstance(state, dict) else None
    if (not isinstance(state, dict) or not isinstance(state.get("entries"), list)
            or not all(hasattr(learner, name) for name in ("score", "explain", "hosts"))):
        raise CommandError(f"{path} is not a focuscrawl frontier checkpoint")
    return checkpoint


class Command(FocusCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "URL [URL...] [--jobdir DIR | -s JOBDIR=DIR] [--store PATH] [--top N] [--json]"

    def short_desc(self) -> str:
        return "Explain a URL's priority: from the crawl store if fetched, from the JOBDIR frontier if waiting"

    def long_desc(self) -> str:
        return (
            "For each URL, show why the crawl valued it. A fetched URL is looked up in the crawl store "
            "(--store, else FOCUS_STORE, else JOBDIR/crawl.db, else ./crawl.db): when it was fetched, "
            "status, score, its priority at dequeue and the features behind it, depth and referrer. "
            "A URL still waiting is looked up in the JOBDIR checkpoint (focus-frontier.pickle): its "
            "priority as stored and as the checkpointed learner scores it now, the top features, its "
            "rank in the frontier and its host's yield. Exit code 1 when a URL is found in neither. "
            "The checkpoint is a pickle: only explain JOBDIRs you trust."
        )

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("--jobdir", metavar="DIR", help="the crawl's JOBDIR (same as -s JOBDIR=DIR)")
        parser.add_argument("--store", metavar="PATH",
                            help="the crawl store (default FOCUS_STORE, JOBDIR/crawl.db or ./crawl.db)")
        parser.add_argument("--top", metavar="N", default=str(DEFAULT_TOP),
                            help=f"how many features to show (default {DEFAULT_TOP})")
        parser.add_argument("--json", action="store_true", help="one JSON object per URL, a line each")

    # --- the command --------------------------------------------------------------------------
    def execute(self, args: list[str], opts) -> None:
        if not args:
            raise CommandError(f"no URL given: scrapy explain {self.syntax()}")
        top = _parse_top(opts.top)
        config = self.config()
        jobdir = opts.jobdir or config.jobdir
        if jobdir and not os.path.isdir(jobdir):
            raise CommandError(f"no JOBDIR at {jobdir}")
        checkpoint_path = os.path.join(jobdir, CHECKPOINT_FILE) if jobdir else None
        store_explicit = bool(opts.store or config.store)
        store_path = opts.store or resolve_store_path(dataclasses.replace(config, jobdir=jobdir))
        has_checkpoint = bool(checkpoint_path and os.path.exists(checkpoint_path))
        has_store = os.path.exists(store_path)
        if store_explicit and not has_store:
            raise CommandError(f"no crawl store at {store_path}")
        if not has_store and not has_checkpoint:
            if jobdir:
                raise CommandError(f"{jobdir} holds neither a frontier checkpoint ({CHECKPOINT_FILE}) nor a crawl "
                                   f"store ({store_path}); was the crawl run with -s JOBDIR={jobdir}?")
            raise CommandError(f"no crawl store at {store_path} (use --store PATH, or --jobdir DIR / -s JOBDIR=DIR)")

        fetched = self._from_store(store_path, args, top) if has_store else {url: [] for url in args}
        waiting = self._from_checkpoint(checkpoint_path, args, top) if has_checkpoint else {url: None for url in args}
        if config.frontier_url and config.recrawl:  # a shared crawl's plan is the crawl's, in its Redis
            revisits = self._from_shared_revisit_plan(config, args)
        elif has_checkpoint:
            revisits = self._from_revisit_plan(checkpoint_path, args)
        else:
            revisits = {url: None for url in args}

        missing = 0
        where = " nor ".join(filter(None, [f"the crawl store {store_path}" if has_store else "",
                                           f"the frontier checkpoint {checkpoint_path}" if has_checkpoint else ""]))
        for url in args:
            pages, entry, revisit = fetched[url], waiting[url], revisits[url]
            found = bool(pages) or entry is not None or revisit is not None
            missing += not found
            if opts.json:
                answer = {"url": url, "found": found, "fetched": pages, "frontier": entry}
                if revisit is not None:  # a continuous crawl's plan for the page (FOCUS_RECRAWL)
                    answer["revisits"] = revisit
                print(json.dumps(answer, ensure_ascii=False))
            elif not found:
                print(f"{url}: not found (in neither {where})")
            else:
                for page in pages:
                    print(_format_page(url, page))
                if entry is not None:
                    print(_format_entry(url, entry))
                if revisit is not None:
                    print(f"{url}: kept fresh (FOCUS_RECRAWL): {revisit}")
        sys.stdout.flush()
        if missing:
            self.exitcode = 1

    # --- the crawl store ----------------------------------------------------------------------
    @staticmethod
    def _from_store(path: str, urls: list[str], top: int) -> dict[str, list[dict]]:
        found: dict[str, list[dict]] = {url: [] for url in urls}
        try:
            with CrawlStore(path, create=False) as store:
                model, model_note = _crawl_model(store)
                for url in urls:  # the cheap way first: the indexed requested URL
                    page = store.get_page(url) or store.get_page(canonicalize(url))
                    if page is not None:
                        found[url].append(page)
                wanted: dict[str, list[str]] = {}
                for url in urls:
                    if not found[url]:
                        wanted.setdefault(canonicalize(url), []).append(url)
                if wanted:  # redirects and non-canonical spellings: one pass over the store
                    for page in store.iter_pages():
                        keys = {canonicalize(page["url"])}
                        if page.get("final_url"):
                            keys.add(canonicalize(page["final_url"]))
                        for key in keys:
                            for url in wanted.get(key, ()):
                                found[url].append(page)
                # a model that reads a page's own links (a words model's link_field) explains them too
                # (one query a page, however many of the URLs asked for led to it)
                pages_found = {page["url"] for pages in found.values() for page in pages}
                links = ({url: store.links_of(url) for url in pages_found}
                         if getattr(model, "link_field", None) is not None else {})
        except StoreError as exc:
            raise CommandError(str(exc)) from None
        return {url: [_with_words(_page_summary(page, top), page, model, model_note, top, links.get(page["url"]))
                      for page in pages]
                for url, pages in found.items()}

    # --- the frontier checkpoint --------------------------------------------------------------
    def _from_checkpoint(self, path: str, urls: list[str], top: int) -> dict[str, dict | None]:
        checkpoint = load_checkpoint(path)
        learner = checkpoint.state["learner"]
        # a classic strategy (FOCUS_STRATEGY) set the priorities: it says what they came from
        strategy = checkpoint.state.get("strategy")
        # the journal since the snapshot: pages done since then are no longer waiting, and URLs
        # queued since then are (their priority is scored now: the journal keeps none)
        done = checkpoint.done
        try:
            entries = checkpoint.rows()
        except Exception as exc:  # noqa: BLE001 - a foreign snapshot's records can raise almost anything
            raise CommandError(f"{path} is not a usable frontier checkpoint (bad packed records: {exc})") from None
        for payload in checkpoint.queued_since():
            canonical = canonicalize(payload.get("url", ""))
            if canonical not in done:
                meta = payload.get("meta") or {}
                if strategy is not None:
                    priority = strategy.priority(canonical)
                    priority = strategy.score(canonical, meta) if priority is None else priority
                else:
                    priority = learner.score(link_features(link_context(canonical, meta)), canonical, link_parent(meta))
                entries.append((host_key(canonical), priority, payload, ()))
        wanted = {canonicalize(url): url for url in urls}
        result: dict[str, dict | None] = {url: None for url in urls}
        try:
            # requests in flight at the checkpoint are stored with priority inf: not in the frontier
            priorities = [p for p in (float(entry[1]) for entry in entries) if not math.isinf(p)]
            for host, priority, request_dict, features in entries:
                canonical = canonicalize(request_dict["url"])
                url = wanted.get(canonical)
                if url is None or result[url] is not None or canonical in done:
                    continue
                result[url] = self._entry_summary(learner, path, host, float(priority), request_dict, features,
                                                  canonical, priorities, top, strategy)
        except (TypeError, ValueError, KeyError, IndexError) as exc:
            raise CommandError(f"{path} is not a usable frontier checkpoint (bad entry: {exc})") from None
        for url in urls:  # a URL given twice in different spellings shares its answer
            if result[url] is None:
                first = wanted.get(canonicalize(url))
                result[url] = result.get(first)
        return result

    def _from_revisit_plan(self, path: str, urls: list[str]) -> dict[str, str | None]:
        """What a continuous crawl's revisit plan (FOCUS_RECRAWL) knows and intends for each URL:
        its change rate, interval, weight, last visit, next revisit."""
        revisits = load_checkpoint(path).state.get("revisits")
        if revisits is None:
            return {url: None for url in urls}
        now = time.time()
        return {url: revisits.plan.explain(canonicalize(url), now) for url in urls}

    @staticmethod
    def _from_shared_revisit_plan(config, urls: list[str]) -> dict[str, str | None]:
        """The same, from a shared crawl's Redis (FOCUS_FRONTIER_URL, FOCUS_CRAWL_ID): the plan as
        its holder last wrote its snapshot (a few seconds old at most while the crawl runs)."""
        from focuscrawl.distributed.connection import Keys, RedisUnavailable, connect
        from focuscrawl.distributed.revisits import read_shared_plan
        from focuscrawl.extras import MissingExtra

        try:
            revisits = read_shared_plan(connect(config.frontier_url), Keys(config.crawl_id))
        except (RedisUnavailable, MissingExtra) as exc:
            raise CommandError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a snapshot this version cannot read: one line
            raise CommandError(f"the shared crawl's revisit plan cannot be read ({exc})") from None
        if revisits is None:
            return {url: None for url in urls}
        now = time.time()
        return {url: revisits.plan.explain(canonicalize(url), now) for url in urls}

    @staticmethod
    def _entry_summary(learner, path, host, priority, request_dict, features, canonical, priorities, top,
                       strategy=None) -> dict:
        meta = request_dict.get("meta") or {}
        link = LinkMeta.from_meta(meta)
        in_flight = math.isinf(priority)  # the scheduler checkpoints requests in flight with priority inf
        # the same explanation the crawl's live status gives for its best waiting URLs
        explained = waiting_explanation(canonical, meta, learner, strategy, top=top, has_features=features is not None)
        score_now, why_now = explained.priority, explained.why
        host = host or host_key(canonical)
        stats = learner.hosts.get(host) if isinstance(getattr(learner, "hosts", None), dict) else None
        mtime = datetime.fromtimestamp(os.path.getmtime(path), tz=UTC)
        return {
            "checkpoint": path,
            "checkpointed_at": mtime.isoformat(timespec="seconds"),
            "strategy": getattr(strategy, "name", "learned"),
            "canonical_url": canonical,
            "in_flight": in_flight,
            "priority_stored": None if in_flight else round(priority, 4),
            "priority_now": score_now,
            "why_now": why_now,
            "rank": None if in_flight else sum(1 for p in priorities if p > priority),
            "frontier_size": len(priorities),
            "host": host,
            "host_stats": ({"fetched": stats.fetched, "relevant": stats.relevant, "wasted": stats.wasted}
                           if stats is not None else None),
            "depth": meta.get(DEPTH, 0),
            "parent": link.parent_url,
            "anchor": link.anchor or "",
        }


# --- summaries and text output ------------------------------------------------------------------
def _page_summary(page: dict, top: int) -> dict:
    extra = page.get("extra") or {}
    why = extra.get("why") or []
    summary = {
        "url": page["url"],
        "final_url": page.get("final_url"),
        "fetched_at": page.get("fetched_at"),
        "status": page.get("status"),
        "score": page.get("score"),
        "page_score": page.get("page_score"),  # the page's words alone (None in stores older than the column)
        "link_score": page.get("link_score"),  # the link that led there (None: a seed)
        "relevant": bool(page.get("relevant")),
        "priority": extra.get("priority"),
        "why": [list(part) for part in why[:top]],
        "depth": page.get("depth"),
        "referrer": page.get("referrer"),
    }
    if page.get("duplicate_of"):
        summary["duplicate_of"] = page["duplicate_of"]
    if extra.get("error"):
        summary["error"] = extra["error"]
    if extra.get("revisit"):
        summary["revisit"] = extra["revisit"]  # a new version found by a revisit, and why it was revisited
    if extra.get("render"):
        summary["render"] = extra["render"]  # read as a browser showed it (FOCUS_RENDER), and why
    if extra.get("document"):
        summary["document"] = extra["document"]  # a PDF or office document, read as text and links
    return summary


def _crawl_model(store) -> tuple[Any, str]:
    """The topic model the store's newest crawl used, and a note on it (None and why not when it
    cannot be read: explaining a page's words is then left out, the rest is not)."""
    recorded = store.crawl_model()
    if recorded is None:
        return None, "the crawl recorded no topic model"
    path = recorded[0]
    from focuscrawl.relevance import ModelError, TopicModel  # scikit-learn: only when a page is explained

    from focuscrawl.labelling.models import judging_model_path

    path, grown = judging_model_path(path)  # the model the crawl grew from it, when it grew one
    try:
        model = TopicModel.load(path)
    except ModelError as exc:
        return None, str(exc)
    note = path
    if model.metadata.get("start") == "query":
        note += f" (made from the words {model.metadata.get('query', '')!r})"
    elif (model.metadata.get("off_topic") or {}).get("kind") == "background":
        unlabelled = model.metadata["off_topic"].get("unlabelled")
        also = (f" and {unlabelled['pages']} unlabelled page(s) of their sites, calibrated by c = {unlabelled['c']:.4g}"
                if isinstance(unlabelled, dict) else "")
        note += f" (made from {model.metadata.get('n_positive', 0)} on-topic page(s) against the background corpus{also})"
    if grown:
        note += (f", grown by the crawl from its pages in {len(model.metadata.get('grown') or [])} round(s): "
                 "pages scored before its last round were scored by an earlier model")
    elif not model.labelled_off_topic:
        note += " (as it was at the start: the crawl did not grow it, FOCUS_GROW_MODEL)"
    return model, note


def _with_words(summary: dict, page: dict, model, note: str, top: int, links=None) -> dict:
    """The page's words that moved its score most under the crawl's topic model, and the query's
    words its links name when the model reads them (``link_words``: each word's added log-odds)."""
    if page.get("title") or page.get("text"):
        summary["model"] = note
        if model is not None:
            summary["words"] = [list(part) for part in model.explain(page.get("title") or "", page.get("text") or "",
                                                                      max(top, 5))]
            if links and model.link_field is not None:
                summary["link_words"] = [list(part) for part in model.link_field.explain(links)[:max(top, 5)]]
    return summary


def _format_page(asked: str, page: dict) -> str:
    score = "unscored" if page["score"] is None else f"{page['score']:.4f}"
    if page.get("page_score") is not None and page.get("link_score") is not None:
        score += f" (page {page['page_score']:.4f}, link {page['link_score']:.4f})"
    lines = [f"{asked}: fetched {page['fetched_at'] or '(time unknown)'}"]
    if page["url"] != asked:
        lines[0] += f" as {page['url']}"
    if page["final_url"] and page["final_url"] != page["url"]:
        lines.append(f"  redirected to {page['final_url']}")
    status = f"  status {page['status']}, score {score}, {'relevant' if page['relevant'] else 'not relevant'}"
    if page.get("error"):
        status += f", error: {page['error']}"
    if page.get("duplicate_of"):
        status += f", duplicate of {page['duplicate_of']}"
    lines.append(status)
    priority = "(not recorded)" if page["priority"] is None else f"{page['priority']:.4f}"
    if page.get("revisit"):
        lines.append(f"  a revisit found it changed; revisited because: {page['revisit']}")
    else:
        lines.append(f"  priority at dequeue {priority}; why: {format_why(page['why'])}")
    if page.get("words") is not None:
        words = ", ".join(f"{term} {weight:+.2f}" for term, weight in page["words"]) or "none it weighs"
        lines.append(f"  page words behind its score (log-odds): {words}; model {page['model']}")
        if page.get("link_words"):
            named = ", ".join(f"{term} {weight:+.2f}" for term, weight in page["link_words"])
            lines.append(f"  words its links name, also behind its score (log-odds): {named}")
    elif page.get("model"):
        lines.append(f"  page words not explained: {page['model']}")
    if page.get("render"):
        lines.append(f"  rendered in a browser (FOCUS_RENDER) because: {page['render']}")
    if page.get("document"):
        lines.append(f"  read as a document: {page['document']}")
    lines.append(f"  depth {page['depth']}, referrer {page['referrer'] or '(seed)'}")
    return "\n".join(lines)


def _format_entry(asked: str, entry: dict) -> str:
    if entry["in_flight"]:
        state = "in flight when the crawl was checkpointed"
    else:
        state = "waiting in the frontier"
    lines = [f"{asked}: {state} (checkpoint {entry['checkpoint']}, {entry['checkpointed_at']})"]
    now = "(no features recorded)" if entry["priority_now"] is None else f"{entry['priority_now']:.4f}"
    if entry["in_flight"]:
        lines.append(f"  priority now {now} (its priority at release is in the crawl store once fetched)")
    else:
        lines.append(f"  priority stored {entry['priority_stored']:.4f}, now {now}; rank {entry['rank'] + 1} of "
                     f"{entry['frontier_size']} waiting ({entry['rank']} with a higher priority)")
    lines.append(f"  why now ({entry['strategy']}): {format_why(entry['why_now'])}")
    stats = entry["host_stats"]
    host = (f"fetched {stats['fetched']}, relevant {stats['relevant']}, wasted {stats['wasted']}"
            if stats else "nothing fetched yet")
    lines.append(f"  host {entry['host']}: {host}")
    anchor = f", anchor {entry['anchor']!r}" if entry["anchor"] else ""
    lines.append(f"  depth {entry['depth']}, parent {entry['parent'] or '(seed)'}{anchor}")
    return "\n".join(lines)


def _parse_top(raw: Any) -> int:
    try:
        top = int(raw)
    except (TypeError, ValueError):
        top = -1
    if top < 1:
        raise CommandError(f"--top must be a whole number of at least 1, got {raw!r}")
    return top
