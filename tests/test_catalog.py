"""Catalog loading: normalisation, index tables, summary counts, malformed input."""

import json

import pyarrow as pa
import pytest
from conftest import DEMO_CATALOG, FULL_CATALOG, NON_GENRES

from crseval.catalog.build import CatalogError, build_index, load_catalog, plot_keywords
from crseval.catalog.index import CatalogIndex
from crseval.catalog.normalize import NonGenreList

KEYWORDS = {"per_film": 3, "min_df": 1, "max_df": 1.0, "lemmatize": True}


def film(name, **fields):
    record = {
        "name": name,
        "year": "2000",
        "genre": ["Drama"],
        "actor": [],
        "director": [],
        "writer": [],
        "language": ["English"],
        "plot": f"A story about {name}.",
        "original_id": name,
    }
    record.update(fields)
    return record


def write(tmp_path, catalog, name="catalog.json"):
    path = tmp_path / name
    path.write_text(json.dumps(catalog) if not isinstance(catalog, str) else catalog, encoding="utf-8")
    return path


def test_noisy_film_is_normalised(tmp_path):
    path = write(
        tmp_path,
        {
            "Slumdog Millionaire": film(
                "Slumdog Millionaire",
                year="2008",
                actor=["Anil Kapoor", "Anil Kapoor", "Dev  Patel"],
                director=["Danny Boyle"],
                genre=["Indie film", "Romance Film", "Crime Fiction", "Romance", "United Kingdom", "Drama"],
                language=["Hindi Language", "French", "English Language", "English"],
            ),
        },
    )
    films, report = load_catalog(path, NonGenreList.load(NON_GENRES))
    (slumdog,) = films
    assert slumdog.genre == ["indie", "romance", "crime", "drama"]
    assert slumdog.language == ["hindi", "french", "english"]
    assert slumdog.actor == ["Anil Kapoor", "Dev Patel"]
    assert slumdog.year == "2008"
    assert report.dropped["genre"] == {"duplicate": 1, "place listed as genre": 1}
    assert report.dropped["actor"] == {"duplicate": 1}
    assert report.dropped["language"] == {"duplicate": 1}


def test_tolerable_defects_are_repaired_and_counted(tmp_path):
    text = (
        '{"A": {"name": "A", "genre": "Drama", "actor": [null, "X Y"], "plot": "", "year": 1999,'
        ' "rating": 5, "original_id": 7},'
        ' "A": {"name": "A second record"},'
        ' "B": {"name": "B", "year": "975", "plot": "Plot.", "plot": "Other plot."}}'
    )
    films, report = load_catalog(write(tmp_path, text))
    a, b = films
    assert (a.name, a.genre, a.actor, a.year, a.original_id, a.plot) == ("A", ["drama"], ["X Y"], "1999", "7", "")
    assert (b.year, b.plot) == (None, "Plot.")
    assert report.defects == {
        "string where a list was expected (wrapped)": 1,
        "missing plot": 1,
        "unknown field 'rating' (ignored)": 1,
        "repeated title key (first record kept)": 1,
        "repeated field key (first value kept)": 1,
        "missing original_id": 1,
    }
    assert report.dropped["actor"] == {"null value": 1}
    assert report.dropped["year"] == {"not a four-digit year": 1}


@pytest.mark.parametrize(
    "catalog, pattern",
    [
        ("[1, 2]", r"must be a JSON object mapping titles to films, found a list"),
        ('{"A": {"name": "A",}', r"not valid JSON"),
        ("{}", r"holds no films"),
        ({"Good": film("Good"), "Bad": ["not", "an object"]}, r"film 'Bad': expected an object, found a list"),
        ({"Nameless": {"year": "2000", "plot": "x"}}, r"film 'Nameless', field 'name': is missing"),
        ({"Blank": film("  ")}, r"film 'Blank', field 'name': is empty"),
        ({"Listy": film(["Listy", "Again"])}, r"film 'Listy', field 'name': expected a string, found a list"),
        ({"P": film("P", plot=["a", "b"])}, r"film 'P', field 'plot': expected a string, found a list"),
        (
            {"N": film("N", actor=["A", 42])},
            r"film 'N', field 'actor': expected a list of strings, found an item of type a number",
        ),
        (
            {"G": film("G", genre={"main": "Drama"})},
            r"film 'G', field 'genre': expected a list of strings, found an object",
        ),
        ({"Y": film("Y", year=["2000"])}, r"film 'Y', field 'year': expected a year string, found a list"),
    ],
)
def test_malformed_catalog_names_film_and_field(tmp_path, catalog, pattern):
    with pytest.raises(CatalogError, match=pattern):
        load_catalog(write(tmp_path, catalog))


def test_bad_utf8_names_film_and_field(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_bytes(b'{"Good": {"name": "Good"}, "Amelie": {"name": "Am\xe9lie", "plot": "Paris."}}')
    with pytest.raises(CatalogError, match=r"film 'Amelie', field 'name': value is not valid UTF-8"):
        load_catalog(path)


def test_plot_keywords_by_hand():
    plots = ["The pirate ship sails.", "A pirate treasure map.", "The treasure of the ship."]
    # content words: [pirate, ship, sail], [pirate, treasure, map], [treasure, ship]
    # min_df=2 keeps pirate, ship, treasure; in plot 1 pirate and ship tie (alphabetical order)
    assert plot_keywords(plots, per_film=2, min_df=2, max_df=1.0, lemmatize=True) == [
        ["pirate", "ship"],
        ["pirate", "treasure"],
        ["ship", "treasure"],
    ]
    assert plot_keywords(["", ""], per_film=2, min_df=1, max_df=1.0, lemmatize=True) == [[], []]


def test_index_tables_and_lookup(tmp_path):
    path = write(
        tmp_path,
        {
            "Heat": film(
                "Heat", year="1995", actor=["Al Pacino", "Robert De Niro"], genre=["Crime Fiction", "Thriller"]
            ),
            "Casino": film("Casino", year="1995", actor=["Robert De Niro"], genre=["Crime"]),
        },
    )
    films, concepts, summary = build_index(path, NON_GENRES, KEYWORDS)
    assert films.column("film_id").to_pylist() == [0, 1]
    assert films.schema.field("year").type == pa.int16()
    index = CatalogIndex(films.to_pandas(), concepts.to_pandas())
    assert list(index.films_with("actor", "Robert De Niro")) == [0, 1]
    assert list(index.films_with("genre", "crime")) == [0, 1]
    assert list(index.films_with("year", "1995")) == [0, 1]
    assert list(index.films_with("actor", "Nobody")) == []
    assert index.values("genre") == ["crime", "thriller"]
    assert summary["films"] == 2
    assert summary["fields"]["actor"] == {"distinct_values": 2, "films_with_values": 2, "mentions": 3}


def test_demo_catalog_is_clean_and_large_enough():
    films, concepts, summary = build_index(DEMO_CATALOG, NON_GENRES, KEYWORDS)
    assert summary["films"] >= 150
    assert summary["repaired_defects"] == {}
    assert summary["fields"]["language"]["distinct_values"] >= 10
    assert summary["fields"]["genre"]["distinct_values"] >= 15
    decades = {year // 10 for year in films.column("year").to_pylist()}
    assert len(decades) >= 8
    # several films share people, so the simulator can bridge between films
    actors = concepts.to_pandas().query("field == 'actor'").groupby("value").size()
    assert (actors >= 3).sum() >= 10


@pytest.mark.skipif(not FULL_CATALOG.exists(), reason="the OpenDialKG catalog is not beside the repository")
def test_full_catalog_counts():
    films, concepts, summary = build_index(
        FULL_CATALOG, NON_GENRES, {"per_film": 5, "min_df": 2, "max_df": 0.5, "lemmatize": True}
    )
    assert summary["catalog"]["sha256"] == "29e0409cd94659138ca7e0698882dac3fa72e44acfda4ca3478602b557abfe55"
    assert summary["films"] == 2164
    genres = set(concepts.to_pandas().query("field == 'genre'")["value"])
    assert {"romance", "drama", "science fiction", "family"} <= genres
    assert not {"romance film", "united kingdom", "english language", "english"} & genres
    languages = set(concepts.to_pandas().query("field == 'language'")["value"])
    assert "english" in languages and "english language" not in languages
    dropped = summary["dropped_values"]
    assert dropped["year"]["not a four-digit year"]["count"] >= 1
    assert dropped["genre"]["place listed as genre"]["count"] > 100


def test_atomic_writes_have_ordinary_permissions(tmp_path):
    import os
    import stat

    from crseval.core.io import write_json

    write_json({"a": 1}, tmp_path / "out.json")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((tmp_path / "out.json").stat().st_mode) == 0o666 & ~mask
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left behind
