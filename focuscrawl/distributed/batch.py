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

Scripts run by their SHA1 (``EVALSHA``), loaded once: redis-py's pipelined ``Script`` asks the
server whether its scripts exist before every pipeline, a round trip of its own. A server that
lost them (restarted, ``SCRIPT FLUSH``) answers NOSCRIPT: they are loaded again and the commands
that failed sent again, in their order (a script's SHA1 is its source's: it does not change).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from focuscrawl.distributed.connection import redis_module

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

    def __len__(self) -> int:
        return len(self._pending)

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
        if self.due():
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._send([])

    def call(self, *command: Any) -> Any:
        """``command`` run now, after every pending write; its reply."""
        return self._send([command])[0]

    def call_many(self, commands: list[tuple]) -> list[Any]:
        """``commands`` run now, in one round trip after every pending write; their replies."""
        return self._send(commands)

    def _send(self, commands: list[tuple]) -> list[Any]:
        pending, self._pending = self._pending, []
        todo = [item[0] for item in pending] + list(commands)
        if len(todo) == 1:
            replies = [self._single(todo[0])]
        else:
            replies = self._pipeline(todo)
        for (_, on_reply, key, joined), reply in zip(pending, replies, strict=False):
            if on_reply is None:
                continue
            if key is None:
                on_reply(reply)
            else:
                on_reply(reply, joined)
        return replies[len(pending):]

    def _single(self, command: tuple) -> Any:
        try:
            return self.client.execute_command(*command)
        except redis.exceptions.NoScriptError:
            self._reload()
            return self.client.execute_command(*command)

    def _pipeline(self, todo: list[tuple]) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for command in todo:
            pipe.execute_command(*command)
        replies = pipe.execute(raise_on_error=False)
        missing = [i for i, reply in enumerate(replies) if isinstance(reply, redis.exceptions.NoScriptError)]
        if missing:
            # the server lost its scripts: those commands did not run; everything else did
            self._reload()
            pipe = self.client.pipeline(transaction=False)
            for i in missing:
                pipe.execute_command(*todo[i])
            for i, reply in zip(missing, pipe.execute(raise_on_error=False), strict=True):
                replies[i] = reply
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies

    def _reload(self) -> None:
        if self.scripts is None:
            raise redis.exceptions.NoScriptError("a script was sent by SHA1 without its source")
        self.scripts.reload()


__all__ = ["MAX_AGE", "Scripts", "WriteBehind"]
