"""Normalisation of catalog values: one canonical spelling per concept, every drop explained.

The OpenDialKG-derived catalog spells one genre several ways ("Romance Film", "Romance"),
suffixes languages ("English Language"), repeats cast members, and lists places, people and
languages as genres. Metrics compare concepts by string, so these rules decide what counts as
the same concept. Each rule that removes a value returns the reason, and the catalog summary
counts them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# Spellings that mean the same genre, after lower-casing and suffix removal.
GENRE_SYNONYMS: dict[str, str] = {
    "sci-fi": "science fiction",
    "scifi": "science fiction",
    "crime fiction": "crime",
    "biographical": "biography",
    "biopic": "biography",
    "animated": "animation",
    "computer animation": "animation",
    "animated cartoon": "animation",
    "romantic": "romance",
    "musical theatre": "musical",
    "documentary": "documentary",
    "docudrama": "docudrama",
    "zombie": "zombie",
    "superhero": "superhero",
}

# ISO 639-2 codes seen in catalogs in place of language names.
LANGUAGE_CODES: dict[str, str] = {
    "eng": "english",
    "spa": "spanish",
    "fre": "french",
    "fra": "french",
    "ger": "german",
    "deu": "german",
    "ita": "italian",
    "jpn": "japanese",
    "rus": "russian",
    "chi": "chinese",
    "zho": "chinese",
    "kor": "korean",
    "hin": "hindi",
    "por": "portuguese",
    "ara": "arabic",
    "swe": "swedish",
    "dan": "danish",
    "nld": "dutch",
    "dut": "dutch",
    "heb": "hebrew",
    "lat": "latin",
}

LANGUAGE_SYNONYMS: dict[str, str] = {
    "american english": "english",
    "british english": "english",
    "standard chinese": "mandarin",
    "mandarin chinese": "mandarin",
    "standard mandarin": "mandarin",
    "yue chinese": "cantonese",
    "farsi": "persian",
    "farsi, eastern": "persian",
    "filipino": "filipino",
}

_PARENTHETICAL = re.compile(r"\s*\([^)]*\)")
_HASH_ID = re.compile(r"\s*#\d+")
_SPACES = re.compile(r"\s+")
_GENRE_SUFFIX = re.compile(r"\s+(film|films|movie|movies)$")
_LANGUAGE_SUFFIX = re.compile(r"\s+(language|languages)$")
_YEAR = re.compile(r"(?<!\d)(\d{4})(?!\d)")

MIN_YEAR, MAX_YEAR = 1870, 2100


def clean_whitespace(value: str) -> str:
    """Collapse runs of white space and strip the ends."""
    return _SPACES.sub(" ", value).strip()


def normalise_language(raw: str) -> str | None:
    """'English Language' -> 'english', 'spa' -> 'spanish'; None for an empty value."""
    value = clean_whitespace(_PARENTHETICAL.sub("", raw)).lower()
    if not value:
        return None
    value = _LANGUAGE_SUFFIX.sub("", value)
    if value in LANGUAGE_CODES:
        return LANGUAGE_CODES[value]
    return LANGUAGE_SYNONYMS.get(value, value) or None


def genre_key(raw: str) -> str:
    """'Family (Film genre) #395' -> 'family', 'Romance Film' -> 'romance'."""
    value = _HASH_ID.sub("", _PARENTHETICAL.sub("", raw))
    value = clean_whitespace(value).lower()
    if value not in ("film", "movie"):
        value = _GENRE_SUFFIX.sub("", value)
    return GENRE_SYNONYMS.get(value, value)


_INITIAL = re.compile(r"\b([A-Z])\.(?=[A-Z]\b)")
_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*(?:#\d+)?$")  # "George Miller (Director)", "John A. Russo (Actor) #1"


def normalise_person(raw: str) -> str | None:
    """People keep their spelling; white space is cleaned, a knowledge-graph qualifier is
    removed ("George Miller (Director)" -> "George Miller") and initials are spaced one way
    ("J.K. Rowling" -> "J. K. Rowling"): text names people without either."""
    return _INITIAL.sub(r"\1. ", _QUALIFIER.sub("", clean_whitespace(raw))) or None


def normalise_year(raw: object) -> tuple[str | None, str | None]:
    """(year, None) for the first four-digit year in the value ('2008', 2008, '2008-05-01'),
    or (None, reason). Years before cinema existed are source-work dates (a novel's year
    in the OpenDialKG catalog), not release years, and are dropped."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = str(raw)
    if not isinstance(raw, str):
        return None, "not a four-digit year"
    match = _YEAR.search(raw)
    if match is None:
        return None, "not a four-digit year"
    year = int(match.group(1))
    if not MIN_YEAR <= year <= MAX_YEAR:
        return None, f"year outside {MIN_YEAR}-{MAX_YEAR}"
    return match.group(1), None


@dataclass(frozen=True)
class NonGenreList:
    """Values that catalogs list as genres but that are places, people or organisations.

    Loaded from a two-column TSV (value, reason) so that researchers can extend it without
    touching code. Matching is case-insensitive on the genre key.
    """

    reasons: dict[str, str]

    @classmethod
    def load(cls, path: str | Path) -> "NonGenreList":
        reasons: dict[str, str] = {}
        for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
                raise ValueError(f"{path}:{number}: expected 'value<TAB>reason', got {line!r}")
            reasons[genre_key(parts[0])] = parts[1].strip()
        return cls(reasons)

    @classmethod
    def empty(cls) -> "NonGenreList":
        return cls({})


class GenreNormaliser:
    """Maps raw genre labels to canonical genres, or to the reason they are not genres.

    Besides the explicit list, a genre label that equals a person credited anywhere in the
    catalog, or a language of the catalog, is not a genre.
    """

    def __init__(self, non_genres: NonGenreList, people: set[str], languages: set[str]):
        self._non_genres = non_genres.reasons
        self._people = {p.lower() for p in people}
        self._languages = languages

    def normalise(self, raw: str) -> tuple[str | None, str | None]:
        """(canonical genre, None) or (None, reason it was dropped)."""
        key = genre_key(raw)
        if not key:
            return None, "empty value"
        if key in self._non_genres:
            return None, self._non_genres[key]
        lowered = clean_whitespace(raw).lower()
        if lowered in self._people:
            return None, "person listed as genre"
        if _LANGUAGE_SUFFIX.search(lowered) or normalise_language(raw) in self._languages:
            return None, "language listed as genre"
        return key, None
