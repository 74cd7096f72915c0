"""What a recommender's reply did (crseval.replies.cases) and the rules of its form (crseval.replies.form), on
replies written for these tests."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crseval.replies.cases import (
    FAILURES,
    GOOD,
    REPLY_CASES,
    START,
    asks_the_user,
    catalog_reader,
    recommends_another_kind,
    reply_case,
    session_reply_cases,
)
from crseval.replies.form import garbled, is_empty, repeats, repeats_any, word_set


def case(reply, catalog=(), outside=(), earlier=(), user="Can you help me find something?"):
    return reply_case(reply, list(catalog), list(outside), list(earlier), user)


# --- the form of a reply ---------------------------------------------------------------------------------------


def test_empty_means_no_letter_or_digit_in_any_script():
    assert is_empty("") and is_empty(" ... !? ") and is_empty("\n\t-")
    assert not is_empty("7") and not is_empty("映画") and not is_empty("ok")


def test_a_letter_ten_times_in_a_row_is_garbled_a_drawn_out_word_is_not():
    assert garbled("Here you go: mmmmmmmmmm")
    assert not garbled("That one is soooo good, you will looove it")  # five o's, three o's


def test_words_said_three_times_back_to_back_are_garbled():
    assert garbled("I recommend it. I recommend it. I recommend it.")
    assert garbled("you will like it, you will like it, you will like it")
    assert not garbled("I recommend it. I recommend it.")  # twice is no loop
    assert not garbled("Ha ha ha ha ha ha ha ha ha")  # one word over and over: laughter
    assert not garbled("I liked it, you will like it, we all like it")


def test_mostly_words_english_does_not_use_are_garbled():
    assert garbled("xqzvt plokjh wertyuq a movie")  # three of four lower-case words unknown
    assert not garbled("xqzvt plokjh is a movie")  # two of four: not more than half
    assert not garbled("xqzvt plokjh")  # too few words to judge
    assert not garbled("Zorblax Qwenthi Plokarr is a good film")  # capitalised words are names
    assert not garbled("lol i reccomend it tbh, u will like it")  # chat words and misspellings are words


def test_one_reply_against_earlier_ones_agrees_with_the_session_matrix():
    replies = ["you might like heat", "you might like heat too", "something else entirely", "", "heat you like might"]
    sets = [word_set(r) for r in replies]
    matrix = repeats(sets)
    assert [repeats_any(s, sets[:i]) for i, s in enumerate(sets)] == list(matrix)
    # by hand: {you, might, like, heat} vs {..., too}: 4/5 -> a repeat; the last is the first reordered
    assert list(matrix) == [False, True, False, False, True]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from("a b c d e f".split()), max_size=6).map(" ".join), max_size=6))
def test_repeats_any_is_the_matrix_rule_for_any_session(replies):
    sets = [word_set(r) for r in replies]
    assert [repeats_any(s, sets[:i]) for i, s in enumerate(sets)] == list(repeats(sets))


# --- the case of one reply ---------------------------------------------------------------------------------------


def test_the_cases_are_fixed():
    assert REPLY_CASES == (
        "catalog_film",
        "outside_film",
        "not_a_film",
        "asked",
        "answered",
        "repeated",
        "unusable",
        "other",
    )
    assert FAILURES == {"outside_film", "not_a_film", "repeated", "unusable"} and GOOD == "catalog_film"
    assert START not in REPLY_CASES


def test_unusable_replies():
    assert case("") == "unusable"
    assert case("  ?! ") == "unusable"
    assert case("You might like the the film Heat.", catalog=["Heat"]) == "unusable"  # a stutter
    assert case("Have you seen ?") == "unusable"  # an unfilled slot
    assert case("I think you will like {title}.") == "unusable"
    assert case("zzzzzzzzzzzz") == "unusable"  # garbled
    assert case("La La Lush is a treat.", outside=["La La Lush"]) == "outside_film"  # a title's own doubling


def test_unusable_comes_before_every_other_case():
    assert case("Heat Heat is great.", catalog=["Heat"], earlier=["Heat Heat is great."]) == "unusable"


def test_a_repeat_comes_before_a_film():
    earlier = ["You might like Heat, a tense crime film."]
    assert case("You might like Heat, a tense crime film!", catalog=["Heat"], earlier=earlier) == "repeated"
    assert case("What genre do you like?", earlier=["what genre do you like"]) == "repeated"
    # 3 shared words of 6: 1/2 < 4/5, no repeat
    assert case("You might like Casino now.", catalog=["Casino"], earlier=["You might like Heat"]) == "catalog_film"


def test_films_offered():
    assert case("You could watch Heat.", catalog=["Heat"]) == "catalog_film"
    assert case("You could watch Heat or Glimmerfall.", catalog=["Heat"], outside=["Glimmerfall"]) == "catalog_film"
    assert case("You could watch Glimmerfall (2019).", outside=["Glimmerfall"]) == "outside_film"
    # a film outside the catalog wins over a question and over a thing that is not a film
    assert case("Have you seen Glimmerfall?", outside=["Glimmerfall"]) == "outside_film"


def test_recommending_something_that_is_not_a_film():
    assert case("I would suggest the book, it is better.") == "not_a_film"
    assert case("You might enjoy their latest album.") == "not_a_film"
    assert case("How about a TV show instead?") == "not_a_film"  # before `asked`
    assert case("Check out the video game, it is great fun.") == "not_a_film"
    assert case("Try this recipe tonight.") == "not_a_film"
    assert case("It is a wonderful novel.") == "not_a_film"  # praise in the present puts it forward


def test_things_that_are_not_a_recommendation_of_another_kind():
    assert not recommends_another_kind("I read the book last year.")  # no recommendation cue
    assert not recommends_another_kind("The book was great too.")  # praise in the past: a source, not an offer
    assert not recommends_another_kind("I recommend the movie adaptation of the novel.")  # a film word
    assert not recommends_another_kind("Try The Book Thief.")  # capitalised: a title
    assert not recommends_another_kind("The book was long. You might like a thriller.")  # not one sentence
    assert not recommends_another_kind("Try the game night with friends")  # "game" alone is said of films


def test_asking_the_user():
    assert case("What genre do you like?") == "asked"
    assert case("Great! which genre do you like") == "asked"  # no question mark, an opening filler
    assert case("Tell me a film you loved.") == "asked"
    assert case("Do you prefer old or new ones") == "asked"
    assert asks_the_user("I see. Any favourite actors")
    assert not asks_the_user("What a great choice!")
    assert not asks_the_user("What I like about it is the score.")


def test_answering_a_question_of_the_user():
    assert case("It was directed by a French filmmaker.", user="Who directed it?") == "answered"
    assert case("It is about a heist.", user="what is it about") == "answered"  # ASKS_ABOUT, no "?"
    # asking back is `asked`, saying nothing with content is `other`, no question is `other`
    assert case("It is a drama. Do you like dramas?", user="Who directed it?") == "asked"
    assert case("Oh, it is.", user="Is it good?") == "other"
    assert case("It was directed by a French filmmaker.", user="I like dramas.") == "other"
    # a question that asks for a film is not answered by words without one
    assert case("It is a great genre with many fine titles.", user="Can you recommend a comedy?") == "other"
    assert case("It is a great genre with many fine titles.", user="Any other movies like it?") == "other"
    assert case("Yes, it is a very good one.", user="Is it a good movie?") == "answered"


def test_anything_else_is_other():
    assert case("Have a nice evening.", user="Thanks, bye.") == "other"
    assert case("Glad you liked it!", user="Thanks") == "other"


def test_bad_input_is_an_error():
    with pytest.raises(TypeError, match="reply must be a string"):
        reply_case(None, [], [], [], "")


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=80),
    st.lists(st.text(max_size=10), max_size=2),
    st.lists(st.text(max_size=10), max_size=2),
    st.lists(st.text(max_size=40), max_size=3),
    st.text(max_size=40),
)
def test_every_reply_has_one_of_the_cases(reply, catalog, outside, earlier, user):
    assert reply_case(reply, catalog, outside, earlier, user) in REPLY_CASES


# --- the cases of a session --------------------------------------------------------------------------------------


def turn(user, system, recommended=(), unknown=(), mentioned=(), marked=None):
    row = {
        "user_text": user,
        "system_text": system,
        "recommended_titles": list(recommended),
        "mentioned_titles": list(mentioned),
        "unknown_titles": list(unknown),
    }
    if marked is not None:
        row["marked_titles"] = list(marked)
    return row


def test_each_user_turn_reacts_to_the_reply_before_it():
    record = {
        "turns": [
            turn("Hi, any crime films?", "You could watch Heat.", recommended=["Heat"]),
            turn("Seen it. Something else?", "You could watch Heat."),
            turn("You said that already.", "Sorry! Try the novel instead."),
        ]
    }
    # turn 1 starts; turn 2 reacts to a catalog film; turn 3 to the same reply said again
    assert session_reply_cases(record) == [START, "catalog_film", "repeated"]
    assert session_reply_cases({"turns": []}) == []


def test_an_imported_dialogue_without_a_catalog_reading_takes_the_marked_films_as_outside():
    record = {
        "turns": [
            turn("Hi! I like thrillers.", "Have you seen Glimmerfall?", marked=["Glimmerfall"]),
            turn("No. What is it about?", "A courier who loses her memory.", marked=[]),
            turn("Sounds good!", "Enjoy!", marked=[]),
        ]
    }
    assert session_reply_cases(record) == [START, "outside_film", "answered"]


def test_a_recognise_callable_reads_the_films_where_the_record_has_none():
    record = {
        "turns": [
            turn("Hi! I like thrillers.", "Have you seen Glimmerfall?", marked=["Glimmerfall"]),
            turn("No. Another one?", "You might like Heat.", marked=["Heat"]),
            turn("Sounds good!", "Enjoy!", marked=[]),
        ]
    }
    asked = []

    def recognise(system_text, user_text):
        asked.append((system_text, user_text))
        return (["Heat"], []) if "Heat" in system_text else ([], [])

    # the recognizer, not the marks: Glimmerfall is no catalog film and it reads no outside film
    assert session_reply_cases(record, recognise) == [START, "asked", "catalog_film"]
    assert asked == [
        ("Have you seen Glimmerfall?", "Hi! I like thrillers."),
        ("You might like Heat.", "No. Another one?"),
    ]


def test_the_record_lists_win_over_the_recognise_callable():
    record = {"turns": [turn("Hi", "Watch Heat.", recommended=["Heat"]), turn("ok", "Bye.")]}
    assert session_reply_cases(record, lambda system, user: ([], ["Heat"])) == [START, "catalog_film"]


def test_the_catalog_reader_of_a_real_matcher(matcher):
    recognise = catalog_reader(matcher)
    catalog, outside = recognise("You might like Heat or Casino.", "Any crime films?")
    assert list(catalog) == ["Heat", "Casino"] and list(outside) == []
    assert recognise("You might like Heat or Casino.", "Any crime films?") == (tuple(catalog), tuple(outside))
    record = {
        "turns": [
            turn("Any crime films?", "You might like Heat or Casino."),
            turn("Seen both. What else?", "What do you like about them?"),
            turn("The actors.", "Then try Scream."),
        ]
    }
    assert session_reply_cases(record, recognise) == [START, "catalog_film", "asked"]
