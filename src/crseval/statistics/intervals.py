"""Confidence intervals of a system's mean over sessions that stay inside the metric's range.

The Student t interval, mean +- t s / sqrt(n), is symmetric by construction: at a handful of
sessions it leaves the range of a bounded metric (a recovery rate above 1, a judge score above 5),
and it has zero width wherever the sessions agree, with nothing to say why. Instead:
- a proportion-like metric whose sessions are all 0 or 1 counts successes: Wilson's score interval
  of that share, which stays in [0, 1] and keeps its coverage at small n;
- any other metric: a seeded percentile bootstrap of the mean. Every resampled mean is a mean of
  observed values, so the interval lies within the observed [min, max], hence within whatever
  range the metric has, without declaring one. The plain percentile interval runs narrow at few
  sessions (the resampled means spread by s sqrt((n - 1) / n), not s): about 85% coverage for a
  nominal 95% at 6 sessions. Its percentiles are therefore widened as the t interval would be, Hesterberg's
  expanded percentile interval (The American Statistician 69(4), 2015): tail alpha' / 2 =
  Phi(-sqrt(n / (n - 1)) t_{alpha/2, n-1}), which restores the t interval's coverage from about 6
  sessions on and keeps every end a resampled mean. Below that no interval within [min, max] can
  reach 95% (at 3 sessions the mean is outside [min, max] a quarter of the time);
- one session gives a mean but no interval, sessions that all agree an interval of zero width with
  a note saying so, no sessions neither.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from crseval.core.allocation import reuse_large_blocks

KINDS = ("proportion", "mean")
# Indices drawn at once: memory stays flat whatever resamples x sample size. The draws do not depend
# on it (numpy's Generator draws the same integers in one call or in several).
CHUNK_ELEMENTS = 1 << 20
NO_VALUES = "no values"
ONE_SESSION = "one session: no interval"
NO_SPREAD = "no spread (all sessions equal)"
NO_METHOD = "none"


def chunks(resamples: int, width: int) -> Iterator[int]:
    """Row counts of successive blocks of a (resamples, width) resample matrix, each of at most
    CHUNK_ELEMENTS entries (at least one row). The blocks' memory is reused, not mapped afresh each time."""
    reuse_large_blocks()
    rows = max(1, CHUNK_ELEMENTS // max(width, 1))
    for start in range(0, resamples, rows):
        yield min(rows, resamples - start)


def draw_counts(codes: np.ndarray, size: int) -> np.ndarray:
    """(rows, size): how often each code 0..size-1 occurs in each row of `codes`. A row of bootstrap
    draws as counts, so that a resampled sum is one matrix product."""
    rows = codes.shape[0]
    counts = np.bincount((codes + size * np.arange(rows)[:, None]).ravel(), minlength=rows * size)
    return counts.reshape(rows, size)


def wilson(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of the share successes / n."""
    from scipy.stats import norm  # imported where used: scipy.stats takes a second, paid by every workflow parse

    z = norm.ppf((1 + level) / 2)
    share = successes / n
    denominator = 1 + z * z / n
    centre = (share + z * z / (2 * n)) / denominator
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def expanded_tail(n: int, level: float = 0.95) -> float:
    """The lower percentile (as a share) of Hesterberg's expanded percentile interval of a mean of n."""
    from scipy.stats import norm  # imported where used, as in wilson
    from scipy.stats import t as t_distribution

    return float(norm.cdf(-math.sqrt(n / (n - 1)) * t_distribution.ppf((1 + level) / 2, n - 1)))


def bootstrap_mean(data: np.ndarray, resamples: int, seed: int, level: float = 0.95) -> tuple[float, float]:
    """Expanded percentile interval of the resampled means, one (rows, n) index block at a time.

    Clipped to the observed [min, max]: a mean of values that are all the maximum can round one
    unit in the last place above it."""
    rng = np.random.default_rng(seed)
    n = len(data)
    means = np.concatenate([data[rng.integers(0, n, (rows, n))].mean(axis=1) for rows in chunks(resamples, n)])
    tail = expanded_tail(n, level)
    low, high = np.percentile(means, [tail * 100, (1 - tail) * 100])
    return float(np.clip(low, data.min(), data.max())), float(np.clip(high, data.min(), data.max()))


def mean_interval(values, *, kind: str, resamples: int = 10_000, seed: int, level: float = 0.95) -> dict:
    """Mean of the values that are not NaN with its confidence interval, how it was computed and why
    it has no width, or none (keys mean, ci_low, ci_high, ci_method, n, note).

    `kind` "proportion": a metric that is a share (declared in 0-1); where every value is 0 or 1 the
    interval is Wilson's. "mean": any other metric, always bootstrapped."""
    if kind not in KINDS:
        raise ValueError(f"interval kind {kind!r} is not one of {KINDS}")
    if not 0 < level < 1:
        raise ValueError(f"confidence level {level} is not in (0, 1)")
    if resamples < 1:
        raise ValueError(f"bootstrap resamples must be at least 1, not {resamples}")
    data = np.asarray(values, dtype=float)
    data = data[~np.isnan(data)]
    if np.isinf(data).any():
        raise ValueError(f"infinite values have no mean interval: {data[np.isinf(data)][:3].tolist()}")
    n = len(data)
    if n == 0:
        return _cell(math.nan, math.nan, math.nan, NO_METHOD, 0, NO_VALUES)
    if n == 1:
        return _cell(float(data[0]), math.nan, math.nan, NO_METHOD, 1, ONE_SESSION)
    if (data == data[0]).all():  # the value itself: a mean of equal floats can round away from it
        return _cell(float(data[0]), float(data[0]), float(data[0]), NO_METHOD, n, NO_SPREAD)
    if kind == "proportion" and np.isin(data, (0.0, 1.0)).all():
        low, high = wilson(int(data.sum()), n, level)
        return _cell(float(data.mean()), low, high, "Wilson", n, "")
    low, high = bootstrap_mean(data, resamples, seed, level)
    return _cell(float(data.mean()), low, high, f"expanded percentile bootstrap, {resamples:,} resamples", n, "")


def _cell(mean: float, low: float, high: float, method: str, n: int, note: str) -> dict:
    return {"mean": mean, "ci_low": low, "ci_high": high, "ci_method": method, "n": n, "note": note}
