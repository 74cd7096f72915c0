"""The write side of the catalog: read a movie catalog JSON, check it, normalise it, find plot
keywords and write the index_catalog tables (crseval.catalog.index reads them).

Input format (OpenDialKG-derived): a JSON object `title -> {name, year, genre[], actor[],
director[], writer[], language[], plot, original_id}`. A defect that makes a film unusable
(not an object, no name, a list where a string belongs, a number in a list of names, bad
UTF-8) stops the run with the film and field named. A defect that loses nothing important
(a duplicated value, a string where a one-element list belongs, a missing plot) is repaired
and counted in the summary. Nothing is dropped without a counted reason.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
from sklearn.feature_extraction.text import TfidfVectorizer

from crseval.catalog.normalize import (
    GenreNormaliser,
    NonGenreList,
    clean_whitespace,
    normalise_language,
    normalise_person,
    normalise_year,
)
from crseval.core.fields import CONCEPT_FIELDS, LIST_FIELDS, PEOPLE_FIELDS
from crseval.core.io import sha256_file
from crseval.language.text import content_words

KNOWN_FIELDS = frozenset({"name", "year", "plot", "original_id", *LIST_FIELDS})
MAX_EXAMPLES = 5
MAX_DEPTH = 64
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class CatalogError(ValueError):
    """A catalog defect that cannot be repaired; names the file, film and field."""

    def __init__(self, path: str | Path, message: str, film: str | None = None, field: str | None = None):
        where = str(path)
        if film is not None:
            where += f": film {film!r}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")
        self.film = film
        self.field = field


@dataclass
class Film:
    """One normalised film. `film_id` is its position in the catalog file."""

    film_id: int
    title: str
    name: str
    year: str | None
    plot: str
    original_id: str
    genre: list[str]
    actor: list[str]
    director: list[str]
    writer: list[str]
    language: list[str]


@dataclass
class NormalisationReport:
    """Counts of every repair and drop, with a few examples each, for the summary JSON."""

    dropped: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    dropped_examples: dict[str, dict[str, list[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    defects: Counter = field(default_factory=Counter)
    defect_examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def drop(self, field_name: str, reason: str, value: object) -> None:
        self.dropped[field_name][reason] += 1
        examples = self.dropped_examples[field_name][reason]
        shown = str(value)
        if len(examples) < MAX_EXAMPLES and shown not in examples:
            examples.append(shown)

    def defect(self, kind: str, film: str, field_name: str | None = None) -> None:
        self.defects[kind] += 1
        if len(self.defect_examples[kind]) < MAX_EXAMPLES:
            self.defect_examples[kind].append(film if field_name is None else f"{film} [{field_name}]")

    def as_dict(self) -> dict:
        return {
            "dropped_values": {
                f: {
                    reason: {"count": n, "examples": self.dropped_examples[f][reason]}
                    for reason, n in sorted(reasons.items())
                }
                for f, reasons in sorted(self.dropped.items())
            },
            "repaired_defects": {
                kind: {"count": n, "examples": self.defect_examples[kind]} for kind, n in sorted(self.defects.items())
            },
        }


class _Pairs(list):
    """A JSON object as its (key, value) pairs, so that repeated keys are seen, not lost."""


def _to_plain(value: object) -> object:
    """Nested _Pairs -> dict (first occurrence of a repeated key wins)."""
    if isinstance(value, _Pairs):
        plain: dict = {}
        for key, item in value:
            plain.setdefault(key, _to_plain(item))
        return plain
    if isinstance(value, list):
        return [_to_plain(item) for item in value]
    return value


def _read_json_object(path: Path, report: NormalisationReport) -> list[tuple[str, object]]:
    """The catalog's (title, record) pairs in file order; a repeated title keeps its first record."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        _raise_bad_utf8(path, raw, error)
    try:
        parsed = json.loads(text, object_pairs_hook=_Pairs)
    except json.JSONDecodeError as error:
        raise CatalogError(path, f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    except RecursionError:
        raise CatalogError(path, "not valid JSON here: nested too deeply") from None
    except ValueError as error:  # a number too long to convert
        raise CatalogError(path, f"not valid JSON here: {error}") from None
    if not isinstance(parsed, _Pairs):
        raise CatalogError(
            path, f"the catalog must be a JSON object mapping titles to films, found {_json_type(parsed)}"
        )
    _check_parsed_values(path, parsed)
    films: list[tuple[str, object]] = []
    seen: set[str] = set()
    for title, record in parsed:
        title_key = _title_key(title, record)
        if not clean_whitespace(title):
            report.defect("blank title (the film's name used)", repr(title))
        elif title_key != title:
            report.defect("title with surrounding or repeated white space (cleaned)", repr(title))
        if title_key in seen:
            report.defect("repeated title key (first record kept)", repr(title) if title_key != title else title)
            continue
        seen.add(title_key)
        if isinstance(record, _Pairs) and len({key for key, _ in record}) < len(record):
            report.defect("repeated field key (first value kept)", title)
        films.append((title, _to_plain(record)))
    return films


def _check_parsed_values(path: Path, parsed: _Pairs) -> None:
    """Stop on what parses as JSON but cannot go on: lone surrogates (escapes like \\ud800, which no UTF-8 table
    can hold) and nesting so deep that walking it would overflow the stack. A film record is 3 levels deep."""
    for title, record in parsed:
        stack: list[tuple[object, str | None, int]] = [(title, None, 0), (record, None, 1)]
        while stack:
            item, field_name, depth = stack.pop()
            if depth > MAX_DEPTH:
                raise CatalogError(path, f"nested deeper than {MAX_DEPTH} levels", film=title, field=field_name)
            if isinstance(item, str) and _LONE_SURROGATE.search(item):
                raise CatalogError(
                    path,
                    f"{'title' if depth == 0 else 'text'} is not valid Unicode (a lone surrogate "
                    "escape such as \\ud800)",
                    film=title,
                    field=field_name,
                )
            if isinstance(item, _Pairs):
                for key, value in item:
                    child_field = key if depth == 1 else field_name
                    stack += [(key, child_field, depth + 1), (value, child_field, depth + 1)]
            elif isinstance(item, list):
                stack += [(value, field_name, depth + 1) for value in item]


def _title_key(title: str, record: object) -> str:
    """The title a film will have: white space cleaned, so "Heat" and "Heat " are one title; a blank title
    falls back to the film's name, as in load_catalog."""
    cleaned = clean_whitespace(title)
    if cleaned:
        return cleaned
    pairs = record if isinstance(record, _Pairs) else []
    name = next((value for field_name, value in pairs if field_name == "name"), None)
    return (clean_whitespace(name) if isinstance(name, str) else "") or title


def _raise_bad_utf8(path: Path, raw: bytes, error: UnicodeDecodeError) -> None:
    """Find which film and field hold the undecodable bytes, and say so."""
    text = raw.decode("utf-8", errors="surrogateescape")
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):
        for title, record in parsed.items():
            if _has_surrogates(title):
                raise CatalogError(path, "title is not valid UTF-8", film=_printable(title)) from None
            if isinstance(record, dict):
                for key, value in record.items():
                    if _has_surrogates(json.dumps(value, ensure_ascii=False)) or _has_surrogates(key):
                        raise CatalogError(
                            path, "value is not valid UTF-8", film=_printable(title), field=_printable(key)
                        ) from None
    raise CatalogError(path, f"not valid UTF-8 at byte {error.start}") from None


def _has_surrogates(text: str) -> bool:
    return any("\udc80" <= ch <= "\udcff" for ch in text)


def _printable(text: str) -> str:
    return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def _string_field(path: Path, title: str, record: dict, name: str, required: bool) -> str | None:
    value = record.get(name)
    if value is None:
        if required:
            raise CatalogError(path, "is missing", film=title, field=name)
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and name in ("original_id", "year"):
        return str(value)
    if not isinstance(value, str):
        raise CatalogError(path, f"expected a string, found {_json_type(value)}", film=title, field=name)
    return value


def _list_field(path: Path, title: str, record: dict, name: str, report: NormalisationReport) -> list[str]:
    value = record.get(name)
    if value is None:
        return []
    if isinstance(value, str):
        report.defect("string where a list was expected (wrapped)", title, name)
        value = [value]
    if not isinstance(value, list):
        raise CatalogError(path, f"expected a list of strings, found {_json_type(value)}", film=title, field=name)
    items = []
    for item in value:
        if item is None:
            report.drop(name, "null value", "null")
            continue
        if not isinstance(item, str):
            raise CatalogError(
                path,
                f"expected a list of strings, found an item of type {_json_type(item)}: {item!r}",
                film=title,
                field=name,
            )
        items.append(item)
    return items


def _json_type(value: object) -> str:
    if isinstance(value, (dict, _Pairs)):
        return "an object"
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def _dedupe(values: list[str], field_name: str, report: NormalisationReport) -> list[str]:
    """Keep the first spelling of each value (case-insensitive), in order."""
    kept, seen = [], set()
    for value in values:
        key = value.lower()
        if key in seen:
            report.drop(field_name, "duplicate", value)
            continue
        seen.add(key)
        kept.append(value)
    return kept


def load_catalog(path: str | Path, non_genres: NonGenreList | None = None) -> tuple[list[Film], NormalisationReport]:
    """Read, check and normalise a catalog file. Raises CatalogError on unusable input."""
    path = Path(path)
    report = NormalisationReport()
    pairs = _read_json_object(path, report)
    if not pairs:
        raise CatalogError(path, "the catalog holds no films")

    records: list[tuple[str, dict]] = []
    for title, record in pairs:
        if not isinstance(record, dict):
            raise CatalogError(path, f"expected an object, found {_json_type(record)}", film=title)
        records.append((title, record))

    raw_lists = {
        title: {name: _list_field(path, title, record, name, report) for name in LIST_FIELDS}
        for title, record in records
    }
    people = {normalise_person(p) for lists in raw_lists.values() for f in PEOPLE_FIELDS for p in lists[f]}
    languages = {normalise_language(v) for lists in raw_lists.values() for v in lists["language"]}
    genre_normaliser = GenreNormaliser(non_genres or NonGenreList.empty(), people - {None}, languages - {None})

    films: list[Film] = []
    for film_id, (title, record) in enumerate(records):
        for key in record:
            if key not in KNOWN_FIELDS:
                report.defect(f"unknown field {key!r} (ignored)", title)
        name = _string_field(path, title, record, "name", required=True)
        name = clean_whitespace(name)
        if not name:
            raise CatalogError(path, "is empty", film=title, field="name")
        plot = _string_field(path, title, record, "plot", required=False)
        if plot is None or not plot.strip():
            report.defect("missing plot", title)
            plot = ""
        original_id = _string_field(path, title, record, "original_id", required=False)
        if original_id is None:
            report.defect("missing original_id", title)
            original_id = ""
        year = _normalise_year_field(path, title, record, report)
        lists = raw_lists[title]
        films.append(
            Film(
                film_id=film_id,
                title=clean_whitespace(title) or name,
                name=name,
                year=year,
                plot=clean_whitespace(plot),
                original_id=original_id,
                genre=_normalise_genres(lists["genre"], genre_normaliser, report),
                actor=_normalise_simple(lists["actor"], "actor", normalise_person, report),
                director=_normalise_simple(lists["director"], "director", normalise_person, report),
                writer=_normalise_simple(lists["writer"], "writer", normalise_person, report),
                language=_normalise_simple(lists["language"], "language", normalise_language, report),
            )
        )
    return films, report


def _normalise_year_field(path: Path, title: str, record: dict, report: NormalisationReport) -> str | None:
    raw = record.get("year")
    if raw is None:
        return None
    if isinstance(raw, (list, dict)):
        raise CatalogError(path, f"expected a year string, found {_json_type(raw)}", film=title, field="year")
    year, reason = normalise_year(raw)
    if year is None:
        report.drop("year", reason, raw)
    return year


# Words a catalog writes where it has no name: not people, and they would read as words in text.
PLACEHOLDER_NAMES = frozenset(
    {"unknown", "n/a", "na", "none", "null", "various", "anonymous", "uncredited", "tba", "tbd"}
)


def _normalise_simple(values, field_name, normalise, report) -> list[str]:
    cleaned = []
    for value in values:
        normal = normalise(value)
        if normal is None:
            report.drop(field_name, "empty value", repr(value))
        elif field_name in PEOPLE_FIELDS and normal.lower() in PLACEHOLDER_NAMES:
            report.drop(field_name, "placeholder, not a name", normal)
        else:
            cleaned.append(normal)
    return _dedupe(cleaned, field_name, report)


def _normalise_genres(values, normaliser: GenreNormaliser, report) -> list[str]:
    cleaned = []
    for value in values:
        genre, reason = normaliser.normalise(value)
        if genre is None:
            report.drop("genre", reason, value)
        else:
            cleaned.append(genre)
    return _dedupe(cleaned, "genre", report)


# ---------------------------------------------------------------- plot keywords


def plot_keywords(plots: list[str], per_film: int, min_df: int, max_df: float, lemmatize: bool) -> list[list[str]]:
    """Top `per_film` TF-IDF terms of each plot among terms shared by at least `min_df` plots
    and by at most a `max_df` share of them (one fit over the catalog, no per-film model)."""
    analyzer = lambda text: content_words(text, lemmatize=lemmatize)  # noqa: E731
    n_docs = sum(1 for p in plots if p)
    if n_docs == 0 or per_film == 0:
        return [[] for _ in plots]
    vectorizer = TfidfVectorizer(analyzer=analyzer, min_df=min(min_df, n_docs), max_df=max_df)
    try:
        matrix = vectorizer.fit_transform(plots).tocsr()
    except ValueError:  # no term survives the document-frequency filters
        return [[] for _ in plots]
    vocabulary = vectorizer.get_feature_names_out()
    keywords = []
    for row in range(matrix.shape[0]):
        start, end = matrix.indptr[row], matrix.indptr[row + 1]
        columns, weights = matrix.indices[start:end], matrix.data[start:end]
        # highest weight first; ties broken alphabetically for a stable order
        order = sorted(range(len(columns)), key=lambda i: (-weights[i], vocabulary[columns[i]]))
        keywords.append([str(vocabulary[columns[i]]) for i in order[:per_film]])
    return keywords


# ---------------------------------------------------------------- tables

LIST_TYPE = pa.list_(pa.string())
FILMS_SCHEMA = pa.schema(
    [
        ("film_id", pa.int32()),
        ("title", pa.string()),
        ("name", pa.string()),
        ("year", pa.int16()),
        ("plot", pa.string()),
        ("original_id", pa.string()),
        *[(name, LIST_TYPE) for name in LIST_FIELDS],
        ("plot_keywords", LIST_TYPE),
    ]
)
CONCEPTS_SCHEMA = pa.schema([("field", pa.string()), ("value", pa.string()), ("film_id", pa.int32())])


def films_table(films: list[Film], keywords: list[list[str]]) -> pa.Table:
    columns = {
        "film_id": [f.film_id for f in films],
        "title": [f.title for f in films],
        "name": [f.name for f in films],
        "year": [int(f.year) if f.year else None for f in films],
        "plot": [f.plot for f in films],
        "original_id": [f.original_id for f in films],
        **{name: [getattr(f, name) for f in films] for name in LIST_FIELDS},
        "plot_keywords": keywords,
    }
    return pa.Table.from_pydict(columns, schema=FILMS_SCHEMA)


def concepts_table(films: list[Film], keywords: list[list[str]] | None = None) -> pa.Table:
    """The value index: one row per (field, value, film). Plot keywords are included as the
    field 'plot_keyword' when given."""
    rows = []
    for film, film_keywords in zip(films, keywords or [[] for _ in films]):
        for name in LIST_FIELDS:
            rows.extend((name, value, film.film_id) for value in getattr(film, name))
        if film.year:
            rows.append(("year", film.year, film.film_id))
        rows.extend(("plot_keyword", word, film.film_id) for word in film_keywords)
    frame = pd.DataFrame(rows, columns=["field", "value", "film_id"]).sort_values(
        ["field", "value", "film_id"], kind="stable"
    )
    return pa.Table.from_pandas(frame, schema=CONCEPTS_SCHEMA, preserve_index=False)


def summarise(path: str | Path, films: list[Film], keywords: list[list[str]], report: NormalisationReport) -> dict:
    per_field = {}
    for name in CONCEPT_FIELDS:
        values = (
            [[film.year] if film.year else [] for film in films]
            if name == "year"
            else [getattr(film, name) for film in films]
        )
        per_field[name] = {
            "distinct_values": len({v for vs in values for v in vs}),
            "films_with_values": sum(1 for vs in values if vs),
            "mentions": sum(len(vs) for vs in values),
        }
    per_field["plot_keyword"] = {
        "distinct_values": len({w for ws in keywords for w in ws}),
        "films_with_values": sum(1 for ws in keywords if ws),
        "mentions": sum(len(ws) for ws in keywords),
    }
    return {
        "catalog": {"path": str(path), "sha256": sha256_file(path)},
        "films": len(films),
        "films_with_plot": sum(1 for f in films if f.plot),
        "fields": per_field,
        **report.as_dict(),
    }


def build_index(
    catalog_path: str | Path,
    non_genre_path: str | Path | None,
    keyword_settings: dict,
) -> tuple[pa.Table, pa.Table, dict]:
    """Catalog file -> (films table, concept index table, summary dict)."""
    non_genres = NonGenreList.load(non_genre_path) if non_genre_path else NonGenreList.empty()
    films, report = load_catalog(catalog_path, non_genres)
    keywords = plot_keywords(
        [f.plot for f in films],
        per_film=keyword_settings["per_film"],
        min_df=keyword_settings["min_df"],
        max_df=keyword_settings["max_df"],
        lemmatize=keyword_settings["lemmatize"],
    )
    return (
        films_table(films, keywords),
        concepts_table(films, keywords),
        summarise(catalog_path, films, keywords, report),
    )
