"""The metric scorecard on hand-made validity and agreement tables."""

import pandas as pd

from crseval.analysis import scorecard


def tables():
    validity = pd.DataFrame(
        [
            ("tas", "adaptation", "pass"),
            ("tas", "echo", "fail"),
            ("rec_satisfaction", "adaptation", "pass"),
            ("rec_satisfaction", "echo", "pass"),
            ("judge_coherence", "adaptation", "not measured"),
        ],
        columns=["metric", "check", "verdict"],
    )
    agreement = pd.DataFrame(
        [
            ("tas", "metric", "agrees", 0.7, True),
            ("rec_satisfaction", "metric", "agrees", 0.8, True),
            ("response_words", "metric", "associated", 0.74, False),
            ("reference: words per reply", "reference", "associated", 0.74, False),
            ("perplexity", "metric", "not measured", float("nan"), False),
        ],
        columns=["metric", "kind", "verdict", "oriented_auc", "beats_length"],
    )
    return validity, agreement


def test_a_metric_passes_only_when_every_check_run_passes():
    card = scorecard.scorecard(*tables()).set_index("metric")
    assert list(card.index) == ["tas", "rec_satisfaction", "judge_coherence", "response_words", "perplexity"]
    assert card.loc["rec_satisfaction"].to_dict() | {"oriented_auc": 0.8} == {
        "adaptation": "pass",
        "echo": "pass",
        "users": "agrees",
        "oriented_auc": 0.8,
        "beats_length": "yes",
        "checks_run": 4,
        "passes": True,
    }
    assert not card.loc["tas", "passes"] and card.loc["tas", "echo"] == "fail"  # fooled by the parrot
    assert not card.loc["response_words", "passes"]  # no better than reply length (it is reply length)
    # nothing measured: no check run, no pass
    assert card.loc["judge_coherence", "checks_run"] == 0 and not card.loc["judge_coherence", "passes"]
    assert card.loc["perplexity", "users"] == "not measured" and card.loc["perplexity", "beats_length"] == "not run"
    assert "reference: words per reply" not in card.index  # references are floors, not metrics


def test_without_calibration_the_users_checks_decide_and_the_headline_names_the_passing():
    _, agreement = tables()
    card = scorecard.scorecard(None, agreement)
    assert card.set_index("metric").loc["tas", ["adaptation", "echo", "checks_run", "passes"]].tolist() == [
        "not run",
        "not run",
        2,
        True,
    ]
    text = scorecard.markdown(card, {"tas": "grounded TAS"})
    assert (
        "**Metrics that pass every check run (checks run of 4): grounded TAS (2 of 4), rec_satisfaction (2 of 4).**"
        in text
    )
    empty = scorecard.markdown(scorecard.scorecard(None, agreement.iloc[2:3]), {})
    assert "No metric passes every check that was run." in empty
