"""The metric scorecard on hand-made validity and agreement tables."""

import pandas as pd

from crseval.checks import scorecard


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
        "checks_passed": 4,
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
    passing = "Metrics that pass every check run (checks run of 4): grounded TAS (2 of 4), rec_satisfaction (2 of 4)."
    assert passing in text
    empty = scorecard.markdown(scorecard.scorecard(None, agreement.iloc[2:3]), {})
    assert "No metric passes every check that was run." in empty


def test_metrics_are_ordered_by_how_much_was_checked_before_what_passed():
    """A metric that passed the one check it could run comes after one that passed three of four."""
    card = pd.DataFrame(
        {
            "metric": ["one", "three_of_four", "none"],
            "adaptation": ["pass", "pass", "not run"],
            "echo": ["not run", "fail", "not run"],
            "users": ["not run", "agrees", "not run"],
            "oriented_auc": [float("nan"), 0.7, float("nan")],
            "beats_length": ["not run", "yes", "not run"],
            "checks_run": [1, 4, 0],
            "checks_passed": [1, 3, 0],
            "passes": [True, False, False],
        }
    )
    text = scorecard.markdown(card, {})
    assert (
        "**Metrics by the evidence behind them (checks passed of checks run; 4 exist): three_of_four 3 of 4, "
        "one 1 of 1 (every check run passed).**" in text
    )
    rows = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| ") and "metric" not in line]
    assert rows == ["| three_of_four", "| one", "| none"]


def test_the_scorecard_says_which_tas_variant_leads():
    validity, agreement = tables()
    validity = pd.concat(
        [
            validity,
            pd.DataFrame([("tas_rec", "adaptation", "pass"), ("tas_rec", "echo", "pass")], columns=validity.columns),
        ]
    )
    agreement = pd.concat(
        [agreement, pd.DataFrame([("tas_rec", "metric", "agrees", 0.63, False)], columns=agreement.columns)]
    )
    card = scorecard.scorecard(validity, agreement)
    # tas: adaptation pass, echo fail, users agrees, beats length -> 3 of 4; tas_rec: 3 of 4 too (not beyond length)
    assert card.set_index("metric").loc[["tas", "tas_rec"], "checks_passed"].tolist() == [3, 3]
    labels = {"tas": "grounded TAS", "tas_rec": "TAS on recommended films"}
    assert (
        "grounded TAS and TAS on recommended films pass as many checks (3 of 4 checks against 3 of 4): neither "
        "leads." in scorecard.markdown(card, labels)
    )
    agreement.loc[agreement["metric"] == "tas", "verdict"] = "no evidence"
    text = scorecard.markdown(scorecard.scorecard(validity, agreement), labels)
    assert (
        "TAS on recommended films leads grounded TAS: grounded TAS passes 2 of 4 checks against 3 of 4 for TAS on "
        "recommended films." in text
    )
