"""Exact and permutation tests for the small samples a run gives (a handful of sessions per system).

Asymptotic p-values are unreliable at 6 sessions per system, and some comparisons cannot reach
significance at all: with 6 paired sessions the smallest two-sided Wilcoxon p is 2 / 2^6 = 0.031,
above every Holm threshold over 6 pairs. So every test here
- computes its p-value from the permutation distribution of its statistic under the null:
  exactly, by enumerating every split (or sign flip, or assignment to groups) when there are few
  enough, else by a seeded Monte Carlo test with p = (1 + #{as extreme}) / (1 + resamples);
- handles ties exactly (midranks; the distribution is that of the midrank statistic);
- reports `min_p`, the smallest p the test could give with these sample sizes and ties, so a
  table can say "not testable at this n" instead of "no difference";
and `sessions_to_reach` says how many sessions per system would make a comparison testable.
"Two-sided" means |statistic - its null mean| at least as large as observed, compared with a
tolerance of 1e-9 times the statistic's range so that floating-point noise cannot split ties.
Every distribution is computed as array operations over all splits or resamples at once.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

NAN = math.nan
TOLERANCE = 1e-9
# Monte Carlo resamples are drawn in batches of at most this many cells, so 1,000 sessions per
# system and 10,000 resamples stay within a few tens of MB.
BATCH_CELLS = 2_000_000
OMNIBUS_STATISTICS = ("f", "kruskal")
MIN_P_KINDS = ("mann_whitney", "wilcoxon")


@dataclass(frozen=True)
class TestResult:
    """One test's statistic, p-value, the smallest p it could reach, and how p was computed."""

    __test__ = False  # a result, not a pytest test class

    statistic: float
    p: float
    min_p: float
    method: str


def _values(values, name: str) -> np.ndarray:
    """A 1-D float array; missing or infinite values are the caller's to remove, not ours to guess."""
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds NaN or infinite values; drop them before testing")
    return array


def _is_count(value, smallest: int) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= smallest


def _check_counts(resamples: int, max_enumeration: int) -> None:
    if not _is_count(resamples, 1):
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    if not _is_count(max_enumeration, 0):
        raise ValueError(f"max_enumeration must be a non-negative integer, got {max_enumeration!r}")


def _at_least(stats: np.ndarray, observed: float, scale: float) -> np.ndarray:
    """stats >= observed, with ties up to TOLERANCE * scale counted as equal."""
    return stats >= observed - TOLERANCE * scale


def _monte_carlo_p(extreme_count: int, resamples: int) -> float:
    return (1 + extreme_count) / (1 + resamples)


def _monte_carlo_method(resamples: int, seed: int) -> str:
    return f"Monte Carlo permutation ({resamples:,} resamples, seed {seed})"


def _batch_sizes(resamples: int, width: int) -> list[int]:
    """Resample counts per batch, so that no batch holds more than BATCH_CELLS values."""
    size = max(1, BATCH_CELLS // max(width, 1))
    return [min(size, resamples - start) for start in range(0, resamples, size)]


# C(n, k) of the sizes of one run recur in every metric and pair; at thousands of sessions each is a number of
# thousands of digits, so it is computed once
_comb = functools.lru_cache(maxsize=1024)(math.comb)


def comb_up_to(n: int, k: int, limit: int) -> int:
    """C(n, k) when it is at most `limit`, else limit + 1: whether splits can be enumerated is decided
    without computing a number of thousands of digits (C(n - k + i, i) grows with i, so the first
    partial product above the limit settles it)."""
    k = min(k, n - k)
    count = 1
    for i in range(1, k + 1):
        count = count * (n - k + i) // i
        if count > limit:
            return limit + 1
    return count


def _assignments_up_to(sizes, limit: int) -> int:
    """N! / prod n_i! (the assignments of N values to groups of these sizes) when at most `limit`, else
    limit + 1: a product of binomials C(n_1 + ... + n_i, n_i), each at least 1."""
    count, dealt = 1, 0
    for size in sizes:
        dealt += int(size)
        count *= comb_up_to(dealt, int(size), limit)
        if count > limit:
            return limit + 1
    return count


def _combinations(n: int, k: int) -> np.ndarray:
    """Every k-subset of range(n) as the rows of a (C(n, k), k) matrix, in lexicographic order."""
    count = math.comb(n, k)
    flat = itertools.chain.from_iterable(itertools.combinations(range(n), k))
    return np.fromiter(flat, dtype=np.intp, count=count * k).reshape(count, k)


# --- Mann-Whitney -------------------------------------------------------------------------------


def min_p_mann_whitney(n_x: int, n_y: int) -> float:
    """Smallest exact two-sided Mann-Whitney p without ties: the two extreme splits of C(n_x + n_y, n_x)."""
    if n_x < 1 or n_y < 1:
        raise ValueError(f"Mann-Whitney needs at least one value per group, got {n_x} and {n_y}")
    return 2 / _comb(n_x + n_y, n_x)


def _extreme_split_share(ranks: np.ndarray, n_x: int) -> float:
    """Share of all splits whose |U - mean| is the largest possible, ties included (closed form).

    Giving x the n_x lowest (or highest) midranks is extreme; with a tie block straddling the
    boundary, x may take any m of its t members: C(t, m) splits per side.
    """
    n = len(ranks)
    ordered = np.sort(ranks)
    low_sum, high_sum = ordered[:n_x].sum(), ordered[n - n_x :].sum()
    mean_sum = n_x * (n + 1) / 2

    def ways(boundary: float, taken: np.ndarray) -> int:
        return math.comb(int(np.sum(ordered == boundary)), int(np.sum(taken == boundary)))

    low_dev, high_dev = mean_sum - low_sum, high_sum - mean_sum
    tolerance = TOLERANCE * max(low_dev, high_dev)
    count = 0
    if low_dev >= high_dev - tolerance:
        count += ways(ordered[n_x - 1], ordered[:n_x])
    if high_dev >= low_dev - tolerance:
        count += ways(ordered[n - n_x], ordered[n - n_x :])
    return count / _comb(n, n_x)


def smallest_mann_whitney_p(x, y) -> float:
    """The smallest two-sided p any split of these values could give (the share of the most extreme splits)."""
    x, y = _values(x, "x"), _values(y, "y")
    return _extreme_split_share(rankdata(np.concatenate([x, y])), len(x))


def mann_whitney(x, y, *, seed: int = 0, resamples: int = 10_000, max_enumeration: int = 200_000) -> TestResult:
    """Two-sided Mann-Whitney test on midranks, exact over all C(n_x + n_y, n_x) splits when feasible.

    With ties the exact null distribution is that of the midrank sum over every split, which is
    what is enumerated (scipy falls back to a normal approximation there). statistic = U of x.
    Above `max_enumeration` splits: a seeded Monte Carlo permutation test, whose smallest p is
    1 / (1 + resamples) unless the ties make the most extreme splits more common than that.
    """
    x, y = _values(x, "x"), _values(y, "y")
    _check_counts(resamples, max_enumeration)
    n_x, n_y = len(x), len(y)
    if not n_x or not n_y:
        return TestResult(NAN, NAN, NAN, f"not testable: {'x' if not n_x else 'y'} is empty")
    pooled = np.concatenate([x, y])
    ranks = rankdata(pooled)
    # U = rank sum of x - n_x (n_x + 1) / 2; its null mean n_x n_y / 2 is also the largest |U - mean|
    offset, mean = n_x * (n_x + 1) / 2, n_x * n_y / 2
    u_observed = float(ranks[:n_x].sum() - offset)
    if np.all(pooled == pooled[0]):
        return TestResult(u_observed, NAN, NAN, "not testable: every value is equal")
    observed = abs(u_observed - mean)
    splits = comb_up_to(n_x + n_y, n_x, max_enumeration)
    if splits <= max_enumeration:
        # enumerate subsets of the smaller group; x's rank sum follows from the total
        small = min(n_x, n_y)
        subset_sums = ranks[_combinations(n_x + n_y, small)].sum(axis=1)
        x_sums = subset_sums if small == n_x else ranks.sum() - subset_sums
        deviations = np.abs(x_sums - offset - mean)
        p = float(np.mean(_at_least(deviations, observed, mean)))
        min_p = float(np.mean(_at_least(deviations, deviations.max(), mean)))
        return TestResult(u_observed, p, min_p, f"exact permutation ({splits:,} splits)")
    rng = np.random.default_rng(seed)
    extreme = 0
    for batch in _batch_sizes(resamples, n_x + n_y):
        order = rng.permuted(np.broadcast_to(np.arange(n_x + n_y), (batch, n_x + n_y)), axis=1)
        deviations = np.abs(ranks[order[:, :n_x]].sum(axis=1) - offset - mean)
        extreme += int(np.sum(_at_least(deviations, observed, mean)))
    min_p = max(1 / (1 + resamples), _extreme_split_share(ranks, n_x))
    return TestResult(u_observed, _monte_carlo_p(extreme, resamples), min_p, _monte_carlo_method(resamples, seed))


# --- Wilcoxon signed-rank -----------------------------------------------------------------------


def min_p_wilcoxon(n: int) -> float:
    """Smallest exact two-sided Wilcoxon p for n non-zero differences: all signs + or all signs -."""
    if n < 1:
        raise ValueError(f"Wilcoxon's signed-rank test needs at least one non-zero difference, got {n}")
    return 2 / 2**n


def wilcoxon_signed_rank(diff, *, seed: int = 0, resamples: int = 10_000, max_enumeration: int = 2**16) -> TestResult:
    """Two-sided Wilcoxon signed-rank test of paired differences, exact over all 2^n sign flips when feasible.

    Zero differences are dropped (Wilcoxon's convention, scipy's zero_method="wilcox"): n counts
    the non-zero ones. Ties among |d| get midranks and the exact distribution of T+ (the rank sum
    of the positive differences) over every sign flip of those midranks. T+ is centred on half
    the sum of the ranks. Above `max_enumeration` flips: a seeded Monte Carlo sign-flip test.
    """
    diff = _values(diff, "diff")
    _check_counts(resamples, max_enumeration)
    nonzero = diff[diff != 0]
    dropped = len(diff) - len(nonzero)
    n = len(nonzero)
    if not len(diff):
        return TestResult(NAN, NAN, NAN, "not testable: no differences")
    if not n:
        return TestResult(NAN, NAN, NAN, "not testable: every difference is zero")
    ranks = rankdata(np.abs(nonzero))
    t_plus = float(ranks[nonzero > 0].sum())
    mean = ranks.sum() / 2  # also the largest |T+ - mean|
    observed = abs(t_plus - mean)
    zeros = f", {dropped} zero difference{'s' if dropped != 1 else ''} dropped" if dropped else ""
    if 2**n <= max_enumeration:
        signs = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        deviations = np.abs(signs @ ranks - mean)
        p = float(np.mean(_at_least(deviations, observed, mean)))
        min_p = float(np.mean(_at_least(deviations, deviations.max(), mean)))
        return TestResult(t_plus, p, min_p, f"exact permutation ({2**n:,} sign flips{zeros})")
    rng = np.random.default_rng(seed)
    extreme = 0
    for batch in _batch_sizes(resamples, n):
        deviations = np.abs(rng.integers(0, 2, size=(batch, n)) @ ranks - mean)
        extreme += int(np.sum(_at_least(deviations, observed, mean)))
    # only all + or all - reach the largest |T+ - mean|, ties or not
    min_p = max(1 / (1 + resamples), min_p_wilcoxon(n))
    method = f"Monte Carlo permutation ({resamples:,} sign-flip resamples, seed {seed}{zeros})"
    return TestResult(t_plus, _monte_carlo_p(extreme, resamples), min_p, method)


# --- one-way omnibus ----------------------------------------------------------------------------


def _assignments(sizes: list[int]) -> np.ndarray:
    """Every way to deal positions 0..N-1 into groups of the given sizes: rows of positions, group after group.

    Built group by group: each row's remaining positions are split by every combination of
    relative indices, so the loop runs over groups, never over assignments.
    """
    dealt = np.zeros((1, 0), dtype=np.intp)
    rest = np.arange(sum(sizes))[None, :]
    for size in sizes[:-1]:
        width = rest.shape[1]
        chosen = _combinations(width, size)
        keep = np.ones((len(chosen), width), dtype=bool)
        keep[np.arange(len(chosen))[:, None], chosen] = False
        left = np.nonzero(keep)[1].reshape(len(chosen), width - size)
        dealt = np.concatenate([np.repeat(dealt, len(chosen), axis=0), rest[:, chosen].reshape(-1, size)], axis=1)
        rest = rest[:, left].reshape(-1, width - size)
    return np.concatenate([dealt, rest], axis=1)


def _between_sums_of_squares(centred: np.ndarray, order: np.ndarray, starts: np.ndarray, sizes: np.ndarray):
    """Between-group sum of squares of every row of `order` (positions dealt to groups in blocks)."""
    sums = np.add.reduceat(centred[order], starts, axis=1)
    return (sums**2 / sizes).sum(axis=1)


def permutation_omnibus(
    groups: list[np.ndarray],
    *,
    statistic: str = "f",
    seed: int = 0,
    resamples: int = 10_000,
    max_enumeration: int = 20_000,
) -> TestResult:
    """One-way permutation test of the F statistic ("f") or the Kruskal-Wallis H ("kruskal").

    Both are increasing in the between-group sum of squares (of the values, or of their midranks:
    the total and the tie correction do not change under permutation), so that is what is
    permuted and compared. Exact over every assignment to groups when there are at most
    `max_enumeration` of them (N! / prod n_i!), else a seeded Monte Carlo test whose smallest p
    is 1 / (1 + resamples). statistic = F (inf when every group is constant but the groups
    differ) or the tie-corrected H, as scipy.stats.kruskal reports it.
    """
    if statistic not in OMNIBUS_STATISTICS:
        raise ValueError(f"statistic must be one of {OMNIBUS_STATISTICS}, got {statistic!r}")
    _check_counts(resamples, max_enumeration)
    arrays = [_values(group, f"groups[{i}]") for i, group in enumerate(groups)]
    if len(arrays) < 2:
        return TestResult(NAN, NAN, NAN, f"not testable: {len(arrays)} group(s), two or more needed")
    empty = [i for i, group in enumerate(arrays) if not len(group)]
    if empty:
        return TestResult(NAN, NAN, NAN, f"not testable: group(s) {empty} empty")
    sizes = np.array([len(group) for group in arrays])
    pooled = np.concatenate(arrays)
    total, k = len(pooled), len(arrays)
    if np.all(pooled == pooled[0]):
        return TestResult(NAN, NAN, NAN, "not testable: every value is equal")
    if total == k:
        return TestResult(NAN, NAN, NAN, "not testable: every group holds one value")
    values = pooled if statistic == "f" else rankdata(pooled)
    centred = values - values.mean()
    total_ss = float((centred**2).sum())
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    observed = float(_between_sums_of_squares(centred, np.arange(total)[None, :], starts, sizes)[0])
    if statistic == "f":
        within = total_ss - observed
        value = math.inf if within <= TOLERANCE * total_ss else (observed / (k - 1)) / (within / (total - k))
    else:
        ties = np.unique(pooled, return_counts=True)[1]
        correction = 1 - np.sum(ties**3 - ties) / (total**3 - total)
        value = 12 * observed / (total * (total + 1)) / correction
    count = _assignments_up_to(sizes, max_enumeration)
    if count <= max_enumeration:
        between = _between_sums_of_squares(centred, _assignments(sizes.tolist()), starts, sizes)
        p = float(np.mean(_at_least(between, observed, total_ss)))
        min_p = float(np.mean(_at_least(between, between.max(), total_ss)))
        return TestResult(float(value), p, min_p, f"exact permutation ({count:,} assignments)")
    rng = np.random.default_rng(seed)
    extreme = 0
    for batch in _batch_sizes(resamples, total):
        order = rng.permuted(np.broadcast_to(np.arange(total), (batch, total)), axis=1)
        extreme += int(np.sum(_at_least(_between_sums_of_squares(centred, order, starts, sizes), observed, total_ss)))
    p = _monte_carlo_p(extreme, resamples)
    return TestResult(float(value), p, 1 / (1 + resamples), _monte_carlo_method(resamples, seed))


# --- planning -----------------------------------------------------------------------------------


def sessions_to_reach(alpha: float, kind: str) -> int:
    """Smallest n (sessions per system, or session pairs) whose smallest exact p is <= alpha.

    Below it a comparison cannot be significant whatever the data; pass the alpha a pair really
    faces (e.g. alpha / pairs, Holm's first step). Mann-Whitney assumes equal groups and no ties.
    """
    if kind not in MIN_P_KINDS:
        raise ValueError(f"kind must be one of {MIN_P_KINDS}, got {kind!r}")
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
    min_p = (lambda n: min_p_mann_whitney(n, n)) if kind == "mann_whitney" else min_p_wilcoxon
    n = 1
    while min_p(n) > alpha:
        n += 1
    return n
