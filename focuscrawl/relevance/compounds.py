"""Compound words read as the words a page model knows they are made of.

A model trained from example pages reads a link as a tiny page: its anchor, the text around it
and its URL's words, through the page classifier. Links name things in identifiers and file
names (``ctest.1.html``, ``unittest``, ``regexp``, ``stringview``, ``CTEST_TEST_TIMEOUT``) that
pages spell out, so a link's most telling word is often one the classifier never saw whole,
although it knows ``test``, ``regex``, ``string``. ``CompoundReader`` rewrites such a word as the
known words it is made of before the classifier reads the link or the page
(``TopicModel.read_page``): another manual's pages name its commands and variables
(``add_test``, ``set_tests_properties``) where the training manual spelled its own out. A word
the model knows is read as it is; the text around a link is not rewritten.

Segmentation is greedy, leftmost-longest: from the start of the word, the longest known word
that begins there is taken and reading goes on after it; where none begins, one letter is
skipped. Greedy rather than the segmentation covering the most letters, because the longest
known word is the reading a person makes: ``regexp`` is ``regex`` (and a stray ``p``), where
covering the most letters would read ``reg`` + ``exp`` (with three-letter parts). Parts are at
least ``MIN_PART`` letters: a two- or three-letter piece of an unknown compound is as often an accident of its spelling (``exp``,
``ion``, ``ing``, ``str``) as a word of it, and a one-letter prefix (the ``c`` of ``ctest``) is
noise either way. The parts must make up most of the word (more than half its letters): a
known word found inside a longer unknown one (``over`` in ``governance``, ``loss`` in
``glossary``) is a coincidence of spelling, not what the word is made of.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: Shortest part a compound is read as (see the module's docstring).
MIN_PART = 4
#: Longest word looked up as a part; longer known words are rare and never parts.
MAX_PART = 30
#: The word pattern scikit-learn's vectorizers use by default (the page model's).
WORD = re.compile(r"(?u)\b\w\w+\b")
#: An identifier's pieces: letters between underscores and digits (``ctest_test_timeout``).
PIECE = re.compile(r"[^\W\d_]+", re.UNICODE)


def segment(word: str, known, min_part: int = MIN_PART, max_part: int = MAX_PART) -> list[str]:
    """The known words ``word`` is made of, leftmost-longest (``known``: a set of words); empty
    when they do not make up most of it (more than half its letters): ``ctest`` is ``test``,
    ``governance`` is not ``over``."""
    parts, i, n = [], 0, len(word)
    while i <= n - min_part:
        for j in range(min(n, i + max_part), i + min_part - 1, -1):
            if word[i:j] in known:
                parts.append(word[i:j])
                i = j
                break
        else:
            i += 1
    return parts if 2 * sum(map(len, parts)) > n else []


class CompoundReader:
    """Rewrites the words of a link's text that a vocabulary does not hold as the known words
    they are made of: an identifier split at underscores and digits, each piece segmented
    (``segment``). Known words, and unknown ones with no known part, are left as they are."""

    def __init__(self, vocabulary, min_part: int = MIN_PART):
        self.vocabulary = frozenset(vocabulary)
        self.parts_known = frozenset(w for w in self.vocabulary if len(w) >= min_part and w.isalpha())
        self.min_part = min_part
        self._read = lru_cache(maxsize=65536)(self._read_word)

    @classmethod
    def for_pipeline(cls, pipeline) -> "CompoundReader | None":
        """The reader for a scikit-learn pipeline whose first step is a fitted vectorizer with a
        vocabulary (``vocabulary_``); None for another."""
        steps = getattr(pipeline, "steps", None) or []
        vocabulary = getattr(steps[0][1], "vocabulary_", None) if steps else None
        if not vocabulary:
            return None
        return cls(w for w in vocabulary if " " not in w)

    def _read_word(self, word: str) -> str:
        if word in self.vocabulary:
            return word
        parts = []
        for piece in PIECE.findall(word):
            if piece in self.vocabulary:
                parts.append(piece)
            else:
                parts.extend(segment(piece, self.parts_known, self.min_part))
        return " ".join(parts) if parts else word

    def __call__(self, text: str) -> str:
        """``text`` with each unknown word replaced by its known parts (lower case: the page
        model lower-cases what it reads)."""
        return WORD.sub(lambda match: self._read(match.group().lower()), text)
