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
        ("I love movies with a twist.", []),  # a verb after its subject, though a field word follows
        ("We'd really love a comedy.", [("genre", "comedy")]),
        ('I "love" movies, the genre.', [("genre", "love")]),  # quoted: the value
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


READER_VALUES = [
    ("genre", "thriller"),
    ("genre", "comedy"),
    ("genre", "sport"),
    ("genre", "war"),
    ("genre", "love"),
    ("genre", "animation"),
    ("genre", "horror comedy"),
    ("genre", "science fiction"),
    ("year", "2016"),
    ("actor", "Michael Bay"),
    ("director", "Michael Bay"),
    ("director", "Michael Bay"),
    ("actor", "Tom Hanks"),
    ("actor", "Michael Shanks"),
]
READER_FILMS = pd.DataFrame(
    {
        "film_id": range(2),
        "title": ["Heat", "Armageddon"],
        "actor": [[], []],
        "director": [[], ["Michael Bay"]],
        "writer": [[], []],
    }
)


@pytest.fixture(scope="module")
def reader():
    concepts = pd.DataFrame(
        [(f, v, i % 2) for i, (f, v) in enumerate(READER_VALUES)], columns=["field", "value", "film_id"]
    )
    return ConceptMatcher(concepts, READER_FILMS)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("I do not like thrillers.", [("genre", "thriller")]),  # a plural
        ("Give me some comedies.", [("genre", "comedy")]),
        ("What about sports movies?", [("genre", "sport")]),
        ("I like sports.", []),  # an everyday word still needs a cue
        (
            "A comedic sci-fi movie, or an animated film?",
            [("genre", "comedy"), ("genre", "science fiction"), ("genre", "animation")],
        ),
        ("preferably a horror comedy", [("genre", "horror comedy")]),  # made of genre names: no cue needed
        ("find love movi", [("genre", "love")]),  # a field word typed with a letter wrong
        ("I love moving pictures", []),  # an English word is no typo
        ("Top 10 best Star Wars movies", []),  # a capitalised word inside a name
        ("michsel bay is the worst", [("director", "Michael Bay")]),  # one letter wrong, the field he has most
        ("directed by Michael Hanks", []),  # two catalog names mixed up, not a typo
    ],
)
def test_how_people_write_values(reader, text, expected):
    assert concepts(reader, text) == expected


def test_nothing_inside_a_film_outside_the_catalog_is_a_concept(reader):
    text = "Have you seen Love and Thunder (2016)? It is a science fiction comedy."
    assert concepts(reader, text) == [("genre", "science fiction"), ("genre", "comedy")]
    assert concepts(reader, "I would recommend the following items:\n1: War Games (2016)\n2: Heat (2016)") == [
        ("year", "2016")  # the catalog film's year is a value; the outside film's is part of its reference
    ]


def test_outside_films_are_no_hallucination_and_coverage_counts_them(small_index):
    from crseval.metrics.grounded import ConceptSpace, TasSettings, score_session

    space = ConceptSpace(small_index, ConceptMatcher(small_index.concepts, small_index.films), TasSettings())
    reply = "I would recommend the following items:\n1: Heat (1995)\n2: Drama Queens of Crime (2016)"
    record = {
        "session_id": "s",
        "turns": [
            {
                "turn": 1,
                "user_text": "Something with Al Pacino.",
                "user_meta": None,
                "system_text": reply,
                "recommended_titles": ["Heat"],
                "unknown_titles": ["Drama Queens of Crime"],
            },
            {
                "turn": 2,
                "user_text": "More?",
                "user_meta": None,
                "system_text": "Try Up.",
                "recommended_titles": ["Up"],
            },
        ],
    }
    session, rows = score_session(record, space)
    assert ("genre", "drama") not in space.mentions(reply) and ("genre", "crime") not in space.mentions(reply)
    assert rows[0]["hallucinated_concepts"] == 0 and rows[0]["unknown_titles"] == 1
    assert session["unknown_titles"] == 1 and session["catalog_coverage"] == pytest.approx(2 / 3)


SERIES_FILMS = pd.DataFrame(
    {
        "film_id": range(6),
        "title": [
            "Star Wars: The First One",
            "Star Wars: Another One",
            "War Horse",
            "Science Fiction Theatre",
            "Science Fiction Double Feature",
            "The Hunger Games: Part Two",
        ],
        "actor": [[]] * 6,
        "director": [[]] * 6,
        "writer": [[]] * 6,
    }
)
SERIES_VALUES = [("genre", "war"), ("genre", "science fiction"), ("genre", "comedy"), ("genre", "games")]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("best star wars movies", []),  # "wars" inside a series' name, whatever its case
        ("Best Star Wars movies", []),
        ("what are good star wars films?", []),
        ("a war movie, not star wars", [("genre", "war")]),
        ("a star war movie", [("genre", "war")]),  # "star war" opens no title
        ("any war movies?", [("genre", "war")]),  # one title ("War Horse") makes no series
        ("science fiction please", [("genre", "science fiction")]),  # a series' whole name stays a value
        ("something like the hunger games", []),  # a leading "the" aside
        ("a comedy or some hunger games", [("genre", "comedy")]),  # two titles open with it, one after "the"
    ],
)
def test_a_value_inside_a_series_name_is_no_value(text, expected):
    films = pd.concat(
        [SERIES_FILMS, SERIES_FILMS.iloc[[5]].assign(film_id=6, title="Hunger Games Again")], ignore_index=True
    )
    rows = [(field, value, i) for i, (field, value) in enumerate(SERIES_VALUES)]
    concepts = pd.DataFrame(rows, columns=["field", "value", "film_id"])
    found = [(m.field, m.value) for m in ConceptMatcher(concepts, films).values(text)]
    assert found == expected
