"""Intervals of a system's mean (crseval.statistics.intervals) stay inside the metric's range and say why
they have no width, model_metrics.csv carries them, and the bootstrap of the effect sizes counts the
resamples where a statistic is undefined."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from crseval.statistics import aggregate, column_registry, effects, intervals
from crseval.statistics.intervals import mean_interval

THESIS_SESSIONS = Path(__file__).parent / "data" / "score_reference" / "thesis.sessions.parquet"


def bounded(low: float, high: float):
    return st.lists(st.floats(low, high, allow_nan=False), min_size=2, max_size=30)


@settings(max_examples=150, deadline=None)
@given(bounded(0.0, 1.0))
def test_a_bootstrap_interval_of_values_in_0_1_stays_within_their_min_and_max(values):
    cell = mean_interval(values, kind="mean", resamples=2000, seed=1)
    assert min(values) <= cell["ci_low"] <= cell["ci_high"] <= max(values)


@settings(max_examples=150, deadline=None)
@given(bounded(1.0, 5.0), st.sampled_from(["mean", "proportion"]))
def test_an_interval_of_judge_scores_stays_within_their_min_and_max(values, kind):
    cell = mean_interval(values, kind=kind, resamples=2000, seed=2)
    assert min(values) <= cell["ci_low"] <= cell["ci_high"] <= max(values)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=2, max_size=40).filter(lambda v: 0 < sum(v) < len(v)))
def test_a_share_of_successes_gets_wilsons_interval(values):
    cell = mean_interval(values, kind="proportion", seed=0)
    low, high = proportion_confint(int(sum(values)), len(values), alpha=0.05, method="wilson")
    assert cell["ci_method"] == "Wilson" and cell["note"] == ""
    assert cell["ci_low"] == pytest.approx(low) and cell["ci_high"] == pytest.approx(high)
    assert 0 <= cell["ci_low"] <= cell["mean"] <= cell["ci_high"] <= 1


def test_wilson_by_hand():
    # 3 of 10, z = 1.959964: centre (0.3 + z^2 / 20) / (1 + z^2 / 10), the published 0.1078 and 0.6032
    low, high = intervals.wilson(3, 10)
    assert low == pytest.approx(0.1078, abs=1e-4) and high == pytest.approx(0.6032, abs=1e-4)


def test_a_share_that_is_not_all_zeros_and_ones_is_bootstrapped():
    cell = mean_interval([0.0, 0.5, 1.0, 1.0], kind="proportion", resamples=10_000, seed=0)
    assert cell["ci_method"] == "expanded percentile bootstrap, 10,000 resamples"
    # and 0/1 values of a metric that is no share (a count) are a mean, not a proportion
    counted = mean_interval([0, 1, 1, 0], kind="mean", resamples=500, seed=0)
    assert counted["ci_method"] == "expanded percentile bootstrap, 500 resamples"


def test_small_samples_say_why_they_have_no_interval_or_no_width():
    none = mean_interval([np.nan, np.nan], kind="mean", seed=0)
    assert math.isnan(none["mean"]) and math.isnan(none["ci_low"]) and none["n"] == 0 and none["note"] == "no values"
    one = mean_interval([0.4, np.nan], kind="mean", seed=0)
    assert one["mean"] == 0.4 and math.isnan(one["ci_low"]) and math.isnan(one["ci_high"])
    assert one["n"] == 1 and one["note"] == "one session: no interval" and one["ci_method"] == "none"
    # 0.1 three times: the float mean is 0.10000000000000002; the value itself is reported
    flat = mean_interval([0.1, 0.1, 0.1], kind="proportion", seed=0)
    assert flat["mean"] == flat["ci_low"] == flat["ci_high"] == 0.1
    assert flat["n"] == 3 and flat["note"] == "no spread (all sessions equal)"
    zeros = mean_interval([0.0] * 6, kind="proportion", seed=0)
    assert (zeros["ci_low"], zeros["ci_high"], zeros["note"]) == (0.0, 0.0, "no spread (all sessions equal)")


def test_the_bootstrap_is_seeded_and_does_not_depend_on_the_block_size(monkeypatch):
    values = np.random.default_rng(0).uniform(0, 1, 40)
    first = mean_interval(values, kind="mean", resamples=5000, seed=7)
    assert mean_interval(values, kind="mean", resamples=5000, seed=7) == first
    assert mean_interval(values, kind="mean", resamples=5000, seed=8) != first
    monkeypatch.setattr(intervals, "CHUNK_ELEMENTS", 1000)  # 25 rows a block instead of all 5,000
    assert list(intervals.chunks(5000, 40)) == [25] * 200
    assert mean_interval(values, kind="mean", resamples=5000, seed=7) == first


@pytest.mark.parametrize("n, low, high", [(6, 0.89, 0.96), (40, 0.92, 0.98)])
def test_the_bootstrap_interval_covers_the_mean_of_a_known_distribution(n, low, high):
    """Sessions drawn from a uniform [0, 1]: the 95% interval of their mean holds 0.5 about as often as
    the t interval does (0.92 at 6 sessions, 0.95 at 40; the plain percentile interval 0.86 at 6)."""
    rng = np.random.default_rng(11)
    covered = [
        (cell := mean_interval(rng.uniform(0, 1, n), kind="mean", resamples=2000, seed=k))["ci_low"]
        <= 0.5
        <= cell["ci_high"]
        for k in range(500)
    ]
    assert low <= np.mean(covered) <= high


def test_the_expanded_tail_widens_small_samples_only():
    # n = 6: t(0.975, 5) = 2.5706 times sqrt(6 / 5): Phi(-2.8159) = 0.00243; large n: back to 0.025
    assert intervals.expanded_tail(6) == pytest.approx(0.00243, abs=1e-5)
    assert intervals.expanded_tail(10_000) == pytest.approx(0.025, abs=1e-4)


def test_wrong_arguments_are_named():
    with pytest.raises(ValueError, match="interval kind 'share'"):
        mean_interval([1.0, 2.0], kind="share", seed=0)
    with pytest.raises(ValueError, match="resamples must be at least 1, not 0"):
        mean_interval([1.0, 2.0], kind="mean", resamples=0, seed=0)
    with pytest.raises(ValueError, match="infinite values"):
        mean_interval([1.0, math.inf], kind="mean", seed=0)


# ------------------------------------------------------------------ model_metrics.csv


def declared_range(unit: str) -> tuple[float, float] | None:
    """The numeric range of a unit written "0-1", "1-5" or "-1 to 1"; None for a unit."""
    found = re.fullmatch(r"(-?\d+(?:\.\d+)?)(?:-| to )(-?\d+(?:\.\d+)?)", unit)
    return (float(found[1]), float(found[2])) if found else None


def test_declared_ranges_are_read_only_where_written():
    assert declared_range("0-1") == (0, 1) and declared_range("-1 to 1") == (-1, 1) and declared_range("1-5") == (1, 5)
    assert declared_range("-gamma to alpha + beta") is None and declared_range("turns") is None


@pytest.fixture(scope="module")
def thesis_metrics() -> tuple[pd.DataFrame, pd.DataFrame]:
    sessions = pd.read_parquet(THESIS_SESSIONS)
    return sessions, aggregate.model_metrics(sessions, resamples=10_000, seed=11)


def test_every_interval_of_the_thesis_logs_lies_in_the_metrics_range_and_its_data(thesis_metrics):
    sessions, table = thesis_metrics
    checked = 0
    for metric in aggregate.metric_columns(sessions):
        name, span = column_registry.thesis_name(metric), declared_range(column_registry.session_column(metric).unit)
        for row in table.itertuples(index=False):
            row = row._asdict()
            values = sessions.loc[sessions.system == row["model"], metric].dropna()
            assert row[f"{name}_n"] == len(values)
            if len(values) < 2:
                assert math.isnan(row[f"{name}_ci_low"]) and math.isnan(row[f"{name}_ci_high"])
                continue
            low, high = row[f"{name}_ci_low"], row[f"{name}_ci_high"]
            assert values.min() <= low <= high <= values.max(), (metric, row["model"])
            if span:
                assert span[0] <= low and high <= span[1], (metric, row["model"])
            assert (low == high) == (values.nunique() == 1), (metric, row["model"])
            assert (row[f"{name}_note"] == "no spread (all sessions equal)") == (low == high)
            checked += 1
    assert checked > 400


def test_model_metrics_columns_per_metric(thesis_metrics):
    _, table = thesis_metrics
    suffixes = ("", "_ci_low", "_ci_high", "_n", "_ci_method", "_note")
    start = list(table.columns).index("tas")
    assert list(table.columns[start : start + 6]) == [f"tas{s}" for s in suffixes]
    bootstrapped = table["tas_ci_method"] == "expanded percentile bootstrap, 10,000 resamples"
    assert bootstrapped.sum() >= 6 and (table.loc[~bootstrapped, "tas_ci_method"] == "none").all()
    assert (table.loc[~bootstrapped, "tas_note"] != "").all() and (table.loc[bootstrapped, "tas_note"] == "").all()
    assert aggregate.interval_kind("recovery_rate_cosine") == "proportion"
    assert aggregate.interval_kind("judge_coherence") == aggregate.interval_kind("tas") == "mean"


# ------------------------------------------------------------------ effect sizes: undefined resamples, counted draws


def test_undefined_resamples_are_counted():
    # two sessions of 1.0 and one of 2.0 each: a resample of three equal values has no SD
    a, b = [1.0, 1.0, 2.0], [2.0, 2.0, 3.0]
    counted = effects.two_sample_counted(effects.hedges_g_batch, a, b, resamples=4000, seed=3)
    assert 0 < counted.undefined < 4000
    # g needs a pooled SD: undefined where both resamples have no spread, each with (2/3)^3 + (1/3)^3 = 1/3
    assert counted.undefined / 4000 == pytest.approx(1 / 9, abs=0.02)
    diff = [0.5, 0.5, 1.0]
    paired = effects.paired_sample_counted(effects.cohens_dz_batch, diff, resamples=4000, seed=3)
    assert paired.undefined / 4000 == pytest.approx(1 / 3, abs=0.03)
    spread = effects.two_sample_counted(effects.hedges_g_batch, np.arange(10.0), np.arange(10.0) + 2, 2000, 1)
    assert spread.undefined == 0  # ten distinct values: a resample without spread has odds 10^-9


@pytest.mark.parametrize("n", [2, 3, 8, 40])
def test_rank_statistics_from_counts_equal_the_ranked_ones(n):
    """Cliff's delta and the paired rank-biserial correlation are bootstrapped from counts per value;
    the same resamples ranked row by row (a statistic the bootstrap does not recognise) give the same draws."""
    rng = np.random.default_rng(n)
    a, b = rng.integers(0, 4, n).astype(float), rng.normal(size=n + 2).round(1)
    counted = effects.two_sample_counted(effects.cliffs_delta_batch, a, b, 3000, 5)
    ranked = effects.two_sample_counted(lambda x, y: effects.cliffs_delta_batch(x, y), a, b, 3000, 5)
    assert counted.undefined == ranked.undefined and np.allclose(counted[:3], ranked[:3])
    diff = rng.integers(-2, 3, n).astype(float)
    diff[0] = 1.0  # at least one non-zero difference
    counted = effects.paired_sample_counted(effects.rank_biserial_paired_batch, diff, 3000, 5)
    ranked = effects.paired_sample_counted(lambda d: effects.rank_biserial_paired_batch(d), diff, 3000, 5)
    assert counted.undefined == ranked.undefined and np.allclose(counted[:3], ranked[:3], equal_nan=True)


def test_effect_bootstrap_does_not_depend_on_the_block_size(monkeypatch):
    rng = np.random.default_rng(4)
    a, b, diff = rng.normal(size=30), rng.normal(size=25), rng.normal(size=30)
    before = [
        effects.two_sample_counted(effects.cliffs_delta_batch, a, b, 3000, 9),
        effects.two_sample_counted(effects.hedges_g_batch, a, b, 3000, 9),
        effects.paired_sample_counted(effects.rank_biserial_paired_batch, diff, 3000, 9),
    ]
    monkeypatch.setattr(intervals, "CHUNK_ELEMENTS", 500)
    after = [
        effects.two_sample_counted(effects.cliffs_delta_batch, a, b, 3000, 9),
        effects.two_sample_counted(effects.hedges_g_batch, a, b, 3000, 9),
        effects.paired_sample_counted(effects.rank_biserial_paired_batch, diff, 3000, 9),
    ]
    assert after == before
