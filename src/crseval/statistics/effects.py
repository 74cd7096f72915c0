"""Effect sizes between two systems, each with a seeded percentile bootstrap CI.

A p-value says whether a difference is detectable, not how large it is; reviewers ask for both.
- independent samples: Hedges' g (Cohen's d with the small-sample correction J) for the t-based
  tests, Cliff's delta (= the rank-biserial correlation of Mann-Whitney) for the rank-based ones;
- paired samples (the same sessions): Cohen's d_z (mean difference / SD of the differences) for
  the paired t-test, the matched-pairs rank-biserial correlation for Wilcoxon's signed-rank test
  (zero differences dropped, as Wilcoxon does).
Every statistic is written for a batch of resamples (one per row) so a bootstrap of 10,000
resamples is a few array operations per block of rows (blocks bound the memory), not 10,000 Python
loops. The two rank statistics depend only on how often each observed value is drawn, so their
bootstrap counts draws per value instead of ranking every row (the same values; ten times faster at
1,000 sessions per system).
An undefined value (no spread, no data) is NaN; resamples where it is undefined are left out of the
CI and counted (`two_sample_counted`, `paired_sample_counted`), so that a report can say how many.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import numpy as np
from scipy.stats import rankdata

from crseval.statistics.intervals import chunks, draw_counts

NAN = math.nan


class Effect(NamedTuple):
    """An effect size with its bootstrap CI and the resamples left out of it (statistic undefined)."""

    estimate: float
    ci_low: float
    ci_high: float
    undefined: int


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


# ------------------------------------------------------------------ rank statistics from counts


def _cliffs_delta_counted(codes_a: np.ndarray, codes_b: np.ndarray, size: int) -> np.ndarray:
    """cliffs_delta_batch of resamples given as codes of the pooled distinct values (in order): U
    counts, for every a drawn, the b drawn below it and half of those equal to it."""
    count_a, count_b = draw_counts(codes_a, size), draw_counts(codes_b, size)
    below = np.cumsum(count_b, axis=1) - count_b
    u = (count_a * (below + 0.5 * count_b)).sum(axis=1)
    return 2 * u / (codes_a.shape[1] * codes_b.shape[1]) - 1


def _rank_biserial_counted(codes: np.ndarray, size: int) -> np.ndarray:
    """rank_biserial_paired_batch of resamples given as codes: k for a positive difference whose |d| is
    the k-th distinct non-zero |d|, size + k for a negative one, 2 size for a zero (dropped). A
    non-zero |d| takes the mean rank of its ties: the count below it plus (its own count + 1) / 2."""
    counts = draw_counts(codes, 2 * size + 1)
    positive, negative = counts[:, :size], counts[:, size : 2 * size]
    count = positive + negative
    rank = np.cumsum(count, axis=1) - count + (count + 1) / 2
    plus, minus = (positive * rank).sum(axis=1), (negative * rank).sum(axis=1)
    total = plus + minus
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (plus - minus) / total, NAN)


def _as_codes_two_sample(statistic: Callable, a: np.ndarray, b: np.ndarray) -> tuple[Callable, np.ndarray, np.ndarray]:
    """The statistic and samples to resample: Cliff's delta on the codes of the pooled distinct values."""
    if statistic is not cliffs_delta_batch:
        return statistic, a, b
    values = np.unique(np.concatenate([a, b]))
    return partial(_cliffs_delta_counted, size=len(values)), np.searchsorted(values, a), np.searchsorted(values, b)


def _as_codes_paired(statistic: Callable, diff: np.ndarray) -> tuple[Callable, np.ndarray]:
    """The statistic and differences to resample: the rank-biserial correlation on codes (_rank_biserial_counted)."""
    if statistic is not rank_biserial_paired_batch:
        return statistic, diff
    magnitude = np.abs(diff)
    values = np.unique(magnitude[diff != 0])
    size = len(values)
    codes = np.searchsorted(values, magnitude) + size * (diff < 0)
    return partial(_rank_biserial_counted, size=size), np.where(diff == 0, 2 * size, codes)


# ------------------------------------------------------------------ bootstrap


def _percentiles(draws: np.ndarray, level: float) -> tuple[float, float]:
    draws = draws[~np.isnan(draws)]
    if not len(draws):
        return NAN, NAN
    low, high = np.percentile(draws, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(low), float(high)


def two_sample_counted(statistic: Callable, a, b, resamples: int, seed: int, level: float = 0.95) -> Effect:
    """An independent-samples statistic with its CI; each sample resampled on its own, by its own
    stream of the seed, so that the draws do not depend on the size of the blocks."""
    a, b = _clean(a), _clean(b)
    estimate = float(statistic(a[None, :], b[None, :])[0])
    if math.isnan(estimate) or resamples < 1:
        return Effect(estimate, NAN, NAN, 0)
    rng_a, rng_b = np.random.default_rng(seed).spawn(2)
    resampled, a, b = _as_codes_two_sample(statistic, a, b)
    n1, n2 = len(a), len(b)
    draws = np.concatenate(
        [
            resampled(a[rng_a.integers(0, n1, (rows, n1))], b[rng_b.integers(0, n2, (rows, n2))])
            for rows in chunks(resamples, n1 + n2)
        ]
    )
    return Effect(estimate, *_percentiles(draws, level), int(np.isnan(draws).sum()))


def paired_sample_counted(statistic: Callable, diff, resamples: int, seed: int, level: float = 0.95) -> Effect:
    """A paired statistic with its CI; pairs resampled together."""
    diff = _clean(diff)
    estimate = float(statistic(diff[None, :])[0])
    if math.isnan(estimate) or resamples < 1:
        return Effect(estimate, NAN, NAN, 0)
    rng, n = np.random.default_rng(seed), len(diff)
    resampled, diff = _as_codes_paired(statistic, diff)
    draws = np.concatenate([resampled(diff[rng.integers(0, n, (rows, n))]) for rows in chunks(resamples, n)])
    return Effect(estimate, *_percentiles(draws, level), int(np.isnan(draws).sum()))


def cliffs_delta(a, b) -> float:
    """Cliff's delta of a over b (no CI)."""
    a, b = _clean(a), _clean(b)
    return float(cliffs_delta_batch(a[None, :], b[None, :])[0])
