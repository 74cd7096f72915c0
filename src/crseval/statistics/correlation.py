"""Spearman correlation of each metric with each judge score: pooled over sessions and within systems.

A pooled correlation over the sessions of several systems mixes two things: whether, session by
session, a higher metric goes with a higher judge score, and whether the systems with a higher mean
metric also have a higher mean judge score. With a few systems whose means differ, the second can
dominate and even reverse the first (Simpson's paradox): two systems whose sessions each show a
negative association give a positive pooled rho when one system is higher on both. The within-system
rho (a partial Spearman correlation on system) removes the between-system differences: both columns
are ranked over all sessions, each system's mean rank is subtracted, and the residuals are correlated
(Pearson). Its p value is the partial correlation's t test with n - k - 1 degrees of freedom (k systems).

Both come with a seeded percentile bootstrap CI over sessions (the within CI resamples sessions
within each system, so every resample keeps each system's count). Pairs known on the same sessions
share their resamples: each column of a resample is ranked once and serves every pair it is in. A
resample holds only observed values, so its midranks follow from how often each distinct value was
drawn (a count and a cumulative sum per row, then one lookup per drawn session): the same ranks as
scipy.stats.rankdata, without sorting every row of every resample. A resample where rho is undefined
(a column constant in it) is left out of the CI and counted. p values are raw: the caller applies the
analysis plan's multiplicity policy.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from crseval.statistics.intervals import chunks

NAN = math.nan
LEVEL = 0.95
MIN_SESSIONS = 3  # below this neither rho is defined
BLOCK = 1000  # resamples drawn at once (the within-system draws depend on it: keep it to keep the draws)
FLAT = 1e-9  # a sum of squared (rank) deviations below this is a constant column: rho undefined

COLUMNS = [
    "metric",
    "judge",
    "n",
    "systems",
    "rho",
    "p",
    "ci_low",
    "ci_high",
    "undefined_resamples",
    "rho_within",
    "p_within",
    "rho_within_ci_low",
    "rho_within_ci_high",
    "undefined_resamples_within",
]


def correlation_table(
    frame: pd.DataFrame, metrics: list[str], judges: list[str], *, resamples: int = 10_000, seed: int
) -> pd.DataFrame:
    """One row per (metric, judge score) present in `frame` (a sessions table with a `system` column).

    `rho` is pooled over all sessions, which mixes between-system differences into what reads as a
    within-session association; `rho_within` (partial on system) is that association alone.
    `undefined_resamples` counts the bootstrap resamples left out of the CI because rho was
    undefined in them; it is empty when the bootstrap did not run (fewer than 3 sessions).
    """
    if "system" not in frame:
        raise KeyError("correlation_table needs a `system` column in the sessions table")
    if resamples < 1:
        raise ValueError(f"correlation_table needs at least one bootstrap resample, got resamples={resamples}")
    pairs = [(m, j) for m in metrics for j in judges if m in frame and j in frame]
    by_sessions: dict[bytes, list[tuple[str, str]]] = {}
    for metric, judge in pairs:
        known = (frame[metric].notna() & frame[judge].notna() & frame["system"].notna()).to_numpy()
        by_sessions.setdefault(known.tobytes(), []).append((metric, judge))
    results = {}
    for number, (known, members) in enumerate(by_sessions.items()):
        sessions = frame[np.frombuffer(known, bool)].sort_values("system", kind="stable")
        rng = np.random.default_rng([seed, number])
        results.update(zip(members, _correlate(sessions, members, resamples, rng)))
    table = pd.DataFrame([{"metric": m, "judge": j, **results[m, j]} for m, j in pairs], columns=COLUMNS)
    for column in ("undefined_resamples", "undefined_resamples_within"):
        table[column] = table[column].astype("Int64")
    return table


def _correlate(
    sessions: pd.DataFrame, pairs: list[tuple[str, str]], resamples: int, rng: np.random.Generator
) -> list[dict]:
    """Pooled and within-system Spearman of each (x, y) pair on `sessions`, where all of them are known
    and each system's sessions form one contiguous block."""
    sizes = np.bincount(pd.factorize(sessions["system"])[0]) if len(sessions) else np.array([], int)
    n, k = len(sessions), len(sizes)
    if n < MIN_SESSIONS:
        estimates = {column: NAN for column in COLUMNS if column not in ("metric", "judge", "n", "systems")}
        not_run = {"undefined_resamples": pd.NA, "undefined_resamples_within": pd.NA}
        return [{"n": n, "systems": k, **estimates, **not_run} for _ in pairs]
    values = {name: sessions[name].to_numpy(float) for pair in pairs for name in pair}
    pooled = _bootstrap(values, pairs, _pooled_draws(n, resamples, rng), None)
    within = _bootstrap(values, pairs, _within_draws(sizes, resamples, rng), sizes)
    rows = []
    for i, (x, y) in enumerate(pairs):
        rho, p = _pooled(values[x], values[y])
        rho_within = float(_rhos(_standardised(values[x][None, :], sizes), _standardised(values[y][None, :], sizes))[0])
        rows.append(
            {
                "n": n,
                "systems": k,
                "rho": rho,
                "p": p,
                **_interval(pooled[i], "ci_low", "ci_high", "undefined_resamples"),
                "rho_within": rho_within,
                "p_within": partial_p(rho_within, n, k),
                **_interval(within[i], "rho_within_ci_low", "rho_within_ci_high", "undefined_resamples_within"),
            }
        )
    return rows


def spearman(x: pd.Series, y: pd.Series) -> tuple[float, int]:
    """Spearman's rho over the sessions with both values, and their number (rho is NaN below three pairs
    or when either side is constant): what a figure's panel prints beside its points."""
    pairs = pd.DataFrame({"x": x, "y": y}).dropna()
    if len(pairs) < 3:
        return NAN, len(pairs)
    return _pooled(pairs["x"].to_numpy(float), pairs["y"].to_numpy(float))[0], len(pairs)


def _pooled(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """scipy's Spearman rho and p; NaN for a constant column (scipy would warn and return NaN)."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return NAN, NAN
    result = sps.spearmanr(x, y)
    return float(result.statistic), float(result.pvalue)


def partial_p(rho: float, n: int, k: int) -> float:
    """Two-sided p of a partial correlation on k systems (k - 1 dummies and the intercept): t with n - k - 1 df."""
    dof = n - k - 1
    if math.isnan(rho) or dof < 1:
        return NAN
    if abs(rho) >= 1:
        return 0.0
    t = rho * math.sqrt(dof / (1 - rho * rho))
    return float(2 * sps.t.sf(abs(t), dof))


def _pooled_draws(n: int, resamples: int, rng: np.random.Generator):
    """Blocks of resampled session indices, sessions drawn with replacement from all n. The draws do not
    depend on the blocks' size (one stream of integers below n), so the blocks are as small as chunks()."""
    for rows in chunks(resamples, n):
        yield rng.integers(0, n, (rows, n))


def _within_draws(sizes: np.ndarray, resamples: int, rng: np.random.Generator):
    """Blocks of resampled indices, each system's sessions drawn from its own (columns stay in system order).
    Each block of BLOCK resamples draws system after system, so BLOCK fixes the draws; it is handed on in
    slices of at most chunks() rows (int32 where the sessions allow, to halve the block's memory)."""
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    small = np.int32 if sizes.sum() < np.iinfo(np.int32).max else np.int64
    for start in range(0, resamples, BLOCK):
        block = min(BLOCK, resamples - start)
        index = np.empty((block, int(sizes.sum())), small)
        for offset, size in zip(offsets, sizes):
            index[:, offset : offset + size] = offset + rng.integers(0, size, (block, size))
        first = 0
        for rows in chunks(block, index.shape[1]):
            yield index[first : first + rows]
            first += rows


def _codes(column: np.ndarray) -> tuple[np.ndarray, int]:
    """Each value's position among the column's distinct values, and how many there are."""
    distinct = np.unique(column)
    return np.searchsorted(distinct, column), len(distinct)


def _resampled_ranks(codes: np.ndarray, size: int, index: np.ndarray) -> np.ndarray:
    """scipy.stats.rankdata along the rows of column[index], from the codes of the column's values: a
    value's midrank is the count of drawn values up to it minus (its own count - 1) / 2 (exact in floats,
    as rankdata's first position plus (count - 1) / 2). Codes are offset by size per row, so one count
    and one lookup serve the whole block."""
    rows = index.shape[0]
    drawn = codes[index]
    drawn += size * np.arange(rows)[:, None]
    counts = np.bincount(drawn.ravel(), minlength=rows * size).reshape(rows, size)
    midranks = np.cumsum(counts, axis=1) - (counts - 1) / 2
    return midranks.ravel()[drawn]


def _bootstrap(values: dict, pairs: list, blocks, sizes: np.ndarray | None) -> np.ndarray:
    """Pairs x resamples of rho (NaN where undefined): pooled when `sizes` is None, else within systems.
    Each column of a block is ranked once for all the pairs it is in."""
    coded = {name: _codes(column) for name, column in values.items()}
    draws = []
    for index in blocks:
        columns = {name: _centred_scaled(_resampled_ranks(*coded[name], index), sizes) for name in values}
        draws.append(np.vstack([_rhos(columns[x], columns[y]) for x, y in pairs]))
    return np.hstack(draws)


def _standardised(rows: np.ndarray, sizes: np.ndarray | None) -> np.ndarray:
    """Each row ranked, centred and scaled (_centred_scaled)."""
    return _centred_scaled(sps.rankdata(rows, axis=1), sizes)


def _centred_scaled(ranks: np.ndarray, sizes: np.ndarray | None) -> np.ndarray:
    """Each row of ranks centred (on each system's mean rank when `sizes` gives the systems' contiguous
    blocks: the residuals on system dummies) and scaled to unit length; NaN rows where it is constant."""
    if sizes is None:
        centred = ranks - ranks.mean(axis=1, keepdims=True)
    else:
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        centred = ranks - np.repeat(np.add.reduceat(ranks, starts, axis=1) / sizes, sizes, axis=1)
    length = np.sqrt((centred * centred).sum(axis=1, keepdims=True))
    return np.divide(centred, length, out=np.full_like(centred, NAN), where=length * length > FLAT)


def _rhos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of standardised row pairs (NaN where either is constant), within [-1, 1]."""
    return np.clip(np.einsum("ij,ij->i", a, b), -1.0, 1.0)


def _interval(draws: np.ndarray, low_name: str, high_name: str, count_name: str) -> dict:
    """Percentile CI of the defined draws and the number of undefined ones."""
    defined = draws[~np.isnan(draws)]
    low, high = np.percentile(defined, [(1 - LEVEL) / 2 * 100, (1 + LEVEL) / 2 * 100]) if len(defined) else (NAN, NAN)
    return {low_name: float(low), high_name: float(high), count_name: int(len(draws) - len(defined))}
