"""Do the conclusions depend on the simulated user (crseval.statistics.user_robustness): matched systems,
orders, tau-b with its session bootstrap, the best system and the pairs the tests tell apart, by hand."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import test_comparison
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from crseval.statistics import comparison
from crseval.statistics import user_robustness as ur

MATCHED = {"a": {"x": "a-x", "y": "a-y"}, "b": {"x": "b-x", "y": "b-y"}, "c": {"x": "c-x", "y": "c-y"}}

# 3 systems x 2 profiles x 4 session indices.
#   tas (higher is better):       x: a 0.5, b 0.3, c 0.15 (a > b > c);  y: a 0.2, b 0.6, c 0.1 (b > a > c)
#   repeat_rate (lower is better): x and y: a 0.1, b 0.2, c 0.3 (a best under both)
#   success (higher is better):   x: every system 1.0 (constant: tau undefined); y: a 1, b 0.5, c 0
#   distinct_2 (no direction):    x: a 0.9, b 0.8, c 0.7; y: a 0.7, b 0.8, c 0.9
VALUES = {
    "a-x": {"tas": [0.4, 0.6, 0.5, 0.5], "repeat_rate": [0.1] * 4, "success": [1.0] * 4, "distinct_2": [0.9] * 4},
    "b-x": {"tas": [0.3, 0.3, 0.3, 0.3], "repeat_rate": [0.2] * 4, "success": [1.0] * 4, "distinct_2": [0.8] * 4},
    "c-x": {"tas": [0.1, 0.2, 0.1, 0.2], "repeat_rate": [0.3] * 4, "success": [1.0] * 4, "distinct_2": [0.7] * 4},
    "a-y": {"tas": [0.2, 0.2, 0.2, 0.2], "repeat_rate": [0.1] * 4, "success": [1.0] * 4, "distinct_2": [0.7] * 4},
    "b-y": {"tas": [0.5, 0.7, 0.6, 0.6], "repeat_rate": [0.2] * 4, "success": [1, 0, 1, 0], "distinct_2": [0.8] * 4},
    "c-y": {"tas": [0.0, 0.2, 0.1, 0.1], "repeat_rate": [0.3] * 4, "success": [0.0] * 4, "distinct_2": [0.9] * 4},
}
METRICS = ["tas", "repeat_rate", "success", "distinct_2"]


def sessions_frame(values: dict = VALUES) -> pd.DataFrame:
    rows = []
    for system, columns in values.items():
        for i in range(4):
            rows.append(
                {"system": system, "session_index": i, "seed": 100 + i, **{m: v[i] for m, v in columns.items()}}
            )
    return pd.DataFrame(rows)


def paired_table() -> pd.DataFrame:
    """The tests' verdicts by hand: under x, a differs from b and from c (a higher); under y, b differs from a
    and from c (b higher); cross-profile rows (a-x vs a-y) are no comparison within a profile."""
    rows = [
        ("a-x", "b-x", 0.2, 0.01),
        ("a-x", "c-x", 0.35, 0.01),
        ("b-x", "c-x", 0.15, 0.2),
        ("a-y", "b-y", -0.4, 0.01),
        ("a-y", "c-y", 0.1, 0.3),
        ("b-y", "c-y", 0.5, 0.01),
        ("a-x", "a-y", 0.3, 0.001),
    ]
    return pd.DataFrame(
        [{"metric": "tas", "system_a": a, "system_b": b, "mean_diff": d, "wilcoxon_p_adj": p} for a, b, d, p in rows]
    )


def table(resamples: int = 200, seed: int = 5, pairs: pd.DataFrame | None = None):
    return ur.robustness_table(
        sessions_frame(), MATCHED, METRICS, resamples, seed, 0.05, paired_table() if pairs is None else pairs
    )


def row(pairs: pd.DataFrame, metric: str) -> pd.Series:
    return pairs.set_index("metric").loc[metric]


def test_means_orders_and_the_best_system_by_hand():
    pairs, orders = table()
    tas = orders[orders["metric"] == "tas"].set_index(["profile", "system"])
    assert tas.loc[("x", "a"), "mean"] == pytest.approx(0.5) and tas.loc[("y", "b"), "mean"] == pytest.approx(0.6)
    assert tas.loc[("x", "c"), "mean"] == pytest.approx(0.15) and tas.loc[("y", "c"), "mean"] == pytest.approx(0.1)
    assert [tas.loc[("x", s), "rank"] for s in "abc"] == [1, 2, 3]
    assert [tas.loc[("y", s), "rank"] for s in "abc"] == [2, 1, 3]
    assert tas.loc[("x", "a"), "system_name"] == "a-x"
    tas_row = row(pairs, "tas")
    assert (tas_row["best_a"], tas_row["best_b"], tas_row["best_changes"]) == ("a", "b", True)
    # lower is better: the best is the lowest mean, rank 1 the lowest
    repeat = orders[(orders["metric"] == "repeat_rate") & (orders["profile"] == "x")].set_index("system")
    assert list(repeat["rank"]) == [1, 2, 3] and set(repeat["direction"]) == {"lower"}
    assert (row(pairs, "repeat_rate")["best_a"], row(pairs, "repeat_rate")["best_changes"]) == ("a", False)
    # no direction: ranked by the highest mean, no best
    distinct = orders[(orders["metric"] == "distinct_2") & (orders["profile"] == "y")].set_index("system")
    assert list(distinct["rank"]) == [3, 2, 1]
    assert row(pairs, "distinct_2")["best_a"] == "no direction" and row(pairs, "distinct_2")["best_changes"] is None


def test_tau_b_by_hand_and_its_undefined_case():
    pairs, _ = table()
    # tas: pairs (a,b) discordant (a > b under x, b > a under y), (a,c) and (b,c) concordant: C = 2, D = 1,
    # no ties: tau-b = (2 - 1) / sqrt(3 * 3) = 1/3
    assert row(pairs, "tas")["tau"] == pytest.approx(1 / 3)
    # repeat_rate: the same order under both: C = 3, D = 0: tau 1
    assert row(pairs, "repeat_rate")["tau"] == pytest.approx(1.0)
    # distinct_2: reversed: C = 0, D = 3: tau -1
    assert row(pairs, "distinct_2")["tau"] == pytest.approx(-1.0)
    # success is 1.0 for every system under x: tau-b is undefined, and says why
    success = row(pairs, "success")
    assert math.isnan(success["tau"]) and math.isnan(success["ci_low"])
    assert success["tau_note"] == "undefined: every matched system has the same mean under x"
    # ...but the best system still changes: all three tie under x, a alone under y
    assert (success["best_a"], success["best_b"], success["best_changes"]) == ("a = b = c", "a", True)


def test_a_pair_that_differs_under_one_profile_only_changes_the_conclusion():
    pairs, _ = table()
    tas = row(pairs, "tas")
    assert tas["pairs_test"] == "Wilcoxon signed-rank"
    # a > b under x and b > a under y (reversed); a > c under x only; b > c under y only
    assert tas["pairs_only_a"] == "a>b; a>c" and tas["pairs_only_b"] == "b>a; b>c"
    assert tas["conclusion_changes"]
    # repeat_rate: same best, and the tests (no rows for it) tell no pair apart under either profile
    repeat = row(pairs, "repeat_rate")
    assert repeat["pairs_only_a"] == "" and repeat["pairs_only_b"] == "" and not repeat["conclusion_changes"]


def test_the_pairwise_table_decides_when_sessions_do_not_pair():
    mann = paired_table().rename(columns={"wilcoxon_p_adj": "mannwhitney_p_adj"})
    pairs, _ = table(pairs=mann)
    assert row(pairs, "tas")["pairs_test"] == "Mann-Whitney" and row(pairs, "tas")["pairs_only_a"] == "a>b; a>c"


def test_identical_profiles_agree_fully_and_change_no_conclusion():
    same = {name: VALUES[name.replace("-y", "-x")] for name in VALUES}
    verdicts = paired_table().iloc[:3]
    mirrored = verdicts.assign(system_a=verdicts["system_a"].str.replace("-x", "-y"))
    mirrored["system_b"] = mirrored["system_b"].str.replace("-x", "-y")
    pairs, _ = ur.robustness_table(
        sessions_frame(same), MATCHED, METRICS, 100, 1, 0.05, pd.concat([verdicts, mirrored])
    )
    defined = pairs[pairs["metric"] != "success"]  # success is constant under both: tau undefined
    assert (defined["tau"] == 1).all() and not pairs["conclusion_changes"].any()
    assert (defined["ci_low"] == 1).all() and (defined["ci_high"] == 1).all()


def noisy_frame(seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """5 systems x 2 profiles x 30 sessions, means close enough that resamples reorder them."""
    rng = np.random.default_rng(seed)
    rows, matched = [], {}
    for k in range(5):
        matched[f"s{k}"] = {"x": f"s{k}-x", "y": f"s{k}-y"}
        for profile, shift in (("x", 0.0), ("y", 0.05 * (k % 2))):
            values = rng.normal(0.1 * k + shift, 0.3, 30)
            rows += [{"system": f"s{k}-{profile}", "session_index": i, "tas": v} for i, v in enumerate(values)]
    return pd.DataFrame(rows), matched


def test_the_bootstrap_ci_holds_the_estimate_and_is_deterministic_for_a_seed():
    frame, matched = noisy_frame()
    first, _ = ur.robustness_table(frame, matched, ["tas"], 500, 11, 0.05)
    again, _ = ur.robustness_table(frame, matched, ["tas"], 500, 11, 0.05)
    r = first.iloc[0]
    assert r["ci_low"] <= r["tau"] <= r["ci_high"] and r["ci_low"] < r["ci_high"]
    pd.testing.assert_frame_equal(first, again)
    values = frame.pivot(index="session_index", columns="system", values="tas").to_numpy()
    assert not np.array_equal(ur.bootstrap_means(values, 50, 11), ur.bootstrap_means(values, 50, 12))
    # no test table given: the pairs are not judged, and say so, rather than "no pair differs"
    assert r["pairs_only_a"] is None and r["pairs_test"] == "none (no pair was tested)"


def test_bootstrap_means_are_counts_times_values_with_the_same_draw_for_every_column():
    values = np.array([[1.0, 10.0], [2.0, np.nan], [3.0, 30.0]])
    boot = ur.bootstrap_means(values, 400, 3)
    rng = np.random.default_rng(3)
    drawn = rng.integers(0, 3, size=(400, 3))
    expected_first = values[drawn, 0].mean(axis=1)
    np.testing.assert_allclose(boot[:, 0], expected_first)
    second = values[drawn, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the mean of no value: NaN where only index 1 was drawn
        expected_second = np.nanmean(second, axis=1)
    assert np.isnan(expected_second).any()
    np.testing.assert_allclose(boot[:, 1], expected_second)


@given(
    st.integers(2, 7).flatmap(
        lambda k: st.tuples(
            st.lists(st.integers(0, 3), min_size=k, max_size=k), st.lists(st.integers(0, 3), min_size=k, max_size=k)
        )
    )
)
def test_tau_b_is_bounded_symmetric_and_scipy_s(pair):
    x, y = (np.array(v, dtype=float) for v in pair)
    tau = float(ur.tau_b(x, y))
    assert (math.isnan(tau) and (len(set(x)) == 1 or len(set(y)) == 1)) or -1 <= tau <= 1
    assert float(ur.tau_b(y, x)) == pytest.approx(tau, nan_ok=True)
    if not math.isnan(tau):
        assert tau == pytest.approx(scipy_stats.kendalltau(x, y).statistic)


def test_the_profile_pair_in_either_order_gives_one_tau():
    frame, matched = noisy_frame(1)
    forward, _ = ur.robustness_table(frame, matched, ["tas"], 200, 4, 0.05)
    backward, _ = ur.robustness_table(
        frame, {k: {"y": g["y"], "x": g["x"]} for k, g in matched.items()}, ["tas"], 200, 4, 0.05
    )
    assert (forward.iloc[0]["profile_a"], backward.iloc[0]["profile_a"]) == ("x", "y")
    assert forward.iloc[0]["tau"] == pytest.approx(backward.iloc[0]["tau"])
    assert (forward.iloc[0]["ci_low"], forward.iloc[0]["ci_high"]) == pytest.approx(
        (backward.iloc[0]["ci_low"], backward.iloc[0]["ci_high"])
    )


def test_matched_systems_groups_entries_identical_but_for_name_and_profile():
    systems = [
        {"name": "oracle-explicit", "agent": "oracle", "profile": "explicit"},
        {"name": "oracle-implicit", "agent": "oracle", "profile": "implicit", "concurrency": 2},  # speed only
        {"name": "explicit_asker", "agent": "asker", "profile": "explicit"},
        {"name": "implicit_asker", "agent": "asker", "profile": "implicit"},
        {"name": "lag-explicit-2", "agent": "lagging", "lag": 2, "profile": "explicit"},
        {"name": "lag-implicit-2", "agent": "lagging", "lag": 2, "profile": "implicit"},
        {"name": "lag-realistic-1", "agent": "lagging", "lag": 1, "profile": "realistic"},  # no match: lag differs
        {"name": "first", "agent": "stubborn", "profile": "explicit"},
        {"name": "second", "agent": "stubborn"},  # no profile of its own: the simulator's
        {"name": "template-explicit", "agent": "template", "profile": "explicit"},  # alone under its entry
    ]
    profile_of = {s["name"]: s.get("profile", "realistic") for s in systems}
    matched = ur.matched_systems(systems, profile_of)
    assert matched == {
        "oracle": {"explicit": "oracle-explicit", "implicit": "oracle-implicit"},
        "asker": {"explicit": "explicit_asker", "implicit": "implicit_asker"},
        "lag-2": {"explicit": "lag-explicit-2", "implicit": "lag-implicit-2"},
        "first / second": {"explicit": "first", "realistic": "second"},
    }
    assert ur.applies(matched) and not ur.applies({"oracle": matched["oracle"]})


def test_two_entries_under_one_profile_are_ambiguous_and_left_out():
    systems = [
        {"name": "t1-explicit", "agent": "template", "profile": "explicit"},
        {"name": "t2-explicit", "agent": "template", "profile": "explicit"},
        {"name": "t-implicit", "agent": "template", "profile": "implicit"},
    ]
    assert ur.matched_systems(systems, {s["name"]: s["profile"] for s in systems}) == {}


def test_the_markdown_and_the_sentence_say_what_changes():
    pairs, orders = table()
    text = ur.robustness_markdown(pairs, orders, MATCHED, ["template-x"], 0.05, 200)
    assert text.startswith("# Do the conclusions depend on the simulated user?")
    assert "Not compared (no identical entry under another profile, or two under one): template-x." in text
    assert "- **tas**: best system a under x but b under y" in text
    assert "| a | 0.5 (1) | 0.2 (2) |" in text and "| x vs y | 0.333 [" in text
    sentence = ur.robustness_sentence(pairs, orders)
    assert sentence == (
        "Under the 2 user profiles (x, y), the conclusion changes for 2 of 4 metrics (the best system for 2 of the "
        "3 with a direction; stats/user_robustness.md); the best system on tas is a under x but b under y, and on "
        "success a = b = c under x but a under y."
    )


SETTINGS = {**test_comparison.SETTINGS, "metrics": ["tas", "success"], "power": {"power": 0.8, "differences": {}}}


def test_compare_systems_adds_the_comparison_across_users_only_under_two_profiles(tmp_path):
    frame = sessions_frame()
    plain = comparison.compare_systems(frame, SETTINGS, judged=False)
    one_profile = comparison.compare_systems(frame, SETTINGS, judged=False, profiles={"a": {"x": "a-x"}})
    for result in (plain, one_profile):
        assert "robustness" not in result.tables and "robustness_summary" not in result.texts
    assert one_profile.texts["summary"] == plain.texts["summary"]
    both = comparison.compare_systems(frame, SETTINGS, judged=False, profiles=MATCHED)
    assert set(both.tables) == {*comparison.TABLES, "robustness", "robustness_orders"}
    summary = both.texts["summary"]
    plan_end = summary.index("Differences are a - b in every table.") + len("Differences are a - b in every table.")
    assert summary[plan_end:].startswith("\n\nUnder the 2 user profiles (x, y), the conclusion changes for ")
    assert summary.replace(summary[plan_end : summary.index("\n\nNumbers here")], "") == plain.texts["summary"]
    paths = {name: tmp_path / f"{name}.out" for name in [*both.tables, *both.texts]}
    comparison.write(both, paths)
    written = pd.read_csv(paths["robustness"])
    assert list(written.columns) == ur.PAIR_COLUMNS and set(written["metric"]) == {"tas", "success"}
    assert paths["robustness_summary"].read_text().startswith("# Do the conclusions depend on the simulated user?")


@pytest.mark.workflow
def test_the_stats_rule_writes_the_comparison_across_users_only_under_several_profiles(workflow_copy):
    """config/test/user_profiles_demo.yaml runs oracle, asker and literal under `implicit` and `explicit`: the
    stats job has the three outputs; config/test/calibration_demo.yaml has one profile and none of them."""
    from conftest import run_snakemake

    def stats_outputs(configfile: str) -> str:
        text = run_snakemake(workflow_copy, "-n", "--forcerun", "stats", "--configfile", configfile).stdout
        return text.split("rule stats:", 1)[1].split("output:", 1)[1].splitlines()[0]

    several = stats_outputs("config/test/user_profiles_demo.yaml")
    for name in ("user_robustness.csv", "user_robustness_orders.csv", "user_robustness.md"):
        assert f"results/user-profiles-demo/stats/{name}" in several
    assert "user_robustness" not in stats_outputs("config/test/calibration_demo.yaml")
