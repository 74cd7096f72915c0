"""Find catalog values and film titles in free text.

One matcher serves the CRS constraint tracker and the metrics' concept extractor E(x), so a
value the simulator writes is recognised the same way everywhere: whole-word matching (a value
is a run of whole tokens), longest match first (so "Science Fiction" wins over "Fiction"),
case-insensitive. Three rules keep ordinary words from becoming concepts:

- nothing inside a film title counts ("Black Beauty" names no genre `beauty`): title spans come
  from the title recognizer (`crseval.language.titles`);
- nothing inside the name of a series counts, in any case ("best star wars movies" asks for no
  genre `war`): a series is two or three words, none a function word, that two or more catalog
  titles open with (a leading "the" aside), such as "Star Wars" or "Toy Story";
- a value that is an everyday English word ("love", "dog", "family", "war"; see
  `crseval.language.lexicon`) written in lower case (or capitalised only because a sentence starts with
  it) counts only with a cue: a field word next to it ("a war movie", "the love genre",
  "in english"), or quotes around it. Standard genre names (`GENRE_NAMES`: comedy, drama...)
  and values made of them ("horror comedy") name a kind of film on their own and need no cue.
  Capitalised in mid-sentence is a cue too; so is a field word typed with one letter wrong ("love
  movi"). Right after its subject or an adverb ("I love", "we'd really love") such a word is a verb, cue or
  not: "I love movies with dogs" names no genre `love`.

People write a genre in more than its catalog spelling: its plural ("thrillers", "comedies"), and
a few standard short or adjective forms (`GENRE_FORMS`: "sci-fi", "animated", "comedic") read as
the catalog value. A person's full name typed with one letter wrong ("michsel bay") is that person
when no other catalog name is as close.

Matching walks the text's tokens and looks token runs up in dictionaries, so its cost grows
with the text, not with the size of the catalog (a regex alternation of 10,000 names does not); the
tokens come from one `AnalysedText`, which the title recognizer and the metrics read too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import pandas as pd

from crseval.core.fields import CONCEPT_FIELDS, KEYWORD_FIELD, PEOPLE_FIELDS
from crseval.language.genres import GENRE_ADJECTIVES, GENRE_FORMS, GENRE_NAMES
from crseval.language.lexicon import is_common_phrase, is_common_word
from crseval.language.text import lemma, stop_words
from crseval.language.titles import TitleRecognizer
from crseval.language.tokens import AnalysedText, tokenize

# Words right before a value that say which field a name belongs to.
FIELD_CUES: dict[str, tuple[str, ...]] = {
    "director": ("directed by", "director", "directors", "from director", "filmmaker"),
    "writer": ("written by", "writer", "writers", "screenplay by", "scripted by"),
    "actor": ("starring", "with", "actor", "actress", "featuring", "cast"),
    "language": ("in",),
    "year": ("from", "in", "released in"),
}
# Optional field: the top TF-IDF words of each film's plot (lemmas), matched by the lemma of a word.

_DETERMINER_BEFORE = re.compile(
    r"(?:\b(?:the|its|their|our|his|her|my|your|these|those)|['’]s)\s+(?:[a-z-]+\s+)?$", re.I
)
_GENRE_WORDS = frozenset(name for name in GENRE_NAMES if " " not in name and "-" not in name)
_NAME_FIELD_WORDS = frozenset("language languages film films movie movies cinema genre genres".split())
_FIELD_WORDS = ("movie", "movies", "film", "films", "flick", "flicks", "genre", "genres")
SERIES_WORDS = 3  # the longest series name looked for ("the lord of the rings" is a title, not a series)

# Cue words next to an everyday word that make it a value of the field.
_AFTER_CUE_PATTERNS = {
    "genre": r"(?:-|\s)+(?:movies?|films?|flicks?|genres?|stories|story|pictures?|fans?|titles?|series|cinema|classics?"
    r"|comed(?:y|ies)|dramas?|thrillers?|adventures?|elements?|themes?|sci[- ]?fi|science\s+fiction|horror|action"
    r"|romance|mystery|fantasy|crime|westerns?|musicals?|documentar(?:y|ies)|animation)\b",
    "language": r"(?:-|\s)+(?:language|dialogue|speaking|audio|subtitles|version|films?|movies?)\b",
    "plot_keyword": r"(?:-|\s)+(?:movies?|films?|stories|story|plots?|themes?)\b",
}
_AFTER_CUE = {field: re.compile(pattern, re.I) for field, pattern in _AFTER_CUE_PATTERNS.items()}
_BEFORE_CUE_PATTERNS = {
    "genre": r"\b(?:genres?|genre\s+of|category)\s*:?\s*$",
    "language": r"\b(?:in|spoken\s+in|language)\s*:?\s*$",
    "plot_keyword": r"\b(?:about|involving|featuring)\s+(?:an?\s+|the\s+)?$",
}
_BEFORE_CUE = {field: re.compile(pattern, re.I) for field, pattern in _BEFORE_CUE_PATTERNS.items()}
_PERSON_BEFORE_CUE = re.compile(
    r"\b(?:directed\s+by|written\s+by|starring|with|featuring|by|actor|actress|director|writer)\s*$", re.I
)
# a field's cue words right before a name ("directed by X"): FIELD_CUES as one pattern per field
_FIELD_CUE_BEFORE = {
    field: re.compile(r"\b(?:" + "|".join(map(re.escape, cues)) + r")\s*$") for field, cues in FIELD_CUES.items()
}
_FOLLOWING_WORD = re.compile(r"[ \t-]+([a-z]+)\b", re.I)
_LETTERS = re.compile(r"[a-z]+")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n])[\s\"'“‘*_(\[-]*$")
_QUOTED = re.compile(r"[\"'“‘*_]$")
# An everyday word right after its subject or an adverb or auxiliary before a verb is that verb, whatever follows:
# "I love movies with dogs", "we'd really love a thriller" name no genre `love`.
_AS_A_VERB = re.compile(
    r"\b(?:i|we|you|they|he|she|i'd|we'd|i'll|we'll|i'm|really|just|also|absolutely|totally|truly|would|do|does|did)"
    r"\s+$",
    re.I,
)


@dataclass(frozen=True)
class Mention:
    field: str  # a catalog field, or "title"
    value: str  # the catalog spelling
    start: int
    end: int


class _RunIndex:
    """Token runs -> payload, with the possible run lengths per first token."""

    def __init__(self, entries: dict[tuple[str, ...], object]):
        self.entries = entries
        self.lengths: dict[str, list[int]] = {}
        seconds: dict[str, set[str]] = {}
        for key in entries:
            self.lengths.setdefault(key[0], []).append(len(key))
            if len(key) > 1:
                seconds.setdefault(key[0], set()).add(key[1])
        for first in self.lengths:
            self.lengths[first] = sorted(set(self.lengths[first]), reverse=True)
        self.seconds = {first: frozenset(second) for first, second in seconds.items()}

    def scan(self, keys: list[str]):
        """Yield (start token, end token, payload), longest first, non-overlapping."""
        lengths, entries, seconds, none = self.lengths, self.entries, self.seconds, frozenset()
        free = 0  # the first token no earlier run covers
        for i in [i for i, key in enumerate(keys) if key in lengths]:  # only where some run may start
            if i < free:
                continue
            longer = i + 1 < len(keys) and keys[i + 1] in seconds.get(keys[i], none)
            for length in lengths[keys[i]]:
                if length > 1 and not longer:
                    continue
                run = tuple(keys[i : i + length])
                if len(run) == length and run in entries:
                    yield i, i + length, entries[run]
                    free = i + length
                    break


class ConceptMatcher:
    """Catalog value and title matcher built from the `concepts` and `films` index tables."""

    def __init__(self, concepts: pd.DataFrame, films: pd.DataFrame, fields: tuple[str, ...] = CONCEPT_FIELDS):
        self._keywords = (
            frozenset(concepts.loc[concepts["field"] == KEYWORD_FIELD, "value"])
            if KEYWORD_FIELD in fields
            else frozenset()
        )
        concepts = concepts[concepts["field"].isin([f for f in fields if f != KEYWORD_FIELD])]
        counts = concepts.groupby(["field", "value"]).size()
        by_surface: dict[tuple[str, ...], list[tuple[str, str, int]]] = {}
        for (field, value), n in counts.items():
            key = tuple(t.lower() for t, _, _ in tokenize(value))
            if key:
                by_surface.setdefault(key, []).append((field, value, int(n)))
        genres = {value: (field, value, int(n)) for (field, value), n in counts.items() if field == "genre"}
        variants: dict[tuple[str, ...], tuple[str, str, int]] = {}
        for value, entry in genres.items():
            key = tuple(t.lower() for t, _, _ in tokenize(value))
            if key and key[-1].isalpha():
                variants.setdefault((*key[:-1], _plural(key[-1])), entry)
        self._plurals = frozenset(variants)  # "thrillers" is a kind of film; "the mysteries of the sea" is not
        for form, value in GENRE_FORMS.items():
            if value in genres:
                variants.setdefault(tuple(t for t, _, _ in tokenize(form)), genres[value])
        for key, entry in variants.items():
            by_surface.setdefault(key, [entry])  # a spelling that is some value itself keeps that value
        order = {f: i for i, f in enumerate(fields)}
        for candidates in by_surface.values():
            candidates.sort(key=lambda c: (-c[2], order[c[0]]))
        self._values = _RunIndex(by_surface)
        self._everyday = {key: is_common_phrase([t for t in key if t.isalpha()]) for key in by_surface}
        for form in GENRE_ADJECTIVES:  # "a romantic movie", not "romantic relationships"
            self._everyday[tuple(t for t, _, _ in tokenize(form))] = True
        self._people = _NearNames(counts, fields)
        self._series = _series_names(films["title"])
        self.title_recognizer = TitleRecognizer(films)

    def values(self, text: str | AnalysedText, titles=()) -> list[Mention]:
        """Field values in `text` (or its analysis, whose tokens are reused), left to right,
        non-overlapping, longest first, outside film titles (`titles`: films the text may name, a
        cue for ambiguous ones). A name that is a value of several fields takes the field its cue
        words name ("directed by X"), else the field where the catalog uses it most; an everyday
        word needs a cue (module docstring)."""
        analysed = AnalysedText.of(text)
        text, lowered = analysed.text, analysed.lowered
        inside_title = _TitleSpans(self.title_recognizer, analysed, titles)
        mentions = []
        for first, last, candidates in self._values.scan(lowered):
            start, end = analysed.span(first, last)
            key = tuple(lowered[first:last])
            if self._in_series(lowered, first, last):
                continue
            after_value = bool(mentions) and not text[mentions[-1].end : start].strip()  # "Mandarin Chinese"
            if self._everyday[key] and len(key) == 1 and not after_value:
                # "Star Wars", "Twin Towers", "the German Army": an everyday word capitalised as part of a
                # name; a language keeps its qualifier ("Standard Chinese")
                if _in_proper_name(text, start, end, before=candidates[0][0] != "language"):
                    continue
            if key in self._plurals and _DETERMINER_BEFORE.search(text[max(0, start - 30) : start]):
                continue  # "the horrors of war", "their passions": things, not kinds of film
            if self._everyday[key]:
                candidates = [c for c in candidates if self._cued(text, start, end, c[0], c[1])]
                if not candidates:
                    continue
            if inside_title.overlap(start, end):  # asked last: reading the titles costs the most
                continue
            field, value = self._choose_field(text, start, candidates)
            mentions.append(Mention(field, value, start, end))
        values = [(m.start, m.end) for m in mentions]
        for start, end, candidates in self._people.find(analysed, lambda: values + inside_title.spans):
            field, value = self._choose_field(text, start, candidates)
            mentions.append(Mention(field, value, start, end))
        mentions.sort(key=lambda m: m.start)
        if self._keywords:
            mentions = sorted(
                mentions + self._keyword_mentions(text, analysed.tokens, mentions, inside_title), key=lambda m: m.start
            )
        return mentions

    def _in_series(self, lowered: list[str], first: int, last: int) -> bool:
        """Whether the tokens first..last lie inside a longer run that is a series' name ("star wars"); a value
        that is a series' whole name stays a value."""
        for size in range(last - first + 1, SERIES_WORDS + 1):
            for start in range(max(0, last - size), first + 1):
                if tuple(lowered[start : start + size]) in self._series:
                    return True
        return False

    def _keyword_mentions(self, text, tokens, mentions, inside_title: _TitleSpans) -> list[Mention]:
        """Plot keywords: a content word whose lemma is a keyword ("murders" -> murder), outside
        other values and titles; an everyday word needs a cue ("a movie about murder")."""
        values = [(m.start, m.end) for m in mentions]
        found = []
        for token, start, end in tokens:
            if not token.isalpha() or len(token) < 3 or token.lower() in stop_words():
                continue
            keyword = lemma(token.lower())
            if keyword not in self._keywords:
                continue
            if any(a <= start < b for a, b in values) or any(a <= start < b for a, b in inside_title.spans):
                continue
            if not is_common_word(token) or self._cued(text, start, end, KEYWORD_FIELD, keyword):
                found.append(Mention(KEYWORD_FIELD, keyword, start, end))
        return found

    def titles(self, text: str | AnalysedText, candidates=()) -> list[str]:
        """Catalog films `text` refers to (recommended or mentioned), in order, each once."""
        return self.title_recognizer.recognise(text, candidates=candidates).all

    @staticmethod
    def _cued(text: str, start: int, end: int, field: str, value: str) -> bool:
        """Whether an everyday word at text[start:end] is marked as a value of `field`. (What comes
        before and after is read from `text` in place; a quote before must end right there, or but
        for a newline: `$` in _QUOTED.)"""
        before = text[max(0, start - 30) : start]
        surface = text[start:end]
        if field == "genre" and (
            surface.lower() in GENRE_NAMES or set(_LETTERS.findall(surface.lower())) <= _GENRE_WORDS
        ):
            return True  # "comedy", "horror comedy"; not "adventures" nor "romantic" (their own words)
        if _AS_A_VERB.search(before) and not _QUOTED.search(before[-2:]):
            return False  # "I love movies that ..."
        at_sentence_start = _SENTENCE_START.search(before[-12:]) is not None
        if surface[:1].isupper() and not at_sentence_start:
            return True
        if _QUOTED.search(before[-2:]) and text[end : end + 1] in "\"'”’*_":
            return True
        if field in _AFTER_CUE and _AFTER_CUE[field].match(text, end):
            return True
        if field in ("genre", KEYWORD_FIELD):
            following = _FOLLOWING_WORD.match(text, end)
            if following and _misspelt_field_word(following.group(1)):
                return True  # "love movi"
        if field in _BEFORE_CUE and _BEFORE_CUE[field].search(before):
            return True
        if field in ("actor", "director", "writer"):
            return _PERSON_BEFORE_CUE.search(before) is not None
        return False

    @staticmethod
    def _choose_field(text: str, start: int, candidates: list[tuple[str, str, int]]) -> tuple[str, str]:
        if len(candidates) > 1:
            before = text[max(0, start - 24) : start].lower()
            for field, value, _ in candidates:
                if field in _FIELD_CUE_BEFORE and _FIELD_CUE_BEFORE[field].search(before):
                    return field, value
        field, value, _ = candidates[0]
        return field, value


def _series_names(titles: pd.Series) -> frozenset[tuple[str, ...]]:
    """The names of the catalog's series (module docstring): the runs of 2 to SERIES_WORDS words, lower case,
    that open two or more titles, a leading "the" aside, none a function word."""
    openings: dict[tuple[str, ...], int] = {}
    for title in titles:
        words = [t.lower() for t, _, _ in tokenize(str(title))]
        words = words[1:] if words[:1] == ["the"] else words
        for size in range(2, SERIES_WORDS + 1):
            run = tuple(words[:size])
            if len(run) < size or not all(w.isalpha() and w not in stop_words() for w in run):
                break
            openings[run] = openings.get(run, 0) + 1
    return frozenset(run for run, n in openings.items() if n >= 2)


def _plural(word: str) -> str:
    """The regular English plural of a genre word ("thriller" -> "thrillers", "comedy" -> "comedies")."""
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u"):
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def _one_edit(a: str, b: str) -> bool:
    """Whether `a` becomes `b` by one inserted, deleted, replaced or swapped letter (and is not `b`)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _misspelt_field_word(word: str) -> bool:
    """A word that is "movie", "film" or "genre" typed with one letter wrong, and no English word itself."""
    word = word.lower()
    return len(word) >= 4 and not is_common_word(word) and any(_one_edit(word, target) for target in _FIELD_WORDS)


class _NearNames:
    """Catalog people's full names typed with one letter wrong in one of their words ("michsel bay",
    "Tom Hank"): the other words must match, the wrong word have four letters or more and be no
    English word and no part of another catalog name, and the name be the only catalog name that close."""

    def __init__(self, counts: pd.Series, fields: tuple[str, ...]):
        self.names: dict[tuple[str, ...], list[tuple[str, str, int]]] = {}
        for (field, value), n in counts.items():
            if field in PEOPLE_FIELDS and field in fields:
                key = tuple(t.lower() for t, _, _ in tokenize(value))
                if 2 <= len(key) <= 3 and all(t.isalpha() for t in key):
                    self.names.setdefault(key, []).append((field, value, int(n)))
        for candidates in self.names.values():
            candidates.sort(key=lambda c: (-c[2], PEOPLE_FIELDS.index(c[0])))
        self.name_words = frozenset(w for key in self.names for w in key)
        self.masked: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
        # name word -> where a word typed wrong may stand from it, in words (-2 .. 2): "tom" -> {1}
        self.typed_offsets: dict[str, set[int]] = {}
        for key in self.names:
            for i in range(len(key)):
                if len(key[i]) >= 4:
                    self.masked.setdefault((*key[:i], "*", *key[i + 1 :]), []).append(key)
                    for k, word in enumerate(key):
                        if k != i:
                            self.typed_offsets.setdefault(word, set()).add(i - k)

    def find(self, analysed: AnalysedText, taken: Callable[[], list[tuple[int, int]]]):
        """(start, end, candidates) of near names outside the spans `taken()` gives (asked only when a
        near name is found), left to right.

        In a near name every word but the typed one is a word of the catalog name, and the typed one
        stands where a name word allows (`typed_offsets`), is no name's word and no English word, and
        has three letters or more (one letter from a name word of four or more); so only the windows
        around such a word are looked at, masked at its place."""
        words, name_words, offsets = analysed.lowered, self.name_words, self.typed_offsets
        spots = {p + d for p, w in enumerate(words) if w in offsets for d in offsets[w]}
        typed = {
            q
            for q in spots
            if 0 <= q < len(words)
            and words[q] not in name_words
            and len(words[q]) >= 3
            and words[q].isalpha()
            and not is_common_word(words[q])
        }
        # per word: 0 a catalog name's word, 1 a word that may be a name's typed wrong, 2 neither (the sum
        # of a window of two or three is 1 exactly when it is all name words but one that may be typed)
        kinds = {}
        free = 0  # the first word no earlier hit covers
        for i in sorted({i for q in typed for i in (q - 2, q - 1, q) if i >= 0}):
            if i < free:
                continue
            for length in (3, 2):
                if i + length > len(words):
                    continue
                for j in range(i, i + length):
                    if j not in kinds:
                        kinds[j] = 0 if words[j] in name_words else 1 if j in typed else 2
                window = [kinds[j] for j in range(i, i + length)]
                if sum(window) != 1:
                    continue
                typed_at = window.index(1)
                word = words[i + typed_at]
                masked = (*words[i : i + typed_at], "*", *words[i + typed_at + 1 : i + length])
                keys = {key for key in self.masked.get(masked, ()) if _one_edit(word, key[typed_at])}
                if len(keys) != 1:
                    continue
                start, end = analysed.span(i, i + length)
                if not any(a < end and start < b for a, b in taken()):
                    yield start, end, self.names[keys.pop()]
                    free = i + length
                    break


class _TitleSpans:
    """The film-title spans of a text (TitleRecognizer.spans), read on first use: most candidate
    values are settled by cheaper rules, and most texts never need them."""

    def __init__(self, recognizer, analysed: AnalysedText, titles):
        self.recognizer, self.analysed, self.titles = recognizer, analysed, titles

    @cached_property
    def spans(self) -> list[tuple[int, int]]:
        return self.recognizer.spans(self.analysed, self.titles)

    def overlap(self, start: int, end: int) -> bool:
        """Whether text[start:end] starts or ends inside a title."""
        return any(a <= start < b or a < end <= b for a, b in self.spans)


def _in_proper_name(text: str, start: int, end: int, before: bool = True) -> bool:
    """Whether a capitalised word at text[start:end] is joined to another capitalised word in mid-sentence
    ("Star Wars", "the German Enigma code"), other than a function word ("This French film") or a
    field word ("Portuguese Language")."""
    if not text[start].isupper():
        return False
    previous = re.search(r"([A-Z][\w'’-]*)[ \t]+$", text[:start]) if before else None
    if previous and previous.group(1) != "I" and previous.group(1).lower() not in stop_words():
        head = text[: previous.start(1)]
        if _SENTENCE_START.search(head[-12:]) is None and head.strip():
            return True
    after = re.match(r"[ \t]+([A-Z0-9][\w'’-]*)", text[end:])
    return after is not None and after.group(1) != "I" and after.group(1).lower() not in _NAME_FIELD_WORDS
