"""Agreement with real users: how well a metric separates dialogues users were satisfied with from
those they were not, and how its system ranking compares with the users' own rankings.

- per dialogue: the ROC AUC of a metric for the users' verdict (P(metric of a satisfied dialogue >
  metric of a frustrated one), ties count half), with a stratified percentile bootstrap CI and the
  Mann-Whitney p value (the AUC is U / (n1 n2));
- per system: the satisfaction rate with a Wilson score interval; strengths from pairwise votes as
  Bradley-Terry log-strengths (ties count half a win each way) and as Elo ratings computed the way
  CRSArena-Dial's authors did (start 1000, K = 16, votes in time order), so their tables can be
  reproduced; Kendall's tau-b between a metric's system means and a human ranking.
Every random choice takes a seed; an undefined value is NaN, never a default.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import kendalltau, mannwhitneyu, norm, rankdata

from crseval.statistics.intervals import chunks, draw_counts

NAN = math.nan


def _pairs(values, labels) -> tuple[np.ndarray, np.ndarray]:
    """The metric values of satisfied (label 1) and frustrated (label 0) dialogues, NaNs dropped."""
    values = np.asarray(values, dtype=float)
    labels = np.asarray(labels, dtype=float)
    keep = ~np.isnan(values) & ~np.isnan(labels)
    values, labels = values[keep], labels[keep]
    return values[labels == 1], values[labels == 0]


def auc_batch(positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """AUC of each row pair (rows: resamples) from the ranks of the pooled sample: U / (n1 n2)."""
    n1, n0 = positive.shape[1], negative.shape[1]
    if not n1 or not n0:
        return np.full(positive.shape[0], NAN)
    ranks = rankdata(np.hstack([positive, negative]), axis=1)
    u = ranks[:, :n1].sum(axis=1) - n1 * (n1 + 1) / 2
    return u / (n1 * n0)


def auc_resampled(positive: np.ndarray, negative: np.ndarray, positive_index, negative_index) -> np.ndarray:
    """auc_batch(positive[positive_index], negative[negative_index]) without ranking every resample: the
    rank sum of the positives follows from how often each distinct value was drawn (a midrank is the
    count up to it minus (its count - 1) / 2). Rank sums are whole or half numbers, exact in floats, so
    the AUCs are the same as auc_batch's."""
    n1, n0 = positive_index.shape[1], negative_index.shape[1]
    if not n1 or not n0:
        return np.full(positive_index.shape[0], NAN)
    distinct = np.unique(np.concatenate([positive, negative]))
    size = len(distinct)
    drawn_positive = draw_counts(np.searchsorted(distinct, positive)[positive_index], size)
    drawn = drawn_positive + draw_counts(np.searchsorted(distinct, negative)[negative_index], size)
    midranks = np.cumsum(drawn, axis=1) - (drawn - 1) / 2
    u = (drawn_positive * midranks).sum(axis=1) - n1 * (n1 + 1) / 2
    return u / (n1 * n0)


def auc(values, labels) -> float:
    """ROC AUC of `values` for `labels` (1 satisfied, 0 frustrated); NaN without both classes."""
    positive, negative = _pairs(values, labels)
    return float(auc_batch(positive[None, :], negative[None, :])[0])


def auc_with_ci(values, labels, resamples: int, seed: int, level: float = 0.95) -> dict:
    """AUC, its percentile bootstrap CI (dialogues resampled within each verdict, so every resample
    keeps both classes), the two-sided Mann-Whitney p (normal approximation with tie correction;
    exact when there are no ties and both groups are small), and the group sizes."""
    positive, negative = _pairs(values, labels)
    row = {"auc": NAN, "ci_low": NAN, "ci_high": NAN, "p": NAN, "n_satisfied": len(positive)}
    row["n_frustrated"] = len(negative)
    if not len(positive) or not len(negative):
        return row
    row["auc"] = float(auc_batch(positive[None, :], negative[None, :])[0])
    if np.ptp(np.concatenate([positive, negative])) > 0:
        row["p"] = float(mannwhitneyu(positive, negative, alternative="two-sided").pvalue)
    else:
        row["p"] = 1.0  # a constant separates nothing: AUC 0.5 exactly
    if resamples:
        rng = np.random.default_rng(seed)
        boot = auc_resampled(
            positive,
            negative,
            rng.integers(0, len(positive), (resamples, len(positive))),
            rng.integers(0, len(negative), (resamples, len(negative))),
        )
        tail = (1 - level) / 2 * 100
        row["ci_low"], row["ci_high"] = (float(v) for v in np.percentile(boot, [tail, 100 - tail]))
    return row


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion: inside [0, 1] and sensible at small n (NaN for n = 0)."""
    if n == 0:
        return NAN, NAN
    z = norm.ppf(0.5 + level / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def vote_score(first: str, second: str, winner: str | None) -> float:
    """The first system's score in one vote: 1 win, 0 loss, 0.5 tie (winner None)."""
    if winner is None:
        return 0.5
    if winner == first:
        return 1.0
    if winner == second:
        return 0.0
    raise ValueError(f"vote between {first!r} and {second!r} names the winner {winner!r}")


def elo_ratings(
    votes: Sequence[tuple[str, str, str | None]], start: float = 1000.0, k: float = 16.0
) -> dict[str, float]:
    """Elo ratings after the votes (first, second, winner or None for a tie), taken in the given
    order: expected score 1 / (1 + 10^((R_b - R_a) / 400)); each vote moves both ratings by
    K x (score - expected). A system enters at `start` with its first vote."""
    ratings: dict[str, float] = {}
    for first, second, winner in votes:
        a, b = ratings.setdefault(first, start), ratings.setdefault(second, start)
        expected = 1 / (1 + 10 ** ((b - a) / 400))
        score = vote_score(first, second, winner)
        ratings[first] = a + k * (score - expected)
        ratings[second] = b - k * (score - expected)
    return ratings


def bradley_terry(
    votes: Sequence[tuple[str, str, str | None]],
    systems: Sequence[str] | None = None,
    prior: float = 0.0,
    iterations: int = 10_000,
    tolerance: float = 1e-12,
) -> dict[str, float]:
    """Bradley-Terry log-strengths (mean 0) by Hunter's MM algorithm: P(i beats j) = p_i / (p_i + p_j);
    a tie counts half a win for each side. `prior` adds that many virtual ties of every system against
    a reference of strength 1 (the geometric mean), which keeps strengths finite when a system never
    won or never lost. Without a prior such a system has no maximum-likelihood strength: NaN for all
    (a ranking that rests on it would be invented).
    """
    names = sorted({s for first, second, _ in votes for s in (first, second)} | set(systems or ()))
    index = {name: i for i, name in enumerate(names)}
    n = len(names)
    wins = np.zeros(n)
    games = np.zeros((n, n))
    for first, second, winner in votes:
        i, j = index[first], index[second]
        score = vote_score(first, second, winner)
        wins[i] += score
        wins[j] += 1 - score
        games[i, j] += 1
        games[j, i] += 1
    if not n:
        return {}
    if prior == 0 and (np.any(wins == 0) or np.any(wins == games.sum(axis=1))):
        return dict.fromkeys(names, NAN)
    strength = np.ones(n)
    for _ in range(iterations):
        denominator = (games / (strength[:, None] + strength[None, :])).sum(axis=1) + prior * 1 / (strength + 1)
        updated = (wins + prior / 2) / denominator
        if prior == 0:  # the likelihood fixes only ratios; with a prior the reference fixes the scale
            updated /= math.exp(np.log(updated).mean())
        if np.max(np.abs(np.log(updated) - np.log(strength))) < tolerance:
            strength = updated
            break
        strength = updated
    logs = np.log(strength)
    return {name: float(logs[index[name]] - logs.mean()) for name in names}


def vote_table(votes: Sequence[tuple[str, str, str | None]], systems: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each vote as what it adds to a Bradley-Terry fit over `systems` (sorted): its wins (votes x systems,
    the winner 1, a tie half to each side) and its games (votes x systems x systems, both orders), so that
    the totals of any resample of the votes are a product with its vote counts."""
    index = {name: i for i, name in enumerate(systems)}
    wins = np.zeros((len(votes), len(systems)))
    games = np.zeros((len(votes), len(systems), len(systems)))
    for row, (first, second, winner) in enumerate(votes):
        i, j = index[first], index[second]
        score = vote_score(first, second, winner)
        wins[row, i] += score
        wins[row, j] += 1 - score
        games[row, i, j] += 1
        games[row, j, i] += 1
    return wins, games


def bradley_terry_batch(
    wins: np.ndarray, games: np.ndarray, prior: float = 0.0, iterations: int = 10_000, tolerance: float = 1e-12
) -> np.ndarray:
    """`bradley_terry` of many vote sets at once, for a bootstrap: rows of `wins` (sets x systems) and
    `games` (sets x systems x systems) give each set's totals; returns the log-strengths (mean 0 per row,
    NaN rows where the fit has no maximum). The same MM steps as `bradley_terry` on every row at once;
    a row leaves the iteration when it converges, so each row takes the steps the single fit takes."""
    sets, n = wins.shape
    strength = np.ones((sets, n))
    if not n:
        return strength
    played = games.sum(axis=2)
    defined = np.ones(sets, bool) if prior else ~(np.any(wins == 0, axis=1) | np.any(wins == played, axis=1))
    rows = np.flatnonzero(defined)
    current, target, matches = strength[rows], wins[rows] + prior / 2, games[rows]
    for _ in range(iterations):
        if not len(rows):
            break
        denominator = (matches / (current[:, :, None] + current[:, None, :])).sum(axis=2) + prior * 1 / (current + 1)
        updated = target / denominator
        if prior == 0:  # the likelihood fixes only ratios; with a prior the reference fixes the scale
            updated /= np.exp(np.log(updated).mean(axis=1, keepdims=True))
        converged = np.max(np.abs(np.log(updated) - np.log(current)), axis=1) < tolerance
        strength[rows] = updated
        if converged.any():
            going = ~converged
            rows, current, target, matches = rows[going], updated[going], target[going], matches[going]
        else:
            current = updated
    logs = np.log(strength)
    logs -= logs.mean(axis=1, keepdims=True)
    logs[~defined] = NAN
    return logs


def bradley_terry_resamples(
    votes: Sequence[tuple[str, str, str | None]], systems: Sequence[str], counts: np.ndarray, prior: float
) -> np.ndarray:
    """Resamples x systems: for each row of `counts` (how often each vote was drawn), the log-strengths
    `bradley_terry(drawn votes, systems, prior)` gives `systems`. As there, a resample is fitted over
    `systems` and the systems its drawn votes name; resamples are fitted together per such set."""
    names = sorted(set(systems) | {s for first, second, _ in votes for s in (first, second)})
    wins_of_vote, games_of_vote = vote_table(votes, names)
    counts = np.asarray(counts, dtype=float)
    wins = counts @ wins_of_vote  # whole and half wins: sums exact in any order
    games = (counts @ games_of_vote.reshape(len(votes), -1)).reshape(len(counts), len(names), len(names))
    in_fit = np.isin(names, systems) | (games.sum(axis=2) > 0)
    wanted = np.searchsorted(names, systems)
    strengths = np.full((len(counts), len(systems)), NAN)
    patterns, which = np.unique(in_fit, axis=0, return_inverse=True)
    for number, pattern in enumerate(patterns):
        rows, fitted = np.flatnonzero(which.ravel() == number), np.flatnonzero(pattern)
        logs = bradley_terry_batch(wins[np.ix_(rows, fitted)], games[np.ix_(rows, fitted, fitted)], prior)
        strengths[rows] = logs[:, np.searchsorted(fitted, wanted)]
    return strengths


def kendall_tau(x, y) -> float:
    """Kendall's tau-b between two rankings of the same systems (NaN pairs dropped; NaN below three)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = ~np.isnan(x) & ~np.isnan(y)
    if keep.sum() < 3 or np.ptp(x[keep]) == 0 or np.ptp(y[keep]) == 0:
        return NAN
    return float(kendalltau(x[keep], y[keep]).statistic)


def kendall_tau_columns(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between each column of `x` (systems x metrics) and the ranking `y` (systems),
    vectorised over columns: sum of sign products over pairs / sqrt(pairs untied in x * pairs untied
    in y), over the systems where both are defined (NaN below three such systems or without spread).
    The same value as `kendall_tau` column by column."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return kendall_tau_rows(x[None], y[None])[0]


def kendall_tau_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`kendall_tau_columns` of many resamples at once: x is resamples x systems x metrics, y resamples x
    systems; returns resamples x metrics (the sums count signs, so they are exact and the values equal)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    first, second = np.triu_indices(y.shape[1], k=1)
    taus, start = [], 0
    for rows in chunks(len(x), max(len(first) * x.shape[2], 1)):
        xs, ys = x[start : start + rows], y[start : start + rows]
        start += rows
        x_first, x_second = xs[:, first], xs[:, second]
        y_first, y_second = ys[:, first, None], ys[:, second, None]
        valid = ~np.isnan(x_first) & ~np.isnan(x_second) & ~np.isnan(y_first) & ~np.isnan(y_second)
        sx = np.where(valid, np.sign(np.nan_to_num(x_first - x_second)), 0.0)
        sy = np.where(valid, np.sign(np.nan_to_num(y_first - y_second)), 0.0)
        defined = (~np.isnan(xs) & ~np.isnan(ys)[:, :, None]).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = (sx * sy).sum(axis=1) / np.sqrt((sx * sx).sum(axis=1) * (sy * sy).sum(axis=1))
        tau[(defined < 3) | ~np.isfinite(tau)] = NAN
        taus.append(tau)
    return np.concatenate(taus) if taus else np.empty((0, x.shape[2]))
