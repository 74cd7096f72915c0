"""Find catalog values and film titles in free text.

One matcher serves the CRS constraint tracker and the metrics' concept extractor E(x), so a
value the simulator writes is recognised the same way everywhere: word-boundary matching,
longest match first (so "Science Fiction" wins over "Fiction"), case-insensitive for field
values and case-sensitive for titles (a title like "Up" or "Heat" is an ordinary word in
lower case).
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


@dataclass(frozen=True)
class Mention:
    field: str  # a catalog field, or "title"
    value: str  # the catalog spelling
    start: int
    end: int


def _alternation(values: list[str]) -> str:
    ordered = sorted(set(values), key=lambda v: (-len(v), v))
    return "|".join(re.escape(v) for v in ordered)


class ConceptMatcher:
    """Catalog value and title matcher built from the `concepts` and `films` index tables."""

    def __init__(self, concepts: pd.DataFrame, films: pd.DataFrame, fields: tuple[str, ...] = ("genre", "actor", "director", "writer", "language", "year"), min_title_length: int = 2):
        concepts = concepts[concepts["field"].isin(fields)]
        counts = concepts.groupby(["field", "value"]).size()
        # a lower-cased surface string -> candidate (field, value, films) for ambiguous names
        self._by_surface: dict[str, list[tuple[str, str, int]]] = {}
        for (field, value), n in counts.items():
            self._by_surface.setdefault(value.lower(), []).append((field, value, int(n)))
        for candidates in self._by_surface.values():
            candidates.sort(key=lambda c: (-c[2], fields.index(c[0])))
        surfaces = [v for v in self._by_surface if v]
        self._values = re.compile(rf"(?<!\w)(?:{_alternation(surfaces)})(?!\w)", re.IGNORECASE) if surfaces else None
        titles = [t for t in films["title"].tolist() if len(t) >= min_title_length]
        self._title_of = {t: t for t in titles}
        self._titles = re.compile(rf"(?<!\w)(?:{_alternation(titles)})(?!\w)") if titles else None

    def values(self, text: str) -> list[Mention]:
        """Field values in `text`, left to right, non-overlapping, longest first. A name that
        is a value of several fields takes the field its cue words name ("directed by X"),
        else the field where the catalog uses it most."""
        if self._values is None:
            return []
        mentions = []
        for match in self._values.finditer(text):
            candidates = self._by_surface[match.group(0).lower()]
            field, value = self._choose_field(text, match.start(), candidates)
            mentions.append(Mention(field, value, match.start(), match.end()))
        return mentions

    def all_fields(self, text: str) -> set[tuple[str, str]]:
        """Every (field, value) concept a mention in `text` can stand for (no disambiguation)."""
        if self._values is None:
            return set()
        return {
            (field, value)
            for match in self._values.finditer(text)
            for field, value, _ in self._by_surface[match.group(0).lower()]
        }

    def titles(self, text: str) -> list[str]:
        """Catalog titles in `text`, in order of first mention, each once."""
        if self._titles is None:
            return []
        seen: dict[str, None] = {}
        for match in self._titles.finditer(text):
            seen.setdefault(self._title_of[match.group(0)], None)
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
