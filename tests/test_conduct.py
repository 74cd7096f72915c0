"""The conduct family (crseval.metrics.conduct) against values computed by hand on dialogues written here
(films of the eight-film test catalog, and invented films outside it)."""

from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crseval.language.text import content_words
from crseval.language.tokens import TextAnalyses
from crseval.metrics.conduct import SESSION_COLUMNS, TURN_COLUMNS, ConductFamily, Reader, score_session
from crseval.replies.form import NEAR_REPEAT, repeats, stutters, unfilled_slot

SHARES = (
    "repeated_replies",
    "malformed_replies",
    "empty_replies",
    "stuttering_replies",
    "unfilled_slot_replies",
    "rerecommended_after_rejection",
    "replies_without_a_film",
)


def turn(number, user, system, recommended=(), mentioned=(), unknown=(), meta=None):
    return {
        "turn": number,
        "user_text": user,
        "user_meta": meta,
        "system_text": system,
        "recommended_titles": list(recommended),
        "mentioned_titles": list(mentioned),
        "unknown_titles": list(unknown),
    }


def dialogue(meta=None) -> dict:
    """Seven turns; `meta`: the user_meta of every turn (None: an imported dialogue).

    1. The user names Goodfellas and asks; the reply mentions it and recommends Heat and Casino.
    2. The user turns both down (names neither); the reply offers Heat again.
    3. The user turns Heat down by name; the reply is the last one again, word for word.
    4. The user asks for something; the reply stutters and names two invented films outside the catalog.
    5. The user asks for nothing; the reply leaves its slot unfilled.
    6. The user asks for a comedy; the reply is empty.
    7. The user thanks; the reply names an outside film of turn 4 in another case, and Citizen Kane."""
    return {
        "session_id": "imported/1",
        "system": "imported",
        "turns": [
            turn(
                1,
                "I loved Goodfellas. Can you recommend a crime movie?",
                "Since you loved Goodfellas, you could watch Heat (1995) and Casino (1995).",
                ["Heat", "Casino"],
                ["Goodfellas"],
                meta=meta,
            ),
            turn(2, "No, not those. Something else please.", "How about Heat (1995)?", ["Heat"], meta=meta),
            turn(3, "I already watched Heat. Any thriller?", "How  about heat (1995)?", ["Heat"], meta=meta),
            turn(
                4,
                "Tell me about something older.",
                "I think I think you would like Blade Walker (1982) and Night Harbor (1990).",
                unknown=["Blade Walker", "Night Harbor"],
                meta=meta,
            ),
            turn(5, "Tell me more.", "Have you seen ?", meta=meta),
            turn(6, "Can you suggest a comedy?", "", meta=meta),
            turn(
                7,
                "Great, thanks!",
                "Enjoy! BLADE WALKER is a classic, and so is Citizen Kane.",
                ["Citizen Kane"],
                unknown=["BLADE WALKER"],
                meta=meta,
            ),
        ],
    }


EXPECTED_SESSION = {
    # Goodfellas, Heat, Casino, blade walker, night harbor, Citizen Kane
    "films_offered_per_reply": 6 / 7,
    # turn 1: Heat, Casino (the user named Goodfellas); turn 4: both outside films; turn 7: Citizen Kane
    "new_films_per_reply": 5 / 7,
    # content words new to the replies: love goodfellas watch heat casino; think like blade walker night harbor;
    # enjoy classic citizen kane (stop words such as "since", "about", "seen" and the years are no content)
    "new_words_per_reply": 15 / 7,
    "repeated_replies": 1 / 7,  # turn 3
    "malformed_replies": 3 / 7,  # turns 4, 5, 6
    "empty_replies": 1 / 7,
    "stuttering_replies": 1 / 7,
    "unfilled_slot_replies": 1 / 7,
    # replies 2 to 7 answer a turn-down or come after one; 2 and 3 offer Heat again
    "rerecommended_after_rejection": 2 / 6,
    # the user asked at turns 1, 2 (a turn-down), 3, 4 and 6; only the reply of turn 6 offers nothing
    "replies_without_a_film": 1 / 5,
}
EXPECTED_TURNS = {
    "films_named": [3, 1, 1, 2, 0, 0, 2],
    "new_films": [2, 0, 0, 2, 0, 0, 1],
    "new_words": [5, 0, 0, 6, 0, 0, 4],
    "repeated_reply": [0, 0, 1, 0, 0, 0, 0],
    "malformed_reply": [0, 0, 0, 1, 1, 1, 0],
    "rerecommended_rejected": [0, 1, 1, 0, 0, 0, 0],
    "no_film_after_request": [0, 0, 0, 0, math.nan, 1, math.nan],
}


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


def check(session: dict, rows: list[dict]) -> None:
    assert set(session) == {c.name for c in SESSION_COLUMNS}
    for name, value in EXPECTED_SESSION.items():
        assert same(session[name], value), name
    assert all(set(row) == {c.name for c in TURN_COLUMNS} for row in rows)
    for name, values in EXPECTED_TURNS.items():
        assert all(same(row[name], value) for row, value in zip(rows, values, strict=True)), name


def test_every_column_by_hand_on_an_imported_dialogue(matcher):
    check(*score_session(dialogue(), Reader(matcher)))


def test_a_simulated_dialogue_scores_the_same_ground_truth_or_not(matcher):
    meta = {"focus_field": "genre", "focus_value": "crime", "constraints": [], "shift_event": False}
    check(*score_session(dialogue(meta), Reader(matcher)))


def test_the_family_scores_a_shard_in_record_order(matcher):
    family = ConductFamily(SimpleNamespace(space=SimpleNamespace(matcher=matcher), texts=TextAnalyses()))
    empty = {"session_id": "imported/0", "system": "imported", "turns": []}
    scored = family.score_shard([dialogue(), empty])
    check(*scored[0])
    assert all(math.isnan(value) for value in scored[1][0].values()) and scored[1][1] == []


def test_nothing_turned_down_nor_asked_is_not_measured(matcher):
    record = {
        "turns": [
            turn(1, "Hello there.", "Hi! Heat (1995) is on tonight.", ["Heat"]),
            turn(2, "Great, thanks!", "Enjoy Heat (1995)!", ["Heat"]),
        ]
    }
    session, rows = score_session(record, Reader(matcher))
    assert math.isnan(session["rerecommended_after_rejection"]) and math.isnan(session["replies_without_a_film"])
    assert session["films_offered_per_reply"] == 1 / 2 and session["new_films_per_reply"] == 1 / 2
    assert [row["rerecommended_rejected"] for row in rows] == [0, 0]


def test_a_take_is_no_turn_down_and_a_turn_down_names_the_films_it_means(matcher):
    record = {
        "turns": [
            turn(1, "Any crime film?", "Try Heat (1995) or Casino (1995).", ["Heat", "Casino"]),
            turn(2, "I'll watch Heat, it sounds great.", "Heat (1995) it is. Also Casino (1995).", ["Heat", "Casino"]),
            turn(3, "I don't like Casino.", "Then Heat (1995) or Casino (1995) again.", ["Heat", "Casino"]),
        ]
    }
    session, rows = score_session(record, Reader(matcher))
    # turn 2 takes Heat: nothing is turned down; turn 3 turns down Casino only, by name
    assert [row["rerecommended_rejected"] for row in rows] == [0, 0, 1]
    assert session["rerecommended_after_rejection"] == 1.0


def test_a_turn_down_after_a_reply_without_films_turns_nothing_down(matcher):
    record = {"turns": [turn(1, "Hi", "What do you like?"), turn(2, "No idea.", "Heat (1995)?", ["Heat"])]}
    session, _ = score_session(record, Reader(matcher))
    assert math.isnan(session["rerecommended_after_rejection"])


def test_near_repeats_at_the_exact_threshold():
    assert NEAR_REPEAT == Fraction(4, 5)
    sets = [frozenset("one two three four".split()), frozenset("one two three four five".split())]
    assert repeats(sets).tolist() == [False, True]  # Jaccard 4/5
    sets = [frozenset("one two three".split()), frozenset("one two three four".split())]
    assert repeats(sets).tolist() == [False, False]  # 3/4
    assert repeats([frozenset(), frozenset()]).tolist() == [False, False]  # no words: no repeat
    assert repeats([]).tolist() == []


def test_replies_repeat_whatever_their_case_and_white_space(matcher):
    reader = Reader(matcher)
    record = {"turns": [turn(1, "Hi", "Heat  is GREAT.\n"), turn(2, "Hi", "heat is great")]}
    assert score_session(record, reader)[0]["repeated_replies"] == 1 / 2


@pytest.mark.parametrize(
    "text, titles, expected",
    [
        ("I think the the film is good.", (), True),
        ("I think I think you will like it.", (), True),
        ("Yes, did did did you like it?", (), True),
        ("You should watch La La Land (2016).", ("La La Land",), False),
        ("Have you seen the The Third Man?", ("The Third Man",), False),
        ("I had had enough of that that film.", (), False),
        ("New York, New York is a song.", (), False),
        ("A fine film.", (), False),
    ],
)
def test_stutters(text, titles, expected):
    assert stutters(text, titles) is expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Have you seen ?", True),
        ("How about  ?", True),
        ("I recommend .", True),
        ("You might like {title}.", True),
        ("Try [MOVIE] tonight.", True),
        ("Try <title> tonight.", True),
        ("is a great movie.", True),
        ("It stars Tom. is a classic.", True),
        ("and The Big Night are both great.", True),
        ("Tom starred in  and he also directed.", True),
        ("Have you seen @12345 yet?", True),
        ("It is a great movie.", False),
        ("is it a comedy?", False),
        ("What is it about?", False),
        ("What kind of movies do you like?", False),
        ("Have you seen Heat (1995) ?", False),
    ],
)
def test_unfilled_slots(text, expected):
    assert unfilled_slot(text) is expected


# Hypothesis: random sessions of made-up replies and user messages.
WORDS = ["Heat", "the", "the the", "Have you seen ?", "{title}", "I think", "great", "no", "film", ".", "is a", ""]
USERS = ["No, not that one.", "Can you recommend a film?", "I'll watch it.", "Thanks!", "Something else?", ""]
TITLES = ["Heat", "Casino", "Goodfellas", "Up", "Scream"]
OUTSIDE = ["Blade Walker", "blade walker", "Night Harbor"]
TURNS = st.lists(
    st.tuples(
        st.sampled_from(USERS),
        st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join),
        st.lists(st.sampled_from(TITLES), max_size=3, unique=True),
        st.lists(st.sampled_from(TITLES), max_size=2, unique=True),
        st.lists(st.sampled_from(OUTSIDE), max_size=2, unique=True),
    ),
    max_size=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TURNS)
def test_shares_are_shares_and_counts_are_counts(matcher, turns):
    record = {"turns": [turn(i + 1, *t) for i, t in enumerate(turns)]}
    session, rows = score_session(record, Reader(matcher))
    assert len(rows) == len(turns)
    if not turns:
        assert all(math.isnan(value) for value in session.values())
        return
    for name in SHARES:
        assert math.isnan(session[name]) or 0 <= session[name] <= 1, name
    assert 0 <= session["new_films_per_reply"] <= session["films_offered_per_reply"]
    kinds = [session[k] for k in ("empty_replies", "stuttering_replies", "unfilled_slot_replies")]
    assert max(kinds) <= session["malformed_replies"] <= sum(kinds) + 1e-12
    assert session["repeated_replies"] <= (len(turns) - 1) / len(turns)
    # the new content words of all replies are the distinct content words the replies say
    said = set().union(*(content_words(t[1]) for t in turns))
    assert session["new_words_per_reply"] * len(turns) == pytest.approx(len(said))
    for row in rows:
        assert row["films_named"] >= row["new_films"] >= 0 and row["rerecommended_rejected"] >= 0
        assert row["repeated_reply"] in (0, 1) and row["malformed_reply"] in (0, 1)
        assert math.isnan(row["no_film_after_request"]) or row["no_film_after_request"] in (0, 1)
