"""Effect sizes between two systems, each with a seeded percentile bootstrap CI.

A p-value says whether a difference is detectable, not how large it is; reviewers ask for both.
- independent samples: Hedges' g (Cohen's d with the small-sample correction J) for the t-based
  tests, Cliff's delta (= the rank-biserial correlation of Mann-Whitney) for the rank-based ones;
- paired samples (the same sessions): Cohen's d_z (mean difference / SD of the differences) for
  the paired t-test, the matched-pairs rank-biserial correlation for Wilcoxon's signed-rank test
  (zero differences dropped, as Wilcoxon does).
Every statistic is written for a batch of resamples (one per row) so a bootstrap of 1,000
resamples is a few array operations, not 1,000 Python loops. An undefined value (no spread,
no data) is NaN; resamples where it is undefined are left out of the CI.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.stats import rankdata

NAN = math.nan


def _clean(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values[~np.isnan(values)]


def hedges_g_batch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rows of `a` against rows of `b`: (mean a - mean b) / pooled SD, times J = 1 - 3 / (4 (n1 + n2) - 9)."""
    n1, n2 = a.shape[1], b.shape[1]
    if n1 < 2 or n2 < 2:
        return np.full(a.shape[0], NAN)
    pooled = np.sqrt(((n1 - 1) * a.var(axis=1, ddof=1) + (n2 - 1) * b.var(axis=1, ddof=1)) / (n1 + n2 - 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (a.mean(axis=1) - b.mean(axis=1)) / pooled
    d[pooled == 0] = NAN
    return d * (1 - 3 / (4 * (n1 + n2) - 9))


def cliffs_delta_batch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """P(a > b) - P(a < b) per row, from the ranks of the pooled sample: 2 U / (n1 n2) - 1."""
    n1, n2 = a.shape[1], b.shape[1]
    if not n1 or not n2:
        return np.full(a.shape[0], NAN)
    ranks = rankdata(np.hstack([a, b]), axis=1)
    u = ranks[:, :n1].sum(axis=1) - n1 * (n1 + 1) / 2
    return 2 * u / (n1 * n2) - 1


def cohens_dz_batch(diff: np.ndarray) -> np.ndarray:
    """Mean of the paired differences over their SD, per row."""
    if diff.shape[1] < 2:
        return np.full(diff.shape[0], NAN)
    sd = diff.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        dz = diff.mean(axis=1) / sd
    dz[sd == 0] = NAN
    return dz


def rank_biserial_paired_batch(diff: np.ndarray) -> np.ndarray:
    """(W+ - W-) / (W+ + W-) per row, W± the signed-rank sums of the non-zero differences.

    Zeros rank lowest among the absolute differences, so a non-zero difference's rank among the
    non-zero ones is its rank among all minus the number of zeros."""
    if not diff.shape[1]:
        return np.full(diff.shape[0], NAN)
    zeros = (diff == 0).sum(axis=1, keepdims=True)
    ranks = rankdata(np.abs(diff), axis=1) - zeros
    plus = np.where(diff > 0, ranks, 0).sum(axis=1)
    minus = np.where(diff < 0, ranks, 0).sum(axis=1)
    total = plus + minus
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (plus - minus) / total, NAN)


def _percentiles(draws: np.ndarray, level: float) -> tuple[float, float]:
    draws = draws[~np.isnan(draws)]
    if not len(draws):
        return NAN, NAN
    low, high = np.percentile(draws, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(low), float(high)


def two_sample(statistic: Callable, a, b, resamples: int, seed: int, level: float = 0.95) -> tuple[float, float, float]:
    """(estimate, CI low, CI high) of an independent-samples statistic; each sample resampled on its own."""
    a, b = _clean(a), _clean(b)
    estimate = float(statistic(a[None, :], b[None, :])[0])
    if math.isnan(estimate) or resamples < 1:
        return estimate, NAN, NAN
    rng = np.random.default_rng(seed)
    draws = statistic(a[rng.integers(0, len(a), (resamples, len(a)))], b[rng.integers(0, len(b), (resamples, len(b)))])
    return (estimate, *_percentiles(draws, level))


def paired_sample(
    statistic: Callable, diff, resamples: int, seed: int, level: float = 0.95
) -> tuple[float, float, float]:
    """(estimate, CI low, CI high) of a paired statistic; pairs resampled together."""
    diff = _clean(diff)
    estimate = float(statistic(diff[None, :])[0])
    if math.isnan(estimate) or resamples < 1:
        return estimate, NAN, NAN
    rng = np.random.default_rng(seed)
    return (estimate, *_percentiles(statistic(diff[rng.integers(0, len(diff), (resamples, len(diff)))]), level))


def cliffs_delta(a, b) -> float:
    """Cliff's delta of a over b (no CI)."""
    a, b = _clean(a), _clean(b)
    return float(cliffs_delta_batch(a[None, :], b[None, :])[0])
