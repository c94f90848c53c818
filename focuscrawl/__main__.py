"""``python -m focuscrawl``: the ``focuscrawl`` command."""

from focuscrawl.cli import main

main()
