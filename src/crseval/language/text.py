"""Word tokenisation shared by the plot-keyword index and the topic model.

One tokeniser for every consumer, so that a plot keyword and an LDA vocabulary word are the
same string: lower-cased alphabetic runs, English stop words removed, a minimum length, and
dictionary lemmatisation (simplemma ships its data, so nothing is downloaded at run time).
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

import simplemma

_WORD = re.compile(r"[a-z]+")


@cache
def stop_words() -> frozenset[str]:
    """English stop words (scikit-learn's list), loaded on first use: importing scikit-learn takes over a
    second, which every job that only names the metric columns would otherwise pay."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


@lru_cache(maxsize=200_000)
def lemma(word: str) -> str:
    """Dictionary lemma of a lower-cased English word (the word itself when unknown)."""
    return simplemma.lemmatize(word, lang="en").lower()


def content_words(text: str, *, min_length: int = 3, lemmatize: bool = True) -> list[str]:
    """Lower-cased alphabetic tokens of `text` that are not stop words and have at least
    `min_length` characters, lemmatised if asked. Order and repeats are kept. (What each token
    becomes is remembered per setting: texts share most of their words.)"""
    kept = _CONTENT_WORDS.get((min_length, lemmatize))
    if kept is None or len(kept) > _REMEMBERED_TOKENS:
        kept = _CONTENT_WORDS[(min_length, lemmatize)] = {}
    words = []
    for token in _WORD.findall(text.lower()):
        word = kept.get(token, _UNSEEN)
        if word is _UNSEEN:
            word = kept[token] = _content_word(token, min_length, lemmatize)
        if word is not None:
            words.append(word)
    return words


# (min_length, lemmatize) -> token -> what content_words keeps of it (None: nothing); forgotten past
# _REMEMBERED_TOKENS tokens
_CONTENT_WORDS: dict[tuple[int, bool], dict[str, str | None]] = {}
_REMEMBERED_TOKENS = 200_000
_UNSEEN = object()


def _content_word(token: str, min_length: int, lemmatize: bool) -> str | None:
    """What `content_words` keeps of one lower-cased token: itself or its lemma, or None."""
    stop = stop_words()
    if len(token) < min_length or token in stop:
        return None
    if lemmatize:
        token = lemma(token)
        if len(token) < min_length or token in stop:
            return None
    return token
