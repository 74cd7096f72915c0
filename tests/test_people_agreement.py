"""Agreement with people across corpora (crseval.checks.people_agreement), against values computed by hand."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crseval.checks import people_agreement
from crseval.checks.people_agreement import POOLED, Corpus, agreement_table, system_baseline


def binary_corpus(**overrides) -> Corpus:
    # verdicts 1, 1, 0, 0; metric 3, 1, 2, 0: pairs (better, worse) (0,2) > (0,3) > (1,2) < (1,3) > -> AUC 3/4
    sessions = pd.DataFrame(
        {
            "session_id": ["d0", "d1", "d2", "d3"],
            "system": ["a", "b", "a", "b"],
            "metric": [3.0, 1.0, 2.0, 0.0],
            "response_words": [10.0, 10.0, 10.0, 10.0],  # no separation: AUC 1/2
            "verdict_accepted": [1.0, 1.0, 0.0, 0.0],
        }
    )
    return Corpus(
        name="binary", sessions=sessions, verdict="verdict_accepted", scale="binary", between_people=True, **overrides
    )


def ordinal_corpus() -> Corpus:
    # verdicts 1, 2, 3; metric 1, 3, 2: (0,1) concordant, (0,2) concordant, (1,2) discordant -> tau-b 1/3, C 2/3
    sessions = pd.DataFrame(
        {
            "session_id": ["e0", "e1", "e2"],
            "system": ["p", "p", "p"],
            "metric": [1.0, 3.0, 2.0],
            "response_words": [5.0, 6.0, 7.0],  # perfectly concordant: tau-b 1, C 1
            "verdict_overall": [1.0, 2.0, 3.0],
        }
    )
    return Corpus(name="ordinal", sessions=sessions, verdict="verdict_overall", scale="ordinal", between_people=True)


METRICS = {"metric": ("a metric", True)}


def row(table: pd.DataFrame, corpus: str, metric: str = "metric") -> dict:
    return table[(table["corpus"] == corpus) & (table["metric"] == metric)].iloc[0].to_dict()


def test_binary_auc_length_margin_system_baseline_and_within_system_by_hand():
    table = agreement_table([binary_corpus()], METRICS, resamples=200, seed=1)
    found = row(table, "binary")
    assert found["statistic"] == "AUC"
    assert found["value"] == pytest.approx(0.75)
    assert found["oriented"] == pytest.approx(0.25)
    assert found["pairs"] == 4
    # length ties everywhere: |1/2 - 1/2| = 0, so the margin is the metric's own 1/4
    assert found["beyond_length"] == pytest.approx(0.25)
    # system baseline: each system's mean verdict, 1/2 for both: AUC 1/2, margin 1/4 - 0 = 1/4
    assert found["beyond_system"] == pytest.approx(0.25)
    # within system: pairs (d0, d2) of a: 3 > 2 and (d1, d3) of b: 1 > 0 -> C 1
    assert found["within_system"] == pytest.approx(1.0)
    assert found["ci_low"] <= found["value"] <= found["ci_high"]


def test_undeclared_and_lower_is_better_directions():
    table = agreement_table([binary_corpus()], {"metric": ("a metric", False)}, resamples=100, seed=1)
    assert row(table, "binary")["oriented"] == pytest.approx(-0.25)  # lower is better: it disagrees
    table = agreement_table([binary_corpus()], {"metric": ("a metric", None)}, resamples=100, seed=1)
    assert row(table, "binary")["oriented"] == pytest.approx(0.25)  # distance from chance either way


def test_ordinal_tau_b_and_pooled_concordance_by_hand():
    table = agreement_table([binary_corpus(), ordinal_corpus()], METRICS, resamples=100, seed=3)
    found = row(table, "ordinal")
    assert found["statistic"] == "tau-b"
    assert found["value"] == pytest.approx(1 / 3)
    assert found["concordance"] == pytest.approx(2 / 3)
    # length is perfectly concordant: tau-b 1, so the margin is 1/3 - 1
    assert found["beyond_length"] == pytest.approx(1 / 3 - 1)
    assert math.isnan(found["beyond_system"])  # one system only
    pooled = row(table, POOLED)
    # C over both corpora's pairs: 3 of 4 and 2 of 3 concordant -> 5/7
    assert pooled["value"] == pytest.approx(5 / 7)
    assert pooled["pairs"] == 7
    # length pooled: 2 of 4 (ties, half each) and 3 of 3 -> 5/7 as well: no margin
    assert pooled["beyond_length"] == pytest.approx(5 / 7 - 0.5 - abs(5 / 7 - 0.5))


def test_votes_share_agreed():
    votes = pd.DataFrame(
        {
            "system_a": ["a", "b"],
            "system_b": ["b", "a"],
            "winner": ["a", None],
            "session_a": ["d0", "d1"],
            "session_b": ["d1", "d2"],
        }
    )
    table = agreement_table([binary_corpus(votes=votes)], METRICS, resamples=50, seed=0)
    found = row(table, "binary")
    assert found["votes"] == 1  # the tie is no decided vote
    assert found["votes_agreed"] == pytest.approx(1.0)  # d0 (3) preferred over d1 (1)


def test_a_metric_with_missing_values_is_compared_on_the_dialogues_it_has():
    corpus = binary_corpus()
    corpus.sessions.loc[3, "metric"] = math.nan  # d3 gone: pairs (0,2) > and (1,2) < -> AUC 1/2
    table = agreement_table([corpus], METRICS, resamples=50, seed=0)
    found = row(table, "binary")
    assert found["value"] == pytest.approx(0.5)
    assert found["dialogues"] == 3


def test_system_baseline_is_the_systems_mean_verdict_and_undefined_for_a_single_dialogue():
    sessions = pd.DataFrame({"system": ["a", "a", "a", "b", "c", "c"], "verdict": [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]})
    baseline = system_baseline(sessions, "verdict")
    assert list(baseline[:3]) == pytest.approx([1 / 3] * 3) and list(baseline[4:]) == [1.0, 1.0]
    assert math.isnan(baseline[3])
    # a corpus whose systems differ: the baseline separates them, and within a system it ties (C 1/2)
    corpus = Corpus(
        name="sys",
        sessions=sessions.assign(
            session_id=list("uvwxyz"), metric=0.0, response_words=1.0, verdict_s=sessions["verdict"]
        ),
        verdict="verdict_s",
        scale="binary",
        between_people=False,
    )
    found = row(agreement_table([corpus], METRICS, resamples=20, seed=0), "sys", "reference: system")
    # pairs (better, worse) with both values: (u,v) (u,w) tie at 1/3; (y,v) (y,w) (z,v) (z,w) 1 > 1/3 -> 5/6
    assert found["value"] == pytest.approx(5 / 6)
    assert found["within_system"] == pytest.approx(0.5)


def test_holm_over_the_metrics_pooled_rows_and_deterministic():
    metrics = {"metric": ("a metric", True), "response_words": ("words", None)}
    first = agreement_table([binary_corpus(), ordinal_corpus()], metrics, resamples=100, seed=5)
    again = agreement_table([binary_corpus(), ordinal_corpus()], metrics, resamples=100, seed=5)
    pd.testing.assert_frame_equal(first, again)
    pooled = first[first["corpus"] == POOLED]
    assert set(pooled["metric"]) == {"metric", "response_words", *people_agreement.REFERENCES}


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1), st.floats(-5, 5, allow_nan=False)), min_size=4, max_size=12).filter(
        lambda rows: len({v for v, _ in rows}) == 2
    )
)
def test_auc_bounds_and_symmetry(rows):
    sessions = pd.DataFrame(
        {
            "session_id": [f"s{i}" for i in range(len(rows))],
            "system": ["x"] * len(rows),
            "metric": [m for _, m in rows],
            "response_words": [1.0] * len(rows),
            "verdict_accepted": [float(v) for v, _ in rows],
        }
    )
    corpus = Corpus(name="c", sessions=sessions, verdict="verdict_accepted", scale="binary", between_people=False)
    up = row(agreement_table([corpus], METRICS, resamples=20, seed=0), "c")
    down = row(agreement_table([corpus], {"metric": ("m", False)}, resamples=20, seed=0), "c")
    assert 0 <= up["value"] <= 1
    assert up["oriented"] == pytest.approx(-down["oriented"])
    flipped = sessions.assign(metric=-sessions["metric"])
    mirrored = Corpus(name="c", sessions=flipped, verdict="verdict_accepted", scale="binary", between_people=False)
    assert row(agreement_table([mirrored], METRICS, resamples=20, seed=0), "c")["value"] == pytest.approx(
        1 - up["value"]
    )


def test_resample_counts_keep_each_verdicts_size():
    verdicts = np.array([1.0, 1.0, 1.0, 0.0, 0.0])
    pairs = people_agreement.Pairs(verdicts, np.array(["a"] * 5), "binary", resamples=30, seed=2)
    assert (pairs.counts[1:, :3].sum(axis=1) == 3).all()
    assert (pairs.counts[1:, 3:].sum(axis=1) == 2).all()
