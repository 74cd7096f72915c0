"""The catalog's fields: which exist, which hold people, which are concepts, and how a value is
written in text. One place, because the catalog, the concept matcher, the simulator, the tracker,
the importer and the metrics must agree on them."""

from __future__ import annotations

LIST_FIELDS = ("genre", "actor", "director", "writer", "language")  # lists in a catalog record
PEOPLE_FIELDS = ("actor", "director", "writer")
CONCEPT_FIELDS = (*LIST_FIELDS, "year")  # (field, value) pairs that preferences and replies are made of
KEYWORD_FIELD = "plot_keyword"  # optional concept field: keywords of the films' plots


def display(field_name: str, value: str) -> str:
    """How a value is written in text: languages capitalised ("english" -> "English"), the rest
    as the catalog spells it. Matching is case-insensitive, so both read as the same value."""
    return value.title() if field_name == "language" else value
