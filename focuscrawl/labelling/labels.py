"""The words a person judges a page with, the one home of them.

A label says whether a page is on the crawl's topic. ``skip`` records that the page was shown and
passed over (unreadable, undecidable): it keeps the page out of the queue and out of training.
Training maps ``on-topic`` to the model's positive class and ``off-topic`` to its negative one.
"""

from __future__ import annotations

ON_TOPIC = "on-topic"
OFF_TOPIC = "off-topic"
SKIP = "skip"
LABELS = (ON_TOPIC, OFF_TOPIC, SKIP)
#: the labels training reads (a skip is no evidence either way)
TRAINING_LABELS = (ON_TOPIC, OFF_TOPIC)
#: longest "who" kept with a label (a name or a tool, not a document)
MAX_WHO_CHARS = 80


class LabelError(ValueError):
    """A label that is not one of LABELS, or a page the store does not hold; a one-line message."""


def check_label(label: str) -> str:
    """``label`` as stored (lower case, trimmed), or LabelError naming the labels there are."""
    value = str(label or "").strip().lower()
    if value not in LABELS:
        raise LabelError(f"unknown label {label!r}: use one of {', '.join(LABELS)}")
    return value


def clean_who(who: str | None) -> str:
    """Who gave a label, as stored: one line, bounded."""
    return " ".join(str(who or "").split())[:MAX_WHO_CHARS]
