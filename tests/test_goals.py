"""Goal metrics (crseval.metrics.goals) against values computed by hand on dialogues written here."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crseval.metrics.goals import NO_GROUND_TRUTH, ONE_TURN, SESSION_COLUMNS, Films, score_session

# A catalog of four films: title -> field -> values.
FILMS = {
    "Alpha": {"genre": ["drama"], "actor": ["Xavier Lane"]},
    "Beta": {"genre": ["drama"], "actor": ["Yara Moss"]},
    "Gamma": {"genre": ["comedy"], "actor": ["Yara Moss"]},
    "Delta": {"genre": ["comedy"], "actor": ["Xavier Lane"]},
}


class Catalog:
    """The two lookups the goal metrics make of the catalog index."""

    def film_id(self, title):
        return list(FILMS).index(title) if title in FILMS else None

    def film_values(self, film_id, field):
        return FILMS[list(FILMS)[film_id]].get(field, [])


def wish(field, value, negated=False):
    return {"field": field, "value": value, "negated": negated}


def turn(number, focus, gold, disclosure, said, *, shift=False, asks=(), recommended=(), accepts=()):
    return {
        "turn": number,
        "user_meta": {
            "focus_field": focus[0],
            "focus_value": focus[1],
            "constraints": gold,
            "disclosure": disclosure,
            "said": said,
            "shift_event": shift,
        },
        "system_asks": list(asks),
        "recommended_titles": list(recommended),
        "user_implies": {"accepts": list(accepts), "rejects": []},
    }


DRAMA, YARA = ("genre", "drama"), ("actor", "Yara Moss")


def dialogue(ending="turn_limit"):
    """Turn 1: the user wants a drama but waits to be asked; the system asks about the genre.
    Turn 2: the user says it; the system recommends Alpha (a drama).
    Turn 3: the wish shifts, unsaid and hidden, to Yara Moss; the user takes Alpha (no longer fits);
            the system recommends Alpha and Beta.
    Turn 4: the user takes Beta (Yara Moss); the system recommends Gamma."""
    return {
        "turns": [
            turn(1, DRAMA, [wish(*DRAMA)], ["on_ask"], [False], asks=["genre"]),
            turn(2, DRAMA, [wish(*DRAMA)], ["on_ask"], [True], recommended=["Alpha"]),
            turn(
                3,
                YARA,
                [wish(*YARA)],
                ["hidden"],
                [False],
                shift=True,
                recommended=["Alpha", "Beta"],
                accepts=["Alpha"],
            ),
            turn(4, YARA, [wish(*YARA)], ["hidden"], [False], recommended=["Gamma"], accepts=["Beta"]),
        ],
        "ending": {"reason": ending, "turn": 4, "farewell": None if ending == "turn_limit" else "Bye."},
    }


def scores(record):
    return score_session(record, Films(Catalog()))


def test_a_dialogue_scored_by_hand():
    got = scores(dialogue())
    assert got["success"] == 1.0  # Beta, taken at turn 4 after the shift at turn 3, has Yara Moss
    assert got["turns_to_success"] == 1.0  # 4 - 3
    assert got["abandoned"] == 0.0
    # replies made with a wish unsaid: turns 1 (asks the genre: yes), 3 and 4 (ask nothing) -> 1/3
    assert got["elicitation_rate"] == pytest.approx(1 / 3)
    # drama: replies 1 (no film) and 2 (Alpha) -> met after 2; Yara Moss: reply 3 (Beta) -> 1; mean 1.5
    assert got["undisclosed_met"] == 1.0 and got["turns_to_undisclosed"] == 1.5
    # after the shift drama is superseded: Alpha (drama, not Yara) is stale, Beta and Gamma have Yara -> 1/3
    assert got["stale_rate"] == pytest.approx(1 / 3)


def test_a_film_taken_that_misses_a_wish_is_no_success_and_a_wish_never_met_counts_its_replies_plus_one():
    record = dialogue(ending="abandoned")
    record["turns"][3]["user_implies"]["accepts"] = ["Delta"]  # no Yara Moss
    record["turns"][2]["recommended_titles"] = ["Alpha", "Delta"]
    record["turns"][3]["recommended_titles"] = ["Delta"]
    got = scores(record)
    assert got["success"] == 0.0 and math.isnan(got["turns_to_success"])
    assert got["abandoned"] == 1.0
    # Yara Moss stayed gold for replies 3 and 4 and was never met: 2 + 1 = 3; drama 2 -> mean 2.5
    assert got["undisclosed_met"] == 0.5 and got["turns_to_undisclosed"] == 2.5
    # Alpha and Delta at turn 3, Delta at turn 4: Alpha serves the old drama -> 1/3
    assert got["stale_rate"] == pytest.approx(1 / 3)


def test_a_user_who_says_everything_and_never_shifts():
    record = {
        "turns": [
            turn(1, DRAMA, [wish(*DRAMA)], ["volunteer"], [True], recommended=["Delta"]),
            turn(2, DRAMA, [wish(*DRAMA)], ["volunteer"], [True], recommended=["Alpha"]),
            turn(3, DRAMA, [wish(*DRAMA)], ["volunteer"], [True], accepts=["Alpha"]),
        ]
    }
    got = scores(record)
    assert got["success"] == 1.0 and got["turns_to_success"] == 2.0  # from the opening: 3 - 1
    # nothing withheld, nothing undisclosed, no shift: not measurable; no ending recorded (an older session)
    for name in ("elicitation_rate", "undisclosed_met", "turns_to_undisclosed", "stale_rate", "abandoned"):
        assert math.isnan(got[name]), name


def test_an_exclusion_is_not_an_undisclosed_wish_and_a_film_outside_the_catalog_satisfies_nothing():
    record = dialogue()
    for t in record["turns"]:
        t["user_meta"]["constraints"] = t["user_meta"]["constraints"] + [wish("genre", "comedy", True)]
        t["user_meta"]["disclosure"] = t["user_meta"]["disclosure"] + ["hidden"]
        t["user_meta"]["said"] = t["user_meta"]["said"] + [False]
    record["turns"][3]["user_implies"]["accepts"] = ["Unknown Film"]
    got = scores(record)
    assert got["turns_to_undisclosed"] == 1.5  # as before: the exclusion is left out
    assert got["success"] == 0.0
    # now something is withheld at turn 2 too, and the reply asks nothing: 1/4
    assert got["elicitation_rate"] == pytest.approx(1 / 4)


def test_imported_sessions_have_no_goal_metrics():
    got = scores({"turns": [{"turn": 1, "user_meta": None, "recommended_titles": []}]})
    assert all(math.isnan(got[column.name]) for column in SESSION_COLUMNS if column.metric)
    assert got["success_missing_reason"] == NO_GROUND_TRUTH


COMEDY, XAVIER = ("genre", "comedy"), ("actor", "Xavier Lane")


def scheduled(turns, ending="turn_limit"):
    """The first `turns` turns of a session planned with `simulator.shift_every: 3`: shifts at turns 4, 7
    and 10. Every wish is said; every reply recommends a film that meets the turn's wish (as the oracle).
    Turns 1-3 drama, 4-6 Yara Moss, 7-9 comedy, 10 Xavier Lane. The user takes Beta (Yara Moss) at turn 5,
    Alpha (a drama, no longer wanted) at turn 8 and Delta (a comedy) at turn 9."""
    plan = [
        (DRAMA, False, "Alpha", ()),
        (DRAMA, False, "Beta", ()),
        (DRAMA, False, "Alpha", ()),
        (YARA, True, "Beta", ()),
        (YARA, False, "Gamma", ("Beta",)),
        (YARA, False, "Beta", ()),
        (COMEDY, True, "Gamma", ()),
        (COMEDY, False, "Delta", ("Alpha",)),
        (COMEDY, False, "Gamma", ("Delta",)),
        (XAVIER, True, "Alpha", ()),
    ]
    return {
        "turns": [
            turn(n, focus, [wish(*focus)], ["volunteer"], [True], shift=shift, recommended=[film], accepts=taken)
            for n, (focus, shift, film, taken) in enumerate(plan[:turns], start=1)
        ],
        "ending": {"reason": ending, "turn": turns, "farewell": None if ending == "turn_limit" else "Bye."},
    }


def test_success_is_measured_when_replies_after_the_last_shift_are_judged():
    got = scores(scheduled(9))  # shifts at 4 and 7: turns 8 and 9 judge the replies after the last one
    assert got["success"] == 1.0  # Delta, taken at turn 9, is a comedy; Alpha at turn 8 is not
    assert got["turns_to_success"] == 2.0  # 9 - 7
    assert got["success_missing_reason"] is None


def test_success_is_not_measured_when_the_last_shift_is_on_the_last_turn():
    """10 turns with shift_every 3: the shift at turn 10 has no user turn after it, so no system can
    succeed after it; success is NaN with its reason, not 0 (which the oracle itself would get)."""
    got = scores(scheduled(10))
    assert math.isnan(got["success"]) and math.isnan(got["turns_to_success"])
    assert (
        got["success_missing_reason"]
        == "the last shift is on the last turn (10): the user reacted to no reply after it"
    )
    # a user who left after turn 10 did react to its reply: no film taken, success 0
    left = scores(scheduled(10, ending="abandoned"))
    assert left["success"] == 0.0 and math.isnan(left["turns_to_success"]) and left["success_missing_reason"] is None
    # nothing else changes: every other goal metric is measured as for the session that ended by leaving
    for name in ("elicitation_rate", "undisclosed_met", "turns_to_undisclosed", "stale_rate"):
        assert got[name] == left[name] or math.isnan(got[name]) and math.isnan(left[name]), name
    assert got["stale_rate"] == 0.0 and got["abandoned"] == 0.0  # every film has the turn's wish (Alpha: Xavier Lane)


def test_a_session_of_one_turn_has_no_success():
    got = scores({"turns": [turn(1, DRAMA, [wish(*DRAMA)], ["volunteer"], [True], recommended=["Alpha"])]})
    assert math.isnan(got["success"]) and got["success_missing_reason"] == ONE_TURN


@given(
    accepts=st.lists(st.sampled_from([*FILMS, "Unknown Film"]), max_size=2),
    recommended=st.lists(st.lists(st.sampled_from([*FILMS, "Unknown Film"]), max_size=3), min_size=4, max_size=4),
    asks=st.lists(st.sampled_from([[], ["genre"], ["actor"], ["open"]]), min_size=4, max_size=4),
)
def test_bounds(accepts, recommended, asks):
    record = dialogue()
    record["turns"][3]["user_implies"]["accepts"] = accepts
    for t, films, asked in zip(record["turns"], recommended, asks):
        t["recommended_titles"], t["system_asks"] = films, asked
    got = scores(record)
    for name in ("success", "abandoned", "elicitation_rate", "undisclosed_met", "stale_rate"):
        assert math.isnan(got[name]) or 0 <= got[name] <= 1, name
    assert 1 <= got["turns_to_undisclosed"] <= 4  # at most the replies a wish stayed gold, plus one
    assert math.isnan(got["turns_to_success"]) == (got["success"] == 0)
