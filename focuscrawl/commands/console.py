"""``scrapy console --store PATH | --jobdir DIR``: the web console of a crawl that is over.

The same page a running crawl serves with ``-s FOCUS_CONSOLE_PORT=N`` (focuscrawl/observe/console.py),
its figures computed from the crawl store: the harvest curve (relevant pages found against pages
fetched, and against time), each host's yield and waste, the latest relevant pages, and the
labelling queue. With a JOBDIR, the frontier the crawl left (its checkpoint) gives the top URLs and
why they rank there, as ``scrapy explain`` says it. Serves until Ctrl-C.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections import Counter
from datetime import UTC, datetime

from focuscrawl.commandbase import CommandError, FocusCommand
from focuscrawl.commands.explain import CHECKPOINT_FILE, load_checkpoint
from focuscrawl.commands.replay import parse_port
from focuscrawl.store import CrawlStore, StoreError, resolve_store_path
from focuscrawl.urls import canonicalize, host_key

#: the frontier's URLs explained (the page shows 20)
TOP = 50


class Command(FocusCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "--store PATH | --jobdir DIR [--crawl ID] [--port N] [--host H] [--model M]"

    def short_desc(self) -> str:
        return "Serve the web console of a crawl that is over (its curve, hosts, frontier and labelling queue)"

    def long_desc(self) -> str:
        return (
            "Serve the web console of a stored crawl on 127.0.0.1 (or --host) until Ctrl-C: the harvest "
            "curve, hosts with their yield and waste, the latest relevant pages and the labelling queue, "
            "from the crawl store (--store, else FOCUS_STORE, else JOBDIR/crawl.db, else ./crawl.db); with "
            "--jobdir, the frontier the crawl left and why its URLs rank there. The URL printed carries a "
            "random token that every request needs. Labels given in the page are written to the store. The "
            "queue ranks pages by --model, else the model the crawl recorded. The checkpoint is a pickle: "
            "only open JOBDIRs you trust."
        )

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("--store", metavar="PATH", help="the crawl store")
        parser.add_argument("--jobdir", metavar="DIR", help="the crawl's JOBDIR (same as -s JOBDIR=DIR)")
        parser.add_argument("--crawl", metavar="ID", help="the crawl to show (the latest if not given)")
        parser.add_argument("--port", metavar="N", help="the port (default FOCUS_CONSOLE_PORT, else any free one)")
        parser.add_argument("--host", metavar="H", help="the address to listen on (default FOCUS_CONSOLE_HOST, 127.0.0.1)")
        parser.add_argument("--model", metavar="M", help="the topic model the labelling queue ranks pages by")

    def execute(self, args: list[str], opts) -> None:
        if args:
            raise CommandError(f"unexpected argument(s): {' '.join(args)}")
        config = self.config()
        jobdir = opts.jobdir or config.jobdir
        if jobdir and not os.path.isdir(jobdir):
            raise CommandError(f"no JOBDIR at {jobdir}")
        path = opts.store or resolve_store_path(dataclasses.replace(config, jobdir=jobdir))
        if not os.path.exists(path):
            raise CommandError(f"no crawl store at {path} (use --store PATH or --jobdir DIR)")
        port = parse_port(opts.port) if opts.port is not None else config.console_port
        host = opts.host or config.console_host
        try:
            store = CrawlStore(path, create=False)
        except StoreError as exc:
            raise CommandError(str(exc)) from None
        try:
            self._serve(store, path, jobdir, opts, host, port)
        except StoreError as exc:
            raise CommandError(str(exc)) from None
        finally:
            store.close()

    def _serve(self, store: CrawlStore, path: str, jobdir: str | None, opts, host: str, port: int) -> None:
        from twisted.internet import reactor
        from twisted.internet.error import CannotListenError

        from focuscrawl.observe.console import Console, ConsoleServer
        from focuscrawl.observe.console_sources import LabelDesk, StoreSource

        crawl = self._pick_crawl(store, opts.crawl, path)
        checkpoint = os.path.join(jobdir, CHECKPOINT_FILE) if jobdir else None
        frontier = frontier_view(checkpoint) if checkpoint and os.path.exists(checkpoint) else None
        model = self._model(store, crawl, opts.model)
        desk = LabelDesk(store=lambda: store, model=lambda: model, crawl=lambda: crawl)
        console = Console(StoreSource(store, crawl, frontier), desk, host=host, port=port, kind="stored",
                          title=f"focuscrawl: crawl {crawl} of {os.path.basename(path)}")
        try:
            ConsoleServer(console).start()
        except CannotListenError as exc:
            reason = getattr(exc.socketError, "strerror", None) or exc.socketError
            raise CommandError(f"cannot listen on {host}:{port} ({reason}): use --port N for another port") from None
        print(f"console of crawl {crawl} of {path}"
              + (f" (frontier of {checkpoint})" if frontier else "")
              + (" (no labelling queue: no model, use --model M)" if model is None else ""), flush=True)
        print(f"open {console.url}  (Ctrl-C to stop)", flush=True)
        reactor.run()

    @staticmethod
    def _pick_crawl(store: CrawlStore, raw: str | None, path: str) -> int:
        known = store.crawl_ids()
        if raw is None:
            if not known:
                raise CommandError(f"the crawl store {path} holds no crawl")
            return known[-1]
        try:
            wanted = int(raw)
        except ValueError:
            raise CommandError(f"--crawl must be a crawl id (a number), got {raw!r}") from None
        if wanted not in known:
            raise CommandError(f"the crawl store {path} holds no crawl {wanted} "
                               f"(its crawls: {', '.join(map(str, known)) or 'none'})")
        return wanted

    @staticmethod
    def _model(store: CrawlStore, crawl: int, given: str | None):
        """The topic model the queue ranks by: ``--model``, else the one the crawl recorded, if it
        is still there (None: the console shows no queue)."""
        from focuscrawl.relevance import ModelError, TopicModel

        recorded = None if given else store.crawl_model(crawl)
        path = given or (recorded[0] if recorded else None)
        if path and not given:
            from focuscrawl.labelling.models import judging_model_path

            path = judging_model_path(path)[0]  # the model the crawl grew from it, if it grew one
        if not path or (not given and not os.path.exists(path)):
            return None
        try:
            return TopicModel.load(path)
        except ModelError as exc:
            raise CommandError(str(exc)) from None


def frontier_view(checkpoint: str, top: int = TOP):
    """What the JOBDIR checkpoint says of the frontier: its ``top`` URLs by priority, each
    explained as ``scrapy explain`` and the live console explain a waiting URL, and the URLs
    queued per host. URLs finished since the snapshot are left out; those queued since (in the
    journal only) are not counted."""
    from focuscrawl.meta import ROBOTS_FOR
    from focuscrawl.observe.console_sources import FrontierView
    from focuscrawl.observe.explanation import waiting_explanation

    state = load_checkpoint(checkpoint)
    learner, strategy = state.state["learner"], state.state.get("strategy")
    done = state.done
    try:
        rows = [(host or host_key(request["url"]), float(priority), request, features)
                for host, priority, request, features in state.rows()
                if not math.isinf(float(priority)) and canonicalize(request["url"]) not in done]
    except Exception as exc:  # noqa: BLE001 - a foreign snapshot's records can raise almost anything
        raise CommandError(f"{checkpoint} is not a usable frontier checkpoint (bad entry: {exc})") from None
    queued = Counter(host for host, _, _, _ in rows)
    rows.sort(key=lambda row: -row[1])
    view = []
    for host, priority, request, features in rows:
        if len(view) >= top:
            break
        meta = request.get("meta") or {}
        if meta.get(ROBOTS_FOR):
            continue
        canonical = canonicalize(request["url"])
        why = waiting_explanation(canonical, meta, learner, strategy, has_features=features is not None)
        view.append({"url": request["url"], "host": host, "priority": round(priority, 4),
                     "priority_now": why.priority, "why": why.why})
    stamp = datetime.fromtimestamp(os.path.getmtime(checkpoint), tz=UTC).isoformat(timespec="seconds")
    return FrontierView(top=view, queued=dict(queued), size=len(rows), checkpointed_at=stamp)
