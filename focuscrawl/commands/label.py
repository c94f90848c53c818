"""``scrapy label``: a person judges, one at a time, the pages of a crawl most worth judging.

The labelling queue (``focuscrawl.labelling.queue.LabelQueue``) picks the pages; this command
shows each one (title, URL, the model's score, why it was picked, the start of its main text) and
records the answer in the crawl store with who gave it and when. Every label is committed as it is
given, so quitting, Ctrl-C or a lost terminal loses nothing a person did.

On a terminal the answers are single keys, read without Enter (the terminal is put in cbreak mode
only while a key is awaited, and restored before anything else runs, on Ctrl-C too): ``o``
on-topic, ``f`` off-topic, ``s`` skip, ``v`` the whole stored text in a pager, ``u`` undo, ``q``
quit. Otherwise (a script, a test) one answer is read a line: the same letters or the labels'
names; an empty line or the end of input ends the session.

Undo takes back the last label of this session that still stands (again, the one before it), with
``CrawlStore.remove_label``: a key pressed by mistake is not a judgement, so its row goes and the
page is as it was before, unlabelled (back in the queue) or with its earlier label, for every
reader of the store alike. A page someone else has labelled since keeps that later label. The
page taken back is shown again at once.
"""

from __future__ import annotations

import getpass
import os
import pydoc
import shutil
import sys
import textwrap
from collections import Counter, deque
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from focuscrawl.commandbase import CommandError, FocusCommand
from focuscrawl.labelling import LABELS, OFF_TOPIC, ON_TOPIC, SKIP, LabelError
from focuscrawl.store import CrawlStore, StoreError, resolve_store_path

if TYPE_CHECKING:  # the queue and the model need scikit-learn: loaded when the command runs
    from focuscrawl.labelling.queue import Candidate, LabelQueue

DEFAULT_BATCH = 10
#: a key (or a line's first word, lower case) -> what it does
ANSWERS = {
    "o": ON_TOPIC, "on": ON_TOPIC, ON_TOPIC: ON_TOPIC,
    "f": OFF_TOPIC, "off": OFF_TOPIC, OFF_TOPIC: OFF_TOPIC,
    "s": SKIP, SKIP: SKIP,
    "v": "view", "view": "view",
    "u": "undo", "undo": "undo",
    "q": "quit", "quit": "quit",
}
KEYS_HELP = "o on-topic   f off-topic   s skip   v view text   u undo   q quit"


class Session:
    """One person's labels in one run, in the order given, so that the last can be taken back."""

    def __init__(self, store: CrawlStore, who: str) -> None:
        self.store = store
        self.who = who
        self.given: list[tuple[Candidate, dict[str, Any]]] = []  # (page, the row add_label returned)

    def label(self, candidate: Candidate, label: str) -> dict[str, Any]:
        row = self.store.add_label(candidate.url, label, who=self.who, crawl=candidate.crawl)
        self.given.append((candidate, row))
        return row

    def undo(self) -> tuple[Candidate, dict[str, Any], bool] | None:
        """The last label given, taken back: (its page, its row, whether it was removed: False when
        the page was labelled again since by someone else). None when there is nothing to undo."""
        if not self.given:
            return None
        candidate, row = self.given.pop()
        return candidate, row, self.store.remove_label(row)

    def counts(self) -> Counter:
        return Counter(row["label"] for _, row in self.given)


# --- reading answers ----------------------------------------------------------------------------

class LineAnswers:
    """One answer a line from a stream that is not a terminal; an empty line or its end stops."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def read(self) -> str | None:
        line = self.stream.readline()
        words = line.strip().lower().split()
        if not words:
            return None
        return ANSWERS.get(words[0], "?")


class KeyAnswers:
    """Single key presses from a terminal, without Enter."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def read(self) -> str | None:
        with _cbreak(self.fd):
            key = os.read(self.fd, 32)  # an escape sequence (an arrow key) arrives whole: ignored
        if not key or key[:1] == b"\x04":  # Ctrl-D
            return "quit"
        if key[:1] == b"\x03":  # Ctrl-C where the terminal does not turn it into a signal
            raise KeyboardInterrupt
        if len(key) == 1:
            return ANSWERS.get(key.decode("ascii", "replace").lower(), "?")
        return "?"


@contextmanager
def _cbreak(fd: int):
    """The terminal without line editing or echo while a key is read, then as it was: restored
    on any exit (Ctrl-C's KeyboardInterrupt included), never flushing keys typed ahead."""
    import termios
    import tty

    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd, termios.TCSANOW)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


# --- showing pages ------------------------------------------------------------------------------

class TextView:
    """Plain text: what scripts and logs read, and a terminal's when ``rich`` is not installed."""

    def __init__(self, out=None) -> None:
        self.out = out or sys.stdout

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def show(self, candidate: Candidate, number: int) -> None:
        width = max(40, min(100, shutil.get_terminal_size((100, 24)).columns))
        rule = f"── {number} " + "─" * max(0, width - len(str(number)) - 4)
        lines = [rule, candidate.title or "(no title)", candidate.final_url]
        if candidate.final_url != candidate.url:
            lines.append(f"(requested as {candidate.url})")
        lines.append(f"score {candidate.score:.2f} · crawl {candidate.crawl} · {candidate.why}")
        lines += textwrap.wrap(candidate.extract, width=width, initial_indent="  ", subsequent_indent="  ") or ["  (no text)"]
        lines.append(KEYS_HELP)
        self.say("\n".join(lines))


class RichView(TextView):
    """The same page in a ``rich`` panel, on a terminal."""

    def __init__(self) -> None:
        from rich.console import Console

        super().__init__()
        self.console = Console(highlight=False)

    def say(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def show(self, candidate: Candidate, number: int) -> None:
        from rich.panel import Panel
        from rich.style import Style
        from rich.text import Text

        body = Text()
        body.append((candidate.title or "(no title)") + "\n", style="bold")
        body.append(candidate.final_url, style=Style(color="cyan", link=candidate.final_url))  # a terminal hyperlink
        body.append("\n")
        if candidate.final_url != candidate.url:
            body.append(f"(requested as {candidate.url})\n", style="dim")
        body.append(f"score {candidate.score:.2f}", style="bold yellow")
        body.append(f" · crawl {candidate.crawl} · {candidate.why}\n\n", style="dim")
        body.append(candidate.extract or "(no text)")
        self.console.print(Panel(body, title=str(number), title_align="left", subtitle=KEYS_HELP,
                                 subtitle_align="left"))


def _view_for_terminal() -> TextView:
    try:
        return RichView()
    except ImportError:
        return TextView()


# --- the session --------------------------------------------------------------------------------

def run_session(session: Session, queue: LabelQueue, answers, view: TextView, batch: int, pager) -> None:
    """Show candidates and record answers until the queue is empty or the person stops. The queue
    is asked again once a batch is done, so pages stored meanwhile (a running crawl) and labels
    given meanwhile (another labeller) count; a page of the batch labelled meanwhile is passed."""
    store = session.store
    pending: deque[tuple[Candidate, bool]] = deque()  # (page, shown whatever its label: an undone page)
    shown = 0
    while True:
        if not pending:
            pending.extend((c, False) for c in queue.next(n=batch))
            if not pending:
                view.say("nothing left to label")
                return
        candidate, again = pending.popleft()
        if not again and store.label_of(candidate.url) is not None:
            continue
        shown += 1
        view.show(candidate, shown)
        while True:
            action = answers.read()
            if action is None or action == "quit":
                return
            if action in LABELS:
                session.label(candidate, action)
                view.say(f"→ {action}")
                break
            if action == "view":
                _view_text(store, candidate, view, pager)
            elif action == "undo":
                undone = session.undo()
                if undone is None:
                    view.say("nothing to undo in this session")
                    continue
                back, row, removed = undone
                if not removed:
                    view.say(f"{back.url} was labelled again since ({store.label_of(back.url)}): left as it is")
                    continue
                view.say(f"undone: {row['label']} for {back.url}")
                pending.appendleft((candidate, False))
                pending.appendleft((back, True))
                break
            else:
                view.say(f"keys: {KEYS_HELP}")


def _view_text(store: CrawlStore, candidate: Candidate, view: TextView, pager) -> None:
    page = store.get_page(candidate.url, crawl=candidate.crawl)
    if page is None:
        view.say(f"the store no longer holds {candidate.url}")
        return
    pager(f"{page.get('title') or '(no title)'}\n{page.get('final_url') or candidate.url}\n\n{page.get('text') or ''}\n")


def summary(session: Session, store: CrawlStore, crawl: int | None) -> str:
    mine, held = session.counts(), Counter(row["label"] for row in store.labels(crawl=crawl))
    given = sum(mine.values())
    where = f"crawl {crawl}" if crawl is not None else "the store"
    return (f"{given} label{'s' if given != 1 else ''} this session "
            f"({', '.join(f'{mine[label]} {label}' for label in LABELS)}); "
            f"{where} holds {', '.join(f'{held[label]} {label}' for label in LABELS)}")


def default_who() -> str:
    try:
        return getpass.getuser() or "unknown"
    except Exception:  # no login name, no USER/LOGNAME (a container): getpass raises OSError or KeyError
        return "unknown"


class Command(FocusCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--store PATH] [--model M] [--crawl ID] [--who NAME] [--batch N]"

    def short_desc(self) -> str:
        return "Label the crawl's pages most worth a person's judgement: on-topic, off-topic or skip"

    def long_desc(self) -> str:
        return (
            "Show, one at a time, the pages of the crawl store the topic model is least sure of, spread "
            "over hosts and sections, and record each answer in the store with who gave it and when. "
            "On a terminal press o (on-topic), f (off-topic), s (skip), v (the whole text), u (undo the "
            "last label) or q (quit). Otherwise one answer a line is read from standard input, and an "
            "empty line ends. The model is the one the crawl used unless --model names another. The "
            "store is found as the crawl finds it (--store, else FOCUS_STORE, else JOBDIR/crawl.db, else "
            "./crawl.db). scrapy export --labels writes the labels as TSV."
        )

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("--store", metavar="PATH",
                            help="the crawl store (default FOCUS_STORE, JOBDIR/crawl.db or ./crawl.db)")
        parser.add_argument("--model", metavar="M", help="the topic model to judge by (default the crawl's own)")
        parser.add_argument("--crawl", metavar="ID", help="only this crawl's pages (default every crawl's)")
        parser.add_argument("--who", metavar="NAME", help="who gives the labels (default the login name)")
        parser.add_argument("--batch", metavar="N", default=str(DEFAULT_BATCH),
                            help=f"pages chosen at a time before the queue is asked again (default {DEFAULT_BATCH})")

    def execute(self, args: list[str], opts) -> None:
        if args:
            raise CommandError(f"unexpected argument(s): {' '.join(args)} (the store goes after --store)")
        batch = _positive_int(opts.batch, "--batch")
        crawl = None if opts.crawl is None else _positive_int(opts.crawl, "--crawl")
        path = opts.store or resolve_store_path(self.config())
        if not os.path.exists(path):
            raise CommandError(f"no crawl store at {path} (use --store PATH, or -s FOCUS_STORE=... / -s JOBDIR=...)")
        who = " ".join((opts.who or "").split()) or default_who()
        from focuscrawl.labelling.queue import LabelQueue
        from focuscrawl.relevance import ModelError, TopicModel

        try:
            with CrawlStore(path, create=False) as store:
                model_path, origin = _model_path(store, path, opts.model, crawl)
                try:
                    model = TopicModel.load(model_path)
                except ModelError as exc:
                    raise CommandError(f"{exc}{origin}") from None
                queue = LabelQueue(store, model, crawl=crawl)
                session = Session(store, who)
                interactive = sys.stdin.isatty()
                view = _view_for_terminal() if interactive else TextView()
                answers = KeyAnswers(sys.stdin.fileno()) if interactive else LineAnswers(sys.stdin)
                pages = f"crawl {crawl}" if crawl is not None else "every crawl"
                view.say(f"labelling the pages of {pages} in {path} as {who}, by the model {model_path}")
                try:
                    run_session(session, queue, answers, view, batch, pydoc.pager)
                except KeyboardInterrupt:
                    view.say("")
                view.say(summary(session, store, crawl))
        except (StoreError, LabelError) as exc:
            raise CommandError(str(exc)) from None


def _positive_int(raw: str, name: str) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = 0
    if value < 1:
        raise CommandError(f"{name} must be a whole number of at least 1, got {raw!r}")
    return value


def _model_path(store: CrawlStore, store_path: str, given: str | None, crawl: int | None) -> tuple[str, str]:
    """The model to judge by and, for an error, where it came from. The crawl recorded its model
    as it was given, relative to where the crawl ran: from here first, else beside the store."""
    known = store.crawl_ids()
    if crawl is not None and crawl not in known:
        raise CommandError(f"the crawl store {store_path} holds no crawl {crawl} "
                           f"(its crawls: {', '.join(map(str, known)) or 'none'})")
    if given:
        return given, ""
    recorded = store.crawl_model(crawl)
    if recorded is None:
        which = f"crawl {crawl} of {store_path} names no" if crawl is not None else f"no crawl of {store_path} names a"
        raise CommandError(f"{which} topic model: give one with --model PATH")
    model, used_by = recorded
    from focuscrawl.labelling.models import judging_model_path

    model, grown = judging_model_path(model)
    return model, f" ({'the model grown by' if grown else 'the model of'} crawl {used_by}; --model names another)"


__all__ = ["ANSWERS", "Command", "KeyAnswers", "LineAnswers", "Session", "run_session", "summary"]
