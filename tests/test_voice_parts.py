"""A learned turn composed below the sentence (crseval.simulate.user.voice_parts): the cut into opener, core
and tail, the pools of parts by act, the join rules, and the pools' JSON. Every template here is invented."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crseval.simulate.user.voice_parts import (
    MAX_PART_WORDS,
    PartPools,
    PartPoolsError,
    TemplateParts,
    part_words,
    split_template,
)

# (act, template, person, first): five people, two acts
TURNS = [
    ("request", "hi! any good {genre} films?", "ann", True),
    ("request", "ok, any {genre} please, thanks", "bob", False),
    ("request", "ok, {actor} films?", "cy", False),
    ("request", "{genre} please", "dan", False),
    ("request", "ok, something {genre}", "bob", False),  # bob says "ok," again: still one person
    ("turn_down", "no, not {title}, sorry", "ann", False),
]


def _pools(**acts) -> PartPools:
    """Pools written by hand: act -> (turns first, turns later, openers, tails), every turn with both parts."""
    data = {"format": 1, "acts": {}}
    for act, (first, later, openers, tails) in acts.items():
        places = {"first": first, "later": later}
        data["acts"][act] = {
            "turns": places,
            "with_opener": places if openers else {"first": 0, "later": 0},
            "with_tail": places if tails else {"first": 0, "later": 0},
            "openers": openers,
            "tails": tails,
        }
    return PartPools.from_json(data)


# --- the cut ---


@pytest.mark.parametrize(
    "text, opener, core, tail",
    [
        ("any good {genre} films?", "", "any good {genre} films?", ""),  # no clause to cut
        ("hi! any good {genre} films?", "hi!", "any good {genre} films?", ""),  # the opener keeps its "!"
        ("ok so, any {genre} please, thanks!", "ok so,", "any {genre} please,", "thanks!"),
        ("{genre}, anything like that", "", "{genre},", "anything like that"),  # a slot: no opener
        ("one two three four five, any {genre}?", "", "one two three four five, any {genre}?", ""),  # 5 words
        ("one two three four, any {genre}?", "one two three four,", "any {genre}?", ""),  # 4 words
        ("any {genre}?", "", "any {genre}?", ""),  # a trailing "?" cuts nothing
        ("any {genre}? ok?", "", "any {genre}?", "ok?"),
        ("hi, hello", "hi,", "hello", ""),  # the tail would be all that is left
        ("hi there", "", "hi there", ""),  # one clause is the whole turn
        ("well - any {genre} - ok", "well -", "any {genre} -", "ok"),  # a dash between spaces
        ("Dr. {director} films", "", "Dr. {director} films", ""),  # an abbreviation is no sentence end
        ("J. {actor} films please", "", "J. {actor} films please", ""),  # nor an initial
        ("over 1,000 {genre} films, wow", "", "over 1,000 {genre} films,", "wow"),  # a comma with no space
        ("hmm... {genre}?", "hmm...", "{genre}?", ""),
        ("ok, {genre}, {actor}", "ok,", "{genre}, {actor}", ""),  # a tail holds no slot
        (", {genre}", "", ", {genre}", ""),  # a clause of no word is no part
        ("", "", "", ""),
    ],
)
def test_split_rules(text, opener, core, tail):
    parts = split_template(text)
    assert (parts.opener, parts.core, parts.tail) == (opener, core, tail)
    assert parts.joined() == text


def test_the_gaps_are_the_whitespace_between_parts():
    parts = split_template("hi!  any {genre}?\tthanks")
    assert parts == TemplateParts("hi!", "  ", "any {genre}?", "\t", "thanks")


PIECES = [*"ab {}.,!?-\u2014\n\tX1'", "{genre}", "hi", "thanks", "Dr"]
TEXTS = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_joined_gives_the_text_back_and_the_parts_keep_their_rules(text):
    parts = split_template(text)
    assert parts.joined() == text
    for part in (parts.opener, parts.tail):
        assert "{" not in part and "}" not in part
        assert len(re.findall(r"\S*\w\S*", part)) <= MAX_PART_WORDS
    assert parts.opener_gap.strip() == "" and parts.tail_gap.strip() == ""
    assert bool(parts.core) == bool(text)


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_the_core_holds_every_slot_after_composing(text):
    pools = PartPools.learn([("request", "well, ok, {genre}? great, thanks", "ann", False)])
    composed = pools.compose(text, "request", False, np.random.default_rng(0), set())
    assert re.findall(r"\{\w*\}", composed) == re.findall(r"\{\w*\}", text)


# --- learning ---


def test_learn_counts_turns_parts_and_people_by_act_and_place():
    pools = PartPools.learn(TURNS)
    request = pools.acts["request"]
    assert request.turns == {"first": 1, "later": 4}
    assert request.with_opener == {"first": 1, "later": 3}
    assert request.with_tail == {"first": 0, "later": 1}
    assert request.openers == {"hi!": 1, "ok,": 2}  # bob twice, cy once
    assert request.tails == {"thanks": 1}
    assert request.share("openers", first=False) == pytest.approx(3 / 4)
    assert request.share("tails", first=False) == pytest.approx(1 / 4)
    assert request.share("openers", first=True) == 1.0
    assert pools.acts["turn_down"].openers == {"no,": 1} and pools.acts["turn_down"].tails == {"sorry": 1}
    assert pools.acts["turn_down"].share("openers", first=True) == 1.0  # no first turn: both places
    assert set(pools.acts) == {"request", "turn_down"}


def test_variety_counts_the_pairs_with_none_as_one():
    pools = PartPools.learn(TURNS)
    assert pools.variety("request") == (2 + 1) * (1 + 1)
    assert pools.variety("turn_down") == 2 * 2
    assert pools.variety("ask") == 1


def test_learn_refuses_an_unknown_act_and_a_hidden_character():
    with pytest.raises(PartPoolsError, match="unknown act 'chat'"):
        PartPools.learn([("chat", "hi", "ann", True)])
    with pytest.raises(PartPoolsError, match="turn 1: the template holds U\\+200B"):
        PartPools.learn([("ask", "hi", "ann", True), ("ask", "o\u200bk, {genre}", "bob", False)])


# --- composing ---


def test_a_part_is_joined_only_to_a_core_of_the_act_it_was_said_with():
    pools = PartPools.learn(TURNS)
    seen = {"request": set(), "turn_down": set()}
    for seed in range(300):
        for act in seen:
            parts = split_template(pools.compose("any {genre} please", act, False, np.random.default_rng(seed), set()))
            seen[act] |= {parts.opener, parts.tail} - {""}
    assert seen["request"] == {"ok,", "thanks"}  # "hi!" greets, and this is no first turn
    assert seen["turn_down"] == {"no,", "sorry"}


def test_a_question_is_never_joined_to_a_turn_that_asks():
    pools = _pools(ask=(0, 4, {"you know?": 1}, {"right?": 1}))
    rng = np.random.default_rng(1)
    assert {pools.compose("any {genre}?", "ask", False, rng, set()) for _ in range(50)} == {"any {genre}?"}
    # the opener asks, so the tail may not
    assert pools.compose("any {genre}", "ask", False, rng, set()) == "you know? any {genre}"


def test_a_greeting_opens_only_a_dialogue_and_never_a_core_that_greets():
    pools = _pools(request=(1, 1, {"hello!": 1}, {}))
    rng = np.random.default_rng(2)
    assert pools.compose("any {genre}", "request", True, rng, set()) == "hello! any {genre}"
    assert {pools.compose("any {genre}", "request", False, rng, set()) for _ in range(50)} == {"any {genre}"}
    assert pools.compose("hey there {genre} fan", "request", True, rng, set()) == "hey there {genre} fan"


def test_no_part_is_said_twice_in_a_session_nor_where_the_turn_says_it():
    pools = _pools(other=(0, 1, {"ok,": 1, "Ok!": 1, "so,": 1}, {"thanks": 1}))
    rng, used = np.random.default_rng(3), set()
    first = pools.compose("{genre} it is", "other", False, rng, used)
    second = pools.compose("{genre} it is", "other", False, rng, used)
    assert used == {"ok", "so", "thanks"}
    assert {first.split()[0], second.split()[0]} in ({"ok,", "so,"}, {"Ok!", "so,"})
    assert first.endswith(", thanks") and second == "so, {genre} it is"  # the only tail was said
    assert pools.compose("{genre} it is", "other", False, rng, used) == "{genre} it is"  # every part was said
    assert pools.compose("ok {genre} thanks", "other", False, rng, set()).startswith("so, ")


def test_parts_are_drawn_as_often_as_people_said_them_and_present_with_the_share():
    pools = PartPools.learn(
        [("ask", f"{word}, any {{genre}}?", person, False) for word, person in [("well", "a"), ("well", "b")]]
        + [("ask", "well, any {genre}?", "c", False), ("ask", "so, any {genre}?", "d", False)]
        + [("ask", "any {genre}?", person, False) for person in "efgh"]
    )
    assert pools.acts["ask"].openers == {"well,": 3, "so,": 1}
    rng = np.random.default_rng(4)
    openers = [split_template(pools.compose("any {genre}?", "ask", False, rng, set())).opener for _ in range(4000)]
    present = [o for o in openers if o]
    assert len(present) / len(openers) == pytest.approx(4 / 8, abs=0.03)
    assert present.count("well,") / len(present) == pytest.approx(3 / 4, abs=0.03)


def test_joining_keeps_the_core_and_fits_its_punctuation_and_case():
    tail_only = _pools(ask=(0, 1, {}, {"thanks": 1}))
    rng = np.random.default_rng(5)
    assert tail_only.compose("any {genre} please, cheers", "ask", False, rng, set()) == "any {genre} please, thanks"
    assert tail_only.compose("any {genre}?", "ask", False, rng, set()) == "any {genre}? thanks"
    assert tail_only.compose("any {genre}", "ask", False, rng, set()) == "any {genre}, thanks"
    assert tail_only.compose("a {genre} - yes", "ask", False, rng, set()) == "a {genre}, thanks"
    opener_only = _pools(ask=(0, 1, {"ok,": 1}, {}))
    assert opener_only.compose("Any {genre}?", "ask", False, rng, set()) == "ok, any {genre}?"
    assert opener_only.compose("I like {genre}", "ask", False, rng, set()) == "ok, I like {genre}"
    nothing = PartPools({})
    assert nothing.compose("Hey, any {genre} please, thanks", "ask", False, rng, set()) == "Any {genre} please"
    assert nothing.compose("hey. any {genre}", "ask", False, rng, set()) == "any {genre}"
    with pytest.raises(PartPoolsError, match="unknown act"):
        nothing.compose("any {genre}", "chat", False, rng, set())


def test_compose_is_the_same_for_a_seed():
    pools = PartPools.learn(TURNS)

    def session(seed: int) -> list[str]:
        rng, used = np.random.default_rng(seed), set()
        return [pools.compose("any {genre} please", "request", n == 0, rng, used) for n in range(6)]

    assert session(7) == session(7)
    assert len({tuple(session(seed)) for seed in range(20)}) > 1


def test_part_words_says_a_part_once_whatever_its_case_and_marks():
    assert part_words("Thanks!") == part_words("thanks,") == "thanks"
    assert part_words("oh, ok -") == "oh ok"


# --- the pools' JSON ---


def test_json_round_trip_keeps_the_pools_and_their_draws():
    pools = PartPools.learn(TURNS)
    again = PartPools.from_json(json.loads(json.dumps(pools.as_json())))
    assert again.as_json() == pools.as_json()
    for seed in range(20):
        one, two = np.random.default_rng(seed), np.random.default_rng(seed)
        assert pools.compose("{genre} ok", "request", False, one, set()) == again.compose(
            "{genre} ok", "request", False, two, set()
        )


def _broken(change) -> dict:
    data = copy.deepcopy(PartPools.learn(TURNS).as_json())
    change(data)
    return data


def _set(path: list, value) -> object:
    def change(data):
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = value

    return change


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.clear(), "expected an object with 'format' and 'acts'"),
        (_set(["format"], 2), "format: 2, not 1"),
        (_set(["format"], True), "format: True"),
        (_set(["acts"], []), "acts: expected an object, found \\[\\]"),
        (_set(["acts", "chat"], {}), "acts: unknown act 'chat'"),
        (_set(["acts", "request", "extra"], 1), "acts.request.turns: expected an object with"),
        (_set(["acts", "request", "turns"], {"first": 1}), "acts.request.turns: expected an object with first and"),
        (_set(["acts", "request", "turns", "later"], "4"), "acts.request.turns.later: expected a whole number"),
        (_set(["acts", "request", "turns", "later"], True), "acts.request.turns.later: expected a whole number"),
        (_set(["acts", "request", "turns", "later"], -1), "acts.request.turns.later: expected a whole number"),
        (_set(["acts", "request", "turns", "later"], 10**12), "acts.request.turns.later: expected a whole number"),
        (_set(["acts", "request", "with_opener", "later"], 9), "acts.request.with_opener.later: 9 turns, more than"),
        (_set(["acts", "request", "openers"], ["ok,"]), "acts.request.openers: expected an object"),
        (_set(["acts", "request", "openers", "{genre},"], 1), "acts.request.openers\\[.*\\]: holds a brace"),
        (_set(["acts", "request", "tails", "{0.__class__}"], 1), "acts.request.tails\\[.*\\]: holds a brace"),
        (_set(["acts", "request", "openers", "one two three four five,"], 1), "not 1 to 4 words"),
        (_set(["acts", "request", "openers", "o\u200bk,"], 1), "holds U\\+200B"),
        (_set(["acts", "request", "openers", " ok,"], 1), "spaces a reader does not see"),
        (_set(["acts", "request", "openers", "\uff4fk,"], 1), "NFKC"),
        (_set(["acts", "request", "openers", "ok,"], 0), "expected a number of people from 1 to 4, found 0"),
        (_set(["acts", "request", "openers", "ok,"], 5), "from 1 to 4, found 5"),
        (_set(["acts", "request", "openers", "ok,"], "2"), "found '2'"),
        (_set(["acts", "request", "tails"], {}), "acts.request.tails: 0 parts for 1 turns that have one"),
        (_set(["acts", "request", "with_tail"], {"first": 0, "later": 0}), "tails: 1 parts for 0 turns"),
    ],
)
def test_from_json_refuses_what_learning_never_writes(change, message):
    with pytest.raises(PartPoolsError, match=message):
        PartPools.from_json(_broken(change))


def test_from_json_bounds_the_parts_of_an_act(monkeypatch):
    import crseval.simulate.user.voice_parts as voice_parts  # the bound, lowered for the test

    monkeypatch.setattr(voice_parts, "MAX_PARTS", 1)
    with pytest.raises(PartPoolsError, match="acts.request.openers: expected an object of at most 1 parts"):
        PartPools.from_json(PartPools.learn(TURNS).as_json())
    assert PartPoolsError.__mro__[1] is ValueError
