"""Columns that pool a session's foci under a user whose shifts stay within one field: "cannot see a lag"."""

import math

import numpy as np
import pandas as pd
import pytest

from crseval.checks import scorecard
from crseval.checks.validity import (
    CANNOT_SEE_LAG,
    EXPECTATIONS,
    FieldShifts,
    field_shifts,
    field_shifts_by_profile,
    validity_by_profile,
    validity_markdown,
    validity_table,
)


def shift(turn: int, source: tuple[str, str], target: tuple[str, str]) -> dict:
    return {
        "turn": turn,
        "from_focus": {"field": source[0], "value": source[1]},
        "to_focus": {"field": target[0], "value": target[1]},
        "bridge": {"field": "actor", "value": "Someone"},
        "from_anchor": "A",
        "to_anchor": "B",
        "anchor_new": False,
    }


# Two simulated users (seeds 1 and 2), the first met by two systems: its shifts count once.
GENRE_TO_GENRE = shift(4, ("genre", "drama"), ("genre", "comedy"))
GENRE_TO_ACTOR = shift(7, ("genre", "comedy"), ("actor", "Tom Hanks"))
RECORDS = [
    {"system": "oracle-learned", "seed": 1, "shift_events": [GENRE_TO_GENRE, GENRE_TO_ACTOR]},
    {"system": "lag1-learned", "seed": 1, "shift_events": [GENRE_TO_GENRE, GENRE_TO_ACTOR]},
    {
        "system": "oracle-learned",
        "seed": 2,
        "shift_events": [
            shift(4, ("genre", "horror"), ("genre", "fantasy")),
            shift(7, ("genre", "fantasy"), ("genre", "action")),
        ],
    },
    {"system": "random-learned", "seed": 3, "shift_events": []},  # left before any shift
    {"system": "oracle-explicit", "seed": 1, "shift_events": [shift(4, ("genre", "drama"), ("actor", "Al Pacino"))]},
    {"system": "template-explicit", "seed": 1, "shift_events": [GENRE_TO_GENRE]},  # no calibration system
]


def test_the_share_of_shifts_within_one_field_by_hand():
    learned = field_shifts(RECORDS[:4])
    # seed 1: drama -> comedy (within), comedy -> Tom Hanks (across), once each whichever system met them;
    # seed 2: horror -> fantasy, fantasy -> action (both within)
    assert (learned.within, learned.total) == (3, 4) and learned.share == 0.75 and learned.mostly_within
    profiles = {"oracle-learned": "learned", "lag1-learned": "learned", "oracle-explicit": "explicit"}
    by_profile = field_shifts_by_profile(RECORDS, profiles)
    assert by_profile == {"learned": FieldShifts(3, 4), "explicit": FieldShifts(0, 1)}
    assert not by_profile["explicit"].mostly_within
    # the threshold is exact: more than 1/2
    assert not FieldShifts(1, 2).mostly_within and FieldShifts(51, 101).mostly_within
    assert not FieldShifts(0, 0).mostly_within and math.isnan(FieldShifts(0, 0).share)
    assert FieldShifts(14, 15).described() == "0.93 of this user's shifts stay within one field (14 of 15)"


# Means per calibration system: a pooled column that cannot tell the lagging systems from the oracle but orders
# the others as built (adherence_f1), a pooled column that fails for another reason (context retention: the
# stubborn system's replies change least), a pooled column that orders them all (cluster silhouette), a time-aware
# column that orders them all (segment adherence) and one that fails (TAS).
MEANS = {
    "adherence_f1": {"oracle": 0.50, "lag1": 0.52, "lag2": 0.51, "stubborn": 0.20, "random": 0.0},
    "context_retention": {"oracle": 0.30, "lag1": 0.31, "lag2": 0.32, "stubborn": 0.90, "random": 0.10},
    "cluster_silhouette": {"oracle": 0.40, "lag1": 0.35, "lag2": 0.30, "stubborn": 0.20, "random": 0.10},
    "adherence_segment_f1": {"oracle": 0.31, "lag1": 0.26, "lag2": 0.20, "stubborn": 0.14, "random": 0.0},
    "tas": {"oracle": 0.40, "lag1": 0.42, "lag2": 0.41, "stubborn": 0.10, "random": 0.0},
}
PROFILES = ("learned", "realistic")


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(7)
    rows = [
        {"system": role, "profile": profile, **{m: MEANS[m][role] + rng.normal(0, 0.002) for m in MEANS}}
        for profile in PROFILES
        for role in MEANS["tas"]
        for _ in range(30)
    ]
    profiles = {f"{role}-{profile}": profile for profile in PROFILES for role in MEANS["tas"]}
    shifts = {"learned": FieldShifts(14, 15), "realistic": FieldShifts(0, 15)}
    return validity_by_profile(pd.DataFrame(rows), profiles, resamples=100, seed=1, shifts=shifts), shifts


def test_a_pooled_column_cannot_see_a_lag_under_a_user_whose_shifts_stay_within_one_field(table):
    frame, _ = table
    rows = frame.set_index(["profile", "metric", "check"])
    learned, realistic = rows.loc["learned"], rows.loc["realistic"]
    for check in ("adaptation", "echo"):  # no parrot here: the echo order is the adaptation order
        row = learned.loc[("adherence_f1", check)]
        assert row["verdict"] == CANNOT_SEE_LAG and row["tau"] < 0.8  # measured as ever
        assert row["note"] == (
            "pools a session's foci; 0.93 of this user's shifts stay within one field (14 of 15); "
            "without the lagging systems it orders the others as built (tau 1.00)"
        )
        # under a user whose shifts cross fields it is judged as before
        assert realistic.loc[("adherence_f1", check), "verdict"] == "fail"
        assert pd.isna(realistic.loc[("adherence_f1", check), "note"])
    # a pooled column that fails without the lagging systems too still fails, with the reason
    retention = learned.loc[("context_retention", "adaptation")]
    assert retention["verdict"] == "fail"
    assert retention["note"].endswith("but it fails without the lagging systems too (tau 0.33)")
    # a pooled column that passes keeps its pass; time-aware columns are judged as ever under both users
    for profile in (learned, realistic):
        assert profile.loc[("cluster_silhouette", "adaptation"), "verdict"] == "pass"
        assert profile.loc[("adherence_segment_f1", "adaptation"), "verdict"] == "pass"
        assert profile.loc[("tas", "adaptation"), "verdict"] == "fail"
        assert pd.isna(profile.loc[("tas", "adaptation"), "note"])
    # rows that need no lag are judged as ever (the asker and the literal system are not run here)
    assert learned.loc[("adherence_f1", "elicitation"), "verdict"] == "not measured"
    # the scorecard reads the verdict as a check this user cannot show
    assert CANNOT_SEE_LAG.startswith(scorecard.CANNOT_SEE)


def test_the_validity_page_says_per_profile_what_its_shifts_do(table):
    frame, shifts = table
    text = validity_markdown(frame, {p: {"oracle": 30} for p in PROFILES}, shifts)
    learned, realistic = text.split("## User profile `learned`")[1].split("## User profile `realistic`")
    assert "Shifts: 14 of this user's 15 stay within one field (0.93), more than 1/2" in learned
    assert f"- adherence_f1 (adaptation), {CANNOT_SEE_LAG}: pools a session's foci" in learned
    assert "- context_retention (adaptation), fail: pools" in learned
    assert "Shifts: 0 of this user's 15 stay within one field (0.00), at most 1/2" in realistic
    assert "adherence_f1 (adaptation)" in realistic.split("Failing metrics: ")[1]
    assert CANNOT_SEE_LAG not in realistic


def test_pooled_and_time_aware_columns_are_declared_where_their_expectations_are():
    pooled = {e.metric for e in EXPECTATIONS if e.pools_foci}
    assert pooled == {"adherence_f1", "cluster_silhouette", "context_retention"}
    for metric in {e.metric for e in EXPECTATIONS}:  # one declaration per column, on each of its rows
        assert len({e.pools_foci for e in EXPECTATIONS if e.metric == metric}) == 1, metric
    # the time-aware sibling of session-level adherence carries its checks, so adaptation is judged there
    segment = {e.check for e in EXPECTATIONS if e.metric == "adherence_segment_f1"}
    assert {"adaptation", "echo", "prompt_echo"} <= segment
    time_aware = {"tas", "tas_segment", "recovery_rate_cosine", "adherence_segment_f1", "cross_coherence"}
    assert not time_aware & pooled


def test_a_pooled_column_stays_failing_when_too_few_systems_are_left_without_the_lagging_ones():
    """Oracle, two lags and the stubborn system: without the lags two systems are left, too few to order, so the
    failure is not shown to be the lag's."""
    means = {"oracle": 0.50, "lag1": 0.52, "lag2": 0.51, "stubborn": 0.20}
    frame = pd.DataFrame([{"system": s, "adherence_f1": m + 0.001 * i} for s, m in means.items() for i in range(10)])
    table = validity_table(frame, resamples=50, shifts=FieldShifts(9, 10)).set_index(["metric", "check"])
    row = table.loc[("adherence_f1", "adaptation")]
    assert row["verdict"] == "fail"
    assert row["note"].endswith("(9 of 10), but without the lagging systems it is not measured")
