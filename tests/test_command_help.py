"""Every command's ``--help`` reads cleanly under Scrapy's help formatter.

Scrapy's formatter turns any help block whose last line ends with a colon into an underlined,
title-cased heading, so a help text wrapped right after "(default:" printed a bogus heading in the
middle of the options list at some terminal widths.
"""

import argparse
import importlib
import pkgutil

import pytest
from scrapy.commands import ScrapyHelpFormatter
from scrapy.settings import Settings

import focuscrawl.commands

COMMANDS = sorted(module.name for module in pkgutil.iter_modules(focuscrawl.commands.__path__))


def headings(name: str, width: int) -> list[str]:
    """The underlined lines of ``scrapy NAME --help`` on a terminal ``width`` columns wide."""
    command = importlib.import_module(f"focuscrawl.commands.{name}").Command()
    command.settings = Settings()
    parser = argparse.ArgumentParser(formatter_class=lambda prog: ScrapyHelpFormatter(prog, width=width),
                                     conflict_handler="resolve", usage=f"scrapy {name} {command.syntax()}",
                                     description=command.long_desc())
    command.add_options(parser)
    lines = parser.format_help().splitlines()
    return [lines[i - 1] for i, line in enumerate(lines) if i and len(line) >= 3 and set(line) <= {"=", "-"}]


@pytest.mark.parametrize("name", COMMANDS)
def test_help_has_headings_only_where_meant(name):
    for width in range(50, 161):  # the terminal's width decides where help lines wrap
        found = headings(name, width)
        assert "Usage" in found and "Options" in found
        assert not [h for h in found if h.startswith(" ")], (width, found)  # an option's help line
