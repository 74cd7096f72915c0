"""Find catalog values and film titles in free text.

One matcher serves the CRS constraint tracker and the metrics' concept extractor E(x), so a
value the simulator writes is recognised the same way everywhere: whole-word matching (a value
is a run of whole tokens), longest match first (so "Science Fiction" wins over "Fiction"),
case-insensitive. Two rules keep ordinary words from becoming concepts:

- nothing inside a film title counts ("Black Beauty" names no genre `beauty`): title spans come
  from the title recognizer (`crseval.language.titles`);
- a value that is an everyday English word ("love", "dog", "family", "war"; see
  `crseval.language.lexicon`) written in lower case (or capitalised only because a sentence starts with
  it) counts only with a cue: a field word next to it ("a war movie", "the love genre",
  "in english"), or quotes around it. Standard genre names (`GENRE_NAMES`: comedy, drama...)
  name a kind of film on their own and need no cue. Capitalised in mid-sentence is a cue too.

Matching walks the text's tokens and looks token runs up in dictionaries, so its cost grows
with the text, not with the size of the catalog (a regex alternation of 10,000 names does not).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from crseval.core.fields import CONCEPT_FIELDS, KEYWORD_FIELD
from crseval.language.lexicon import is_common_phrase, is_common_word
from crseval.language.text import STOP_WORDS, lemma
from crseval.language.tokens import tokenize

# Words right before a value that say which field a name belongs to.
FIELD_CUES: dict[str, tuple[str, ...]] = {
    "director": ("directed by", "director", "directors", "from director", "filmmaker"),
    "writer": ("written by", "writer", "writers", "screenplay by", "scripted by"),
    "actor": ("starring", "with", "actor", "actress", "featuring", "cast"),
    "language": ("in",),
    "year": ("from", "in", "released in"),
}
# Optional field: the top TF-IDF words of each film's plot (lemmas), matched by the lemma of a word.

# Genre names that name a kind of film on their own ("I'd like a comedy").
GENRE_NAMES = frozenset(
    """
action adventure animation animated biography comedy crime documentary drama fantasy horror musical mystery
romance thriller western science fiction sci-fi noir film noir satire parody slasher anime superhero
romantic comedy black comedy comedy-drama psychological thriller historical drama
""".split()
) | {"science fiction", "film noir", "romantic comedy", "black comedy", "psychological thriller"}

# Cue words next to an everyday word that make it a value of the field.
_AFTER_CUE = {
    "genre": r"(?:-|\s)+(?:movies?|films?|flicks?|genres?|stories|story|pictures?|fans?|titles?|series|cinema|classics?"
    r"|comed(?:y|ies)|dramas?|thrillers?|adventures?|elements?|themes?)\b",
    "language": r"(?:-|\s)+(?:language|dialogue|speaking|audio|subtitles|version|films?|movies?)\b",
    "plot_keyword": r"(?:-|\s)+(?:movies?|films?|stories|story|plots?|themes?)\b",
}
_BEFORE_CUE = {
    "genre": r"\b(?:genres?|genre\s+of|category)\s*:?\s*$",
    "language": r"\b(?:in|spoken\s+in|language)\s*:?\s*$",
    "plot_keyword": r"\b(?:about|involving|featuring)\s+(?:an?\s+|the\s+)?$",
}
_PERSON_BEFORE_CUE = r"\b(?:directed\s+by|written\s+by|starring|with|featuring|by|actor|actress|director|writer)\s*$"
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n])[\s\"'“‘*_(\[-]*$")
_QUOTED = re.compile(r"[\"'“‘*_]$")


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
        for key in entries:
            self.lengths.setdefault(key[0], []).append(len(key))
        for first in self.lengths:
            self.lengths[first] = sorted(set(self.lengths[first]), reverse=True)

    def scan(self, keys: list[str]):
        """Yield (start token, end token, payload), longest first, non-overlapping."""
        i = 0
        while i < len(keys):
            for length in self.lengths.get(keys[i], ()):
                run = tuple(keys[i : i + length])
                if len(run) == length and run in self.entries:
                    yield i, i + length, self.entries[run]
                    i += length
                    break
            else:
                i += 1


class ConceptMatcher:
    """Catalog value and title matcher built from the `concepts` and `films` index tables."""

    def __init__(self, concepts: pd.DataFrame, films: pd.DataFrame, fields: tuple[str, ...] = CONCEPT_FIELDS):
        from crseval.language.titles import TitleRecognizer  # the recognizer reads titles; this module reads values

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
        order = {f: i for i, f in enumerate(fields)}
        for candidates in by_surface.values():
            candidates.sort(key=lambda c: (-c[2], order[c[0]]))
        self._values = _RunIndex(by_surface)
        self._everyday = {key: is_common_phrase([t for t in key if t.isalpha()]) for key in by_surface}
        self.title_recognizer = TitleRecognizer(films)

    def values(self, text: str, titles=()) -> list[Mention]:
        """Field values in `text`, left to right, non-overlapping, longest first, outside film
        titles (`titles`: films the text may name, a cue for ambiguous ones). A name that is a
        value of several fields takes the field its cue words name ("directed by X"), else the
        field where the catalog uses it most; an everyday word needs a cue (module docstring)."""
        tokens = tokenize(text)
        inside_title = self.title_recognizer.spans(text, titles)
        mentions = []
        for first, last, candidates in self._values.scan([t.lower() for t, _, _ in tokens]):
            start, end = tokens[first][1], tokens[last - 1][2]
            if any(a <= start < b or a < end <= b for a, b in inside_title):
                continue
            key = tuple(t.lower() for t, _, _ in tokens[first:last])
            if self._everyday[key]:
                candidates = [c for c in candidates if self._cued(text, start, end, c[0], c[1])]
                if not candidates:
                    continue
            field, value = self._choose_field(text, start, candidates)
            mentions.append(Mention(field, value, start, end))
        if self._keywords:
            mentions = sorted(
                mentions + self._keyword_mentions(text, tokens, mentions, inside_title), key=lambda m: m.start
            )
        return mentions

    def _keyword_mentions(self, text, tokens, mentions, inside_title) -> list[Mention]:
        """Plot keywords: a content word whose lemma is a keyword ("murders" -> murder), outside
        other values and titles; an everyday word needs a cue ("a movie about murder")."""
        taken = [(m.start, m.end) for m in mentions] + inside_title
        found = []
        for token, start, end in tokens:
            if not token.isalpha() or len(token) < 3 or token.lower() in STOP_WORDS:
                continue
            if any(a <= start < b for a, b in taken):
                continue
            keyword = lemma(token.lower())
            if keyword in self._keywords and (
                not is_common_word(token) or self._cued(text, start, end, KEYWORD_FIELD, keyword)
            ):
                found.append(Mention(KEYWORD_FIELD, keyword, start, end))
        return found

    def titles(self, text: str, candidates=()) -> list[str]:
        """Catalog films `text` refers to (recommended or mentioned), in order, each once."""
        return self.title_recognizer.recognise(text, candidates=candidates).all

    @staticmethod
    def _cued(text: str, start: int, end: int, field: str, value: str) -> bool:
        """Whether an everyday word at text[start:end] is marked as a value of `field`."""
        if field == "genre" and value.lower() in GENRE_NAMES:
            return True
        before, after = text[:start], text[end:]
        surface = text[start:end]
        at_sentence_start = _SENTENCE_START.search(before[-12:]) is not None
        if surface[:1].isupper() and not at_sentence_start:
            return True
        if _QUOTED.search(before) and after[:1] in "\"'”’*_":
            return True
        if field in _AFTER_CUE and re.match(_AFTER_CUE[field], after, re.I):
            return True
        if field in _BEFORE_CUE and re.search(_BEFORE_CUE[field], before[-30:], re.I):
            return True
        if field in ("actor", "director", "writer"):
            return re.search(_PERSON_BEFORE_CUE, before[-30:], re.I) is not None
        return False

    @staticmethod
    def _choose_field(text: str, start: int, candidates: list[tuple[str, str, int]]) -> tuple[str, str]:
        if len(candidates) > 1:
            before = text[max(0, start - 24) : start].lower()
            for field, value, _ in candidates:
                if any(re.search(rf"\b{re.escape(cue)}\s*$", before) for cue in FIELD_CUES.get(field, ())):
                    return field, value
        field, value, _ = candidates[0]
        return field, value
