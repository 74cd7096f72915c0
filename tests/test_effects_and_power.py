"""Effect sizes, adjusted p-values, pairing, sample-size planning, judge agreement and semantic
clusters: values computed by hand on small written samples, and properties (bounds, symmetry)."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import mannwhitneyu, wilcoxon
from statsmodels.stats.power import TTestIndPower

from crseval.judge import reliability as judge_reliability
from crseval.metrics.response_stats import semantic_clusters
from crseval.statistics import effects, power, summary, system_tests

# --- effect sizes, by hand ---------------------------------------------------------------


def two_sample(statistic, a, b, resamples, seed):
    return tuple(effects.two_sample_counted(statistic, a, b, resamples, seed)[:3])


def paired_sample(statistic, diff, resamples, seed):
    return tuple(effects.paired_sample_counted(statistic, diff, resamples, seed)[:3])


def judge_is_a_system(judge_backends, systems):
    """The systems judged by their own model, in config order."""
    named = {
        name for names in judge_reliability.judged_by_own_model(judge_backends, systems).values() for name in names
    }
    return [system["name"] for system in systems if system["name"] in named]


def test_cliffs_delta_by_hand():
    # a > b in 4 of 12 pairs (3>2 twice, 4>2 twice), a < b in 6 (1<2, 1<2, 1<5, 2<5, 3<5, 4<5), 2 ties
    assert effects.cliffs_delta([1, 2, 3, 4], [2, 2, 5]) == pytest.approx((4 - 6) / 12)


def test_hedges_g_by_hand():
    # means 2.5 and 3; variances 5/3 and 3; pooled SD sqrt((3 * 5/3 + 2 * 3) / 5); J = 1 - 3 / (4 * 7 - 9)
    expected = (2.5 - 3) / math.sqrt(11 / 5) * (1 - 3 / 19)
    g, low, high = two_sample(effects.hedges_g_batch, [1, 2, 3, 4], [2, 2, 5], resamples=200, seed=1)
    assert g == pytest.approx(expected) and low < g < high


def test_paired_effects_by_hand():
    diff = np.array([1.0, -2.0, 3.0, 0.0, 4.0])
    # non-zero |d| 1, 2, 3, 4 rank 1..4: W+ = 1 + 3 + 4 = 8, W- = 2; the zero is dropped
    assert paired_sample(effects.rank_biserial_paired_batch, diff, 0, 0)[0] == pytest.approx(0.6)
    assert paired_sample(effects.cohens_dz_batch, diff, 0, 0)[0] == pytest.approx(1.2 / np.std(diff, ddof=1))


def test_undefined_effects_are_nan_not_zero():
    assert math.isnan(two_sample(effects.hedges_g_batch, [1, 1, 1], [1, 1, 1], 10, 0)[0])
    assert math.isnan(paired_sample(effects.rank_biserial_paired_batch, [0.0, 0.0], 10, 0)[0])
    assert math.isnan(effects.cliffs_delta([], [1.0]))


finite = st.floats(-1e3, 1e3, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=1, max_size=12), st.lists(finite, min_size=1, max_size=12))
def test_cliffs_delta_is_bounded_antisymmetric_and_matches_pair_counting(a, b):
    delta = effects.cliffs_delta(a, b)
    diff = np.subtract.outer(a, b)
    assert -1 <= delta <= 1
    assert delta == pytest.approx(-effects.cliffs_delta(b, a), abs=1e-12)
    assert delta == pytest.approx((np.sum(diff > 0) - np.sum(diff < 0)) / diff.size, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-20, 20).map(float), min_size=1, max_size=15))
def test_rank_biserial_is_bounded_and_flips_with_sign(diff):
    diff = np.array(diff)
    r = paired_sample(effects.rank_biserial_paired_batch, diff, 0, 0)[0]
    if np.all(diff == 0):
        assert math.isnan(r)
    else:
        assert -1 <= r <= 1
        assert r == pytest.approx(-paired_sample(effects.rank_biserial_paired_batch, -diff, 0, 0)[0])


# --- pairwise tests, adjustments, pairing ----------------------------------------------------


def frame_of(values: dict, seeds=True) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"system": s, "session_index": i, "seed": (100 + i) if seeds else None, "m": v}
            for s, vs in values.items()
            for i, v in enumerate(vs)
        ]
    )


def test_holm_and_bh_by_hand():
    table = pd.DataFrame({"metric": ["x", "x", "x", "y"], "p": [0.01, 0.04, 0.03, 0.02]})
    # Holm within x: sorted 0.01, 0.03, 0.04 -> 0.03, 0.06, 0.06 (monotone); y alone: 0.02
    by_metric = system_tests.default_analysis_plan(scope="metric").adjust(table, ["p"])
    assert by_metric["p_adj"].tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH over all four: sorted 0.01, 0.02, 0.03, 0.04 -> 0.04 each (4p/rank, then cumulative min from the top)
    over_report = system_tests.default_analysis_plan(scope="report", method="bh").adjust(table, ["p"])
    assert over_report["p_adj"].tolist() == pytest.approx([0.04, 0.04, 0.04, 0.04])
    assert list(over_report.columns) == ["metric", "p", "p_adj"]


def test_nan_p_values_are_not_counted_in_the_adjustment():
    table = pd.DataFrame({"metric": ["x", "x"], "p": [0.02, math.nan]})
    adjusted = system_tests.default_analysis_plan().adjust(table, ["p"])
    assert adjusted["p_adj"][0] == pytest.approx(0.02) and math.isnan(adjusted["p_adj"][1])


def test_pairwise_rows_carry_tests_and_effects_with_cis():
    rng = np.random.default_rng(0)
    frame = frame_of({"a": rng.normal(0, 1, 40), "b": rng.normal(1, 1, 40), "c": rng.normal(0, 1, 40)})
    plan = system_tests.default_analysis_plan(resamples=300, permutations=300, seed=3)
    rows = system_tests.pairwise_table(frame, ["m"], plan)
    ab = rows[(rows.system_a == "a") & (rows.system_b == "b")].iloc[0]
    assert ab.welch_t_p_adj < 1e-3 and ab.hedges_g_ci_high < 0 and ab.cliffs_delta_ci_high < 0
    assert ab.welch_t_p <= ab.welch_t_p_adj and ab.mean_diff == pytest.approx(ab.mean_a - ab.mean_b)
    # 40 vs 40 is far beyond exact enumeration: the tie-corrected normal approximation, as scipy computes it
    expected = mannwhitneyu(frame[frame.system == "a"].m, frame[frame.system == "b"].m, method="asymptotic").pvalue
    assert ab.mannwhitney_p == pytest.approx(expected) and "normal approximation" in ab.mannwhitney_method
    assert ab.mannwhitney_min_p == pytest.approx(2 / math.comb(80, 40)) and ab.mannwhitney_testable
    assert rows.equals(system_tests.pairwise_table(frame, ["m"], plan))


def test_sessions_pair_only_when_seeds_match():
    assert system_tests.pairing(frame_of({"a": [1, 2], "b": [2, 3]}))[0]
    imported, reason = system_tests.pairing(frame_of({"a": [1, 2], "b": [2, 3]}, seeds=False))
    assert not imported and "imported" in reason
    mixed = frame_of({"a": [1, 2], "b": [2, 3]})
    mixed.loc[mixed.system == "b", "seed"] += 1
    assert not system_tests.pairing(mixed)[0]


def test_paired_effects_follow_a_constant_shift():
    rng = np.random.default_rng(3)
    base = rng.normal(0, 1, 30)
    frame = frame_of({"a": base + 0.5 + rng.normal(0, 0.05, 30), "b": base})
    plan = system_tests.default_analysis_plan(resamples=200, permutations=2000, seed=1)
    (row,) = system_tests.paired_table(frame, ["m"], plan).to_dict("records")
    # 30 positive differences: far beyond exact enumeration, so the normal approximation, as scipy computes it
    assert row["rank_biserial"] == pytest.approx(1.0) and row["cohens_dz"] > 5
    diff = frame[frame.system == "a"].m.to_numpy() - frame[frame.system == "b"].m.to_numpy()
    expected = wilcoxon(diff, method="approx").pvalue
    assert row["wilcoxon_p_adj"] == pytest.approx(expected) and row["wilcoxon_testable"]
    assert row["wilcoxon_min_p"] == pytest.approx(2 / 2**30) and "normal approximation" in row["wilcoxon_method"]


def test_tukey_runs_after_anova_only_and_keeps_full_precision():
    rng = np.random.default_rng(1)
    frame = frame_of({"a": rng.normal(0, 1, 20), "b": rng.normal(0.123456789, 1, 20)})
    plan = system_tests.default_analysis_plan()
    anova = system_tests.omnibus_table(frame, ["m"], plan)
    assert anova.loc[0, "recommended"] == "anova"
    row = system_tests.posthoc_table(frame, anova, plan).iloc[0]
    expected = frame[frame.system == "a"].m.mean() - frame[frame.system == "b"].m.mean()  # a - b
    assert row.test == "Tukey HSD" and row.mean_diff == pytest.approx(expected, abs=1e-12)


def test_summary_says_why_paired_tests_were_skipped():
    frame = frame_of({"a": [1.0, 2.0, 3.0], "b": [2.0, 3.0, 5.0]}, seeds=False)
    plan = system_tests.default_analysis_plan(resamples=100, permutations=100)
    anova = system_tests.omnibus_table(frame, ["m"], plan)
    pairwise = system_tests.pairwise_table(frame, ["m"], plan)
    paired, reason = system_tests.pairing(frame)
    posthoc = system_tests.posthoc_table(frame, anova, plan)
    text = summary.markdown_summary(anova, posthoc, pairwise, pd.DataFrame(), pd.DataFrame(), reason, plan)
    assert not paired and "Not run: the sessions carry no seed (imported logs)" in text


# --- power ------------------------------------------------------------------------------------


def test_power_table_by_hand():
    # two systems, SD 1 in each (values -1, 0, 1 repeated), 30 sessions each
    values = np.tile([-1.0, 0.0, 1.0], 10)
    frame = frame_of({"a": values, "b": values + 0.25})
    (row,) = power.power_table(frame, ["m"], 0.05, 0.8, {"m": 0.5}, paired=False).to_dict("records")
    sd = np.std(values, ddof=1)
    assert row["pooled_sd"] == pytest.approx(sd)
    d = TTestIndPower().solve_power(effect_size=None, nobs1=30, alpha=0.05, power=0.8)
    assert row["mde"] == pytest.approx(d * sd, rel=1e-6)
    assert row["closest_pair_difference"] == pytest.approx(0.25)
    # the stated difference is planned, not the observed gap
    needed = TTestIndPower().solve_power(effect_size=0.5 / sd, nobs1=None, alpha=0.05, power=0.8)
    assert row["basis"] == "stated" and row["planned_difference"] == 0.5
    assert row["sessions_needed"] == math.ceil(needed)
    assert row["mde_all_pairs"] == pytest.approx(row["mde"])  # one pair: alpha / 1
    # the classic figure: d = 0.5 needs 64 sessions per group at 80 % power, alpha 0.05
    assert power.sessions_needed(0.5, 1.0, 0.05, 0.8) == 64


def test_without_a_stated_difference_the_observed_gap_is_planned_and_labelled_post_hoc():
    values = np.tile([-1.0, 0.0, 1.0], 10)
    frame = frame_of({"a": values, "b": values + 0.25}).assign(n=lambda f: f["m"])
    table = power.power_table(frame, ["m", "n"], 0.05, 0.8, {"n": 0.5}, paired=False)
    post_hoc, stated = table.to_dict("records")
    assert post_hoc["basis"] == "post-hoc (observed gap)" and post_hoc["planned_difference"] == pytest.approx(0.25)
    sd = np.std(values, ddof=1)
    needed = TTestIndPower().solve_power(effect_size=0.25 / sd, nobs1=None, alpha=0.05, power=0.8)
    assert post_hoc["sessions_needed"] == math.ceil(needed)
    assert stated["basis"] == "stated"
    text = power.power_markdown(table, 0.05, 0.8, "sessions pair")
    assert "Post-hoc rows (m): a sample size or power computed from a gap this run observed is not evidence" in text
    # SD sqrt(20 / 29) = 0.83; d 0.25 / 0.83 needs 175 sessions, d 0.5 / 0.83 needs 45 (statsmodels, as above)
    assert "| m | 30 | 0.83 | 0.611 | 0.611 | 0.25 | post-hoc (observed gap) | 0.25 | 175 |" in text
    assert "| n | 30 | 0.83 | 0.611 | 0.611 | 0.25 | stated | 0.5 | 45 |" in text
    all_stated = power.power_table(frame, ["m"], 0.05, 0.8, {"m": 0.5}, paired=False)
    assert "Post-hoc" not in power.power_markdown(all_stated, 0.05, 0.8, "sessions pair")


def test_pooled_sd_is_the_dof_weighted_root_mean_square_of_the_sds():
    # variances 1 (2 df) and 20/3 (3 df); a single value carries no spread and is left out
    groups = [np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0, 8.0]), np.array([100.0])]
    assert power.pooled_sd(groups) == pytest.approx(math.sqrt((2 * 1 + 3 * 20 / 3) / 5))


def test_paired_sd_is_the_root_mean_square_over_pairs_not_the_mean():
    # differences a-b and b-c: -1, 1, -1, 1 (variance 4/3); a-c: -2, 2, -2, 2 (variance 16/3)
    frame = frame_of({"a": [0.0, 0.0, 0.0, 0.0], "b": [1.0, -1.0, 1.0, -1.0], "c": [2.0, -2.0, 2.0, -2.0]})
    sd, pairs = power.paired_sd_of_differences(frame, "m")
    assert sd == pytest.approx(math.sqrt((4 / 3 + 16 / 3 + 4 / 3) / 3)) and pairs == 4
    assert sd != pytest.approx((2 + 4 + 2) / 3 / math.sqrt(3))  # the mean of the SDs is smaller


def test_power_with_paired_sessions_uses_the_sd_of_differences():
    rng = np.random.default_rng(2)
    base = rng.normal(0, 1, 40)
    frame = frame_of({"a": base + 0.2 + rng.normal(0, 0.1, 40), "b": base})
    (row,) = power.power_table(frame, ["m"], 0.05, 0.8, {}, paired=True).to_dict("records")
    assert row["paired_sd_of_differences"] < 0.2 < row["pooled_sd"]
    assert row["basis"] == "post-hoc (observed gap)"
    assert row["paired_sessions_needed"] < row["sessions_needed"]
    text = power.power_markdown(pd.DataFrame([row]), 0.05, 0.8, "same seeds")
    assert "paired sessions needed |" in text and "Paired design: planned too (same seeds)." in text


# --- judge agreement --------------------------------------------------------------------------


def test_krippendorff_alpha_on_krippendorffs_own_example():
    nan = math.nan
    # Krippendorff's "C" data: 4 coders x 12 units; his ordinal alpha is 0.815
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
        ]
    )
    assert judge_reliability.ordinal_alpha(data) == pytest.approx(0.815, abs=5e-4)


def judged(scores_by_system: dict) -> pd.DataFrame:
    rows = []
    for system, sessions in scores_by_system.items():
        for i, samples in enumerate(sessions):
            row = {"system": system, "session_index": i}
            for criterion in ("proactiveness", "coherence", "personalization"):
                valid = [s for s in samples if s is not None]
                row[f"judge_{criterion}"] = float(np.mean(valid)) if valid else math.nan
                row[f"judge_{criterion}_scores"] = json.dumps(samples)
            rows.append(row)
    return pd.DataFrame(rows)


def test_reliability_reads_samples_and_says_when_the_judge_does_not_discriminate():
    same = judged({"a": [[4, 4], [4, 5], [4, 4]] * 5, "b": [[4, 4], [5, 4], [4, 4]] * 5})
    table = judge_reliability.reliability_table(same, alpha=0.05, resamples=50, seed=0)
    row = table.iloc[0].to_dict()
    assert row["samples"] == 2 and row["sessions_with_two_samples"] == 30 and not row["discriminates"]
    text = judge_reliability.reliability_markdown(table, 0.05)
    assert "The judge does not discriminate between the systems on: proactiveness, coherence, personalization" in text
    apart = judged({"a": [[5, 5], [5, 4], [5, 5]] * 5, "b": [[1, 1], [2, 1], [1, 2]] * 5})
    row = judge_reliability.reliability_table(apart, 0.05, 50, 0).iloc[0].to_dict()
    assert row["discriminates"] and row["judge_ranking"] == "a > b" and row["krippendorff_alpha"] > 0.75


def test_tied_system_means_are_joined_with_equals_in_the_judge_ranking():
    assert judge_reliability.ranking({"b": 4.0 + 1e-13, "a": 4.0, "c": 3.0}) == "a = b > c"
    assert judge_reliability.ranking({"c": 2.0, "b": 5.0, "a": 2.0}) == "b > a = c"
    assert judge_reliability.ranking({"a": 1.0, "b": 1.0 + 1e-9}) == "b > a"  # far above 1e-12: an order
    table = judge_reliability.reliability_table(
        judged({"a": [[4], [4]], "c": [[2], [2]], "b": [[4], [4]]}), 0.05, 10, 0
    )
    assert table.loc[0, "judge_ranking"] == "a = b > c"


QWEN = {"type": "llamacpp", "model": "qwen2.5-coder-0.5b-instruct", "n_ctx": 4096}


def test_a_judge_that_is_also_a_system_under_test_is_found_by_model():
    systems = [
        {"name": "a", "backend": {"type": "llamacpp", "model": "qwen2.5-coder-0.5b-instruct", "n_ctx": 2048}},
        {"name": "gemma", "backend": {"type": "llamacpp", "model": "gemma-3-270m"}},
        {"name": "template", "agent": "template"},  # no LLM: never the judge
        {"name": "b", "backend": {"type": "llamacpp", "model": "/models/qwen2.5-coder-0.5b-instruct-q4.gguf"}},
        {"name": "served", "backend": {"type": "openai", "model": "qwen:7b", "base_url": "http://127.0.0.1:11434/v1"}},
        {"name": "elsewhere", "backend": {"type": "openai", "model": "qwen:7b", "base_url": "http://gpu:8000/v1"}},
        {"name": "other-host", "backend": {"type": "ollama", "model": "qwen:7b", "host": "http://gpu:11434"}},
    ]
    assert judge_is_a_system([QWEN], systems) == ["a", "b"]
    ollama = {"type": "ollama", "model": "qwen:7b", "host": "localhost:11434"}
    # the same server through its OpenAI-compatible API, and the same model on another Ollama host
    assert judge_is_a_system([ollama], systems) == ["served", "other-host"]
    assert judge_is_a_system([QWEN, ollama], systems) == ["a", "b", "served", "other-host"]
    assert judge_is_a_system([{"type": "llamacpp", "model": "gemma-3-270m"}], systems[2:]) == []
    settings = {"backend": QWEN, "panel": [{"name": "second", "backend": ollama}]}
    assert judge_reliability.judge_backends(settings) == [QWEN, ollama]


def test_the_reliability_report_opens_with_a_warning_when_the_judge_is_a_system():
    table = judge_reliability.reliability_table(judged({"a": [[4], [5]], "b": [[2], [1]]}), 0.05, 10, 0)
    systems = [{"name": name, "backend": dict(QWEN)} for name in ("a", "b")]
    own = judge_reliability.judged_by_own_model([QWEN], systems)
    text = judge_reliability.reliability_markdown(table, 0.05, own)
    assert text.startswith(
        "The judge qwen2.5-coder-0.5b-instruct is also the model of the systems under test a, b: its scores of them "
        "may favour its own phrasing.\n\n# Judge reliability\n"
    )
    one = judge_reliability.reliability_markdown(table, 0.05, {"qwen2.5-coder-0.5b-instruct": ["a"]})
    assert one.startswith("The judge qwen2.5-coder-0.5b-instruct is also the model of the system under test a:")
    plain = judge_reliability.reliability_markdown(table, 0.05)
    assert plain.startswith("# Judge reliability") and judge_reliability.reliability_markdown(table, 0.05, {}) == plain
    assert text.endswith(plain)


def test_failed_samples_are_missing_not_scores():
    frame = judged({"a": [[3, None], [None, None], [2, 4]]})
    matrix = judge_reliability.sample_matrix(frame, "coherence")
    assert matrix.shape == (2, 3) and np.isnan(matrix).sum() == 3 and matrix[1, 2] == 4


def test_one_sample_per_session_is_reported_as_not_measured():
    table = judge_reliability.reliability_table(judged({"a": [[3], [4]], "b": [[2], [5]]}), 0.05, 10, 0)
    assert "agreement not measured" in judge_reliability.agreement_statement(table.iloc[0].to_dict())


# --- semantic clusters ------------------------------------------------------------------------


def unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def test_two_clear_groups_give_two_clusters_and_a_high_silhouette():
    rng = np.random.default_rng(0)
    group_a = [unit([1, 0, 0] + rng.normal(0, 0.01, 3)) for _ in range(4)]
    group_b = [unit([0, 1, 0] + rng.normal(0, 0.01, 3)) for _ in range(4)]
    result = semantic_clusters(group_a + group_b, seed=1)
    assert result["semantic_clusters"] == 2 and result["cluster_silhouette"] > 0.9
    assert result["intra_cluster_diversity"] < 0.01 and result["inter_cluster_diversity"] == pytest.approx(
        1.0, abs=0.02
    )
    assert result == semantic_clusters(group_a + group_b, seed=1)


def test_too_few_or_identical_responses_leave_clusters_missing():
    assert all(math.isnan(v) for v in semantic_clusters([unit([1, 0])] * 3, seed=0).values())
    assert all(math.isnan(v) for v in semantic_clusters([unit([1, 0])] * 8, seed=0).values())


def test_silhouette_equals_scikit_learns_and_kmeans_finds_planted_groups():
    from sklearn.metrics import adjusted_rand_score, silhouette_score

    from crseval.metrics.response_stats import kmeans, silhouette

    rng = np.random.default_rng(4)
    for _ in range(10):
        points = rng.normal(size=(int(rng.integers(4, 15)), 6))
        points /= np.linalg.norm(points, axis=1, keepdims=True)
        labels = np.arange(len(points)) % 3
        distances = np.maximum(1 - points @ points.T, 0)
        np.fill_diagonal(distances, 0)
        assert silhouette(distances, labels) == pytest.approx(
            silhouette_score(points, labels, metric="cosine"), abs=1e-9
        )
    centres = rng.normal(size=(3, 20)) * 3
    planted = np.repeat([0, 1, 2], 4)
    points = centres[planted] + rng.normal(scale=0.3, size=(12, 20))
    assert adjusted_rand_score(kmeans(points, 3, np.random.default_rng(0)), planted) == 1.0
