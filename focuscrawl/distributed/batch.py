"""Fewer round trips to the shared crawl's Redis: writes whose reply nothing waits for ride along
with the next command whose reply something does.

A worker's writes to the shared frontier mostly need no answer before the crawl goes on: the
links of a page, a host released, a page done, the request counted, a host expected free. Each
one a round trip cost a worker about as much as the rest of its work for a page. ``WriteBehind``
keeps them in order and sends them in one pipeline with the next command that must be answered
(a pop, a read), or on its own once the oldest has waited ``max_age`` seconds (the crawl looks
at every turn of its scheduler), so they reach Redis within a bound. Pipelined commands run in
the order sent, on one connection, so a write never overtakes another, nor the read after it.

Nothing here makes a write less safe to lose than before: a worker killed with writes not sent
loses what a worker killed just before sending them lost (its leases run out, its pages not done
are queued again; see ``frontier.py``).

A write can also be *sent ahead* (``send_ahead``): on the wire at once, its reply read with the
next command answered. Redis then works through it on its own core while this process goes on
(parsing the next page, re-scoring), instead of the two taking turns: what makes a shared worker's
big writes (a background re-scoring's replacements, a page's links) nearly free on a machine with
a core to spare. The commands still run in the order sent, on the one connection this object
keeps for itself.

Scripts run by their SHA1 (``EVALSHA``), loaded once: redis-py's pipelined ``Script`` asks the
server whether its scripts exist before every pipeline, a round trip of its own. A server that
lost them (restarted, ``SCRIPT FLUSH``) answers NOSCRIPT: they are loaded again and the commands
that failed sent again, in their order (a script's SHA1 is its source's: it does not change).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from focuscrawl.distributed.connection import count_sent_ahead, redis_module

redis = redis_module()

#: how long a write may wait for a command to ride with, at most (seconds)
MAX_AGE = 0.05


class Scripts:
    """Lua scripts by name, run by SHA1 in any pipeline."""

    def __init__(self, client: redis.Redis, sources: dict[str, str]) -> None:
        self.client = client
        self.sources = sources
        self.shas = {name: client.script_load(source) for name, source in sources.items()}

    def add(self, name: str, source: str) -> None:
        """Another part's script, run by name too (and reloaded with the others)."""
        self.sources[name] = source
        self.shas[name] = self.client.script_load(source)

    def command(self, name: str, *args: Any) -> tuple:
        """The EVALSHA command of script ``name`` with ``args`` (keys: none; the scripts build
        their key names from the crawl's prefix, passed first)."""
        return ("EVALSHA", self.shas[name], 0, *args)

    def reload(self) -> None:
        for name, source in self.sources.items():
            self.shas[name] = self.client.script_load(source)


class WriteBehind:
    """Commands queued (``defer``) and sent in one pipeline with the next ``call``, or by ``flush``.

    ``on_reply(reply)`` of a deferred command runs when its reply comes back. ``scripts``: the
    ``Scripts`` whose SHA1s the commands name (reloaded on NOSCRIPT)."""

    def __init__(self, client: redis.Redis, scripts: Scripts | None = None, *, max_age: float = MAX_AGE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.scripts = scripts
        self.max_age = max_age
        self.clock = clock
        # [command, on_reply, join key, commands joined in it]
        self._pending: list[list] = []
        self._since = 0.0  # when the oldest pending command was deferred
        self._sent: list[list] = []  # sent ahead, their replies not read yet
        self._connection = None  # this object's own: replies sent ahead are read on it, in order

    def __len__(self) -> int:
        """Commands whose replies have not been read (not sent yet, or sent ahead)."""
        return len(self._pending) + len(self._sent)

    def defer(self, command: tuple, on_reply: Callable[[Any], None] | None = None) -> list:
        """``command`` sent with the next one answered, in order; ``on_reply(reply)`` then.
        Returns a handle for ``withdraw``."""
        return self._queue(list(command), on_reply, None)

    def withdraw(self, handle: list) -> bool:
        """The command deferred as ``handle`` taken back, if it is still pending (True)."""
        for i in range(len(self._pending) - 1, -1, -1):
            if self._pending[i] is handle:
                del self._pending[i]
                return True
        return False

    def defer_joined(self, head: tuple, args: tuple, on_reply: Callable[[Any, int], None]) -> None:
        """``head + args``, or only ``args`` appended to the last command pending when it started
        with ``head`` too (a script that takes its items in a row: a page's links in one PUSH).
        ``on_reply(reply, joined)``: ``joined``, the calls this command carries."""
        last = self._pending[-1] if self._pending else None
        if last is not None and last[2] == head:
            last[0].extend(args)
            last[3] += 1
            return
        self._queue([*head, *args], on_reply, head)

    def _queue(self, command: list, on_reply, key) -> list:
        if not self._pending:
            self._since = self.clock()
        item = [command, on_reply, key, 1]
        self._pending.append(item)
        if self.max_age is None:
            self.flush()
        return item

    def due(self) -> bool:
        """Whether the oldest pending command has waited ``max_age``."""
        return bool(self._pending) and (self.max_age is None or self.clock() - self._since >= self.max_age)

    def flush_if_due(self) -> None:
        """The writes pending sent ahead once the oldest has waited ``max_age``."""
        if self.due():
            self.send_ahead()

    def flush(self) -> None:
        """Every write sent and its reply read."""
        if self._pending or self._sent:
            self._send([])

    def send_ahead(self) -> None:
        """The writes pending put on the wire now; their replies (and ``on_reply``) come with the
        next command answered, or ``flush``. Nothing waits for Redis here."""
        if not self._pending:
            return
        items, self._pending = self._pending, []
        self._sent += items
        connection = self._conn()
        count_sent_ahead()
        try:
            connection.send_packed_command(connection.pack_commands([item[0] for item in items]),
                                           check_health=False)  # a health check would read a reply sent ahead
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            # not known to have reached Redis: sent again, with what is in flight, by the next command
            self._drop_connection()

    def call(self, *command: Any) -> Any:
        """``command`` run now, after every pending write; its reply."""
        return self._send([command])[0]

    def call_many(self, commands: list[tuple]) -> list[Any]:
        """``commands`` run now, in one round trip after every pending write; their replies."""
        return self._send(commands)

    def _send(self, commands: list[tuple]) -> list[Any]:
        sent, pending = self._sent, self._pending
        self._sent, self._pending = [], []
        items = sent + pending
        replies = self._exchange([item[0] for item in sent], [item[0] for item in pending] + list(commands))
        for (_, on_reply, key, joined), reply in zip(items, replies, strict=False):
            if on_reply is None:
                continue
            if key is None:
                on_reply(reply)
            else:
                on_reply(reply, joined)
        return replies[len(items):]

    def _conn(self):
        if self._connection is None:
            self._connection = self.client.connection_pool.get_connection()
        return self._connection

    def _drop_connection(self) -> None:
        if self._connection is not None:
            self._connection.disconnect()
            self.client.connection_pool.release(self._connection)
            self._connection = None

    def _exchange(self, in_flight: list[tuple], todo: list[tuple]) -> list[Any]:
        """``todo`` sent after the commands ``in_flight`` (sent ahead); the replies of both, in order.
        A connection lost on the way is made again and everything not answered sent again once,
        as redis-py's pipeline does (the crawl's writes bear being run twice: a record is queued
        once, a lease released once, a page done once; a request counted twice ends the crawl a
        request early)."""
        try:
            replies = self._roundtrip(in_flight, todo)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            self._drop_connection()
            replies = self._roundtrip([], in_flight + todo)
        missing = [i for i, reply in enumerate(replies) if isinstance(reply, redis.exceptions.NoScriptError)]
        if missing:
            # the server lost its scripts: those commands did not run; everything else did
            self._reload()
            for i, reply in zip(missing, self._roundtrip([], [(in_flight + todo)[i] for i in missing]), strict=True):
                replies[i] = reply
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies

    def _roundtrip(self, in_flight: list[tuple], todo: list[tuple]) -> list[Any]:
        connection = self._conn()
        if todo:
            connection.send_packed_command(connection.pack_commands(todo), check_health=False)
        replies = []
        for command in (*in_flight, *todo):
            try:
                # redis-py's parsing of the command's reply, as its pipeline does
                replies.append(self.client.parse_response(connection, command[0]))
            except redis.exceptions.ResponseError as exc:
                replies.append(exc)
        return replies

    def _reload(self) -> None:
        if self.scripts is None:
            raise redis.exceptions.NoScriptError("a script was sent by SHA1 without its source")
        self.scripts.reload()


__all__ = ["MAX_AGE", "Scripts", "WriteBehind"]
