"""Pairwise comparisons of system means after an omnibus test, family-wise error held at alpha.

- Tukey HSD (Tukey-Kramer for unequal sizes): one pooled within-group variance, for when the
  groups' variances look equal;
- Games-Howell: each pair's SE from the two groups' own variances and a Welch-Satterthwaite df
  per pair, for when they do not (the usual case for metrics of systems that behave differently).
Both refer q = sqrt(2) |mean_diff| / se to the studentized range distribution of k groups
(scipy.stats.studentized_range), which is what holds the family-wise error over every pair.
One row per pair, system_a before system_b in sorted order; mean_diff = mean a - mean b, the
sign convention of every table in the analysis (statsmodels reports b - a). se is the standard
error of that difference; the simultaneous CI is mean_diff +- q_crit / sqrt(2) * se. A pair
whose se is zero (no spread in either group) has no test: NaN statistic, p and CI, reject NA.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy.stats import studentized_range

COLUMNS = [
    "system_a",
    "system_b",
    "n_a",
    "n_b",
    "mean_diff",
    "se",
    "df",
    "statistic",
    "p_adj",
    "ci_low",
    "ci_high",
    "reject",
]


def _checked(groups: dict[str, np.ndarray], alpha: float, test: str, min_size: int) -> dict[str, np.ndarray]:
    """The groups as finite float arrays in sorted order, or a clear error on what the test cannot use."""
    if not 0 < alpha < 1:
        raise ValueError(f"{test}: alpha must be in (0, 1), got {alpha!r}")
    if len(groups) < 2:
        raise ValueError(f"{test} needs two or more groups, got {len(groups)}")
    checked = {}
    for name in sorted(groups):
        values = np.asarray(groups[name], dtype=float)
        if values.ndim != 1 or not np.all(np.isfinite(values)):
            raise ValueError(f"{test}: group {name!r} must be a 1-D array of finite values; drop NaN first")
        if len(values) < min_size:
            raise ValueError(f"{test} needs {min_size} or more values per group: {name!r} has {len(values)}")
        checked[name] = values
    return checked


def _table(groups: dict[str, np.ndarray], variance_of_diff, df_of_pair, alpha: float) -> pd.DataFrame:
    """One row per pair from each pair's variance of the mean difference and its degrees of freedom."""
    names = list(groups)
    rows = []
    for a, b in itertools.combinations(names, 2):
        rows.append(
            {
                "system_a": a,
                "system_b": b,
                "n_a": len(groups[a]),
                "n_b": len(groups[b]),
                "mean_diff": groups[a].mean() - groups[b].mean(),
                "se": math.sqrt(variance_of_diff(a, b)),
                "df": df_of_pair(a, b),
            }
        )
    table = pd.DataFrame(rows)
    testable = (table["se"] > 0).to_numpy()
    se = np.where(testable, table["se"], np.nan)
    df = np.where(testable, table["df"], np.nan)
    k = len(names)
    q = math.sqrt(2) * table["mean_diff"].abs().to_numpy() / se
    table["statistic"] = q
    table["p_adj"] = np.clip(studentized_range.sf(q, k, df), 0, 1)
    half_width = studentized_range.ppf(1 - alpha, k, df) / math.sqrt(2) * se
    table["ci_low"] = table["mean_diff"] - half_width
    table["ci_high"] = table["mean_diff"] + half_width
    table["reject"] = pd.array(np.where(testable, table["p_adj"] < alpha, pd.NA), dtype="boolean")
    return table[COLUMNS]


def tukey_hsd(groups: dict[str, np.ndarray], alpha: float) -> pd.DataFrame:
    """Tukey-Kramer HSD: every pair against one pooled within-group variance, df = N - k."""
    groups = _checked(groups, alpha, "Tukey HSD", min_size=1)
    df = sum(len(v) for v in groups.values()) - len(groups)
    if df < 1:
        raise ValueError("Tukey HSD needs a group with two or more values (no within-group degrees of freedom)")
    mse = sum(float(((v - v.mean()) ** 2).sum()) for v in groups.values()) / df
    return _table(
        groups,
        lambda a, b: mse * (1 / len(groups[a]) + 1 / len(groups[b])),
        lambda a, b: float(df),
        alpha,
    )


def games_howell(groups: dict[str, np.ndarray], alpha: float) -> pd.DataFrame:
    """Games-Howell: SE from each group's own variance, Welch-Satterthwaite df per pair."""
    groups = _checked(groups, alpha, "Games-Howell", min_size=2)
    share = {name: values.var(ddof=1) / len(values) for name, values in groups.items()}

    def welch_df(a: str, b: str) -> float:
        numerator = (share[a] + share[b]) ** 2
        denominator = share[a] ** 2 / (len(groups[a]) - 1) + share[b] ** 2 / (len(groups[b]) - 1)
        return numerator / denominator if denominator > 0 else math.nan

    return _table(groups, lambda a, b: share[a] + share[b], welch_df, alpha)
