"""Statistics on data whose answers are known: a known difference is found, no difference gives no more
false positives than the stated level, small samples are tested exactly and labelled when they cannot
reach the corrected level, missing values are handled one way everywhere."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

from crseval.statistics import summary, system_tests
from crseval.statistics.aggregate import model_metrics, to_table

PLAN = system_tests.default_analysis_plan(resamples=200, permutations=2000, seed=3)


def synthetic(seed, shift=0.0, n=30):
    rng = np.random.default_rng(seed)
    rows = []
    for system, offset in (("a", 0.0), ("b", 0.0), ("c", shift)):
        for i in range(n):
            rows.append({"system": system, "session_index": i, "metric": rng.normal(1.0 + offset, 0.5)})
    return pd.DataFrame(rows)


def frame_of(values: dict, seeds=True) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"system": s, "session_index": i, "seed": (100 + i) if seeds else None, "metric": v}
            for s, vs in values.items()
            for i, v in enumerate(vs)
        ]
    )


def test_a_real_difference_is_found_by_anova_and_tukey():
    frame = synthetic(1, shift=1.0)
    result = system_tests.omnibus(frame, "metric", PLAN)
    assert result["recommended"] == "anova" and result["posthoc"] == "Tukey HSD"
    assert result["anova_p"] < 1e-6 and result["kruskal_p"] < 1e-4 and result["welch_p"] < 1e-6
    assert result["permutation_p"] == pytest.approx(1 / 2001)
    assert 0.3 < result["eta_squared"] < 0.9
    table = system_tests.posthoc_table(frame, pd.DataFrame([result]), PLAN)
    assert {(r.system_a, r.system_b) for r in table.itertuples() if r.differs} == {("a", "c"), ("b", "c")}


def test_no_difference_gives_at_most_the_stated_false_positive_rate():
    repeats = 100
    anova_hits = sum(system_tests.omnibus(synthetic(seed), "metric", PLAN)["anova_p"] < 0.05 for seed in range(repeats))
    # expected 5 % (5 of 100); the binomial 99 % upper bound is 11
    assert anova_hits <= 11


def test_six_against_six_with_ties_gives_the_exact_permutation_p():
    a = np.array([1.0, 2.0, 2.0, 3.0, 3.0, 3.0])
    b = np.array([2.0, 3.0, 4.0, 4.0, 5.0, 5.0])
    (row,) = system_tests.pairwise(frame_of({"a": a, "b": b}), "metric", PLAN)
    # every one of the C(12, 6) = 924 splits of the pooled midranks, counted here
    ranks = rankdata(np.concatenate([a, b]))
    observed = abs(ranks[:6].sum() - 6 * 13 / 2)
    sums = [abs(ranks[list(c)].sum() - 6 * 13 / 2) for c in itertools.combinations(range(12), 6)]
    expected = sum(d >= observed - 1e-9 for d in sums) / 924
    assert row["mannwhitney_p"] == pytest.approx(expected) and "924 splits" in row["mannwhitney_method"]
    assert row["mannwhitney_min_p"] < row["mannwhitney_p"]


def test_six_pairs_cannot_pass_holm_over_six_comparisons_and_say_so():
    """With 6 pairs the smallest exact two-sided Wilcoxon p is 2/64; Holm over the 6 pairs of 4 systems needs
    p <= 0.05/6 first: not testable, whatever the data; 8 pairs would do (2/256 <= 0.05/6)."""
    rng = np.random.default_rng(0)
    values = {s: rng.normal(k, 0.1, 6) for k, s in enumerate("abcd")}  # clear differences
    plan = system_tests.default_analysis_plan(scope="metric", resamples=100, permutations=500)
    table = system_tests.paired_table(frame_of(values), ["metric"], plan)
    assert len(table) == 6 and np.allclose(table["wilcoxon_min_p"], 1 / 32)
    assert np.allclose(table["wilcoxon_p"], 1 / 32)  # every difference of one sign
    assert not table["wilcoxon_testable"].any() and (table["wilcoxon_sessions_to_test"] == 8).all()
    anova = system_tests.omnibus_table(frame_of(values), ["metric"], plan)
    text = summary.markdown_summary(
        anova,
        system_tests.posthoc_table(frame_of(values), anova, plan),
        system_tests.pairwise_table(frame_of(values), ["metric"], plan),
        table,
        pd.DataFrame(),
        "paired",
        plan,
    )
    assert "0 of 6 pairs differ, 6 not testable at this n" in text and "8 pairs would make it testable" in text


def test_a_system_without_spread_does_not_remove_the_metric(monkeypatch):
    """Welch's ANOVA is undefined when a system is constant; the recommended test falls back, with the reason."""
    rng = np.random.default_rng(2)
    frame = frame_of({"a": rng.normal(1, 0.3, 12), "b": rng.normal(1.2, 0.3, 12), "c": np.zeros(12)})
    monkeypatch.setattr(system_tests, "_recommend", lambda *args: ("welch", "forced for the test"))
    row = system_tests.omnibus(frame, "metric", PLAN)
    assert math.isnan(row["welch_p"]) and row["recommended"] == "kruskal"
    assert row["recommended_p"] == row["kruskal_p"] < 0.05 and "Welch ANOVA is undefined" in row["recommended_because"]
    table = system_tests.omnibus_table(frame, ["metric"], PLAN)
    assert table.loc[0, "recommended_p_adj"] == pytest.approx(row["kruskal_p"])


def test_a_system_with_one_session_is_left_out_everywhere_with_the_reason():
    rng = np.random.default_rng(4)
    values = {"a": rng.normal(0, 1, 6), "b": rng.normal(1, 1, 6), "c": rng.normal(2, 1, 6)}
    frame = frame_of({**values, "d": [0.5, np.nan, np.nan, np.nan, np.nan, np.nan]})
    anova = system_tests.omnibus_table(frame, ["metric"], PLAN)
    assert anova.loc[0, "systems"] == 3 and anova.loc[0, "n"] == 18
    assert anova.loc[0, "left_out"] == "d: 1 of 6 sessions have a value (fewer than 3)"
    assert anova.loc[0, "not_missing_at_random"] and anova.loc[0, "missing"] == "d 5/6"
    for table in (
        system_tests.posthoc_table(frame, anova, PLAN),
        system_tests.pairwise_table(frame, ["metric"], PLAN),
        system_tests.paired_table(frame, ["metric"], PLAN),
    ):
        assert len(table) == 3 and "d" not in set(table["system_a"]) | set(table["system_b"])
    empty = pd.DataFrame()
    text = summary.markdown_summary(anova, empty, empty, empty, empty, "", PLAN)
    assert "metric: left out of every test: d: 1 of 6 sessions have a value" in text
    assert "not missing at random" in text


def test_the_rule_picks_the_test_and_says_which():
    rng = np.random.default_rng(7)
    skewed = pd.DataFrame([{"system": s, "metric": v} for s in ("a", "b") for v in rng.exponential(1.0, 40) ** 3])
    row = system_tests.omnibus(skewed, "metric", PLAN)
    assert row["recommended"] == "kruskal" and row["posthoc"] == "Mann-Whitney"
    assert row["recommended_because"] == "residuals not normal (Shapiro-Wilk)"
    small = system_tests.omnibus(synthetic(2, n=6), "metric", PLAN)
    assert small["recommended"] == "permutation" and small["recommended_because"] == "fewer than 10 sessions per system"
    assert small["recommended_p"] == small["permutation_p"] >= small["permutation_min_p"]
    assert system_tests.omnibus(pd.DataFrame({"system": ["a", "b"], "metric": [1.0, 2.0]}), "metric", PLAN)["note"]


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
    (row,) = system_tests.paired(frame, "metric", PLAN)
    assert row["pairs"] == 25 and row["mean_diff"] == pytest.approx(-0.3, abs=0.05)
    assert row["wilcoxon_p"] < 1e-3 and row["paired_t_p"] < 1e-10
    # unpaired, the session-to-session spread hides the same difference
    assert system_tests.omnibus(frame, "metric", PLAN)["anova_p"] > 0.05


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
    table = model_metrics(sessions, resamples=200, seed=0)
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


def test_resamples_where_an_effect_is_undefined_are_counted_not_hidden():
    """Hedges' g is undefined in a resample where both systems draw only zeros (no spread): P = (3/4)^4 x 1."""
    frame = frame_of({"a": [0.0, 0.0, 0.0, 1.0], "b": [0.0, 0.0, 0.0, 0.0]})
    plan = system_tests.default_analysis_plan(resamples=4000, permutations=200)
    (row,) = system_tests.pairwise(frame, "metric", plan)
    assert row["hedges_g_undefined_resamples"] / 4000 == pytest.approx(0.75**4, abs=0.03)
    assert row["cliffs_delta_undefined_resamples"] == 0


def test_a_pair_without_any_spread_has_no_test_and_is_not_called_not_testable():
    frame = frame_of({"a": np.zeros(12), "b": np.zeros(12), "c": np.arange(12.0)})
    table = system_tests.pairwise_table(frame, ["metric"], PLAN)
    ab = table[(table.system_a == "a") & (table.system_b == "b")].iloc[0]
    assert math.isnan(ab["mannwhitney_p"]) and ab["mannwhitney_testable"] is None
    assert math.isnan(ab["mannwhitney_sessions_to_test"])
    assert table["mannwhitney_testable"].eq(False).sum() == 0  # 12 vs 12 reaches 2/C(24,12) easily
