"""Duplicate detection: exact content hashes and MinHash LSH near-duplicates (Scrapy-free)."""

from focuscrawl.dedup.fingerprints import (
    ExactDuplicateIndex,
    NearDuplicateIndex,
    content_hash,
    normalise_text,
    word_shingles,
)

__all__ = ["ExactDuplicateIndex", "NearDuplicateIndex", "content_hash", "normalise_text", "word_shingles"]
