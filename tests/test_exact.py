"""Exact and permutation tests at small samples: brute-force enumerations written here, scipy's exact
tests where they exist (no ties), smallest reachable p-values by hand, and properties (symmetry,
invariance, bounds, reproducibility)."""

import itertools
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from crseval.statistics import exact

# --- Mann-Whitney -------------------------------------------------------------------------------

TIED_X = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 7.0])
TIED_Y = np.array([2.0, 4.0, 4.0, 6.0, 8.0, 9.0])


def brute_force_mann_whitney(x, y):
    """Share of all C(n, n_x) splits of the pooled midranks whose |U - n_x n_y / 2| is at least the observed."""
    pooled = np.concatenate([x, y])
    ranks = sps.rankdata(pooled)
    n_x, mean = len(x), len(x) * len(y) / 2

    def deviation(positions):
        return abs(sum(ranks[list(positions)]) - n_x * (n_x + 1) / 2 - mean)

    observed = deviation(range(n_x))
    splits = list(itertools.combinations(range(len(pooled)), n_x))
    return sum(deviation(split) >= observed - 1e-9 for split in splits) / len(splits)


def test_mann_whitney_with_ties_is_the_exact_permutation_p_not_scipys_normal_approximation():
    result = exact.mann_whitney(TIED_X, TIED_Y)
    expected = brute_force_mann_whitney(TIED_X, TIED_Y)
    # x's midranks 1, 3, 3, 5, 8, 10 sum to 30: U = 30 - 21 = 9 (by hand)
    assert result.statistic == 9.0
    assert result.p == pytest.approx(expected, abs=1e-15)
    assert result.method == "exact permutation (924 splits)"
    asymptotic = sps.mannwhitneyu(TIED_X, TIED_Y, method="asymptotic").pvalue
    assert abs(result.p - asymptotic) > 0.005


def test_mann_whitney_exact_without_ties_has_the_textbook_minimum():
    # 6 vs 6 fully separated: only the two extreme splits of C(12, 6) = 924 are as extreme
    result = exact.mann_whitney(np.arange(6.0), np.arange(6.0, 12.0))
    assert result.p == result.min_p == 2 / 924 == exact.min_p_mann_whitney(6, 6)
    assert result.statistic == 0.0


distinct_pair = st.lists(st.integers(-50, 50), min_size=2, max_size=14, unique=True).flatmap(
    lambda values: st.integers(1, len(values) - 1).map(lambda n_x: (values[:n_x], values[n_x:]))
)


@settings(max_examples=80, deadline=None)
@given(distinct_pair)
def test_mann_whitney_without_ties_equals_scipys_exact_test(pair):
    x, y = (np.array(v, dtype=float) for v in pair)
    result = exact.mann_whitney(x, y)
    reference = sps.mannwhitneyu(x, y, method="exact")
    assert result.statistic == reference.statistic
    assert result.p == pytest.approx(reference.pvalue, rel=1e-12)
    assert result.min_p == pytest.approx(exact.min_p_mann_whitney(len(x), len(y)), rel=1e-12)


tied_group = st.lists(st.integers(0, 4).map(float), min_size=1, max_size=7)


@settings(max_examples=80, deadline=None)
@given(tied_group, tied_group)
def test_mann_whitney_is_symmetric_bounded_and_matches_brute_force(x, y):
    forward, backward = exact.mann_whitney(x, y), exact.mann_whitney(y, x)
    if len(set(x + y)) == 1:
        assert math.isnan(forward.p) and "every value is equal" in forward.method
        return
    assert forward.p == backward.p
    assert forward.statistic + backward.statistic == len(x) * len(y)
    assert 0 < forward.min_p <= forward.p <= 1
    assert forward.p == pytest.approx(brute_force_mann_whitney(np.array(x), np.array(y)), abs=1e-12)
    # the closed form for the most extreme splits (used by the Monte Carlo test) agrees with enumeration
    ranks = sps.rankdata(np.array(x + y))
    assert exact._extreme_split_share(ranks, len(x)) == pytest.approx(forward.min_p, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(tied_group, tied_group)
def test_mann_whitney_is_invariant_to_a_monotone_transform(x, y):
    def transform(values):
        return np.exp(np.array(values) / 3) * 10 - 4

    before, after = exact.mann_whitney(x, y), exact.mann_whitney(transform(x), transform(y))
    assert (before.p == after.p) or (math.isnan(before.p) and math.isnan(after.p))
    assert before.statistic == after.statistic


def test_mann_whitney_monte_carlo_is_seeded_and_close_to_the_exact_p():
    exact_p = exact.mann_whitney(TIED_X, TIED_Y).p
    first = exact.mann_whitney(TIED_X, TIED_Y, seed=3, max_enumeration=0)
    again = exact.mann_whitney(TIED_X, TIED_Y, seed=3, max_enumeration=0)
    other = exact.mann_whitney(TIED_X, TIED_Y, seed=4, max_enumeration=0)
    assert first == again and first.p != other.p
    assert first.method == "Monte Carlo permutation (10,000 resamples, seed 3)"
    # 4 binomial SEs of a p near 0.13 at 10,000 resamples
    assert abs(first.p - exact_p) < 4 * math.sqrt(exact_p * (1 - exact_p) / 10_000)
    # the smallest p is the larger of the exact share of the extreme splits (2 / 924) and 1 / (1 + resamples)
    separated = np.arange(6.0), np.arange(6.0, 12.0)
    assert exact.mann_whitney(*separated, max_enumeration=0).min_p == 2 / 924
    assert exact.mann_whitney(*separated, max_enumeration=0, resamples=100).min_p == 1 / 101


def test_mann_whitney_monte_carlo_minimum_respects_heavy_ties():
    # x = eight 0s and one 1, y = nine 1s (midranks 4.5 and 13.5, mean rank sum 85.5). Lowest: x takes the
    # eight 0s and one of the ten 1s (10 ways, rank sum 49.5); highest: nine of the ten 1s (10 ways, 121.5).
    # Both lie 36 from the mean: 20 of C(18, 9) = 48,620 splits are the most extreme.
    x, y = [0.0] * 8 + [1.0], [1.0] * 9
    assert exact.mann_whitney(x, y).min_p == pytest.approx(20 / 48_620)
    # Monte Carlo: the floor is the larger of 1 / (1 + resamples) and that share
    assert exact.mann_whitney(x, y, max_enumeration=0, resamples=100).min_p == 1 / 101
    assert exact.mann_whitney(x, y, max_enumeration=0, resamples=100_000).min_p == pytest.approx(20 / 48_620)


def test_mann_whitney_untestable_inputs_are_nan_with_the_reason_and_bad_inputs_raise():
    empty = exact.mann_whitney([], [1.0, 2.0])
    assert math.isnan(empty.p) and empty.method == "not testable: x is empty"
    constant = exact.mann_whitney([2.0, 2.0], [2.0])
    assert math.isnan(constant.p) and math.isnan(constant.min_p) and "every value is equal" in constant.method
    with pytest.raises(ValueError, match="x holds NaN"):
        exact.mann_whitney([1.0, math.nan], [2.0])
    with pytest.raises(ValueError, match="resamples"):
        exact.mann_whitney([1.0], [2.0], resamples=0)


# --- Wilcoxon signed-rank -----------------------------------------------------------------------


def brute_force_wilcoxon(diff):
    nonzero = np.array([d for d in diff if d != 0])
    ranks = sps.rankdata(np.abs(nonzero))
    mean = ranks.sum() / 2
    observed = abs(ranks[nonzero > 0].sum() - mean)
    flips = list(itertools.product([0, 1], repeat=len(nonzero)))
    return sum(abs(np.dot(signs, ranks) - mean) >= observed - 1e-9 for signs in flips) / len(flips)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 60), min_size=1, max_size=12, unique=True), st.randoms(use_true_random=False))
def test_wilcoxon_without_ties_equals_scipys_exact_test(magnitudes, random):
    diff = np.array([m * random.choice([-1.0, 1.0]) for m in magnitudes])
    result = exact.wilcoxon_signed_rank(diff)
    assert result.p == pytest.approx(sps.wilcoxon(diff, method="exact").pvalue, rel=1e-12)
    assert result.statistic == sps.rankdata(np.abs(diff))[diff > 0].sum()
    assert result.min_p == exact.min_p_wilcoxon(len(diff))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 3).map(float), min_size=1, max_size=10))
def test_wilcoxon_with_ties_and_zeros_matches_brute_force(diff):
    result = exact.wilcoxon_signed_rank(diff)
    if not any(diff):
        assert math.isnan(result.p) and "zero" in result.method
        return
    assert result.p == pytest.approx(brute_force_wilcoxon(diff), abs=1e-12)
    assert result.p == exact.wilcoxon_signed_rank([-d for d in diff]).p
    assert 0 < result.min_p <= result.p <= 1


def test_six_positive_pairs_reach_only_one_in_thirty_two():
    result = exact.wilcoxon_signed_rank([0.1, 0.4, 0.2, 0.9, 0.3, 0.5])
    assert result.p == result.min_p == 1 / 32 == exact.min_p_wilcoxon(6)
    assert result.statistic == 21.0
    assert result.method == "exact permutation (64 sign flips)"


def test_wilcoxon_drops_zero_differences_and_says_so():
    with_zeros = exact.wilcoxon_signed_rank([1.0, 0.0, 2.0, 3.0, -4.0, 0.0])
    without = exact.wilcoxon_signed_rank([1.0, 2.0, 3.0, -4.0])
    assert with_zeros.p == without.p == pytest.approx(1 - 2 / 16)  # only T+ = 5 (of mean 5) is less extreme
    assert with_zeros.method == "exact permutation (16 sign flips, 2 zero differences dropped)"
    assert exact.wilcoxon_signed_rank([]).method == "not testable: no differences"


def test_wilcoxon_monte_carlo_is_seeded_and_close_to_the_exact_p():
    diff = np.array([0.5, -1.2, 2.0, 2.1, 3.3, -0.7, 1.8, 2.6, 0.9, 4.0])
    exact_p = exact.wilcoxon_signed_rank(diff).p
    first = exact.wilcoxon_signed_rank(diff, seed=7, max_enumeration=0)
    assert first == exact.wilcoxon_signed_rank(diff, seed=7, max_enumeration=0)
    assert abs(first.p - exact_p) < 4 * math.sqrt(exact_p * (1 - exact_p) / 10_000)
    assert first.min_p == 2 / 2**10  # all + or all -: more common than 1 / 10,001
    assert exact.wilcoxon_signed_rank(np.arange(1.0, 21.0), max_enumeration=0).min_p == 1 / 10_001


# --- omnibus ------------------------------------------------------------------------------------


def six_groups(shift: float, seed: int = 5):
    rng = np.random.default_rng(seed)
    return [rng.normal(shift * i, 1.0, 6) for i in range(6)]


@pytest.mark.parametrize("statistic", ["f", "kruskal"])
def test_omnibus_statistic_is_scipys_and_the_p_is_reproducible(statistic):
    groups = six_groups(0.3)
    result = exact.permutation_omnibus(groups, statistic=statistic, seed=3)
    reference = sps.f_oneway(*groups) if statistic == "f" else sps.kruskal(*groups)
    assert result.statistic == pytest.approx(reference.statistic, rel=1e-10)
    assert result == exact.permutation_omnibus(groups, statistic=statistic, seed=3)
    assert result.p != exact.permutation_omnibus(groups, statistic=statistic, seed=4).p
    assert result.min_p == 1 / 10_001 and result.method == "Monte Carlo permutation (10,000 resamples, seed 3)"
    # the permutation p estimates the exact one, which the F / chi-square reference approximates
    assert abs(result.p - reference.pvalue) < 0.05


@pytest.mark.parametrize("statistic", ["f", "kruskal"])
def test_a_clear_difference_reaches_the_smallest_p(statistic):
    result = exact.permutation_omnibus(six_groups(50.0), statistic=statistic)
    assert result.p == result.min_p == 1 / 10_001


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5).map(float), min_size=1, max_size=5), min_size=2, max_size=4))
def test_omnibus_p_lies_between_its_minimum_and_one(groups):
    result = exact.permutation_omnibus([np.array(g) for g in groups], resamples=500)
    pooled = [v for g in groups for v in g]
    if len(set(pooled)) == 1 or len(pooled) == len(groups):
        assert math.isnan(result.p) and result.method.startswith("not testable")
        return
    assert 0 < result.min_p <= result.p <= 1


def test_omnibus_enumerates_tiny_designs_exactly():
    # 3 groups of 2: 6! / 2!^3 = 90 assignments; the sorted blocks in any of 3! group orders are the extremes
    groups = [np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0])]
    result = exact.permutation_omnibus(groups)
    assert result.method == "exact permutation (90 assignments)"
    assert result.p == result.min_p == pytest.approx(6 / 90)


@pytest.mark.parametrize(
    ("groups", "statistic"),
    [
        ([[1.0, 4.0], [2.0, 6.0], [3.0, 5.0]], "f"),
        ([[3.0], [1.0, 5.0], [2.0, 4.0, 6.0]], "f"),
        ([[2.0], [1.0, 2.0], [2.0, 3.0, 3.0]], "kruskal"),
    ],
)
def test_omnibus_enumeration_matches_brute_force_over_every_ordering(groups, statistic):
    """Every ordering of the pooled values, cut into the group sizes, is one assignment (each counted equally)."""
    test = sps.f_oneway if statistic == "f" else sps.kruskal
    sizes = [len(g) for g in groups]
    cuts = np.cumsum(sizes)[:-1]
    observed = test(*groups).statistic
    orderings = list(itertools.permutations([v for g in groups for v in g]))
    stats = [test(*np.split(np.array(o), cuts)).statistic for o in orderings]
    as_extreme = sum(value >= observed - 1e-9 for value in stats)
    result = exact.permutation_omnibus([np.array(g) for g in groups], statistic=statistic)
    assert result.method.startswith("exact permutation")
    assert result.statistic == pytest.approx(observed)
    assert result.p == pytest.approx(as_extreme / len(orderings))
    assert result.min_p == pytest.approx(sum(value >= max(stats) - 1e-9 for value in stats) / len(orderings))


def test_omnibus_is_fast_enough_for_every_metric():
    groups = six_groups(0.3)
    best = min(_timed(lambda: exact.permutation_omnibus(groups, statistic="f")) for _ in range(3))
    assert best < 0.1


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def test_omnibus_untestable_inputs():
    assert exact.permutation_omnibus([np.array([1.0, 2.0])]).method.startswith("not testable: 1 group")
    assert "empty" in exact.permutation_omnibus([np.array([]), np.array([1.0, 2.0])]).method
    assert "every group holds one value" in exact.permutation_omnibus([np.array([1.0]), np.array([2.0])]).method
    with pytest.raises(ValueError, match="statistic must be one of"):
        exact.permutation_omnibus([np.array([1.0, 2.0])] * 2, statistic="anova")


# --- smallest p and sessions needed -------------------------------------------------------------


def test_smallest_p_by_hand():
    assert exact.min_p_wilcoxon(6) == 2 / 64
    assert exact.min_p_mann_whitney(6, 6) == 2 / 924
    assert exact.min_p_mann_whitney(3, 2) == 2 / 10
    with pytest.raises(ValueError):
        exact.min_p_wilcoxon(0)


def test_sessions_to_reach_by_hand():
    # Holm over 6 pairs starts at 0.05 / 6 = 0.00833: 2 / 2^7 = 0.0156 is above it, 2 / 2^8 = 0.0078 below
    assert exact.sessions_to_reach(0.05 / 6, "wilcoxon") == 8
    # 2 / C(8, 4) = 2 / 70 = 0.029 is above it, 2 / C(10, 5) = 2 / 252 = 0.0079 below
    assert exact.sessions_to_reach(0.05 / 6, "mann_whitney") == 5
    # at 0.05: 2 / 2^5 = 0.0625 > 0.05 >= 2 / 2^6; 2 / C(6, 3) = 0.1 > 0.05 >= 2 / C(8, 4)
    assert exact.sessions_to_reach(0.05, "wilcoxon") == 6
    assert exact.sessions_to_reach(0.05, "mann_whitney") == 4
    with pytest.raises(ValueError, match="kind"):
        exact.sessions_to_reach(0.05, "t")
    with pytest.raises(ValueError, match="alpha"):
        exact.sessions_to_reach(0.0, "wilcoxon")


def test_counts_of_splits_are_exact_up_to_the_limit_and_capped_above():
    # C(12, 6) = 924; C(18, 9) = 48,620; with limit 1,000 the second is reported as 1,001
    assert exact.comb_up_to(12, 6, 1_000) == 924 and exact.comb_up_to(18, 9, 1_000) == 1_001
    assert exact.comb_up_to(20_000, 10_000, 200_000) == 200_001  # settled without its 6,000 digits
    assert all(exact.comb_up_to(n, k, 10**6) == math.comb(n, k) for n in range(12) for k in range(n + 1))
    # 6! / (2! 2! 2!) = 90 assignments of six values to three groups of two
    assert exact._assignments_up_to([2, 2, 2], 100) == 90 and exact._assignments_up_to([2, 2, 2], 50) == 51
    assert exact._assignments_up_to([3, 3, 3], 1_000) == 1_001  # 9! / (3!)^3 = 1,680
