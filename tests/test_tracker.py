"""Constraint tracking and concept matching on hand-written utterances."""

import numpy as np
import pytest

from crseval.catalog.retrieval import Retriever
from crseval.language.tracker import Constraint, ConstraintTracker


def track(matcher, *utterances):
    tracker = ConstraintTracker(matcher)
    for text in utterances:
        state = tracker.update(text)
    return state


def test_genre_and_actor(matcher):
    assert track(matcher, "I'd like a crime movie starring Robert De Niro.") == [
        Constraint("actor", "Robert De Niro"),
        Constraint("genre", "crime"),
    ]


def test_negation_excludes(matcher):
    assert track(matcher, "Something with Robert De Niro, but not horror please.") == [
        Constraint("actor", "Robert De Niro"),
        Constraint("genre", "horror", negated=True),
    ]
    assert track(matcher, "Actually, nothing with Al Pacino after all. Still a crime film, though.") == [
        Constraint("genre", "crime"),
        Constraint("actor", "Al Pacino", negated=True),
    ]
    assert track(matcher, "On second thought, I don't want English dialogue.") == [
        Constraint("language", "english", negated=True)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "I'm not really a fan of horror movies.",
        "Not a big fan of horror.",
        "I dislike horror.",
        "I hate horror movies",
        "Anything but horror.",
        "Horror is not my thing.",
        "horror movies aren't for me",
        "any good non-horror films?",
        "Non horror please",
    ],
)
def test_a_value_said_not_to_be_wanted_is_excluded(matcher, text):
    assert track(matcher, text) == [Constraint("genre", "horror", negated=True)]


def test_a_fan_of_a_value_wishes_it(matcher):
    assert track(matcher, "I'm a big fan of horror.") == [Constraint("genre", "horror")]
    assert track(matcher, "Horror is my thing.") == [Constraint("genre", "horror")]


def test_negation_stops_at_a_clause_break(matcher):
    assert track(matcher, "Scream isn't quite it. Please find me a mystery movie.") == [Constraint("genre", "mystery")]


def test_a_new_value_replaces_the_fields_old_wish_and_lifts_its_exclusion(matcher):
    assert track(matcher, "A comedy, please.", "Now a drama instead.") == [Constraint("genre", "drama")]
    assert track(matcher, "No horror.", "Fine, horror after all.") == [Constraint("genre", "horror")]


def test_cue_words_decide_the_field_of_a_shared_name(matcher):
    assert track(matcher, "A movie directed by Orson Welles.") == [Constraint("director", "Orson Welles")]
    assert track(matcher, "A film written by Orson Welles.") == [Constraint("writer", "Orson Welles")]
    assert track(matcher, "A film starring Orson Welles.") == [Constraint("actor", "Orson Welles")]


def test_years_by_catalog_and_by_regex(matcher):
    assert track(matcher, "Something from 1995.") == [Constraint("year", "1995")]
    assert track(matcher, "Something from 1932, or 19999.") == [Constraint("year", "1932")]


def test_word_boundaries(matcher):
    # "dramatic" is not "drama", "Upton" is not the film "Up"; titles are case-sensitive
    assert track(matcher, "Something dramatic about Upton.") == []
    assert matcher.titles("I loved Up and Heat, and heat is no title here.") == ["Up", "Heat"]
    assert matcher.titles("Casino, then Casino again") == ["Casino"]


def test_longest_match_wins(matcher):
    mentions = matcher.values("Anything with Robert De Niro.")
    assert [(m.field, m.value) for m in mentions] == [("actor", "Robert De Niro")]


def test_retrieval_ranks_latest_wish_first_and_skips_exclusions(small_index):
    retriever = Retriever(small_index)
    rng = np.random.default_rng(0)
    wishes = [
        Constraint("genre", "crime"),
        Constraint("director", "Martin Scorsese"),
        Constraint("year", "1990", negated=True),
    ]
    ranked = retriever.rank(wishes, already=set(), k=5, rng=rng, emphasis={("genre", "crime")})
    titles = [small_index.films.loc[f, "title"] for f in ranked]
    # Goodfellas (1990) is excluded; Casino has both wishes, Heat only the emphasised one
    assert titles == ["Casino", "Heat"]
    ranked = retriever.rank(wishes, already={1}, k=5, rng=rng, emphasis={("genre", "crime")})
    assert [small_index.films.loc[f, "title"] for f in ranked] == ["Heat"]


def test_a_point_of_reference_is_not_a_wish(matcher):
    assert track(
        matcher, "Casino reminds me of Robert De Niro. That gives me a new idea: I'd now like a horror movie."
    ) == [Constraint("genre", "horror")]
    assert track(
        matcher, "Let's go another way, via director Martin Scorsese in Casino: please find me a mystery film."
    ) == [Constraint("genre", "mystery")]


def test_a_fresh_start_replaces_the_wishes_and_keeps_the_exclusions(matcher):
    assert track(
        matcher,
        "A crime movie starring Al Pacino, but not horror.",
        "Thinking of Robert De Niro from Heat, I've changed my mind. Now I want a mystery film. "
        "It should still be starring Al Pacino.",
    ) == [Constraint("actor", "Al Pacino"), Constraint("genre", "mystery"), Constraint("genre", "horror", negated=True)]
    # without a fresh-start cue, a wish of another field stays
    assert track(matcher, "A crime movie.", "Now something starring Al Pacino.") == [
        Constraint("actor", "Al Pacino"),
        Constraint("genre", "crime"),
    ]


def test_titles_the_system_recommended_are_read_as_titles(matcher):
    tracker = ConstraintTracker(matcher)
    assert tracker.update("Up sounds great. Could you suggest another one, still a crime film?", titles=["Up"]) == [
        Constraint("genre", "crime")
    ]
