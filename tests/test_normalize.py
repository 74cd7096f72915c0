"""Value normalisation on hand-written cases."""

import pytest
from conftest import NON_GENRES

from crseval.catalog.normalize import (
    GenreNormaliser,
    NonGenreList,
    genre_key,
    normalise_language,
    normalise_person,
    normalise_year,
)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Romance Film", "romance"),
        ("Romance", "romance"),
        ("  Action   Film ", "action"),
        ("Family (Film genre) #395", "family"),
        ("Supernatural (TV Genre)", "supernatural"),
        ("Crime Fiction", "crime"),
        ("Sci-Fi", "science fiction"),
        ("Science Fiction", "science fiction"),
        ("Biographical film", "biography"),
        ("Superhero movie", "superhero"),
        ("Film noir", "film noir"),
        ("Romantic comedy", "romantic comedy"),
        ("Film", "film"),
    ],
)
def test_genre_key(raw, expected):
    assert genre_key(raw) == expected


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("English Language", "english"),
        ("English", "english"),
        ("Hungarian language", "hungarian"),
        ("Tibetan languages", "tibetan"),
        ("spa", "spanish"),
        ("fre", "french"),
        ("Standard Chinese", "mandarin"),
        ("Yue Chinese", "cantonese"),
        ("American English", "english"),
        ("  ", None),
    ],
)
def test_normalise_language(raw, expected):
    assert normalise_language(raw) == expected


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("2008", ("2008", None)),
        (2008, ("2008", None)),
        (" 1999-05-01 ", ("1999", None)),
        ("975", (None, "not a four-digit year")),
        ("12345", (None, "not a four-digit year")),
        ("1811", (None, "year outside 1870-2100")),
        (True, (None, "not a four-digit year")),
        (None, (None, "not a four-digit year")),
    ],
)
def test_normalise_year(raw, expected):
    assert normalise_year(raw) == expected


def test_person_whitespace_only():
    assert normalise_person("  Anne   Hathaway ") == "Anne Hathaway"
    assert normalise_person("   ") is None


def test_genre_normaliser_reasons():
    normaliser = GenreNormaliser(NonGenreList.load(NON_GENRES), people={"John Lennon"}, languages={"english", "french"})
    assert normaliser.normalise("Romance Film") == ("romance", None)
    assert normaliser.normalise("United Kingdom") == (None, "place listed as genre")
    assert normaliser.normalise("The Walt Disney Company") == (None, "organisation listed as genre")
    assert normaliser.normalise("John Lennon") == (None, "person listed as genre")
    assert normaliser.normalise("English Language") == (None, "language listed as genre")
    assert normaliser.normalise("French") == (None, "language listed as genre")
    assert normaliser.normalise("Paris (France)") == (None, "place listed as genre")
    assert normaliser.normalise(" ") == (None, "empty value")


def test_non_genre_list_rejects_malformed_lines(tmp_path):
    path = tmp_path / "list.tsv"
    path.write_text("# comment\nFrance\tplace listed as genre\nno reason here\n")
    with pytest.raises(ValueError, match=r"list.tsv:3"):
        NonGenreList.load(path)
