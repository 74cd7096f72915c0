"""Ordinary English words: the extractors ask for a cue before reading one as a catalog item.

A catalog title or value that is also an everyday word ("War", "Her", "love", "up") is a film
or concept only when the text marks it as one. "Everyday" is measured, not listed: a word is
common when its frequency in general English (the `wordfreq` tables, shipped with the package)
is at least ten per million words (Zipf 4.0). Names are frequent too (Emma, Lincoln), which is
harmless: a name that is a title also needs a cue.
"""

from __future__ import annotations

from functools import lru_cache

COMMON_ZIPF = 4.0


@lru_cache(maxsize=100_000)
def is_common_word(word: str) -> bool:
    """Whether `word` (any case) is an everyday English word."""
    from wordfreq import zipf_frequency  # imported where used: half a second, which every workflow parse paid

    return zipf_frequency(word.lower(), "en") >= COMMON_ZIPF


def is_common_phrase(words: list[str]) -> bool:
    """Whether every word of a phrase is an everyday word (a phrase with no word is not)."""
    return bool(words) and all(is_common_word(w) for w in words)
