"""Spearman correlation of metrics with judge scores, pooled and within systems: hand values on small
written samples, scipy for the pooled rho, and bounds."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from crseval.statistics import correlation


def sessions(values: dict[str, tuple[list, list]]) -> pd.DataFrame:
    """A sessions table from {system: (metric values, judge values)}."""
    return pd.DataFrame(
        [{"system": s, "m": x, "judge_coherence": y} for s, (xs, ys) in values.items() for x, y in zip(xs, ys)]
    )


# Two systems: b is higher than a on both columns, but within each system the higher metric goes with
# the lower judge score. Pooled ranks: x 1..8; y 4,2,3,1 | 8,6,7,5; sum d^2 = 4 * 9 = 36.
REVERSED = {"a": ([1, 2, 3, 4], [4, 2, 3, 1]), "b": ([11, 12, 13, 14], [14, 12, 13, 11])}


def test_pooled_rho_is_positive_while_within_systems_the_association_is_reversed():
    (row,) = correlation.correlation_table(
        sessions(REVERSED), ["m"], ["judge_coherence"], resamples=200, seed=0
    ).to_dict("records")
    assert row["n"] == 8 and row["systems"] == 2
    assert row["rho"] == pytest.approx(1 - 6 * 36 / (8 * 63))  # 4/7
    # residuals of the ranks on each system's mean rank: x -1.5, -0.5, 0.5, 1.5 and y 1.5, -0.5, 0.5, -1.5 in
    # both systems: sum xy = 2 * (-4), sum x^2 = sum y^2 = 2 * 5
    assert row["rho_within"] == pytest.approx(-0.8)
    # partial correlation on 2 systems: t = r sqrt((n - k - 1) / (1 - r^2)) with 8 - 2 - 1 = 5 df
    t = -0.8 * math.sqrt(5 / 0.36)
    assert row["p_within"] == pytest.approx(2 * sps.t.sf(abs(t), 5))
    assert row["rho"] > 0 > row["rho_within"]


def test_within_rho_is_the_correlation_of_rank_residuals_on_system_dummies():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "system": np.repeat(["a", "b", "c"], [7, 5, 9]),
            "m": rng.normal(size=21).round(1),
            "judge_coherence": rng.integers(1, 6, 21).astype(float),
        }
    )
    (row,) = correlation.correlation_table(frame, ["m"], ["judge_coherence"], resamples=50, seed=1).to_dict("records")
    dummies = pd.get_dummies(frame["system"]).to_numpy(float)  # the systems' indicators span the intercept

    def residual(column: str) -> np.ndarray:
        ranks = sps.rankdata(frame[column])
        return ranks - dummies @ np.linalg.lstsq(dummies, ranks, rcond=None)[0]

    assert row["rho_within"] == pytest.approx(np.corrcoef(residual("m"), residual("judge_coherence"))[0, 1])
    rho, p = sps.spearmanr(frame["m"], frame["judge_coherence"])
    assert (row["rho"], row["p"]) == pytest.approx((rho, p))


def test_the_vectorised_resample_rho_is_scipys_spearman_of_each_resample():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=30), rng.integers(1, 6, 30).astype(float)  # ties in y
    index = rng.integers(0, 30, (20, 30))
    rows = correlation._rhos(correlation._standardised(x[index], None), correlation._standardised(y[index], None))
    assert rows == pytest.approx([sps.spearmanr(x[i], y[i]).statistic for i in index])


def test_resampled_ranks_from_counts_are_the_midranks_of_each_resample():
    # column 5, 1, 5, 3 (codes 2, 0, 2, 1); resample of sessions 0, 0, 1, 3 draws 5, 5, 1, 3: ranks 3.5, 3.5, 1, 2;
    # resample 2, 2, 2, 2 draws 5 four times: every rank is (0 + 4 + 1) / 2 = 2.5
    codes, size = correlation._codes(np.array([5.0, 1.0, 5.0, 3.0]))
    index = np.array([[0, 0, 1, 3], [2, 2, 2, 2]])
    ranks = correlation._resampled_ranks(codes, size, index)
    assert ranks.tolist() == [[3.5, 3.5, 1.0, 2.0], [2.5, 2.5, 2.5, 2.5]]
    rng = np.random.default_rng(8)
    column = rng.integers(0, 6, 40).astype(float)  # many ties
    index = rng.integers(0, 40, (50, 40))
    codes, size = correlation._codes(column)
    assert np.array_equal(correlation._resampled_ranks(codes, size, index), sps.rankdata(column[index], axis=1))


def test_bootstrap_is_seeded_and_its_ci_covers_the_pooled_rho():
    rng = np.random.default_rng(0)
    x = rng.normal(size=80)
    frame = pd.DataFrame(
        {"system": np.repeat(["a", "b"], 40), "m": x, "judge_coherence": x + rng.normal(size=80), "other": x}
    )
    first = correlation.correlation_table(frame, ["m", "other"], ["judge_coherence"], resamples=500, seed=11)
    again = correlation.correlation_table(frame, ["m", "other"], ["judge_coherence"], resamples=500, seed=11)
    pd.testing.assert_frame_equal(first, again)
    other = correlation.correlation_table(frame, ["m"], ["judge_coherence"], resamples=500, seed=12)
    assert other.loc[0, "ci_low"] != first.loc[0, "ci_low"]
    row = first.iloc[0]
    assert row["ci_low"] < row["rho"] < row["ci_high"] and row["rho_within_ci_low"] < row["rho_within_ci_high"]
    assert row["undefined_resamples"] == 0 and row["undefined_resamples_within"] == 0
    # a metric equal to another on the same sessions shares its resamples: identical rows
    assert first.iloc[1].drop("metric").equals(row.drop("metric"))


def test_resamples_where_rho_is_undefined_are_counted_and_left_out():
    # pooled: the one 1 is missed by (4/5)^5 = 32.8 % of the resamples of five sessions: x constant there
    frame = sessions({"a": ([0, 0, 0, 0, 1], [1, 2, 3, 4, 5])})
    row = correlation.correlation_table(frame, ["m"], ["judge_coherence"], resamples=4000, seed=2).iloc[0]
    assert row["undefined_resamples"] / 4000 == pytest.approx(0.8**5, abs=0.03)
    # within: two systems of two sessions; a system's resample repeats one session with probability 1/2, and
    # rho is undefined only when both do (1/4); otherwise y follows x in each system: rho_within = 1
    frame = sessions({"a": ([1, 2], [1, 2]), "b": ([5, 6], [7, 8])})
    row = correlation.correlation_table(frame, ["m"], ["judge_coherence"], resamples=4000, seed=2).iloc[0]
    assert row["undefined_resamples_within"] / 4000 == pytest.approx(0.25, abs=0.03)
    assert [row["rho_within"], row["rho_within_ci_low"], row["rho_within_ci_high"]] == pytest.approx([1, 1, 1])
    assert row["p_within"] == pytest.approx(0.0, abs=1e-9)


def test_too_few_sessions_and_constant_columns_give_nan_not_a_value():
    frame = sessions({"a": ([1.0, np.nan, 3.0], [4.0, 3.0, np.nan]), "b": ([1.0, 2.0, 3.0], [4.0, 4.0, 4.0])})
    table = correlation.correlation_table(frame, ["m", "absent"], ["judge_coherence"], resamples=20, seed=0)
    assert list(table["metric"]) == ["m"]  # a column the table lacks gives no row
    row = table.iloc[0]
    assert row["n"] == 4 and row["systems"] == 2  # two sessions of a lack a value
    assert math.isnan(row["rho"]) and math.isnan(row["rho_within"]) and row["undefined_resamples"] == 20
    tiny = correlation.correlation_table(frame.iloc[:2], ["m"], ["judge_coherence"], resamples=20, seed=0).iloc[0]
    assert tiny["n"] == 1 and math.isnan(tiny["ci_low"]) and pd.isna(tiny["undefined_resamples"])
    with pytest.raises(KeyError, match="system"):
        correlation.correlation_table(frame.drop(columns="system"), ["m"], ["judge_coherence"], seed=0)
    with pytest.raises(ValueError, match="resamples=0"):
        correlation.correlation_table(frame, ["m"], ["judge_coherence"], resamples=0, seed=0)


def test_partial_p_by_hand():
    # r = 0.5, n = 10, k = 3: 6 df, t = 0.5 sqrt(6 / 0.75) = sqrt(2)
    assert correlation.partial_p(0.5, 10, 3) == pytest.approx(2 * sps.t.sf(math.sqrt(2), 6))
    assert math.isnan(correlation.partial_p(0.5, 4, 3))  # no degree of freedom left


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("abc"), st.integers(0, 4), st.integers(1, 5)),
        min_size=3,
        max_size=25,
    ),
    st.integers(0, 2**16),
)
def test_every_rho_and_bound_lies_in_minus_one_to_one(rows, seed):
    frame = pd.DataFrame(rows, columns=["system", "m", "judge_coherence"]).astype({"m": float})
    row = correlation.correlation_table(frame, ["m"], ["judge_coherence"], resamples=30, seed=seed).iloc[0]
    for name in ("rho", "ci_low", "ci_high", "rho_within", "rho_within_ci_low", "rho_within_ci_high"):
        assert math.isnan(row[name]) or -1 <= row[name] <= 1
    for low, high in (("ci_low", "ci_high"), ("rho_within_ci_low", "rho_within_ci_high")):
        assert math.isnan(row[low]) or row[low] <= row[high]
    for name in ("p", "p_within"):
        assert math.isnan(row[name]) or 0 <= row[name] <= 1
    assert 0 <= row["undefined_resamples"] <= 30 and 0 <= row["undefined_resamples_within"] <= 30
