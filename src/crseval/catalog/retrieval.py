"""Candidate retrieval from the catalog index for the tracked constraints."""

from __future__ import annotations

import numpy as np

from crseval.catalog.index import CatalogIndex
from crseval.language.tracker import Constraint


class Retriever:
    """Ranks films by the wished values they have, the wishes of the latest user turn first
    (they outweigh all older wishes together); excluded values and films already recommended
    in the session are left out. Ties are broken by a seeded shuffle, so two
    sessions with the same wishes do not get the same list every time."""

    def __init__(self, index: CatalogIndex):
        self.index = index
        self.n_films = int(index.films["film_id"].max()) + 1

    def rank(
        self,
        constraints: list[Constraint],
        already: set[int],
        k: int,
        rng: np.random.Generator,
        emphasis: set[tuple[str, str]] = frozenset(),
    ) -> list[int]:
        score = np.zeros(self.n_films, dtype=np.float64)
        allowed = np.ones(self.n_films, dtype=bool)
        wished = 0
        heavy = 1.0 + sum(1 for c in constraints if not c.negated)
        for constraint in constraints:
            films = self.index.films_with(constraint.field, constraint.value)
            if constraint.negated:
                allowed[films] = False
            else:
                score[films] += heavy if (constraint.field, constraint.value) in emphasis else 1.0
                wished += 1
        if already:
            allowed[list(already)] = False
        if wished:
            allowed &= score > 0
        order = rng.permutation(self.n_films)
        ranked = order[np.lexsort((np.arange(self.n_films), -score[order]))]
        return [int(f) for f in ranked if allowed[f]][:k]
