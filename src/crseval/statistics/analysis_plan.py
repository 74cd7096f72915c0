"""The analysis plan: one declared set of rules every statistical table follows (docs/statistics.md).

- Multiplicity: a family is one p-value column of one table, over the whole report (`scope: report`)
  or over the rows of one metric (`scope: metric`); the same `method` (Holm, Benjamini-Hochberg or
  Bonferroni) adjusts every family, so one setting changes every table alike.
- Missing values: a system with fewer than `min_sessions` sessions with a value for a metric is left
  out of every test of that metric, with the count and the reason in the tables and the summary.
- Small samples: below `small_sample` sessions per system the omnibus test is a permutation test
  and pairs are compared by exact (or Monte Carlo) permutation tests, because assumption pre-tests
  have almost no power there.
- A comparison is testable when the smallest p its test can reach at this n could pass its family's
  correction in the most favourable case (Holm and Bonferroni: min p x family size <= alpha; BH:
  min p <= alpha); one that cannot is reported as not testable, not as "no difference".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

METHODS = {"holm": "Holm", "bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni"}


def adjusted_p_values(p_values, method: str) -> np.ndarray:
    """The family's p values adjusted by `method` (a key of METHODS), in their order, capped at 1: the same
    numbers, operation for operation, as statsmodels' `multipletests` (its Holm runs a full garbage
    collection on every call, about 80 ms in a pipeline process, and a report adjusts hundreds of families)."""
    p_values = np.asarray(p_values, dtype=float)
    count = len(p_values)
    if method not in METHODS:
        raise ValueError(f"unknown multiplicity method {method!r}; known: {', '.join(METHODS)}")
    if method == "bonferroni":
        return np.minimum(p_values * float(count), 1.0)
    order = np.argsort(p_values)
    ascending = p_values[order]
    if method == "holm":  # step down: p(i) (n - i + 1), never below an earlier one
        stepped = np.maximum.accumulate(ascending * np.arange(count, 0, -1))
    else:  # Benjamini-Hochberg, step up: p(i) n / i, never above a later one
        stepped = np.minimum.accumulate((ascending / (np.arange(1, count + 1) / float(count)))[::-1])[::-1]
    adjusted = np.empty(count)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


@dataclass(frozen=True)
class AnalysisPlan:
    alpha: float
    scope: str  # "report" or "metric"
    method: str  # a key of METHODS
    min_sessions: int
    small_sample: int
    resamples: int  # bootstrap resamples of every interval
    permutations: int  # resamples of Monte Carlo permutation tests
    seed: int

    @classmethod
    def from_settings(cls, settings: dict) -> "AnalysisPlan":
        """The plan of the `stats` config section (defaults filled)."""
        family = settings["family"]
        return cls(
            alpha=settings["alpha"],
            scope=family["scope"],
            method=family["method"],
            min_sessions=settings["min_sessions"],
            small_sample=settings["small_sample"],
            resamples=settings["bootstrap_resamples"],
            permutations=settings["permutation_resamples"],
            seed=settings["seed"],
        )

    def describe(self) -> str:
        """The plan in one paragraph, for the top of every summary."""
        scope = "over the whole report" if self.scope == "report" else "over the rows of one metric"
        return (
            f"Analysis plan: significance level {self.alpha}; every p-value column of every table is adjusted by "
            f"{METHODS[self.method]} {scope} (one family per table column); a system with fewer than "
            f"{self.min_sessions} sessions with a value for a metric is left out of that metric's tests; below "
            f"{self.small_sample} sessions per system the omnibus test is a permutation test of the F statistic "
            f"({self.permutations:,} permutations) and pairs are compared by exact permutation tests; a comparison "
            "whose smallest reachable p cannot pass its correction is reported as not testable at this n. "
            "Differences are a - b in every table."
        )

    def adjust(self, table: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
        """`<column>_adj` beside each p column: adjusted over its family (NaN p values are not counted)."""
        table = table.copy()
        for column in columns:
            if column not in table:
                continue
            adjusted = pd.Series(math.nan, index=table.index)
            for _, rows in self._families(table):
                known = table.loc[rows.index, column].dropna()
                if len(known):
                    adjusted[known.index] = adjusted_p_values(known.to_numpy(float), self.method)
            table.insert(table.columns.get_loc(column) + 1, f"{column}_adj", adjusted)
        return table

    def family_sizes(self, table: pd.DataFrame, column: str) -> pd.Series:
        """Per row, the number of tested p values in its family of `column`."""
        sizes = pd.Series(0, index=table.index, dtype=int)
        for _, rows in self._families(table):
            sizes[rows.index] = int(table.loc[rows.index, column].notna().sum())
        return sizes

    def reachable(self, min_p: float, family_size: int) -> bool:
        """Whether a test whose smallest reachable p is `min_p` could pass its family's correction at all."""
        if not np.isfinite(min_p) or family_size < 1:
            return False
        if self.method == "bh":
            return min_p <= self.alpha
        return min_p * family_size <= self.alpha

    def threshold(self, family_size: int) -> float:
        """The largest smallest-p that could still pass: alpha (BH) or alpha / family size (Holm, Bonferroni)."""
        return self.alpha if self.method == "bh" else self.alpha / max(family_size, 1)

    def _families(self, table: pd.DataFrame):
        if not len(table):
            return []
        if self.scope == "metric" and "metric" in table:
            return list(table.groupby("metric", sort=False))
        return [("report", table)]
