"""The `stats` stage as a library function: which tables it writes, and when, on synthetic sessions."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crseval.statistics import comparison

SETTINGS = {
    "alpha": 0.05,
    "bootstrap_resamples": 50,
    "permutation_resamples": 200,
    "family": {"scope": "report", "method": "holm"},
    "min_sessions": 3,
    "small_sample": 10,
    "seed": 3,
    "metrics": ["tas", "rec_satisfaction", "dst_f1"],
    "power": {"power": 0.8, "differences": {"tas": 0.1}},
}


def sessions(paired: bool = True) -> pd.DataFrame:
    """Three systems, 10 sessions each; system c is better on TAS by 2 SD; the judge scored 2 samples."""
    rng = np.random.default_rng(1)
    rows = []
    for system, offset in (("a", 0.0), ("b", 0.0), ("c", 1.0)):
        for i in range(10):
            scores = [int(rng.integers(3, 6)), int(rng.integers(3, 6))]
            rows.append(
                {
                    "system": system,
                    "session_id": f"{system}/{i}",
                    "session_index": i,
                    "seed": 1000 + i if paired or system != "c" else 2000 + i,  # paired: one seed per index
                    "tas": rng.normal(offset, 0.5),
                    "rec_satisfaction": rng.uniform(),
                    "judge_coherence": float(np.mean(scores)),
                    "judge_coherence_scores": json.dumps(scores),
                }
            )
    return pd.DataFrame(rows)


def test_every_comparison_of_a_judged_experiment_is_written(tmp_path):
    result = comparison.compare_systems(sessions(), SETTINGS, judged=True)
    assert result.compared == ["tas", "rec_satisfaction", "judge_coherence"]
    assert result.not_computed == ["dst_f1"] and result.paired_not_run == ""
    assert set(result.tables) == {*comparison.TABLES, "reliability"}
    assert set(result.texts) == {"summary", "power", "reliability_summary"}
    paths = {name: tmp_path / name for name in [*result.tables, *result.texts]}
    comparison.write(result, paths)
    anova = pd.read_csv(paths["anova"])
    assert list(anova["metric"]) == result.compared
    assert anova.set_index("metric").loc["tas", "anova_p"] < 0.05  # the planted difference
    assert (pd.read_csv(paths["correlations"])["judge"] == "judge_coherence").all()
    assert paths["summary"].read_text().startswith("# Statistical comparison of systems")
    # 10 sessions per system: ANOVA/Welch/Kruskal by the rule; a Mann-Whitney post-hoc shows the pairwise table's p
    posthoc, pairwise = result.tables["posthoc"], result.tables["pairwise"]
    mann = posthoc[posthoc["test"] == "Mann-Whitney"].merge(pairwise, on=["metric", "system_a", "system_b"])
    assert (mann["p"] == mann["mannwhitney_p"]).all()


def test_without_the_judge_no_reliability_and_no_judge_scores():
    result = comparison.compare_systems(sessions(), SETTINGS, judged=False)
    assert "reliability" not in result.tables and "reliability_summary" not in result.texts
    assert "judge_coherence" not in result.compared and result.tables["correlations"].empty


def test_sessions_that_do_not_pair_get_no_paired_tests_and_the_reason():
    result = comparison.compare_systems(sessions(paired=False), SETTINGS, judged=False)
    assert result.paired_not_run and result.tables["paired"].empty
    assert f"Not run: {result.paired_not_run}." in result.texts["summary"]


def test_a_missing_output_path_is_an_error_not_a_skipped_table(tmp_path):
    result = comparison.compare_systems(sessions(), SETTINGS, judged=False)
    with pytest.raises(KeyError):
        comparison.write(result, {"anova": tmp_path / "anova.csv"})


def test_one_family_setting_changes_every_table_alike():
    """scope report: one family per table column over every metric; scope metric: one per metric. The adjusted
    p of every table follows, recomputed here with statsmodels."""
    from statsmodels.stats.multitest import multipletests

    for scope in ("report", "metric"):
        for method, name in (("holm", "holm"), ("bh", "fdr_bh")):
            settings = {**SETTINGS, "family": {"scope": scope, "method": method}}
            tables = comparison.compare_systems(sessions(), settings, judged=True).tables
            for table, column in (
                ("pairwise", "welch_t_p"),
                ("pairwise", "mannwhitney_p"),
                ("paired", "wilcoxon_p"),
                ("posthoc", "p"),
                ("correlations", "p"),
            ):
                frame = tables[table]
                families = [frame] if scope == "report" else [g for _, g in frame.groupby("metric")]
                for family in families:
                    if table == "posthoc" and scope == "metric":
                        continue  # Tukey / Games-Howell p are simultaneous per metric already
                    known = family[column].dropna()
                    expected = multipletests(known, method=name)[1]
                    assert family.loc[known.index, f"{column}_adj"].to_numpy() == pytest.approx(expected), (
                        scope,
                        method,
                        table,
                        column,
                    )
            summary = comparison.compare_systems(sessions(), settings, judged=False).texts["summary"]
            assert ("over the whole report" if scope == "report" else "over the rows of one metric") in summary


def test_adjusted_p_values_by_hand():
    """Four p values 0.01, 0.04, 0.03, 0.2 (sorted: 0.01, 0.03, 0.04, 0.2).
    Holm: 0.04, max(0.09, 0.04) = 0.09, max(0.08, 0.09) = 0.09, max(0.2, 0.09) = 0.2.
    BH, from the largest: 0.2 x 4/4 = 0.2; 0.04 x 4/3 = 0.0533; 0.03 x 4/2 = 0.06, held to 0.0533; 0.01 x 4/1 = 0.04.
    Bonferroni: 0.04, 0.16, 0.12, 0.8; and 0.3 x 4 is capped at 1."""
    from crseval.statistics.analysis_plan import adjusted_p_values

    p = [0.01, 0.04, 0.03, 0.2]
    assert adjusted_p_values(p, "holm") == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert adjusted_p_values(p, "bh") == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.2])
    assert adjusted_p_values(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.8])
    assert adjusted_p_values([0.3, 0.5, 0.01, 0.02], "bonferroni")[:2].tolist() == [1.0, 1.0]
    assert adjusted_p_values([], "holm").tolist() == []
    with pytest.raises(ValueError, match="unknown multiplicity method 'hochberg'"):
        adjusted_p_values(p, "hochberg")


@given(
    st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=30),
    st.sampled_from([("holm", "holm"), ("bh", "fdr_bh"), ("bonferroni", "bonferroni")]),
)
@settings(max_examples=40, deadline=None)  # statsmodels' Holm collects garbage on every call: 0.1 s each
def test_adjusted_p_values_are_statsmodels_numbers_and_bounded(p, methods):
    """The same floats as statsmodels' multipletests (ties included), never below the raw p nor above 1, and
    in the raw p values' order."""
    from statsmodels.stats.multitest import multipletests

    from crseval.statistics.analysis_plan import adjusted_p_values

    ours, theirs = adjusted_p_values(p, methods[0]), multipletests(p, method=methods[1])[1]
    assert ours.tolist() == theirs.tolist()
    assert (ours >= np.asarray(p)).all() and (ours <= 1.0).all()
    order = np.argsort(p, kind="stable")
    assert (np.diff(ours[order]) >= 0).all()
