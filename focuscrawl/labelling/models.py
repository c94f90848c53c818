"""Which topic model a person's judgements are asked by: the one a crawl grew, when it grew one.

A crawl started from words or a few pages grows its model from the pages it fetches
(``relevance.growing``, ``FOCUS_GROW_MODEL``) and writes each grown model beside the one it
started from (``NAME.grown.joblib``). The pages that model is unsure of are the ones a person's
label teaches most, so the labelling queue (``scrapy label``, ``scrapy console``) ranks by it
unless told otherwise. Scrapy-free.
"""

from __future__ import annotations

from pathlib import Path

from focuscrawl.relevance.growing import grown_path


def judging_model_path(model_path: str) -> tuple[str, bool]:
    """``(path, grown)``: the model grown from ``model_path`` when the crawl wrote one after the
    model was made (it records what it grew from), else ``model_path`` itself."""
    grown = grown_path(model_path)
    try:
        if grown.is_file() and grown.stat().st_mtime >= Path(model_path).stat().st_mtime:
            return str(grown), True
    except OSError:
        pass
    return model_path, False


__all__ = ["judging_model_path"]
