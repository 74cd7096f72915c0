"""Grounded TAS on a dialogue written here, every value computed by hand."""

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crseval.language.concepts import ConceptMatcher
from crseval.metrics.basic import cosine, jaccard
from crseval.metrics.grounded import (
    ConceptSpace,
    TasSettings,
    copied_words,
    copying,
    score_session,
    tas_value,
)
from crseval.metrics.grounded import system_prompt as grounded_system_prompt

SETTINGS = TasSettings(alpha=0.4, beta=0.4, gamma=0.2, recovery_window=2, recovery_threshold=0.5)
N_FILMS = 8  # the small catalog of conftest.py


def idf(df):
    return math.log((1 + N_FILMS) / (1 + df)) + 1


def meta(constraints, shift=False, stage="ask"):
    return {
        "focus_field": constraints[0][0],
        "focus_value": constraints[0][1],
        "shift_event": shift,
        "bridge": None,
        "anchor_title": "Heat",
        "stage": stage,
        "paraphrase": None,
        "constraints": [{"field": f, "value": v, "negated": False} for f, v in constraints],
    }


def tracked(*pairs):
    return [{"field": f, "value": v, "negated": False} for f, v in pairs]


CRIME, SCORSESE = ("genre", "crime"), ("director", "Martin Scorsese")
DIALOGUE = {
    "session_id": "t/s00000",
    "turns": [
        {
            "turn": 1,
            "user_text": "I want a crime movie.",
            "user_meta": meta([CRIME], stage="open"),
            "system_text": "Heat is a crime thriller with Robert De Niro.",
            "system_constraints": tracked(CRIME),
            "recommended_titles": ["Heat"],
        },
        {
            "turn": 2,
            "user_text": "Now I want a movie directed by Martin Scorsese.",
            "user_meta": meta([SCORSESE, CRIME], shift=True, stage="shift"),
            "system_text": "I want a movie directed by Martin Scorsese too: Casino with Al Pacino.",
            "system_constraints": tracked(CRIME, SCORSESE),
            "recommended_titles": ["Casino"],
        },
        {
            "turn": 3,
            "user_text": "Anything else by Martin Scorsese?",
            "user_meta": meta([SCORSESE, CRIME]),
            "system_text": "",
            "system_constraints": tracked(CRIME, SCORSESE, ("actor", "Robert De Niro")),
            "recommended_titles": [],
        },
    ],
}


@pytest.fixture
def space(small_index):
    return ConceptSpace(small_index, ConceptMatcher(small_index.concepts, small_index.films), SETTINGS)


def hand_values():
    # turn 1: E(U) = {crime}; E(S) = {crime, thriller, Robert De Niro}; df: crime 3, thriller 2, De Niro 3
    a, b = idf(3), idf(2)
    cc1, cr1, i1 = 1 / 3, a / math.sqrt(2 * a * a + b * b), 0.0
    # turn 2: E(U) = {director Scorsese}; E(S) = {director Scorsese, actor Al Pacino}; df 2 and 1
    c, p = idf(2), idf(1)
    cc2, cr2 = 1 / 2, c / math.sqrt(c * c + p * p)
    i2 = max(6 / 11, 5 / 10)  # 6 of the reply's 11 trigrams and 5 of its 10 four-grams are the user's
    # turn 3: an empty reply
    cc3 = cr3 = i3 = 0.0
    return (cc1, cr1, i1), (cc2, cr2, i2), (cc3, cr3, i3)


def test_turn_values_by_hand(space):
    session, rows = score_session(DIALOGUE, space)
    for row, (cc, cr, i) in zip(rows, hand_values()):
        assert row["cc"] == pytest.approx(cc)
        assert row["cr"] == pytest.approx(cr)
        assert row["copying"] == pytest.approx(i)
        assert row["tas"] == pytest.approx(0.4 * cc + 0.4 * cr - 0.2 * i)
    assert session["tas"] == pytest.approx(sum(0.4 * cc + 0.4 * cr - 0.2 * i for cc, cr, i in hand_values()) / 3)


def test_segments_recovery_and_ground_truth_by_hand(space):
    session, rows = score_session(DIALOGUE, space)
    (cc1, cr1, _), (_, cr2, i2), _ = hand_values()
    # segment 1 = turn 1; segment 2 = turns 2-3: U = {Scorsese}, S = {Scorsese, Pacino}, I = mean(i2, 0)
    assert session["segments"] == 2
    assert session["tas_segment"] == pytest.approx(
        ((0.4 * cc1 + 0.4 * cr1) + (0.4 * 0.5 + 0.4 * cr2 - 0.2 * i2 / 2)) / 2
    )
    # the shift at turn 2 is recovered at once (CC 0.5 >= 0.5, CR 0.64 >= 0.5)
    assert (session["recovery_rate_jaccard"], session["recovery_delay_jaccard"]) == (1.0, 0.0)
    assert (session["recovery_rate_cosine"], session["recovery_delay_cosine"]) == (1.0, 0.0)
    # missing: turn 1 none, turn 2 crime, turn 3 both -> mean 1; hallucinated: Al Pacino is not in Casino
    assert [r["missing_concepts"] for r in rows] == [0, 1, 2] and session["missing_concepts"] == 1.0
    assert [r["hallucinated_concepts"] for r in rows] == [0, 1, 0]
    # tracking: 5 of 6 tracked constraints are gold, all 5 gold ones tracked; turns 1-2 exact
    assert session["dst_precision"] == pytest.approx(5 / 6) and session["dst_recall"] == 1.0
    assert session["dst_f1"] == pytest.approx(10 / 11) and session["dst_joint_accuracy"] == pytest.approx(2 / 3)
    # Heat is a crime film, Casino a Scorsese crime film; turn 3 recommends nothing
    assert session["rec_satisfaction"] == 1.0 and session["recommendation_rate"] == pytest.approx(2 / 3)
    assert session["repeat_rate"] == 0.0


def test_a_stricter_threshold_finds_no_recovery(space):
    strict = ConceptSpace(space.index, space.matcher, replace(SETTINGS, recovery_threshold=0.9))
    session, _ = score_session(DIALOGUE, strict)
    assert session["recovery_rate_jaccard"] == 0.0 and math.isnan(session["recovery_delay_jaccard"])
    assert session["recovery_rate_cosine"] == 0.0


def test_no_shift_means_no_recovery_metric(space):
    calm = {
        "session_id": "x",
        "turns": [dict(DIALOGUE["turns"][0]), {**DIALOGUE["turns"][2], "user_meta": meta([CRIME])}],
    }
    session, _ = score_session(calm, space)
    assert session["segments"] == 1
    assert math.isnan(session["recovery_rate_jaccard"]) and math.isnan(session["recovery_delay_cosine"])


def test_sessions_without_ground_truth_get_nan_not_zero(space):
    imported = {
        "session_id": "y",
        "turns": [{**t, "user_meta": None, "system_constraints": []} for t in DIALOGUE["turns"]],
    }
    session, _ = score_session(imported, space)
    assert session["tas"] == pytest.approx(score_session(DIALOGUE, space)[0]["tas"])
    for key in ("dst_f1", "rec_satisfaction", "recovery_rate_jaccard", "tas_segment", "missing_concepts"):
        assert math.isnan(session[key]), key


def test_repeated_recommendations_are_counted(space):
    again = {
        "session_id": "z",
        "turns": [DIALOGUE["turns"][0], {**DIALOGUE["turns"][1], "recommended_titles": ["Heat", "Casino"]}],
    }
    assert score_session(again, space)[0]["repeat_rate"] == pytest.approx(1 / 3)


def test_copying_edge_cases():
    assert copying("", "anything at all here") == 0.0
    assert copying("too short", "too short") == 0.0  # no trigram in the reply
    assert copying("a b c d", "a b c d") == 1.0


sets = st.sets(st.integers(0, 20), max_size=8)
vectors = st.dictionaries(st.integers(0, 10), st.floats(0, 10, allow_nan=False), max_size=6)


@given(sets, sets)
def test_jaccard_bounds_and_symmetry(a, b):
    assert 0.0 <= jaccard(a, b) == jaccard(b, a) <= 1.0
    assert jaccard(a, a) == (1.0 if a else 0.0)


@given(vectors, vectors)
def test_cosine_bounds_and_symmetry(a, b):
    assert cosine(a, b) == pytest.approx(cosine(b, a))
    assert -1e-9 <= cosine(a, b) <= 1.0 + 1e-9


unit = st.floats(0, 1, allow_nan=False)


@given(unit, unit, unit, unit)
def test_tas_is_monotone_in_cc_and_bounded(cc_low, cc_high, cr, copy):
    low, high = sorted((cc_low, cc_high))
    assert tas_value(low, cr, copy, SETTINGS) <= tas_value(high, cr, copy, SETTINGS)
    assert -SETTINGS.gamma <= tas_value(high, cr, copy, SETTINGS) <= SETTINGS.alpha + SETTINGS.beta


def test_tas_on_recommended_films_by_hand(space):
    """TAS_rec counts only the concepts the recommended films carry."""
    session, rows = score_session(DIALOGUE, space)
    (cc1, cr1, i1), (_, _, i2), _ = hand_values()
    # turn 1: Heat carries crime, thriller and De Niro: S' = E(S), so TAS_rec = TAS
    # turn 2: Casino carries Scorsese but not Al Pacino: S' = {Scorsese} = E(U), CC' = CR' = 1
    # turn 3: no film recommended: S' is empty, TAS_rec = -gamma * I = 0
    expected = [0.4 * cc1 + 0.4 * cr1 - 0.2 * i1, 0.4 + 0.4 - 0.2 * i2, 0.0]
    assert [r["tas_rec"] for r in rows] == pytest.approx(expected)
    assert session["tas_rec"] == pytest.approx(sum(expected) / 3)


def test_tas_on_recommended_films_gives_echoed_words_nothing(space):
    """A reply that repeats the user's wish but recommends a film without it: TAS rewards the echo, TAS_rec
    does not (Heat is not Scorsese's)."""
    echo = {
        "session_id": "t/s00001",
        "turns": [
            {
                "turn": 1,
                "user_text": "A movie directed by Martin Scorsese, please.",
                "system_text": "Directed by Martin Scorsese: Heat.",
                "recommended_titles": ["Heat"],
            }
        ],
    }
    session, (row,) = score_session(echo, space)
    # words of the reply: directed by martin scorsese heat; the user said 2 of its 3 trigrams, 1 of its 2 four-grams
    i = max(2 / 3, 1 / 2)
    assert row["cc"] == 1.0 and row["cr"] == pytest.approx(1.0)
    assert row["copying"] == pytest.approx(i)
    assert row["tas_rec"] == pytest.approx(-0.2 * i)
    assert row["tas"] == pytest.approx(0.8 - 0.2 * i)


# A prompt template of our own, as an `llm` system's: its first line names the tracked wishes.
PROMPT = "You recommend films. The user is looking for: {constraints}.\nCandidates:\n{candidates}\n"
RENDERED = (
    "You recommend films. The user is looking for: genre crime.\n"
    'Candidates:\n- "Heat" (1995); crime, thriller; directed by Michael Mann; starring Al Pacino, Robert De Niro'
)


def prompted(reply: str) -> dict:
    """One turn: the user asks for a crime film, the system (told so in its prompt, with Heat as candidate)
    replies `reply` and recommends Heat."""
    return {
        "session_id": "t/s00002",
        "turns": [
            {
                "turn": 1,
                "user_text": "I want a crime movie.",
                "user_meta": meta([CRIME], stage="open"),
                "system_text": reply,
                "system_constraints": tracked(CRIME),
                "candidate_titles": ["Heat"],
                "recommended_titles": ["Heat"],
            }
        ],
    }


@pytest.fixture
def system_prompt(tmp_path):
    path = tmp_path / "prompt.txt"
    path.write_text(PROMPT, encoding="utf-8")
    return grounded_system_prompt({"prompt": str(path)})


def test_the_prompt_of_a_turn_is_rendered_from_what_the_turn_records(space, system_prompt, tmp_path):
    turn = prompted("")["turns"][0]
    assert system_prompt.of_turn(turn, space) == RENDERED
    # a candidate the catalog does not hold: the template as written
    assert system_prompt.of_turn({**turn, "candidate_titles": ["Nowhere"]}, space) == PROMPT
    # a chat system's message is the same at every turn (its braces are text)
    message = tmp_path / "message.txt"
    message.write_text("Be brief {please}.\n", encoding="utf-8")
    assert grounded_system_prompt({"system_prompt": str(message)}).of_turn(turn, space) == "Be brief {please}."
    assert grounded_system_prompt({"prompt": None, "system_prompt": None}) is None


def test_copied_words_are_those_in_a_trigram_of_the_source():
    reply = "the user is looking for genre crime heat is my pick".split()
    prompt = "you recommend films the user is looking for genre crime candidates heat".split()
    assert copied_words(reply, prompt) == [True] * 7 + [False] * 4
    assert copied_words("genre crime".split(), "genre crime".split()) == [False, False]  # no trigram
    assert copied_words(reply, []) == [False] * 11


def test_a_reply_earns_nothing_for_a_prompt_sentence_it_copies(space, system_prompt):
    """The reply copies its prompt's sentence naming the genre: no credit for it with the prompt known; the
    same genre named in the reply's own words keeps its credit. Without the prompt (the rule before), the copy
    scored as much as naming the genre."""
    copy = prompted("The user is looking for: genre crime. Heat is my pick.")
    # words: the user is looking for genre crime | heat is my pick; the prompt holds "for genre crime" and the
    # trigrams before it, so "crime" is copied: E(S) = {crime}, E_own(S) = {}; the user said none of its trigrams
    session, (row,) = score_session(copy, space, system_prompt)
    assert (row["cc"], row["cr"], row["copying"], row["tas"]) == (0.0, 0.0, 0.0, 0.0)
    assert row["missing_concepts"] == 1 and row["hallucinated_concepts"] == 0
    assert row["system_concepts"] == 1  # still said
    # TAS on recommended films credits what Heat carries of the user's wish, whoever named it: CC' = CR' = 1
    assert row["tas_rec"] == pytest.approx(0.8)
    unprompted = score_session(copy, space)[1][0]
    assert (unprompted["cc"], unprompted["tas"], unprompted["missing_concepts"]) == (1.0, pytest.approx(0.8), 0)

    own = prompted("Heat is a crime story you will enjoy.")
    # no trigram of the reply is in the prompt: E_own(S) = E(S) = {crime} = E(U)
    _, (row,) = score_session(own, space, system_prompt)
    assert (row["cc"], row["cr"], row["tas"], row["missing_concepts"]) == (
        1.0,
        pytest.approx(1.0),
        pytest.approx(0.8),
        0,
    )


def test_a_copied_mention_counts_as_said_but_not_as_shared(space, system_prompt):
    """Copied and own mentions of one genre: CC keeps it (one own mention), CR's dot product counts the own
    mention only while its norm counts both."""
    mixed = prompted("The user is looking for: genre crime. Heat is a crime story with Al Pacino.")
    # E(U) = {crime}; E(S) = {crime x2, Al Pacino}, E_own(S) = {crime x1, Al Pacino} ("with al pacino" is not
    # in the prompt, which has "starring al pacino"); df: crime 3, Al Pacino 1
    a, p = idf(3), idf(1)
    _, (row,) = score_session(mixed, space, system_prompt)
    assert row["cc"] == 0.5
    assert row["cr"] == pytest.approx(a * a / (a * math.sqrt((2 * a) ** 2 + p * p)))
    assert row["tas"] == pytest.approx(0.4 * 0.5 + 0.4 * a / math.sqrt(4 * a * a + p * p))
    unprompted = score_session(mixed, space)[1][0]
    assert unprompted["cc"] == 0.5 and unprompted["cr"] == pytest.approx(2 * a / math.sqrt(4 * a * a + p * p))
    assert row["missing_concepts"] == 0 and row["hallucinated_concepts"] == 0  # Heat stars Al Pacino


def test_a_prompt_the_replies_do_not_copy_changes_no_value(space, system_prompt):
    """DIALOGUE's replies share no concept in a trigram with the prompt: every value is the same, bit for bit."""
    session, rows = score_session(DIALOGUE, space)
    again, rows_again = score_session(DIALOGUE, space, system_prompt)
    same = lambda x, y: x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))  # noqa: E731
    assert all(same(session[k], again[k]) for k in session)
    assert all(same(r[k], q[k]) for r, q in zip(rows, rows_again) for k in r)
