"""Repeated trials (crseval.statistics.trials): per-user means, pass^k and pass@k with their user bootstrap,
the between-trial share of the variance and the users x trials plan, by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import comb

from crseval.reports import figures
from crseval.statistics import trials as tr
from crseval.statistics.intervals import expanded_tail

NAN = math.nan


def long_table(values: dict[str, list[list[float]]], metric: str = "success") -> pd.DataFrame:
    """{system: one list of trial values per user} as a sessions table, one row per (system, user, trial)."""
    rows = [
        {"system": system, "session_index": user, "trial": trial, metric: value}
        for system, users in values.items()
        for user, trials in enumerate(users)
        for trial, value in enumerate(trials)
    ]
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ per_user


def test_per_user_averages_numbers_over_trials_and_keeps_the_lowest_trial_of_the_rest():
    rows = []
    # b comes first in the table, and every user's trials come in the order 2, 0, 1
    for system in ("b", "a"):
        for user in (0, 1):
            for trial in (2, 0, 1):
                rows.append(
                    {
                        "system": system,
                        "session_index": user,
                        "trial": trial,
                        "seed": 100 + user,
                        "shard": trial,
                        "session_id": f"{system}/s{user}/t{trial}",
                        "tas": {(0, 0): 0.2, (0, 1): 0.4, (0, 2): NAN}.get((user, trial), 0.1 * trial + 0.5),
                        "judge": NAN if user == 1 else float(trial),
                        "recovered": trial != 1,
                        "reason": f"why {trial}",
                    }
                )
    users = tr.per_user(pd.DataFrame(rows))
    assert list(users.columns) == [
        *["system", "session_index", "seed", "shard", "session_id", "tas", "judge", "recovered", "reason"]
    ]
    assert list(zip(users["system"], users["session_index"])) == [("b", 0), ("b", 1), ("a", 0), ("a", 1)]
    a0 = users.iloc[2]
    assert a0["tas"] == pytest.approx(0.3)  # 0.2 and 0.4, the NaN skipped
    assert a0["judge"] == pytest.approx(1.0)  # trials 0, 1, 2
    assert a0["recovered"] == pytest.approx(2 / 3)  # True, False, True as 1, 0, 1
    assert (a0["reason"], a0["session_id"], a0["shard"], a0["seed"]) == ("why 0", "a/s0/t0", 0, 100)
    a1 = users.iloc[3]
    assert a1["tas"] == pytest.approx((0.5 + 0.6 + 0.7) / 3)
    assert math.isnan(a1["judge"])  # no trial has a value
    assert users["tas"].tolist()[:2] == pytest.approx([0.3, 0.6])


def test_a_table_without_trials_is_left_alone():
    frame = long_table({"a": [[1.0], [0.0]]}).drop(columns="trial")
    assert tr.per_user(frame) is frame
    assert not tr.has_trials(frame)
    assert not tr.has_trials(long_table({"a": [[1.0], [0.0]]}))  # one trial each: a column of zeros
    assert tr.has_trials(long_table({"a": [[1.0, 0.0]]}))


# ------------------------------------------------------------------ pass^k and pass@k


def test_pass_hat_k_and_pass_at_k_by_hand():
    c, n = np.array([3.0]), np.array([4.0])
    assert [tr.pass_hat_k(c, n, k)[0] for k in (1, 2, 3, 4)] == pytest.approx([0.75, 0.5, 0.25, 0.0])
    assert tr.pass_hat_k(c, n, 2)[0] == pytest.approx(comb(3, 2) / comb(4, 2))
    # pass@2 = 1 - C(1, 2) / C(4, 2): two tries always include a success when only one trial failed
    assert [tr.pass_at_k(c, n, k)[0] for k in (1, 2, 3, 4)] == pytest.approx([0.75, 1.0, 1.0, 1.0])
    assert tr.pass_at_k(np.array([1.0]), n, 2)[0] == pytest.approx(1 - comb(3, 2) / comb(4, 2))
    assert math.isnan(tr.pass_hat_k(c, n, 5)[0]) and math.isnan(tr.pass_at_k(c, n, 5)[0])
    with pytest.raises(ValueError):
        tr.pass_hat_k(c, n, 0)


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n), st.integers(1, 12))))
def test_the_estimators_are_scipy_s_binomial_ratios(case):
    c, n, k = case
    hat, at = tr.pass_hat_k(np.array(c), np.array(n), k), tr.pass_at_k(np.array(c), np.array(n), k)
    if n < k:
        assert math.isnan(hat) and math.isnan(at)
    else:
        assert hat == pytest.approx(comb(c, k) / comb(n, k), abs=1e-12)
        assert at == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)


SMALL = {
    # user 0 always succeeds, user 1 twice in three, user 2 never (two trials with a value)
    "a": [[1, 1, 1], [1, 0, 1], [0, 0, NAN]],
    # deterministic: each user gets the same result every time
    "b": [[1, 1, 1], [0, 0, 0], [1, 1, 1]],
}


def test_pass_table_by_hand():
    passes = tr.pass_table(long_table(SMALL), resamples=500, seed=3)
    assert list(passes.columns) == tr.PASS_COLUMNS
    a = passes[passes["system"] == "a"].set_index("k")
    assert list(a.index) == [1, 2, 3] and list(a["users"]) == [3, 3, 2]
    # k = 1: (1 + 2/3 + 0) / 3; k = 2: (1 + C(2,2)/C(3,2) + 0) / 3; k = 3: user 2 has only two trials
    assert a["pass_hat_k"].tolist() == pytest.approx([5 / 9, 4 / 9, 0.5])
    # pass@2: user 1 has one failure in three, two tries always succeed; user 2 never does
    assert a["pass_at_k"].tolist() == pytest.approx([5 / 9, 2 / 3, 1.0])
    assert (a.loc[3, "at_ci_low"], a.loc[3, "at_ci_high"]) == (1.0, 1.0)  # every user's estimate is 1
    for k, row in a.iterrows():
        assert row["ci_low"] <= row["pass_hat_k"] <= row["ci_high"], k
        assert row["at_ci_low"] <= row["pass_at_k"] <= row["at_ci_high"], k
        assert 0 <= row["ci_low"] < row["ci_high"] <= 1 or k == 3
    b = passes[passes["system"] == "b"]
    assert b["pass_hat_k"].tolist() == pytest.approx([2 / 3] * 3)
    assert b["pass_at_k"].tolist() == pytest.approx([2 / 3] * 3)


def test_pass_table_is_deterministic_for_a_seed_and_pairs_the_systems_by_user():
    outcomes = (np.random.default_rng(0).random((30, 3)) < 0.6).astype(float).tolist()
    frame = long_table({"a": outcomes})
    first, again = (tr.pass_table(frame, resamples=300, seed=7) for _ in range(2))
    pd.testing.assert_frame_equal(first, again)
    other = tr.pass_table(frame, resamples=300, seed=8)
    assert not np.allclose(first[["ci_low", "ci_high"]], other[["ci_low", "ci_high"]])
    # a copy of system a under another name: the same drawn users, so the same interval
    twin = long_table({"a": outcomes, "z": outcomes})
    passes = tr.pass_table(twin, resamples=300, seed=7).set_index(["system", "k"])
    pd.testing.assert_frame_equal(passes.loc["a"], passes.loc["z"])


def test_the_interval_is_the_expanded_percentile_of_means_over_drawn_users():
    outcomes = (np.random.default_rng(1).random((12, 2)) < 0.5).astype(float)
    passes = tr.pass_table(long_table({"a": outcomes.tolist()}), resamples=400, seed=9).set_index("k")
    drawn = np.random.default_rng(9).integers(0, 12, (400, 12))
    for k in (1, 2):
        users = tr.pass_hat_k(outcomes.sum(axis=1), np.full(12, 2.0), k)
        tail = expanded_tail(12, 0.95)
        expected = np.percentile(users[drawn].mean(axis=1), [100 * tail, 100 * (1 - tail)])
        assert passes.loc[k, ["ci_low", "ci_high"]].tolist() == pytest.approx(expected)


def test_users_who_all_agree_give_the_value_itself():
    passes = tr.pass_table(long_table({"a": [[1, 0, 0]] * 10}), resamples=100)  # ten thirds sum to 3.3333333333333335
    first = passes.iloc[0]
    assert first["pass_hat_k"] == first["ci_low"] == first["ci_high"] == 1 / 3
    one = tr.pass_table(long_table({"a": [[1, 0]]}), resamples=100).iloc[0]
    assert one["pass_hat_k"] == 0.5 and math.isnan(one["ci_low"]) and math.isnan(one["ci_high"])


def test_a_limit_on_k_and_a_table_without_trials():
    frame = long_table(SMALL)
    assert list(tr.pass_table(frame, max_k=2, resamples=50)["k"]) == [1, 2, 1, 2]
    single = long_table({"a": [[1.0], [0.0], [1.0]]}).drop(columns="trial")
    passes = tr.pass_table(single, resamples=50)
    assert list(passes["k"]) == [1] and passes["pass_hat_k"].iloc[0] == pytest.approx(2 / 3)


def test_pass_table_needs_successes_of_0_or_1():
    frame = long_table({"a": [[1.0, 0.5], [0.0, 1.0]]})
    with pytest.raises(ValueError, match="success"):
        tr.pass_table(frame, resamples=10)
    with pytest.raises(ValueError, match="tas"):
        tr.pass_table(long_table({"a": [[1.0, 2.0]]}, metric="tas"), metric="tas", resamples=10)


@given(
    st.lists(st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=1), min_size=1, max_size=8), st.integers(1, 5)
)
@settings(max_examples=25, deadline=None)
def test_a_deterministic_system_has_pass_k_constant_in_k(outcomes, k):
    """A system that gives each user the same result every time: pass^k = pass^1 = pass@k for every k."""
    frame = long_table({"a": [first * k for first in outcomes]})
    passes = tr.pass_table(frame, resamples=50)
    assert passes["pass_hat_k"].tolist() == pytest.approx([passes["pass_hat_k"].iloc[0]] * k)
    assert passes["pass_at_k"].tolist() == pytest.approx(passes["pass_hat_k"].tolist())


def test_independent_trials_give_pass_k_near_p_to_the_k():
    rng = np.random.default_rng(2024)
    outcomes = (rng.random((400, 4)) < 0.7).astype(float)
    passes = tr.pass_table(long_table({"a": outcomes.tolist()}), resamples=2000, seed=1)
    for row in passes.itertuples():
        assert row.ci_low <= 0.7**row.k <= row.ci_high, row
        assert row.at_ci_low <= 1 - 0.3**row.k <= row.at_ci_high, row
    assert passes["pass_hat_k"].is_monotonic_decreasing and passes["pass_at_k"].is_monotonic_increasing


# ------------------------------------------------------------------ how much is chance


def chance_row(table: pd.DataFrame, system: str, metric: str = "tas") -> pd.Series:
    return table.set_index(["metric", "system"]).loc[(metric, system)]


def test_the_anova_by_hand():
    # user means 2, 3, 7, grand mean 4. SSW = 2 + 2 + 2 = 6 on 6 - 3 df: MSW = 2.
    # SSB = 2 (4 + 1 + 9) = 28 on 2 df: MSB = 14. n0 = (6 - 12 / 6) / 2 = 2: between users (14 - 2) / 2 = 6.
    table = tr.chance_table(long_table({"a": [[1, 3], [2, 4], [6, 8]]}, "tas"), ["tas"], resamples=200)
    assert list(table.columns) == tr.CHANCE_COLUMNS
    a = chance_row(table, "a")
    assert (a["users"], a["trials"], a["note"]) == (3, 2, "")
    assert (a["between_trials"], a["between_users"]) == pytest.approx((2.0, 6.0))
    assert a["trial_share"] == pytest.approx(0.25)
    assert 0 <= a["ci_low"] <= a["ci_high"] <= 1


def test_the_anova_of_unequal_groups_by_hand():
    # user 3 has one trial only: left out. N = 7, g = 3, user means 1, 2, 6, grand mean 20/7.
    table = tr.chance_table(long_table({"a": [[0, 2], [1, 1, 4], [5, 7], [9]]}, "tas"), ["tas"], resamples=200)
    msw = (2 + 6 + 2) / (7 - 3)
    msb = (2 * (1 - 20 / 7) ** 2 + 3 * (2 - 20 / 7) ** 2 + 2 * (6 - 20 / 7) ** 2) / 2
    n0 = (7 - (4 + 9 + 4) / 7) / 2
    a = chance_row(table, "a")
    assert (a["users"], a["trials"]) == (3, 3)
    assert (a["between_trials"], a["between_users"]) == pytest.approx((msw, (msb - msw) / n0))
    assert a["trial_share"] == pytest.approx(msw / (msw + (msb - msw) / n0))


def naive_anova(users: list[np.ndarray]) -> float:
    """The between-trial share of a one-way ANOVA, from the textbook formulas."""
    n = np.array([len(u) for u in users], float)
    total, g = n.sum(), len(users)
    means = np.array([u.mean() for u in users])
    grand = np.concatenate(users).mean()
    msw = sum(((u - u.mean()) ** 2).sum() for u in users) / (total - g)
    msb = (n * (means - grand) ** 2).sum() / (g - 1)
    between = max(0.0, (msb - msw) / ((total - (n**2).sum() / total) / (g - 1)))
    return msw / (msw + between) if msw + between > 0 else NAN


def test_the_share_s_interval_resamples_users_as_groups():
    rng = np.random.default_rng(3)
    users = [rng.normal(rng.normal(0, 1), 1, size) for size in rng.integers(2, 5, 15)]
    table = tr.chance_table(long_table({"a": [u.tolist() for u in users]}, "tas"), ["tas"], resamples=300, seed=6)
    drawn = np.random.default_rng(6).integers(0, 15, (300, 15))
    shares = np.array([naive_anova([users[i] for i in row]) for row in drawn])  # a user drawn twice: two groups
    expected = np.percentile(shares[~np.isnan(shares)], [2.5, 97.5])
    a = chance_row(table, "a")
    assert a["trial_share"] == pytest.approx(naive_anova(users))
    assert [a["ci_low"], a["ci_high"]] == pytest.approx(expected)


def test_the_pooled_row_removes_each_system_s_mean():
    users = [[1, 3], [2, 4], [6, 8]]
    frame = long_table({"a": users, "b": [[v + 10 for v in trials] for trials in users]}, "tas")
    table = tr.chance_table(frame, ["tas"], resamples=200)
    pooled = chance_row(table, tr.POOLED)
    assert (pooled["users"], pooled["trials"]) == (6, 2)
    # b is a shifted by 10: within systems the two are alike, so the pooled components are a's
    assert (pooled["between_trials"], pooled["between_users"], pooled["trial_share"]) == pytest.approx((2, 6, 0.25))


def test_no_chance_no_users_and_nothing_to_say():
    # every user gets the same value every time, users differ: nothing is chance
    steady = tr.chance_table(long_table({"a": [[1, 1, 1], [2, 2, 2], [4, 4, 4]]}, "tas"), ["tas"], resamples=200)
    row = chance_row(steady, "a")
    assert (row["trial_share"], row["ci_low"], row["ci_high"], row["between_trials"]) == (0.0, 0.0, 0.0, 0.0)
    # every trial drawn from one distribution, whoever the user: nearly all chance
    rng = np.random.default_rng(5)
    alike = tr.chance_table(long_table({"a": rng.normal(0, 1, (300, 4)).tolist()}, "tas"), ["tas"], resamples=300)
    assert chance_row(alike, "a")["trial_share"] > 0.9 and chance_row(alike, "a")["ci_high"] == pytest.approx(1.0)
    # no spread at all, and too few users
    flat = tr.chance_table(long_table({"a": [[3, 3], [3, 3]], "b": [[1, 2]]}, "tas"), ["tas", "absent"], resamples=50)
    assert set(flat["metric"]) == {"tas"}  # a metric the table lacks is left out
    assert chance_row(flat, "a")["note"] == tr.NO_SPREAD and math.isnan(chance_row(flat, "a")["trial_share"])
    assert chance_row(flat, "b")["note"] == tr.TOO_FEW and math.isnan(chance_row(flat, "b")["ci_low"])


def test_resamples_of_users_with_equal_means_have_no_spread_between_users():
    """A resample that draws the steady user alone has no spread at all: its between-user sum of squares is
    a difference of equal squares (here of sevenths), to be read as 0, not as rounding's 1e-17 of "users
    differ" that would make the share 0 while every other resample says 1."""
    frame = long_table({"b": [[0, 0, 0, 1], [0, 0, 0]]}, "tas")
    for rows in (frame, frame.iloc[::-1]):
        row = chance_row(tr.chance_table(rows, ["tas"], resamples=200, seed=1), "b")
        assert (row["trial_share"], row["ci_low"], row["ci_high"]) == (1.0, 1.0, 1.0)


def trial_tables():
    """Small tables of 2-6 users x 2-4 trials of two systems, values 0-4 with some missing."""
    value = st.one_of(st.integers(0, 4).map(float), st.just(NAN))
    users = st.lists(st.lists(value, min_size=2, max_size=4), min_size=2, max_size=6)
    return st.tuples(users, users)


@given(trial_tables(), st.floats(-50, 50), st.randoms(use_true_random=False))
@settings(max_examples=40, deadline=None)
def test_the_share_is_a_share_and_ignores_shifts_and_the_order_of_users(systems, shift, random):
    frame = long_table({"a": systems[0], "b": systems[1]}, "tas")
    table = tr.chance_table(frame, ["tas"], resamples=100, seed=4)
    for column in ("trial_share", "ci_low", "ci_high"):
        values = table[column].dropna()
        assert ((values >= 0) & (values <= 1)).all(), column
    assert (table["ci_low"].dropna() <= table["ci_high"].dropna()).all()
    shifted = tr.chance_table(frame.assign(tas=frame["tas"] + shift), ["tas"], resamples=100, seed=4)
    estimates = ["between_users", "between_trials", "trial_share", "ci_low", "ci_high"]
    pd.testing.assert_frame_equal(shifted[estimates], table[estimates], atol=1e-7, rtol=1e-6)
    assert shifted["note"].tolist() == table["note"].tolist()
    # other numbers for the same users (the bootstrap then draws them in another order: estimates only)
    names = list(range(frame["session_index"].max() + 1))
    random.shuffle(names)
    renamed = tr.chance_table(frame.assign(session_index=frame["session_index"].map(names.__getitem__)), ["tas"], 100)
    point = ["users", "trials", "between_users", "between_trials", "trial_share"]
    pd.testing.assert_frame_equal(renamed[point], table[point], atol=1e-9)
    # the rows in another order: the same table, interval included
    rows = list(frame.index)
    random.shuffle(rows)
    pd.testing.assert_frame_equal(tr.chance_table(frame.loc[rows], ["tas"], resamples=100, seed=4), table, atol=1e-9)


# ------------------------------------------------------------------ users x trials


def chance(between_users: float, between_trials: float) -> pd.DataFrame:
    row = {"metric": "tas", "system": tr.POOLED, "between_users": between_users, "between_trials": between_trials}
    other = {**row, "metric": "success"}
    return pd.DataFrame([{**row, "system": "a", "between_users": 9.0}, row, other])


def test_more_trials_never_need_more_users():
    ks = list(range(1, 11))
    plan = tr.users_for_trials(chance(0.01, 0.04), {"tas": 0.05}, 0.05, 0.8, ks)
    assert list(plan.columns) == tr.PLAN_COLUMNS
    assert set(plan["metric"]) == {"tas"} and list(plan["trials"]) == ks  # success: no difference stated
    assert plan["sd_of_user_mean"].tolist() == pytest.approx([math.sqrt(0.01 + 0.04 / k) for k in ks])
    assert plan["users_needed"].is_monotonic_decreasing
    assert plan["users_needed"].iloc[0] > plan["users_needed"].iloc[-1]
    assert (plan["sessions_needed"] == plan["users_needed"] * plan["trials"]).all()


def test_without_chance_trials_do_not_replace_users():
    plan = tr.users_for_trials(chance(0.04, 0.0), {"tas": 0.05}, 0.05, 0.8, [1, 2, 5])
    assert plan["users_needed"].nunique() == 1 and plan["sd_of_user_mean"].tolist() == pytest.approx([0.2] * 3)


# ------------------------------------------------------------------ for a reader


def test_markdown_and_figure(tmp_path):
    frame = long_table(SMALL)
    passes = tr.pass_table(frame, resamples=200)
    table = tr.chance_table(long_table({"a": [[1, 3], [2, 4], [6, 8]], "b": [[1, 2]]}, "tas"), ["tas"], resamples=100)
    plan = tr.users_for_trials(table, {"tas": 1.0}, 0.05, 0.8, [1, 4])
    text = tr.markdown(passes, table, plan)
    assert "2 systems (a, b)" in text and "up to 3 times" in text
    assert "| system | k = 1 | k = 2 | k = 3 |" in text
    assert "| b | 0.67 [0.67, 0.67]" not in text and "| b | 0.67 [" in text  # users differ: an interval
    assert "| tas | 0.25 [" in text and tr.TOO_FEW in text
    assert "| tas | 4 |" in text
    section = tr.plan_markdown(plan, 0.05, 0.8)  # for power.md too
    assert section.startswith("## Users x trials") and "alpha 0.05, power 0.8" in section and "| tas | 4 |" in section
    figures.pass_k_figure(passes, tmp_path / "pass_k")
    assert (tmp_path / "pass_k.png").stat().st_size > 0 and (tmp_path / "pass_k.svg").stat().st_size > 0
    # no success metric: the text and the figure say so
    assert "No success values." in tr.markdown(None, table)
    figures.pass_k_figure(None, tmp_path / "none")
    assert (tmp_path / "none.png").stat().st_size > 0 and (tmp_path / "none.svg").stat().st_size > 0


def test_the_summary_sentence_counts_users_and_trials():
    sentence = tr.nesting_sentence(long_table(SMALL))
    assert "3 simulated users met every system in 3 trials" in sentence and "users' means" in sentence
    uneven = tr.nesting_sentence(long_table({"a": [[1, 0], [1, 1, 1]]}))
    assert "2 to 3 trials" in uneven
