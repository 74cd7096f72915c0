"""Statistics on synthetic data: a known difference is found, no difference gives no more false
positives than the stated level; aggregation tables and confidence intervals."""

import math

import numpy as np
import pandas as pd
import pytest

from crseval.analysis import stats
from crseval.analysis.aggregate import mean_ci, model_metrics, to_table


def synthetic(seed, shift=0.0, n=30):
    rng = np.random.default_rng(seed)
    rows = []
    for system, offset in (("a", 0.0), ("b", 0.0), ("c", shift)):
        for i in range(n):
            rows.append({"system": system, "session_index": i, "metric": rng.normal(1.0 + offset, 0.5)})
    return pd.DataFrame(rows)


def test_a_real_difference_is_found_by_anova_and_tukey():
    frame = synthetic(1, shift=1.0)
    result = stats.omnibus(frame, "metric")
    assert result["anova_p"] < 1e-6 and result["kruskal_p"] < 1e-4 and result["welch_p"] < 1e-6
    assert 0.3 < result["eta_squared"] < 0.9
    table = stats.tukey(frame, "metric")
    rejected = {(r.system_a, r.system_b) for r in table.itertuples() if r.reject}
    assert rejected == {("a", "c"), ("b", "c")}


def test_no_difference_gives_at_most_the_stated_false_positive_rate():
    repeats = 100
    anova_hits = sum(stats.omnibus(synthetic(seed), "metric")["anova_p"] < 0.05 for seed in range(repeats))
    tukey_hits = sum(stats.tukey(synthetic(seed), "metric")["reject"].astype(bool).any() for seed in range(repeats))
    # expected 5 % (5 of 100); the binomial 99 % upper bound is 11
    assert anova_hits <= 11 and tukey_hits <= 11


def test_paired_tests_use_the_same_sessions():
    rng = np.random.default_rng(3)
    base = rng.normal(0, 1, 25)
    frame = pd.DataFrame(
        [
            {"system": s, "session_index": i, "metric": base[i] + (0.3 if s == "b" else 0.0) + rng.normal(0, 0.05)}
            for s in ("a", "b")
            for i in range(25)
        ]
    )
    (row,) = stats.paired(frame, "metric")
    assert row["pairs"] == 25 and row["mean_diff"] == pytest.approx(-0.3, abs=0.05)
    assert row["wilcoxon_p"] < 1e-4 and row["paired_t_p"] < 1e-10
    # unpaired, the session-to-session spread hides the same difference
    assert stats.omnibus(frame, "metric")["anova_p"] > 0.05


def test_spearman_bootstrap_is_seeded_and_covers_rho():
    rng = np.random.default_rng(5)
    x = rng.normal(size=60)
    y = x + rng.normal(scale=0.5, size=60)
    first = stats.spearman_bootstrap(x, y, resamples=300, seed=11)
    assert first == stats.spearman_bootstrap(x, y, resamples=300, seed=11)
    assert first["ci_low"] < first["rho"] < first["ci_high"] and first["rho"] > 0.7
    assert math.isnan(stats.spearman_bootstrap(x, np.ones(60), resamples=10, seed=1)["rho"])


def test_assumption_checks_pick_the_test():
    rng = np.random.default_rng(7)
    skewed = pd.DataFrame([{"system": s, "metric": v} for s in ("a", "b") for v in rng.exponential(1.0, 40) ** 3])
    assert stats.omnibus(skewed, "metric")["recommended"] == "kruskal"
    assert stats.omnibus(synthetic(2), "metric")["recommended"] in ("anova", "welch")
    assert stats.omnibus(pd.DataFrame({"system": ["a", "b"], "metric": [1.0, 2.0]}), "metric")["note"]


def test_mean_ci_by_hand():
    mean, low, high, n = mean_ci(pd.Series([1.0, 2.0, 3.0, np.nan]))
    half = 4.302652729911275 * 1.0 / math.sqrt(3)  # t(0.975, 2) * sd / sqrt(n)
    assert (mean, n) == (2.0, 3) and low == pytest.approx(2 - half) and high == pytest.approx(2 + half)
    assert math.isnan(mean_ci(pd.Series([5.0]))[1])


def test_model_metrics_names_and_explicit_types():
    sessions = pd.DataFrame(
        {
            "system": ["x", "x", "y"],
            "session_id": ["x/1", "x/2", "y/1"],
            "session_index": [1, 2, 1],
            "tas": [0.1, 0.3, 0.5],
            "judge_coherence": [4.0, np.nan, 5.0],
            "judge_valid_samples": [1, 0, 1],
            "judge_missing_reason": [None, "not JSON", None],
        }
    )
    table = model_metrics(sessions)
    assert list(table["model"]) == ["x", "y"]
    assert (
        table.loc[0, "tas"] == pytest.approx(0.2)
        and table.loc[0, "coherence"] == 4.0
        and table.loc[0, "coherence_n"] == 1
    )
    assert table.loc[0, "judge_missing_share"] == 0.5
    arrow = to_table(sessions.assign(tas=[np.nan, np.nan, np.nan]))
    assert str(arrow.schema.field("tas").type) == "double" and str(arrow.schema.field("session_index").type) == "int64"
    assert str(arrow.schema.field("judge_missing_reason").type) == "string"


def test_systems_without_values_are_left_out_and_named():
    frame = pd.concat(
        [
            synthetic(4, shift=1.0),
            pd.DataFrame({"system": ["d", "d"], "session_index": [0, 1], "metric": [np.nan, np.nan]}),
        ]
    )
    result = stats.omnibus(frame, "metric")
    assert result["systems"] == 3 and result["left_out"] == "d" and "d" in result["note"] and result["anova_p"] < 1e-6
