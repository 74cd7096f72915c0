"""Concept extraction: everyday words need a cue, nothing inside a title counts."""

import pandas as pd
import pytest

from crseval.language.concepts import ConceptMatcher

VALUES = [
    ("genre", "love"),
    ("genre", "war"),
    ("genre", "family"),
    ("genre", "comedy"),
    ("genre", "dog"),
    ("genre", "beauty"),
    ("genre", "science fiction"),
    ("language", "english"),
    ("actor", "Will Smith"),
    ("actor", "Common"),
    ("year", "1984"),
    ("director", "Orson Welles"),
    ("actor", "Orson Welles"),
]
CONCEPTS = pd.DataFrame([(f, v, i) for i, (f, v) in enumerate(VALUES)], columns=["field", "value", "film_id"])
FILMS = pd.DataFrame(
    {
        "film_id": range(4),
        "title": ["Black Beauty", "Love Actually", "War", "1984"],
        "actor": [[], [], [], []],
        "director": [[], [], [], []],
        "writer": [[], [], [], []],
    }
)


@pytest.fixture(scope="module")
def matcher():
    return ConceptMatcher(CONCEPTS, FILMS)


def concepts(matcher, text, titles=()):
    return [(m.field, m.value) for m in matcher.values(text, titles)]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("I'd love to watch a comedy.", [("genre", "comedy")]),  # "love" is a verb here
        ("A love story, please, or a war movie.", [("genre", "love"), ("genre", "war")]),  # field words after
        ("Something in the love genre.", [("genre", "love")]),
        ("My dog loved the family.", []),  # ordinary words
        ("A family film in english.", [("genre", "family"), ("language", "english")]),
        ("We saw Black Beauty and Love Actually.", []),  # inside titles
        ('Just "love", nothing else.', [("genre", "love")]),  # quotes
        ("Common is great. Something starring Common.", [("actor", "Common")]),  # the first is a sentence start
        (
            "A movie with Will Smith, science fiction, from 1984.",
            [("actor", "Will Smith"), ("genre", "science fiction"), ("year", "1984")],
        ),
        ("War is hell; I want a war film.", [("genre", "war")]),
    ],
)
def test_everyday_words_need_a_cue(matcher, text, expected):
    assert concepts(matcher, text) == expected


def test_a_title_that_is_a_year_hides_the_year_only_when_read_as_a_title(matcher):
    assert concepts(matcher, "A film from 1984.") == [("year", "1984")]
    assert concepts(matcher, 'I liked "1984" a lot.') == []


def test_cue_words_choose_the_field(matcher):
    assert concepts(matcher, "Something directed by Orson Welles.") == [("director", "Orson Welles")]
    assert concepts(matcher, "Something starring Orson Welles.") == [("actor", "Orson Welles")]
