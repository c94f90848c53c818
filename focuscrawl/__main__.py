"""``python -m focuscrawl``: the ``focuscrawl`` command."""

from focuscrawl.cli import main

if __name__ == "__main__":  # importing the package's modules (pkgutil.walk_packages) runs nothing
    main()
