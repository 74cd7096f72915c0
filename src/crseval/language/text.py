"""Word tokenisation shared by the plot-keyword index and the topic model.

One tokeniser for every consumer, so that a plot keyword and an LDA vocabulary word are the
same string: lower-cased alphabetic runs, English stop words removed, a minimum length, and
dictionary lemmatisation (simplemma ships its data, so nothing is downloaded at run time).
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache, lru_cache
from pathlib import Path

import simplemma

_WORD = re.compile(r"[a-z]+")


@cache
def stop_words() -> frozenset[str]:
    """English stop words: scikit-learn's list (the one its TF-IDF analysis drops), read from the module that
    holds it alone. Importing scikit-learn itself takes seconds (it imports scipy.stats), which every job that
    tokenises a line would pay; the list's module imports nothing."""
    spec = importlib.util.find_spec("sklearn")  # finds the package without running it
    origin = Path(spec.origin).parent / "feature_extraction" / "_stop_words.py" if spec and spec.origin else None
    if origin is not None and origin.is_file():
        module_spec = importlib.util.spec_from_file_location("crseval_english_stop_words", origin)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        return frozenset(module.ENGLISH_STOP_WORDS)
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # another layout: the package import

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
