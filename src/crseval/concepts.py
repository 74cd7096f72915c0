"""Find catalog values and film titles in free text.

One matcher serves the CRS constraint tracker and the metrics' concept extractor E(x), so a
value the simulator writes is recognised the same way everywhere: whole-word matching (a value
is a run of whole tokens), longest match first (so "Science Fiction" wins over "Fiction"),
case-insensitive for field values and case-sensitive for titles (a title like "Up" or "Heat"
is an ordinary word in lower case).

Matching walks the text's tokens and looks token runs up in dictionaries, so its cost grows
with the text, not with the size of the catalog (a regex alternation of 10,000 names does not).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

# Words right before a value that say which field a name belongs to.
FIELD_CUES: dict[str, tuple[str, ...]] = {
    "director": ("directed by", "director", "directors", "from director", "filmmaker"),
    "writer": ("written by", "writer", "writers", "screenplay by", "scripted by"),
    "actor": ("starring", "with", "actor", "actress", "featuring", "cast"),
    "language": ("in",),
    "year": ("from", "in", "released in"),
}
CONCEPT_FIELDS = ("genre", "actor", "director", "writer", "language", "year")

_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Mention:
    field: str  # a catalog field, or "title"
    value: str  # the catalog spelling
    start: int
    end: int


def tokenize(text: str) -> list[tuple[str, int, int]]:
    """(token, start, end) for word runs and single punctuation marks."""
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]


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
                run = tuple(keys[i:i + length])
                if len(run) == length and run in self.entries:
                    yield i, i + length, self.entries[run]
                    i += length
                    break
            else:
                i += 1


class ConceptMatcher:
    """Catalog value and title matcher built from the `concepts` and `films` index tables."""

    def __init__(self, concepts: pd.DataFrame, films: pd.DataFrame, fields: tuple[str, ...] = CONCEPT_FIELDS,
                 min_title_length: int = 2):
        concepts = concepts[concepts["field"].isin(fields)]
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
        titles = {}
        for title in films["title"].tolist():
            key = tuple(t for t, _, _ in tokenize(title))
            if len(title) >= min_title_length and key:
                titles.setdefault(key, title)
        self._titles = _RunIndex(titles)

    def values(self, text: str) -> list[Mention]:
        """Field values in `text`, left to right, non-overlapping, longest first. A name that
        is a value of several fields takes the field its cue words name ("directed by X"),
        else the field where the catalog uses it most."""
        tokens = tokenize(text)
        mentions = []
        for first, last, candidates in self._values.scan([t.lower() for t, _, _ in tokens]):
            start, end = tokens[first][1], tokens[last - 1][2]
            field, value = self._choose_field(text, start, candidates)
            mentions.append(Mention(field, value, start, end))
        return mentions

    def titles(self, text: str) -> list[str]:
        """Catalog titles in `text`, in order of first mention, each once."""
        seen: dict[str, None] = {}
        for _, _, title in self._titles.scan([t for t, _, _ in tokenize(text)]):
            seen.setdefault(title, None)
        return list(seen)

    @staticmethod
    def _choose_field(text: str, start: int, candidates: list[tuple[str, str, int]]) -> tuple[str, str]:
        if len(candidates) > 1:
            before = text[max(0, start - 24):start].lower()
            for field, value, _ in candidates:
                if any(re.search(rf"\b{re.escape(cue)}\s*$", before) for cue in FIELD_CUES.get(field, ())):
                    return field, value
        field, value, _ = candidates[0]
        return field, value
