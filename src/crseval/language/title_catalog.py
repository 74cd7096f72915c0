"""The catalog's titles as the title recognizer looks them up in text: by their tokens, typed loosely
(any case, without the marks people leave out or the leading article), folded for formatted spans; each
title's kind (how much of a cue it needs in running text) and year, and the names that are no film
(people, languages, genres). `title_key` says how two spellings of a title compare."""

from __future__ import annotations

import re
import unicodedata

import pandas as pd

from crseval.core.fields import PEOPLE_FIELDS
from crseval.language.genres import GENRE_NAMES
from crseval.language.lexicon import is_common_phrase
from crseval.language.tokens import token_strings, tokenize


def fold_title(text: str) -> str:
    """Case, diacritics, punctuation and a leading article removed, for comparing formatted spans to titles."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower().replace("&", " and ")
    words = re.sub(r"[^a-z0-9]+", " ", ascii_text).split()
    if len(words) > 1 and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


def title_key(title: str) -> str:
    """How two spellings of one film's title compare when neither is a catalog key: case, diacritics
    and punctuation ignored, letters of any script kept ("Zoe’s Tale" = "zoe's tale")."""
    plain = unicodedata.normalize("NFKD", title).casefold().replace("&", " and ")
    plain = unicodedata.normalize("NFC", "".join(c for c in plain if not unicodedata.combining(c)))
    return " ".join(re.sub(r"[\W_]+", " ", plain).split())


_LOOSE_MARKS = frozenset(",.:'’-!")  # marks people leave out when they type a title


def _second_tokens(keys) -> dict[str, frozenset[str]]:
    """First token -> the second tokens of the keys (token runs of two or more) that start with it."""
    seconds: dict[str, set[str]] = {}
    for key in keys:
        seconds.setdefault(key[0], set()).add(key[1])
    return {first: frozenset(second) for first, second in seconds.items()}


class TitleCatalog:
    """The titles of `films` (title column) and the names of its people, indexed for reading titles in
    text (crseval.language.titles.TitleRecognizer reads them)."""

    def __init__(self, films: pd.DataFrame, people: list[str] | None = None):
        self.titles: dict[tuple[str, ...], str] = {}
        self.folded: dict[str, list[str]] = {}
        for title in films["title"].tolist():
            key = tuple(t for t, _, _ in tokenize(title))
            if key:
                self.titles.setdefault(key, title)
            self.folded.setdefault(fold_title(title), []).append(title)
        self.title_lengths: dict[str, list[int]] = {}
        for key in self.titles:
            self.title_lengths.setdefault(key[0], []).append(len(key))
        for first in self.title_lengths:
            self.title_lengths[first] = sorted(set(self.title_lengths[first]), reverse=True)
        if people is None:
            people = [v for f in PEOPLE_FIELDS if f in films for values in films[f] for v in values]
        name_words = {w.lower() for name in people for w in re.findall(r"[A-Za-z]+", name) if len(w) > 1}
        self.surnames = frozenset(name.split()[-1].lower() for name in people if len(name.split()) > 1)
        self.people = frozenset(name.lower() for name in people)  # "written by Antwone Fisher": the person
        self.kind = {title: self._classify(title, name_words) for title in self.titles.values()}
        # titles of two or more words in any case, with or without their leading article ("cabin in the woods")
        loose: dict[tuple[str, ...], set[str]] = {}
        for key, title in self.titles.items():
            words = tuple(t.lower() for t in key if t not in _LOOSE_MARKS)  # "monsters inc" for "Monsters, Inc."
            for variant in (words, words[1:] if words and words[0] in ("the", "a", "an") else ()):
                if sum(w.isalnum() for w in variant) >= 2:
                    loose.setdefault(variant, set()).add(title)
        self.loose = {key: titles.pop() for key, titles in loose.items() if len(titles) == 1}
        self.loose_lengths: dict[str, list[int]] = {}
        for key in self.loose:
            self.loose_lengths.setdefault(key[0], []).append(len(key))
        for first in self.loose_lengths:
            self.loose_lengths[first] = sorted(set(self.loose_lengths[first]), reverse=True)
        # what a list item or quoted name may be without being a film: a person, a language, a genre
        languages = [v for values in films["language"] for v in values] if "language" in films else []
        self.not_titles = frozenset(title_key(v) for v in [*people, *languages, *GENRE_NAMES])
        self._title_words: dict[str, tuple[str, ...]] = {}
        self._span_titles: dict[str, tuple[str | None, bool]] = {}  # span -> (title, named exactly)
        self.years: dict[str, int] = {}
        if "year" in films:
            for title, year in zip(films["title"].tolist(), films["year"].tolist()):
                if isinstance(year, (int, float)) and year == year and title not in self.years:
                    self.years[title] = int(year)
        # first token -> the second tokens of the longer titles (every loose title has two words or more),
        # and the one-token titles, to skip the places where no title starts
        self.title_starts = _second_tokens(key for key in self.titles if len(key) > 1)
        self.loose_pairs = frozenset(key[:2] for key in self.loose)  # the first two words of each
        self.one_token_titles = frozenset(key[0] for key in self.titles if len(key) == 1)
        self.first_tokens = frozenset(key[0] for key in self.titles)

    @staticmethod
    def _classify(title: str, name_words: set[str]) -> str:
        """A title's kind, which says what cue it needs in running text: "plain" (none), "number", "common"
        (an everyday word or phrase), "name" (part of a person's name in the catalog)."""
        words = re.findall(r"[^\W\d_]+", title)
        if not words or len(title) <= 2:
            return "number"  # "1984", "300", "50/50", "X", "W."
        if len(words) > 1 and any(w[0].isupper() for w in words[1:]):
            return "plain"  # "The Dark Knight": title case is a cue in itself (matching is case-sensitive)
        if words[0][0].isupper() and re.search(r"\s\d", title):
            return "plain"  # "District 9", "Apollo 13": a capitalised word and a number name a film
        if len(words) == 1 and words[0].lower() in name_words and not is_common_phrase(words):
            return "name"
        if is_common_phrase(words):
            return "common"
        if len(words) == 1 and words[0].lower() in name_words:
            return "name"
        return "plain"

    def needs_cue(self, title: str) -> bool:
        """Whether a title written verbatim in running text is not recognised without a cue."""
        return self.kind.get(title, "plain") != "plain"

    def quoted(self, title: str) -> str:
        """How a writer who wants to be understood writes the title: in quotes when it needs a cue."""
        return f'"{title}"' if self.needs_cue(title) else title

    def title_of(self, span: str, year: int | None = None) -> str | None:
        """The catalog film a marked span names, if one (remembered: a reply's quoted titles and list
        items are read up to three times, and the same films come up in text after text). A span that
        names it only in another spelling (without its article, other punctuation) and is written with
        a year more than four years from the film's is another film ("Darkest Hour (2017)" is not *The
        Darkest Hour* of 2010; the catalog's own years may be a few years off)."""
        known = self._span_titles.get(span)
        if known is None:
            key = tuple(token_strings(span))
            if key in self.titles:
                known = (self.titles[key], True)
            elif span == span.lower() and len(key) == 1:
                known = (None, False)  # 'river' in quotes is a word being quoted, not "The River"
            else:
                matches = self.folded.get(fold_title(span), [])
                known = (matches[0] if len(set(matches)) == 1 else None, False)
            self._span_titles[span] = known
        title, exact = known
        if title is not None and not exact and year is not None:
            film_year = self.years.get(title)
            if film_year is not None and abs(film_year - year) > 4:
                return None
        return title

    def lower_words(self, title: str) -> tuple[str, ...]:
        """A title's tokens in lower case (remembered: the same films come up in text after text)."""
        words = self._title_words.get(title)
        if words is None:
            words = self._title_words[title] = tuple(t.lower() for t, _, _ in tokenize(title))
        return words
