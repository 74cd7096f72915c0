"""Agreement statistics (crseval.checks.agreement) against values computed by hand."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau
from sklearn.metrics import roc_auc_score

from crseval.checks import agreement


def test_auc_is_one_for_the_label_half_for_a_constant_zero_for_the_reverse():
    labels = [1, 1, 1, 0, 0]
    assert agreement.auc(labels, labels) == 1.0
    assert agreement.auc([3, 3, 3, 3, 3], labels) == 0.5
    assert agreement.auc([-x for x in labels], labels) == 0.0


def test_auc_by_hand_with_ties_and_missing_values():
    # satisfied 3, 2, (NaN dropped); frustrated 2, 1: pairs (3>2) 1, (3>1) 1, (2=2) 0.5, (2>1) 1 -> 3.5 / 4
    values = [3, 2, math.nan, 2, 1]
    labels = [1, 1, 1, 0, 0]
    assert agreement.auc(values, labels) == 0.875
    row = agreement.auc_with_ci(values, labels, resamples=0, seed=0)
    assert (row["auc"], row["n_satisfied"], row["n_frustrated"]) == (0.875, 2, 2)
    assert math.isnan(agreement.auc([1, 2], [1, 1]))  # one class only


def test_auc_ci_is_seeded_and_holds_the_estimate():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 60)
    values = labels + rng.normal(0, 1, 60)
    first = agreement.auc_with_ci(values, labels, resamples=500, seed=11)
    assert first == agreement.auc_with_ci(values, labels, resamples=500, seed=11)
    assert first["ci_low"] <= first["auc"] <= first["ci_high"]
    assert first["auc"] == pytest.approx(roc_auc_score(labels, values))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=30))
def test_auc_matches_scikit_learn_and_flips_with_the_sign(pairs):
    values = [v for v, _ in pairs]
    labels = [int(label) for _, label in pairs]
    if len(set(labels)) < 2:
        assert math.isnan(agreement.auc(values, labels))
        return
    value = agreement.auc(values, labels)
    assert 0 <= value <= 1
    assert value == pytest.approx(roc_auc_score(labels, values))
    assert agreement.auc([-v for v in values], labels) == pytest.approx(1 - value)


def test_wilson_interval_by_hand():
    # 5 of 10, z = 1.959964: centre 0.5, half = z sqrt(0.025 + z^2/400) / (1 + z^2/10)
    z = 1.959963984540054
    half = z * math.sqrt(0.25 / 10 + z * z / 400) / (1 + z * z / 10)
    low, high = agreement.wilson_interval(5, 10)
    assert (low, high) == pytest.approx((0.5 - half, 0.5 + half))
    # none of n: [0, z^2 / (n + z^2)]; all of n: the mirror image
    assert agreement.wilson_interval(0, 10) == pytest.approx((0.0, z * z / (10 + z * z)))
    assert agreement.wilson_interval(10, 10) == pytest.approx((10 / (10 + z * z), 1.0))
    assert all(math.isnan(v) for v in agreement.wilson_interval(0, 0))


def test_elo_by_hand():
    # vote 1: expected 0.5, a wins: a 1008, b 992; vote 2, a tie: expected for a 1 / (1 + 10^(-16/400))
    expected = 1 / (1 + 10 ** (-16 / 400))
    ratings = agreement.elo_ratings([("a", "b", "a"), ("a", "b", None)])
    assert ratings["a"] == pytest.approx(1008 + 16 * (0.5 - expected))
    assert ratings["b"] == pytest.approx(992 - 16 * (0.5 - expected))
    assert sum(ratings.values()) == pytest.approx(2000)  # Elo moves points, it creates none


def test_bradley_terry_by_hand():
    # a beats b 3 times, b beats a once: p_a / p_b = 3, log-strengths +-ln(3)/2
    votes = [("a", "b", "a")] * 3 + [("a", "b", "b")]
    strengths = agreement.bradley_terry(votes)
    assert strengths["a"] == pytest.approx(math.log(3) / 2) and strengths["b"] == pytest.approx(-math.log(3) / 2)
    # a tie counts half a win each way: 2.5 vs 1.5 wins in 4 games
    tied = agreement.bradley_terry([("a", "b", "a")] * 2 + [("a", "b", "b"), ("a", "b", None)])
    assert tied["a"] - tied["b"] == pytest.approx(math.log(2.5 / 1.5))
    # a system that never lost has no maximum-likelihood strength: NaN, not a number invented
    assert all(math.isnan(v) for v in agreement.bradley_terry([("a", "b", "a")]).values())


def test_bradley_terry_prior_solves_its_likelihood():
    """With the prior (virtual ties against a reference of strength 1) the MM fixed point sets the
    gradient of the penalised log-likelihood to zero:
    wins_i + prior/2 = sum_j n_ij p_i/(p_i+p_j) + prior p_i/(p_i+1)."""
    votes = [("a", "b", "a"), ("b", "c", "b"), ("a", "c", "a"), ("c", "a", None)]
    prior = 1.0
    logs = agreement.bradley_terry(votes, prior=prior)
    # undo the centring: find the reference scale where the equations hold
    names = sorted(logs)
    wins = {"a": 2.5, "b": 1.0, "c": 0.5}
    games = {("a", "b"): 1, ("b", "c"): 1, ("a", "c"): 2}

    def residual(shift):
        p = {n: math.exp(logs[n] + shift) for n in names}
        out = []
        for i in names:
            expected = sum(
                count * p[i] / (p[i] + p[j])
                for (x, y), count in games.items()
                for j in (y if x == i else x,)
                if i in (x, y)
            )
            out.append(wins[i] + prior / 2 - expected - prior * p[i] / (p[i] + 1))
        return out

    shifts = np.linspace(-2, 2, 40001)
    best = min(shifts, key=lambda s: sum(r * r for r in residual(s)))
    assert max(abs(r) for r in residual(best)) < 1e-3
    assert logs["a"] > logs["b"] > logs["c"]


def test_kendall_tau_is_scipy_tau_b():
    x, y = [1, 2, 3, 4, 4], [2, 1, 3, 5, 4]
    assert agreement.kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic)
    assert agreement.kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert math.isnan(agreement.kendall_tau([1, 2], [1, 2]))
    assert math.isnan(agreement.kendall_tau([1, 1, 1], [1, 2, 3]))


@settings(max_examples=80, deadline=None)
@given(
    st.integers(2, 7).flatmap(
        lambda n: st.tuples(
            st.lists(
                st.lists(st.one_of(st.integers(0, 3), st.just(math.nan)), min_size=n, max_size=n),
                min_size=1,
                max_size=4,
            ),
            st.lists(st.one_of(st.integers(0, 3), st.just(math.nan)), min_size=n, max_size=n),
        )
    )
)
def test_vectorised_kendall_tau_is_the_pairwise_one(case):
    columns, ranking = case
    x = np.array(columns, dtype=float).T
    taus = agreement.kendall_tau_columns(x, np.array(ranking, dtype=float))
    for column, tau in zip(columns, taus):
        expected = agreement.kendall_tau(column, ranking)
        assert (math.isnan(tau) and math.isnan(expected)) or tau == pytest.approx(expected)


# Small vote sets written out: d never wins (it loses to a and ties nobody), c ties b once.
VOTE_SETS = [
    [("a", "b", "a"), ("a", "b", "b"), ("a", "b", "a")],
    [("a", "b", "a"), ("b", "c", "b"), ("a", "c", "a"), ("c", "a", None), ("a", "d", "a")],
    [("a", "d", "a"), ("b", "d", "b"), ("c", "b", None), ("c", "a", "c"), ("a", "b", "b")],
    [("a", "b", None), ("a", "b", None)],
]


def _scalar(votes, systems, prior):
    strengths = agreement.bradley_terry(votes, systems, prior=prior)
    return [strengths[s] for s in systems]


@pytest.mark.parametrize("prior", [1.0, 0.0])
def test_batched_bradley_terry_is_the_scalar_fit_of_each_vote_set(prior):
    systems = ["a", "b", "c", "d"]
    tables = [agreement.vote_table(votes, systems) for votes in VOTE_SETS]
    wins = np.stack([w.sum(axis=0) for w, _ in tables])
    games = np.stack([g.sum(axis=0) for _, g in tables])
    # set 1: a has 2 wins, b 1, in 3 games (c and d play nobody: only the prior's virtual ties)
    assert wins[0].tolist() == [2, 1, 0, 0] and games[0, 0, 1] == games[0, 1, 0] == 3
    batch = agreement.bradley_terry_batch(wins, games, prior)
    expected = np.array([_scalar(votes, systems, prior) for votes in VOTE_SETS])
    if prior:
        # with the prior every set has strengths; d, who never wins, is the weakest where it played
        assert not np.isnan(batch).any() and batch[1].argmin() == batch[2].argmin() == 3
        assert np.array_equal(batch, expected)  # the same steps: the same floats
    else:
        # without it d (never won) and c, d (never played) leave every set without a maximum: NaN rows
        assert np.isnan(batch).all() and np.isnan(expected).all()
        two = agreement.bradley_terry_batch(wins[[0, 3]][:, :2], games[[0, 3]][:, :2, :2])
        assert two[0] == pytest.approx([math.log(2) / 2, -math.log(2) / 2], abs=1e-12)
        assert two[1].tolist() == [0.0, 0.0]  # two ties: equal strengths
        assert two == pytest.approx(np.array([_scalar(VOTE_SETS[i], ["a", "b"], 0.0) for i in (0, 3)]), abs=1e-12)


def test_bradley_terry_of_resampled_votes_is_the_scalar_fit_of_each_resample():
    votes = VOTE_SETS[1] + VOTE_SETS[2] + [("e", "a", "e")]  # e: in the votes only, not a listed system
    systems = ["a", "b", "c", "d"]
    rng = np.random.default_rng(4)
    draws = rng.integers(0, len(votes), (200, len(votes)))
    counts = np.stack([np.bincount(row, minlength=len(votes)) for row in draws])
    strengths = agreement.bradley_terry_resamples(votes, systems, counts, prior=1.0)
    # a resample is fitted over the listed systems and those its votes name (with e, without e)
    expected = np.array([_scalar([votes[i] for i in sorted(row)], systems, 1.0) for row in draws])
    assert (counts[:, -1] > 0).any() and (counts[:, -1] == 0).any()
    assert np.array_equal(strengths, expected)


def test_kendall_tau_of_many_resamples_is_the_one_of_each():
    rng = np.random.default_rng(6)
    x = rng.integers(0, 3, (30, 4, 5)).astype(float)
    x[rng.random(x.shape) < 0.1] = math.nan
    y = rng.integers(0, 4, (30, 4)).astype(float)
    rows = agreement.kendall_tau_rows(x, y)
    expected = np.array([agreement.kendall_tau_columns(x[i], y[i]) for i in range(30)])
    assert np.array_equal(rows, expected, equal_nan=True)
    assert agreement.kendall_tau_rows(x[:0], y[:0]).shape == (0, 5)


def test_resampled_auc_from_counts_is_the_auc_of_each_resample():
    # positives 3, 1; negatives 1, 0: resample (3, 3) vs (1, 0) separates fully (AUC 1); (1, 1) vs (1, 1) is all
    # ties (AUC 0.5); (1, 3) vs (0, 0): 1 and 3 above both zeros (AUC 1)
    positive, negative = np.array([3.0, 1.0]), np.array([1.0, 0.0])
    p_index, n_index = np.array([[0, 0], [1, 1], [1, 0]]), np.array([[0, 1], [0, 0], [1, 1]])
    assert agreement.auc_resampled(positive, negative, p_index, n_index).tolist() == [1.0, 0.5, 1.0]
    rng = np.random.default_rng(2)
    positive, negative = rng.integers(0, 5, 23).astype(float), rng.integers(0, 4, 31).astype(float)
    p_index, n_index = rng.integers(0, 23, (100, 23)), rng.integers(0, 31, (100, 31))
    expected = agreement.auc_batch(positive[p_index], negative[n_index])
    assert np.array_equal(agreement.auc_resampled(positive, negative, p_index, n_index), expected)
