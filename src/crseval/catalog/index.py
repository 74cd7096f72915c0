"""The read side of the catalog: the index_catalog tables, loaded for lookups by title, field and value.

Kept apart from the write side (crseval.catalog.build: reading, checking and normalising the catalog
JSON, plot keywords) so that every stage that only looks films up loads pandas and numpy, not
the catalog builder's dependencies.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from crseval.core.fields import KEYWORD_FIELD


class CatalogIndex:
    """Read-side view of the index_catalog outputs for the simulator and the extractors."""

    def __init__(self, films: pd.DataFrame, concepts: pd.DataFrame):
        self.films = films.set_index("film_id", drop=False)
        self.concepts = concepts
        self._id_by_title = {t: int(f) for t, f in zip(films["title"], films["film_id"])}
        self._field_values: dict[str, dict[int, list[str]]] = {}
        self._shares: dict[tuple[str, str], float] = {}
        self._by_value = {
            key: np.asarray(group["film_id"].to_numpy(), dtype=np.int32)
            for key, group in concepts.groupby(["field", "value"], sort=True)
        }

    @classmethod
    def read(cls, films_path: str | Path, concepts_path: str | Path) -> "CatalogIndex":
        return cls(pd.read_parquet(films_path), pd.read_parquet(concepts_path))

    def title(self, film_id: int) -> str:
        return str(self.films.at[film_id, "title"])

    def year(self, film_id: int) -> str | None:
        value = self.films.at[film_id, "year"]
        return None if pd.isna(value) else str(int(value))

    def film_values(self, film_id: int, field_name: str) -> list[str]:
        """A film's values of one concept field ('year' included)."""
        table = self._field_values.get(field_name)
        if table is None:  # one pass over the column instead of a DataFrame lookup per call
            if field_name == "year":
                table = {
                    int(f): ([str(int(y))] if not pd.isna(y) else [])
                    for f, y in zip(self.films["film_id"], self.films["year"])
                }
            else:
                column = "plot_keywords" if field_name == KEYWORD_FIELD else field_name
                table = {int(f): list(v) for f, v in zip(self.films["film_id"], self.films[column])}
            self._field_values[field_name] = table
        return list(table[int(film_id)])

    def film_id(self, title: str) -> int | None:
        return self._id_by_title.get(title)

    def spelled_elsewhere(self, field_name: str) -> frozenset[str]:
        """Lower-cased values of the other fields: a value of `field_name` spelled like one of
        them cannot be told apart in text ("supernatural" the genre and the plot keyword)."""
        key = f"elsewhere:{field_name}"
        if key not in self._field_values:
            self._field_values[key] = frozenset(v.lower() for f, v in self._by_value if f != field_name)
        return self._field_values[key]

    def values(self, field_name: str) -> list[str]:
        """Distinct values of a field, sorted."""
        return sorted(v for f, v in self._by_value if f == field_name)

    def films_with(self, field_name: str, value: str) -> np.ndarray:
        """Ids of the films that have `value` in `field_name` (empty when none)."""
        return self._by_value.get((field_name, value), np.empty(0, dtype=np.int32))

    def share(self, field_name: str, value: str) -> float:
        """The share of the catalog's films that have `value` in `field_name` (the simulated user asks it
        millions of times on a full catalog: computed once per value)."""
        key = (field_name, value)
        share = self._shares.get(key)
        if share is None:
            share = self._shares[key] = len(self.films_with(field_name, value)) / len(self.films)
        return share
