"""Labelling what a crawl found: the judgements a person gives pages (``labels.py``) and the queue
that picks the pages most worth judging (``queue.py``). Scrapy-free."""

from focuscrawl.labelling.labels import LABELS, OFF_TOPIC, ON_TOPIC, SKIP, LabelError, check_label

__all__ = ["LABELS", "OFF_TOPIC", "ON_TOPIC", "SKIP", "LabelError", "check_label"]
