"""Whether a user turn complains about a failure of the reply (crseval.replies.complaints), on turns written for
these tests: every kind of complaint, and the turn-downs and questions that are none."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crseval.replies.complaints import COMPLAINTS, complains

COMPLAINTS_SAID = {
    "not a film": [
        "that's a book, not a movie",
        "It isn't even a film!",
        "Is that even a movie?",
        "that's a TV show.",
        "That film doesn't exist",
        "there is no such movie",
        "those are all novels",
        "movies please, not books",
        "I don't think it exists",
        "is that even a real film",
    ],
    "not what was asked": [
        "I asked for a comedy not a drama",
        "that's not what I asked",
        "I already told you I hate gore",
        "I didn't ask for that",
        "wrong genre",
        "did you even read my message",
        "I've told you that before",
    ],
    "said already": [
        "you said that already",
        "You already recommended that one.",
        "you keep suggesting the same ones",
        "That one again?",
        "same list as before",
        "stop repeating yourself",
    ],
    "no sense": ["what?", "Wait, what??", "huh", "Huh? I wanted a comedy", "this makes no sense", "What do you mean?"],
    "no answer": [
        "that doesn't answer my question",
        "you didn't answer",
        "please answer my question",
        "Where is the recommendation?",
        "You didn't recommend any movies",
    ],
    "broken": [
        "are you broken?",
        "you're not listening",
        "you are useless",
        "that's wrong",
        "You don't understand",
        "wrong again",
        "i dont really understand",
    ],
}
NEAR_MISSES = [
    "no, I don't like horror",  # a turn-down for taste
    "I've seen it",
    "something else please",
    "not my thing",
    "No thanks, anything else?",
    "That's not a movie I would watch",  # a turn-down: "not a movie" goes on
    "I'm not a movie person",
    "It's a series of films I love",
    "what is it about?",  # a question about the film
    "what do you mean by dark comedy",
    "What a great pick!",
    "huh, interesting",
    "Would I watch it again?",
    "It's not right for me",
    "I don't understand the ending of that film",
    "you just recommended a great one",
    "I read the book and loved it",
    "that sounds great",
    "who plays in that again?",  # a question about the film, not "that one again?"
    "I liked it, mostly since it was a book.",
    "I loved Dune, but that's a book. Any films like it?",  # the user's own film, not the reply's
    "I don't understand why people like it",
]


@pytest.mark.parametrize("text", [t for said in COMPLAINTS_SAID.values() for t in said])
def test_complaints_about_the_reply(text):
    assert complains(text)


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_turn_downs_and_questions_are_no_complaint(text):
    assert not complains(text)


def test_the_rules_ignore_case_and_curly_apostrophes():
    assert complains("THAT DOESN’T ANSWER MY QUESTION")
    assert all(rule.flags & 2 for rule in COMPLAINTS)  # re.IGNORECASE


def test_bad_input_is_an_error():
    with pytest.raises(TypeError, match="user_text must be a string"):
        complains(None)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_read(text):
    assert complains(text) in (True, False)
