"""Post-hoc pairwise comparisons: Tukey HSD against statsmodels (which reports b - a), Games-Howell
by hand on a small written data set, a printed table value of the studentized range, and the
pairs that cannot be tested."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import studentized_range
from statsmodels.stats.multicomp import MultiComparison

from crseval.statistics import posthoc

# three systems of unequal sizes, written out so every number below can be recomputed by hand
GROUPS = {
    "gamma": np.array([4.0, 6.0, 5.0, 7.0, 8.0, 6.0]),
    "alpha": np.array([1.0, 2.0, 3.0, 4.0]),
    "beta": np.array([2.0, 4.0, 6.0, 9.0, 11.0]),
}


def statsmodels_result(groups, alpha, use_var):
    names = sorted(groups)
    values = np.concatenate([groups[name] for name in names])
    labels = np.concatenate([[name] * len(groups[name]) for name in names])
    return MultiComparison(values, labels).tukeyhsd(alpha=alpha, use_var=use_var)


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_tukey_equals_statsmodels_with_the_sign_flipped(alpha):
    table = posthoc.tukey_hsd(GROUPS, alpha)
    reference = statsmodels_result(GROUPS, alpha, "equal")
    assert list(zip(table["system_a"], table["system_b"])) == [("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")]
    assert list(table.columns) == posthoc.COLUMNS
    np.testing.assert_allclose(table["mean_diff"], -reference.meandiffs, rtol=1e-12)
    np.testing.assert_allclose(table["p_adj"], reference.pvalues, rtol=1e-8)
    np.testing.assert_allclose(table["ci_low"], -reference.confint[:, 1], rtol=1e-8)
    np.testing.assert_allclose(table["ci_high"], -reference.confint[:, 0], rtol=1e-8)
    assert table["reject"].tolist() == reference.reject.tolist()
    # statsmodels' std_pairs is the SE on the studentized-range scale, se / sqrt(2)
    np.testing.assert_allclose(table["se"] / math.sqrt(2), reference.std_pairs, rtol=1e-12)
    assert (table["df"] == 15 - 3).all()


def test_tukey_interval_uses_the_printed_table_value_of_the_studentized_range():
    # 3 groups of 5, df = 12: q(0.95; 3, 12) = 3.773 in every printed table; half-width q * sqrt(MSE / n)
    groups = {"a": np.array([1.0, 2, 3, 4, 5]), "b": np.array([2.0, 3, 4, 5, 6]), "c": np.array([6.0, 7, 8, 9, 10])}
    mse = 2.5  # each group's variance is 2.5
    table = posthoc.tukey_hsd(groups, 0.05)
    half_width = (table["ci_high"] - table["ci_low"]) / 2
    np.testing.assert_allclose(half_width, 3.773 * math.sqrt(mse / 5), rtol=2e-4)
    # a - c = -5 over se sqrt(2.5 * 2 / 5) = 1: q = 5 sqrt(2) = 7.07 > 3.773, rejected; a - b: q = 1.41, not
    assert table.loc[1, "statistic"] == pytest.approx(5 * math.sqrt(2))
    assert table["reject"].tolist() == [False, True, True]


def test_games_howell_by_hand():
    table = posthoc.games_howell(GROUPS, 0.05)
    # alpha: mean 2.5, variance 5/3, n 4; beta: mean 6.4, variance 13.3, n 5; gamma: mean 6, variance 2, n 6
    by_hand = {"alpha": (2.5, 5 / 3, 4), "beta": (6.4, 13.3, 5), "gamma": (6.0, 2.0, 6)}
    for name, (mean, variance, n) in by_hand.items():
        assert GROUPS[name].mean() == pytest.approx(mean) and GROUPS[name].var(ddof=1) == pytest.approx(variance)
    for row in table.itertuples():
        (mean_a, var_a, n_a), (mean_b, var_b, n_b) = by_hand[row.system_a], by_hand[row.system_b]
        share_a, share_b = var_a / n_a, var_b / n_b
        se = math.sqrt(share_a + share_b)
        df = (share_a + share_b) ** 2 / (share_a**2 / (n_a - 1) + share_b**2 / (n_b - 1))
        q = math.sqrt(2) * abs(mean_a - mean_b) / se
        half_width = studentized_range.ppf(0.95, 3, df) / math.sqrt(2) * se
        assert (row.n_a, row.n_b) == (n_a, n_b)
        assert row.mean_diff == pytest.approx(mean_a - mean_b)
        assert (row.se, row.df, row.statistic) == pytest.approx((se, df, q))
        assert row.p_adj == pytest.approx(studentized_range.sf(q, 3, df))
        assert (row.ci_low, row.ci_high) == pytest.approx((mean_a - mean_b - half_width, mean_a - mean_b + half_width))
    # alpha vs gamma by hand: se = sqrt(5/12 + 1/3) = sqrt(0.75), df = 0.5625 / ((5/12)^2 / 3 + (1/3)^2 / 5)
    alpha_gamma = table.iloc[1]
    assert alpha_gamma.se == pytest.approx(math.sqrt(0.75))
    assert alpha_gamma.df == pytest.approx(0.5625 / (25 / 144 / 3 + 1 / 9 / 5))
    assert alpha_gamma.statistic == pytest.approx(3.5 * math.sqrt(2) / math.sqrt(0.75))


def test_games_howell_agrees_with_statsmodels_unequal_variances():
    table = posthoc.games_howell(GROUPS, 0.05)
    reference = statsmodels_result(GROUPS, 0.05, "unequal")
    np.testing.assert_allclose(table["mean_diff"], -reference.meandiffs, rtol=1e-12)
    np.testing.assert_allclose(table["df"], reference.df_total, rtol=1e-10)
    np.testing.assert_allclose(table["p_adj"], reference.pvalues, rtol=1e-8)


def test_pairs_without_spread_are_untested_not_rejected():
    table = posthoc.games_howell({"a": [1.0, 1.0, 1.0], "b": [2.0, 2.0, 2.0], "c": [1.0, 2.0, 3.0]}, 0.05)
    untested = table.iloc[0]
    assert math.isnan(untested.p_adj) and math.isnan(untested.statistic) and math.isnan(untested.ci_low)
    assert untested.reject is pd.NA
    assert table["reject"].dtype == "boolean" and table.loc[1:, "reject"].notna().all()


def test_inputs_the_tests_cannot_use_raise_clearly():
    with pytest.raises(ValueError, match="two or more groups"):
        posthoc.tukey_hsd({"a": np.array([1.0, 2.0])}, 0.05)
    with pytest.raises(ValueError, match="'b' must be a 1-D array of finite values"):
        posthoc.tukey_hsd({"a": np.array([1.0, 2.0]), "b": np.array([1.0, math.nan])}, 0.05)
    with pytest.raises(ValueError, match="Games-Howell needs 2 or more values per group: 'b' has 1"):
        posthoc.games_howell({"a": np.array([1.0, 2.0]), "b": np.array([3.0])}, 0.05)
    with pytest.raises(ValueError, match="no within-group degrees of freedom"):
        posthoc.tukey_hsd({"a": np.array([1.0]), "b": np.array([3.0])}, 0.05)
    with pytest.raises(ValueError, match="alpha"):
        posthoc.tukey_hsd(GROUPS, 1.5)
