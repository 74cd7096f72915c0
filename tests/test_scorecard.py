"""The metric scorecard (crseval.checks.scorecard) on hand-made validity, robustness and agreement tables."""

import math

import pandas as pd
import pytest

from crseval.checks import scorecard

METRICS = {
    "films": ("films offered per reply", True),
    "tas": ("grounded TAS", True),
    "silhouette": ("cluster silhouette", True),
    "distinct_2": ("distinct-2", None),
}


def validity():
    return pd.DataFrame(
        [
            ("explicit", "tas", "adaptation", "pass"),
            ("explicit", "tas", "echo", "fail"),
            ("explicit", "silhouette", "adaptation", "pass"),
            ("learned", "silhouette", "adaptation", "cannot see a lag under this user"),
            ("explicit", "films", "adaptation", "not measured"),
        ],
        columns=["profile", "metric", "check", "verdict"],
    )


def robustness():
    return pd.DataFrame(
        [
            ("tas", "explicit", "learned", True),
            ("silhouette", "explicit", "learned", False),
            ("films", "explicit", "learned", False),
        ],
        columns=["metric", "profile_a", "profile_b", "conclusion_changes"],
    )


def people_row(metric, corpus, verdict="agrees", value=0.7, margin=0.05, low=0.02, high=0.08, holm=0.001, **extra):
    return {
        "metric": metric,
        "corpus": corpus,
        "in_pool": corpus != "pooled" and ":" not in corpus,
        "verdict": verdict,
        "value": value,
        "beyond_length": margin,
        "beyond_length_low": low,
        "beyond_length_high": high,
        "beyond_system": extra.get("system", math.nan),
        "beyond_system_low": extra.get("system_low", math.nan),
        "beyond_system_high": extra.get("system_high", math.nan),
        "p_beyond_length_holm": holm if corpus == "pooled" else math.nan,
    }


def people():
    return pd.DataFrame(
        [
            people_row("films", "pooled"),
            people_row("films", "arena", system=0.01, system_low=-0.05, system_high=0.07),
            people_row("films", "iard"),
            people_row("films", "ab: understanding", margin=-0.2, low=-0.3, high=-0.1),  # not pooled: ignored
            people_row("tas", "pooled", margin=0.01, low=-0.02, high=0.04, holm=0.6),
            people_row("silhouette", "pooled"),
            people_row("silhouette", "iard", margin=-0.1, low=-0.15, high=-0.02),  # behind length on one corpus
            people_row("distinct_2", "pooled", verdict="associated"),
        ]
    )


def card(**kwargs):
    return scorecard.scorecard(
        METRICS, validity=validity(), robustness=robustness(), people=people(), **kwargs
    ).set_index("metric")


def test_calibration_under_each_profile_a_check_a_profile_cannot_show_neither_passes_nor_fails():
    found = card()
    assert found.loc["tas", "calibration"] == "fail"
    assert found.loc["silhouette", "calibration"] == "pass"  # passes under explicit; learned cannot see a lag
    assert "cannot see a lag under this user (learned)" in found.loc["silhouette", "calibration_detail"]
    assert found.loc["films", "calibration"] == "not run"  # not measured is no verdict
    assert found.loc["distinct_2", "calibration"] == "not run"


def test_stability_from_the_robustness_table():
    found = card()
    assert found.loc["tas", "stability"] == "changes"
    assert found.loc["tas", "stability_detail"] == "the conclusion changes between explicit and learned"
    assert found.loc["films", "stability"] == "holds"
    assert found.loc["distinct_2", "stability"] == "not run"


def test_people_shown_only_ahead_of_length_pooled_and_behind_nothing_on_a_pooled_corpus():
    found = card()
    assert found.loc["films", "people"] == "shown"  # the aspect row behind length is not a pooled corpus
    assert found.loc["tas", "people"] == "not shown"
    assert "not shown ahead of reply length pooled" in found.loc["tas", "people_detail"]
    assert found.loc["silhouette", "people"] == "not shown"
    assert found.loc["silhouette", "people_detail"] == "behind reply length on iard (-0.10 [-0.15, -0.02])"
    assert found.loc["films", "people_c"] == pytest.approx(0.7)


def test_what_leads_follows_the_evidence_asked_and_never_an_undeclared_direction():
    found = card(lead=["people"])
    assert found["leads"].to_dict() == {"films": True, "tas": False, "silhouette": False, "distinct_2": False}
    assert found.loc["distinct_2", "reason"] == "its direction is undeclared: it describes, it does not rank"
    assert found.loc["tas", "reason"].startswith("people: not shown ahead of reply length pooled")
    # films has no calibration order: asking for calibration too stops it, with the reason
    strict = card(lead=["calibration", "people"])
    assert not strict.loc["films", "leads"]
    assert strict.loc["films", "reason"] == "calibration: not measured"
    # nothing asked: every metric with a direction leads
    assert card(lead=[])["leads"].to_dict() == {"films": True, "tas": True, "silhouette": True, "distinct_2": False}
    with pytest.raises(ValueError, match="not among"):
        card(lead=["users"])


def test_an_imported_corpus_s_own_verdicts_stand_in_without_corpora():
    users = pd.DataFrame(
        [
            ("films", "agrees", 0.8, True, 0.06, 0.01, 0.1),
            ("tas", "agrees", 0.7, False, 0.0, -0.05, 0.05),
        ],
        columns=["metric", "verdict", "oriented_auc", "beats_length", "beyond_length", "beyond_length_low", "x"],
    )
    found = scorecard.scorecard(METRICS, users=users).set_index("metric")
    assert found.loc["films", "people"] == "shown" and found.loc["films", "leads"]
    assert found.loc["tas", "people_detail"] == "agrees with users, but no better than reply length"
    assert found.loc["silhouette", "people"] == "not run"


def test_markdown_names_the_metrics_that_may_lead():
    text = scorecard.markdown(card().reset_index(), ["people"])
    assert "**Metrics that may lead:** films offered per reply." in text
    rows = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| ") and "metric |" not in line]
    assert rows[0] == "| films offered per reply"
    nothing = scorecard.markdown(scorecard.scorecard({"tas": ("grounded TAS", True)}), ["people"])
    assert "**No metric has the evidence to lead** (people)." in nothing
