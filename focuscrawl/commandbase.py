"""A base for focuscrawl commands: user errors become one clear line on stderr, no traceback."""

from __future__ import annotations

import sys

from scrapy.commands import ScrapyCommand

from focuscrawl.config import ConfigError, FocusConfig
from focuscrawl.extras import MissingExtra


class CommandError(Exception):
    """A problem the user can fix (bad input, missing file); printed as one line, exit code 2."""


class FocusCommand(ScrapyCommand):
    requires_project = False
    #: Commands implement ``execute(args, opts)``; ``run`` turns CommandError into one line.

    def execute(self, args: list[str], opts) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def config(self) -> FocusConfig:
        """The focuscrawl settings the command runs with (``-s``, the project's settings)."""
        try:
            return FocusConfig.from_settings(self.settings)
        except ConfigError as exc:
            raise CommandError(str(exc)) from None

    def run(self, args: list[str], opts) -> None:
        try:
            self.execute(args, opts)
        except (CommandError, MissingExtra) as exc:  # MissingExtra: a feature whose extra is not installed
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 2
