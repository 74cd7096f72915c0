"""Paired comparison of two runs (crseval.runs.paired): means, differences and exact Wilcoxon p-values worked
out by hand on tables of a few users, every verdict, trials averaged per user over the trials both runs have,
renamed systems, users in one run only, tolerances, the family of p_adj, and the sessions that changed most."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crseval.runs import paired
from crseval.runs.paired import CHANGED_COLUMNS, PAIRED_COLUMNS, changed_sessions, paired_table, unmatched
from crseval.statistics import column_registry, intervals
from crseval.statistics.analysis_plan import AnalysisPlan

PLAN = AnalysisPlan(
    alpha=0.05, scope="report", method="holm", min_sessions=3, small_sample=10, resamples=500, permutations=500, seed=5
)
NAN = math.nan


def sessions(system: str, metrics: dict[str, list], *, users: list[int] | None = None, trials=None) -> pd.DataFrame:
    """A sessions table of one system: user u is session index u with seed 100 + u."""
    count = len(next(iter(metrics.values())))
    users = list(range(count)) if users is None else users
    table = {
        "system": system,
        "session_id": [f"{system}/s{u:05d}" for u in users],
        "session_index": users,
        "seed": [100 + u for u in users],
        "shard": 0,
    }
    if trials is not None:
        table["trial"] = trials
    return pd.DataFrame({**table, **{name: np.asarray(values, dtype=float) for name, values in metrics.items()}})


def one(table: pd.DataFrame, system: str, metric: str) -> pd.Series:
    rows = table[(table["system"] == system) & (table["metric"] == metric)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_the_metrics_used_here_are_registered_with_these_directions():
    assert column_registry.session_column("tas").higher_is_better is True
    assert column_registry.session_column("repeat_rate").higher_is_better is False
    assert column_registry.session_column("response_words").higher_is_better is None
    assert column_registry.session_column("success").unit == "0-1"


def test_four_users_means_diff_exact_p_and_not_testable():
    baseline = sessions("oracle", {"tas": [1.0, 2.0, 3.0, 4.0]})
    run = sessions("oracle", {"tas": [1.5, 2.5, 2.0, 5.0]})
    row = one(paired_table(baseline, run, metrics=["tas"], plan=PLAN), "oracle", "tas")
    # differences 0.5, 0.5, -1, 1: midranks of |d| 1.5, 1.5, 3.5, 3.5, T+ = 6.5, null mean 5. Of the 16 sign
    # flips only the four with T+ = 5 (one 1.5 and one 3.5 positive) are less extreme than |6.5 - 5|: p = 12/16.
    assert (row["users"], row["baseline_mean"], row["run_mean"]) == (4, 2.5, 2.75)
    assert row["diff"] == pytest.approx(0.25)
    assert row["p"] == pytest.approx(12 / 16)
    assert row["min_p"] == pytest.approx(2 / 16)  # 0.125 > 0.05 whatever the data
    assert not row["testable"]
    assert row["verdict"] == "not testable at this n" and not row["flag"]
    assert "0.125" in row["note"]
    assert (row["label"], row["direction"], row["run_system"]) == ("grounded TAS", "higher", "oracle")
    expected = intervals.mean_interval([0.5, 0.5, -1.0, 1.0], kind="mean", resamples=PLAN.resamples, seed=PLAN.seed)
    assert (row["ci_low"], row["ci_high"], row["ci_method"]) == (
        expected["ci_low"],
        expected["ci_high"],
        expected["ci_method"],
    )
    assert -1.0 <= row["ci_low"] < 0.25 < row["ci_high"] <= 1.0
    assert math.isnan(row["events"]) and row["tolerance"] == 0.0
    assert list(paired_table(baseline, run, metrics=["tas"], plan=PLAN).columns) == list(PAIRED_COLUMNS)


def test_six_users_all_worse_is_a_regression_at_p_2_over_64():
    baseline = sessions("oracle", {"tas": [10, 20, 30, 40, 50, 60]})
    run = sessions("oracle", {"tas": [9, 18, 27, 36, 45, 54]})
    row = one(paired_table(baseline, run, metrics=["tas"], plan=PLAN), "oracle", "tas")
    assert (row["users"], row["baseline_mean"], row["run_mean"], row["diff"]) == (6, 35.0, 31.5, -3.5)
    assert row["p"] == pytest.approx(2 / 64) and row["min_p"] == pytest.approx(2 / 64)
    assert row["p_adj"] == pytest.approx(2 / 64)  # a family of one
    assert row["testable"] and row["verdict"] == "regression" and row["flag"]


def test_improvement_in_either_direction():
    baseline = sessions("oracle", {"tas": [10, 20, 30, 40, 50, 60], "repeat_rate": [0.5] * 6})
    run = sessions("oracle", {"tas": [11, 22, 33, 44, 55, 66], "repeat_rate": [0.25] * 6})
    table = paired_table(baseline, run, metrics=["tas", "repeat_rate"], plan=PLAN)
    tas, repeats = one(table, "oracle", "tas"), one(table, "oracle", "repeat_rate")
    assert tas["diff"] == 3.5 and tas["verdict"] == "improvement" and not tas["flag"]
    # six equal differences -0.25: tied midranks 3.5, T+ = 0, still only all + or all - as extreme
    assert repeats["diff"] == -0.25 and repeats["p"] == pytest.approx(2 / 64)
    assert repeats["direction"] == "lower" and repeats["verdict"] == "improvement" and not repeats["flag"]
    # Holm over the two rows: both p = 1/32, so each adjusted p is 2/32
    assert list(table["p_adj"]) == pytest.approx([2 / 32, 2 / 32])


def test_adjusted_flags_use_the_whole_comparison_as_one_family():
    worse = {"tas": [9, 18, 27, 36, 45, 54], "repeat_rate": [0.75] * 6}
    baseline = pd.concat([sessions(s, {"tas": [10, 20, 30, 40, 50, 60], "repeat_rate": [0.5] * 6}) for s in "ab"])
    run = pd.concat([sessions(s, worse) for s in "ab"])
    plain = paired_table(baseline, run, metrics=["tas", "repeat_rate"], plan=PLAN)
    assert list(plain["verdict"]) == ["regression"] * 4 and plain["flag"].all()
    assert list(plain["p_adj"]) == pytest.approx([4 / 32] * 4)  # Holm over four p = 1/32
    strict = paired_table(baseline, run, metrics=["tas", "repeat_rate"], plan=PLAN, adjusted=True)
    assert list(strict["verdict"]) == ["no difference found"] * 4 and not strict["flag"].any()
    assert "adjusted p 0.125" in strict["note"].iloc[0]
    by_metric = paired_table(
        baseline, run, metrics=["tas", "repeat_rate"], plan=AnalysisPlan(**{**PLAN.__dict__, "scope": "metric"})
    )
    assert list(by_metric["p_adj"]) == pytest.approx([2 / 32] * 4)  # two systems per metric's family


def test_identical_runs_have_no_test_and_a_zero_width_interval():
    baseline = pd.concat(
        [
            sessions("oracle", {"tas": [1, 2, 3], "success": [1, 0, 1]}, trials=[0, 0, 0]),
            sessions("kbrd", {"tas": [4, NAN, 6], "success": [0, 0, NAN]}, trials=[0, 0, 0]),
            sessions("kbrd", {"tas": [7, 8, 9], "success": [1, 1, 0]}, trials=[1, 1, 1]),
        ]
    )
    table = paired_table(baseline, baseline.copy(), metrics=["tas", "success"], plan=PLAN)
    assert list(table["system"]) == ["oracle", "oracle", "kbrd", "kbrd"]
    assert (table["verdict"] == "identical").all() and not table["flag"].any()
    assert (table["diff"] == 0).all() and (table["ci_low"] == 0).all() and (table["ci_high"] == 0).all()
    assert (table["ci_note"] == intervals.NO_SPREAD).all()
    assert table["p"].isna().all() and table["p_adj"].isna().all() and not table["testable"].any()
    assert list(table["users"]) == [3, 3, 3, 3]
    # success: oracle 1 + 0 + 1 ones per side; kbrd 0 + 0 (trial 0, one NaN) + 1 + 1 + 0 (trial 1) per side
    assert table["events"].isna().tolist() == [True, False, True, False]
    assert table["events"].tolist()[1::2] == [4.0, 4.0]


def test_a_rare_0_1_outcome_is_sparse_never_flagged_and_a_common_one_is():
    baseline, run = sessions("oracle", {"success": [1] * 6}), sessions("oracle", {"success": [0] * 6})
    row = one(paired_table(baseline, run, metrics=["success"], plan=PLAN), "oracle", "success")
    assert row["p"] == pytest.approx(2 / 64) and row["testable"] and row["diff"] == -1.0
    assert row["events"] == 6.0 and row["verdict"] == "sparse" and not row["flag"]
    assert row["note"] == "sparse: 6 events (flags need 10)"
    baseline, run = sessions("oracle", {"success": [1] * 12}), sessions("oracle", {"success": [0] * 12})
    row = one(paired_table(baseline, run, metrics=["success"], plan=PLAN), "oracle", "success")
    assert row["events"] == 12.0 and paired.MIN_EVENTS == 10
    assert row["p"] == pytest.approx(2 / 4096) and row["verdict"] == "regression" and row["flag"]


def test_a_metric_without_a_better_direction_is_reported_not_flagged():
    baseline = sessions("oracle", {"response_words": [20, 30, 40, 50, 60, 70], "no_such_metric": [1, 2, 3, 4, 5, 6]})
    run = sessions("oracle", {"response_words": [10, 20, 30, 40, 50, 60], "no_such_metric": [2, 3, 4, 5, 6, 7]})
    table = paired_table(baseline, run, metrics=["response_words", "no_such_metric"], plan=PLAN)
    words, unknown = one(table, "oracle", "response_words"), one(table, "oracle", "no_such_metric")
    assert words["diff"] == -10.0 and words["p"] == pytest.approx(2 / 64) and words["direction"] == "none"
    assert words["verdict"] == "no direction" and not words["flag"]
    assert unknown["direction"] == "none" and unknown["label"] == "no such metric"
    assert unknown["verdict"] == "no direction" and unknown["diff"] == 1.0


def test_trials_pair_by_number_and_are_averaged_per_user():
    # user 0: trial 1 has no run value, so both sides average trials 0 and 2: baseline (1 + 5) / 2 = 3 (not
    # (1 + 9 + 5) / 3 = 5), run (2 + 8) / 2 = 5. user 1: the run's trial 2 has no baseline trial: baseline
    # (4 + 6) / 2 = 5, run (6 + 10) / 2 = 8.
    baseline = sessions("oracle", {"tas": [1, 9, 5, 4, 6]}, users=[0, 0, 0, 1, 1], trials=[0, 1, 2, 0, 1])
    run = sessions("oracle", {"tas": [2, NAN, 8, 6, 10, 50]}, users=[0, 0, 0, 1, 1, 1], trials=[0, 1, 2, 0, 1, 2])
    row = one(paired_table(baseline, run, metrics=["tas"], plan=PLAN), "oracle", "tas")
    assert (row["users"], row["baseline_mean"], row["run_mean"], row["diff"]) == (2, 4.0, 6.5, 2.5)
    assert row["p"] == pytest.approx(2 / 4) and row["min_p"] == pytest.approx(2 / 4)
    assert row["verdict"] == "not testable at this n"


def test_a_run_without_trials_is_trial_0():
    baseline = sessions("oracle", {"tas": [1, 2, 100, 200]}, users=[0, 1, 0, 1], trials=[0, 0, 1, 1])
    run = sessions("oracle", {"tas": [2, 4]})
    row = one(paired_table(baseline, run, metrics=["tas"], plan=PLAN), "oracle", "tas")
    assert (row["users"], row["baseline_mean"], row["run_mean"]) == (2, 1.5, 3.0)


def test_trials_that_cancel_within_a_user_are_not_identical():
    baseline = sessions("oracle", {"tas": [1, 2]}, users=[0, 0], trials=[0, 1])
    run = sessions("oracle", {"tas": [2, 1]}, users=[0, 0], trials=[0, 1])
    row = one(paired_table(baseline, run, metrics=["tas"], plan=PLAN), "oracle", "tas")
    assert row["diff"] == 0.0 and math.isnan(row["p"])
    assert row["verdict"] == "no difference found" and "unchanged" in row["note"]


def test_renamed_systems_and_users_in_one_run_only():
    baseline = pd.concat(
        [
            sessions("oracle", {"tas": [1, 2, 3, 4, 5]}),
            sessions("kbrd", {"tas": [1, 2]}),
        ]
    )
    run = pd.concat(
        [
            sessions("oracle-v2", {"tas": [2, 3, 4, 5, 9]}, users=[0, 1, 2, 3, 7]),
            sessions("barcor", {"tas": [1, 2]}),
        ]
    )
    mapping = {"oracle-v2": "oracle"}
    table = paired_table(baseline, run, metrics=["tas"], plan=PLAN, system_map=mapping)
    assert list(table["system"]) == ["oracle"] and list(table["run_system"]) == ["oracle-v2"]
    row = table.iloc[0]
    assert (row["users"], row["baseline_mean"], row["run_mean"], row["diff"]) == (4, 2.5, 3.5, 1.0)
    assert "1 user only in the baseline" in row["note"] and "1 user only in the run" in row["note"]
    assert unmatched(baseline, run, mapping) == {
        "only_baseline": ["kbrd"],
        "only_run": ["barcor"],
        "users_only_baseline": {"oracle": 1},
        "users_only_run": {"oracle": 1},
    }
    assert unmatched(baseline, run)["only_run"] == ["oracle-v2", "barcor"]
    empty = paired_table(baseline, run, metrics=["tas"], plan=PLAN)
    assert empty.empty and list(empty.columns) == list(PAIRED_COLUMNS)


def test_a_metric_without_values_in_one_run_has_no_pairs():
    baseline = sessions("oracle", {"tas": [1, 2, 3], "repeat_rate": [0.1, 0.2, 0.3]})
    run = sessions("oracle", {"tas": [NAN, NAN, NAN], "repeat_rate": [0.1, NAN, 0.3]})
    table = paired_table(baseline, run, metrics=["tas", "repeat_rate", "not_in_either"], plan=PLAN)
    assert list(table["metric"]) == ["tas", "repeat_rate"]
    tas, repeats = one(table, "oracle", "tas"), one(table, "oracle", "repeat_rate")
    assert tas["users"] == 0 and tas["verdict"] == "no pairs" and math.isnan(tas["diff"]) and math.isnan(tas["p"])
    assert "3 users in both runs without a paired value" in tas["note"]
    assert repeats["users"] == 2 and repeats["verdict"] == "identical"


def test_a_difference_within_the_tolerance_is_not_flagged():
    baseline = sessions("oracle", {"tas": [10, 20, 30, 40, 50, 60], "repeat_rate": [0.5] * 6})
    run = sessions("oracle", {"tas": [9, 18, 27, 36, 45, 54], "repeat_rate": [0.75] * 6})
    metrics = ["tas", "repeat_rate"]
    table = paired_table(baseline, run, metrics=metrics, plan=PLAN, tolerance={"tas": 4, "*": 0.25})
    tas, repeats = one(table, "oracle", "tas"), one(table, "oracle", "repeat_rate")
    assert tas["tolerance"] == 4.0 and tas["verdict"] == "no difference found" and not tas["flag"]
    assert "|diff| 3.5 within the tolerance 4" in tas["note"]
    assert repeats["tolerance"] == 0.25 and repeats["verdict"] == "no difference found"  # |0.25| is not > 0.25
    table = paired_table(baseline, run, metrics=metrics, plan=PLAN, tolerance={"*": 3})
    assert list(table["tolerance"]) == [3.0, 3.0] and list(table["verdict"]) == ["regression", "no difference found"]
    with pytest.raises(ValueError, match="non-negative"):
        paired_table(baseline, run, metrics=metrics, plan=PLAN, tolerance={"tas": -1})


def test_rows_follow_the_baselines_systems_then_the_metrics_asked():
    baseline = pd.concat([sessions(s, {"tas": [1, 2], "repeat_rate": [0.1, 0.2]}) for s in ("zeta", "alpha")])
    run = pd.concat([sessions(s, {"tas": [1, 3], "repeat_rate": [0.1, 0.3]}) for s in ("alpha", "zeta")])
    table = paired_table(baseline, run, metrics=["repeat_rate", "tas"], plan=PLAN)
    assert list(zip(table["system"], table["metric"])) == [
        ("zeta", "repeat_rate"),
        ("zeta", "tas"),
        ("alpha", "repeat_rate"),
        ("alpha", "tas"),
    ]


def test_sessions_that_cannot_be_paired_unambiguously_are_an_error():
    twice = sessions("oracle", {"tas": [1, 2]}, users=[0, 0])
    with pytest.raises(ValueError, match="repeat"):
        paired_table(twice, twice, metrics=["tas"], plan=PLAN)
    run = pd.concat([sessions("a", {"tas": [1]}), sessions("b", {"tas": [1]})])
    with pytest.raises(ValueError, match="map to system"):
        paired_table(run, run, metrics=["tas"], plan=PLAN, system_map={"a": "b"})


# ------------------------------------------------------------------ swapping the runs


@st.composite
def two_runs(draw):
    """Two runs of the same users over two systems, with trials, missing values, ties and 0/1 outcomes."""
    users = draw(st.integers(1, 7))
    trials = draw(st.integers(1, 2))
    size = 2 * users * trials
    value = st.one_of(st.just(NAN), st.integers(0, 3).map(float))
    outcome = st.one_of(st.just(NAN), st.sampled_from([0.0, 1.0]))

    def run() -> pd.DataFrame:
        metrics = {
            "tas": draw(st.lists(value, min_size=size, max_size=size)),
            "repeat_rate": draw(st.lists(value, min_size=size, max_size=size)),
            "response_words": draw(st.lists(value, min_size=size, max_size=size)),
            "success": draw(st.lists(outcome, min_size=size, max_size=size)),
        }
        index = [u for u in range(users) for _ in range(trials)] * 2
        table = sessions("x", metrics, users=index, trials=list(range(trials)) * users * 2)
        table["system"] = ["a"] * (size // 2) + ["b"] * (size // 2)
        return table

    return run(), run()


SWAPPED = {"regression": "improvement", "improvement": "regression"}
# Benjamini-Hochberg here: statsmodels' Holm runs gc.collect() on every call (about 0.1 s), and the property
# holds for every method
QUICK = AnalysisPlan(**{**PLAN.__dict__, "method": "bh"})


@settings(max_examples=60, deadline=None)
@given(two_runs(), st.booleans())
def test_swapping_the_runs_negates_the_difference_and_swaps_the_flags(runs, adjusted):
    first, second = runs
    metrics = ["tas", "repeat_rate", "response_words", "success"]
    forward = paired_table(first, second, metrics=metrics, plan=QUICK, adjusted=adjusted)
    backward = paired_table(second, first, metrics=metrics, plan=QUICK, adjusted=adjusted)
    assert list(forward["users"]) == list(backward["users"])
    for column in ("p", "min_p", "p_adj", "events"):
        assert np.array_equal(forward[column], backward[column], equal_nan=True), column
    assert np.array_equal(forward["diff"], -backward["diff"], equal_nan=True)
    assert np.array_equal(forward["baseline_mean"], backward["run_mean"], equal_nan=True)
    assert np.allclose(forward["ci_low"], -backward["ci_high"], atol=1e-9, equal_nan=True)
    assert np.allclose(forward["ci_high"], -backward["ci_low"], atol=1e-9, equal_nan=True)
    assert [SWAPPED.get(v, v) for v in forward["verdict"]] == list(backward["verdict"])
    assert list(backward["flag"]) == [v == "improvement" for v in forward["verdict"]]


@settings(max_examples=30, deadline=None)
@given(two_runs())
def test_a_run_compared_with_itself_is_identical_wherever_it_has_values(runs):
    table = paired_table(runs[0], runs[0].copy(), metrics=["tas", "success"], plan=QUICK)
    assert not table["flag"].any()
    assert set(table["verdict"]) <= {"identical", "no pairs"}
    assert ((table["verdict"] == "no pairs") == (table["users"] == 0)).all()


# ------------------------------------------------------------------ sessions that changed


def test_changed_sessions_scores_in_units_of_the_baselines_spread():
    # baseline tas over all five sessions 1, 5, 3, 1, 5: mean 3, squared deviations 16, SD sqrt(16 / 4) = 2.
    # repeat_rate is 0.5 everywhere: no spread, so counted in its own units.
    baseline = pd.concat(
        [
            sessions("a", {"tas": [1, 5, 3], "repeat_rate": [0.5, 0.5, 0.5]}),
            sessions("b", {"tas": [1, 5], "repeat_rate": [0.5, 0.5]}),
        ]
    )
    run = pd.concat(
        [
            # a/0: |2 - 1| / 2 + |0.75 - 0.5| = 0.75; a/1 unchanged; a/2: tas vanished (1) + |0 - 0.5| = 1.5
            sessions("a", {"tas": [2, 5, NAN], "repeat_rate": [0.75, 0.5, 0.0]}),
            # b/0: |1.5 - 0.5| = 1; b/1: |8 - 5| / 2 = 1.5
            sessions("b2", {"tas": [1, 8], "repeat_rate": [1.5, 0.5]}),
        ]
    )
    changed = changed_sessions(baseline, run, metrics=["tas", "repeat_rate"], system_map={"b2": "b"})
    assert list(changed.columns) == list(CHANGED_COLUMNS)
    assert list(zip(changed["system"], changed["session_index"])) == [("a", 2), ("b", 1), ("b", 0), ("a", 0)]
    assert list(changed["score"]) == pytest.approx([1.5, 1.5, 1.0, 0.75])
    assert list(changed["metric"]) == ["tas", "tas", "repeat_rate", "tas"]
    assert list(changed["metrics_changed"]) == [2, 1, 1, 2]
    assert list(changed["run_system"]) == ["a", "b2", "b2", "a"]
    assert list(changed["seed"]) == [102, 101, 100, 100] and list(changed["trial"]) == [0, 0, 0, 0]
    assert list(changed["baseline_session_id"]) == ["a/s00002", "b/s00001", "b/s00000", "a/s00000"]
    assert list(changed["run_session_id"]) == ["a/s00002", "b2/s00001", "b2/s00000", "a/s00000"]
    first = changed.iloc[0]
    assert first["baseline_value"] == 3.0 and math.isnan(first["run_value"])
    assert list(changed["baseline_value"][1:]) == [5.0, 0.5, 1.0]
    assert list(changed["run_value"][1:]) == [8.0, 1.5, 2.0]
    top = changed_sessions(baseline, run, metrics=["tas", "repeat_rate"], system_map={"b2": "b"}, top=1)
    assert list(zip(top["system"], top["session_index"])) == [("a", 2), ("b", 1)]
    assert changed_sessions(baseline, baseline, metrics=["tas", "repeat_rate"]).empty
