"""Title recognition: which films a text refers to, and whether it recommends or only mentions them.

Hand-written sentences for each rule, then the hand-labelled real replies of the thesis logs.
"""

import json

import pandas as pd
import pytest
from conftest import REFERENCE_LOGS, REPO

from crseval.language.title_labels import evaluate, load_labels
from crseval.language.titles import TitleRecognizer

LABELS = REPO / "tests" / "data" / "title_labels" / "labels.jsonl"

FILMS = pd.DataFrame(
    {
        "title": [
            "1984",
            "Stoker",
            "War",
            "Her",
            "Titanic",
            "The Queen",
            "X-Men",
            "Heat",
            "Casino",
            "London",
            "Aladdin",
            "The Dark Knight",
            "Juno",
            "Monsters, Inc.",
            "Amélie",
            "Emma",
            "Antwone Fisher",
        ],
        "actor": [
            [],
            [],
            [],
            [],
            [],
            ["Helen Mirren"],
            [],
            [],
            [],
            [],
            [],
            [],
            ["Juno Temple", "Emma Stone"],
            [],
            [],
            [],
            [],
        ],
        "director": [[], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], []],
        "writer": [[], [], [], [], [], [], [], [], [], [], ["Bram Stoker"], [], [], [], [], [], ["Antwone Fisher"]],
    }
)


@pytest.fixture(scope="module")
def recognizer():
    return TitleRecognizer(FILMS)


def found(recognizer, text, **kwargs):
    result = recognizer.recognise(text, **kwargs)
    return result.recommended, result.mentioned


def test_titles_are_classified_by_what_else_they_could_be(recognizer):
    assert recognizer.kind["1984"] == "number"
    assert recognizer.kind["Stoker"] == "name" and recognizer.kind["Juno"] == "name"
    assert recognizer.kind["War"] == "common" and recognizer.kind["Her"] == "common"
    assert recognizer.kind["Titanic"] == "plain" and recognizer.kind["The Dark Knight"] == "plain"
    assert recognizer.quoted("1984") == '"1984"' and recognizer.quoted("Titanic") == "Titanic"


@pytest.mark.parametrize(
    "text",
    [
        "Something from 1984, please.",  # a year
        "A gothic novel written by Bram Stoker.",  # part of a name
        "Her performance is wonderful.",  # a pronoun at the start of a sentence
        "It is set during World War II.",  # part of a longer name
        "X-Men: First Class is a fine prequel.",  # a longer title than the catalog's
        "The story is set in London.",  # a place
        "Scott Weinger stars as Aladdin.",  # a character
        "Emma Stone and Juno Temple star in it.",  # names
        "A drama written by Antwone Fisher.",  # a person with a film's name
        "the dark knight rises again",  # lower case, no formatting
    ],
)
def test_traps_are_not_films(recognizer, text):
    assert found(recognizer, text) == ([], [])


@pytest.mark.parametrize(
    "text, films",
    [
        ('I recommend "1984", a dystopian classic.', ["1984"]),  # formatting
        ("Try 1984 (1984) tonight.", ["1984"]),  # a year in parentheses
        ("You could watch the film 1984 tonight.", ["1984"]),  # a film word
        ("1. 1984 - a bleak dystopia\n2. Stoker: a thriller", ["1984", "Stoker"]),  # list headings
        ("I really loved Her and you will too.", ["Her"]),  # capitalised in mid-sentence
        ("Heat and Casino are both good.", ["Heat", "Casino"]),  # a list joins a weak title to another
        ("Have you seen **the queen**?", ["The Queen"]),  # bold, case ignored
        ("'Monsters Inc' (2001) is fun.", ["Monsters, Inc."]),  # quotes, punctuation ignored
        ("“Amelie” is charming.", ["Amélie"]),  # diacritics ignored
        ("Spielberg's Titanic? No, Cameron's Titanic.", ["Titanic"]),  # a possessive before is fine
    ],
)
def test_cued_titles_are_films(recognizer, text, films):
    recommended, mentioned = found(recognizer, text)
    assert recommended + mentioned == films


def test_a_candidate_title_needs_less(recognizer):
    assert found(recognizer, "Stoker doesn't fit.") == ([], [])
    assert found(recognizer, "Stoker doesn't fit.", candidates=["Stoker"]) == (["Stoker"], [])


def test_roles(recognizer):
    assert found(recognizer, "Since you liked Titanic, try Casino (1995).") == (["Casino"], ["Titanic"])
    assert found(recognizer, "From the director of Titanic and The Dark Knight comes Heat (1995).") == (
        ["Heat"],
        ["Titanic", "The Dark Knight"],
    )
    asked = "What's the mood of The Queen?"
    assert found(recognizer, "The Queen is a quiet drama about Helen Mirren's queen.", user_text=asked) == (
        [],
        ["The Queen"],
    )
    assert found(recognizer, "I'd recommend The Queen: a quiet drama.", user_text=asked) == (["The Queen"], [])
    assert found(recognizer, "If you enjoyed Titanic, Casino (1995) is a great choice.") == (["Casino"], ["Titanic"])


def test_a_film_proposed_and_referred_to_is_recommended_once(recognizer):
    result = recognizer.recognise("Titanic is great. Since you liked Titanic, watch Titanic again.")
    assert result.recommended == ["Titanic"] and result.mentioned == []


@pytest.mark.skipif(not REFERENCE_LOGS.exists(), reason="the thesis logs are not beside the repository")
def test_title_recognition_on_hand_labelled_real_replies(full_index):
    """At least 150 real replies of six models, labelled by hand (tests/data/title_labels/GUIDE.md)."""
    replies = load_labels(LABELS, REFERENCE_LOGS)
    assert len(replies) >= 150 and len({r.model for r in replies}) == 6
    result = evaluate(full_index_recognizer(full_index), replies)
    report = {
        k: {m: round(v, 3) if isinstance(v, float) else v for m, v in result[k].items()}
        for k in ("referenced", "recommended", "mentioned")
    }
    print(json.dumps(report, indent=1), result["traps"])
    for key in ("referenced", "recommended"):
        assert result[key]["precision"] >= 0.95, (key, result[key], result["errors"][:10])
        assert result[key]["recall"] >= 0.90, (key, result[key], result["errors"][:10])
    assert result["traps"]["taken_for_films"] <= 0.05 * result["traps"]["total"]


def full_index_recognizer(index):
    from crseval.language.concepts import ConceptMatcher

    return ConceptMatcher(index.concepts, index.films).title_recognizer


def test_eval_titles_command(tmp_path, small_index, capsys):
    import hashlib

    import pyarrow as pa

    from crseval.cli import main
    from crseval.core.io import write_parquet

    index_dir = tmp_path / "catalog"
    index_dir.mkdir()
    write_parquet(
        pa.Table.from_pandas(small_index.films.reset_index(drop=True), preserve_index=False),
        index_dir / "films.parquet",
    )
    write_parquet(pa.Table.from_pandas(small_index.concepts, preserve_index=False), index_dir / "concepts.parquet")
    reply = "Since you liked Casino, try Goodfellas (1990) and Scream."
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "m_1.json").write_text(
        json.dumps(
            {
                "model_name": "m",
                "conversation": [{"speaker": "USER", "text": "I loved Casino."}, {"speaker": "SYSTEM", "text": reply}],
            }
        )
    )
    label = {
        "id": "m_1.json#1",
        "model": "m",
        "file": "m_1.json",
        "message_index": 1,
        "sha256": hashlib.sha256(reply.encode()).hexdigest(),
        "recommended": ["Goodfellas", "Scream"],
        "mentioned": ["Casino"],
        "traps": [],
    }
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps(label) + "\n")
    args = ["eval-titles", str(labels), "--logs", str(tmp_path / "logs"), "--catalog-index", str(index_dir)]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["referenced"]["precision"] == 1.0 and result["referenced"]["recall"] == 1.0
    assert result["recommended"]["tp"] == 2 and result["mentioned"]["tp"] == 1
    labels.write_text(json.dumps({**label, "sha256": "0" * 64}) + "\n")  # the log changed since labelling
    assert main(args) == 2
    assert "changed since it was labelled" in capsys.readouterr().err
    labels.write_text(json.dumps({k: v for k, v in label.items() if k != "traps"}) + "\n")
    assert main(args) == 2
    assert "missing traps" in capsys.readouterr().err


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = st.sampled_from(
    [
        "I recommend",
        "since you liked",
        "from",
        "written by Bram",
        '"',
        "'",
        "**",
        "(1995)",
        ",",
        " and ",
        "\n1. ",
        ".",
        "War",
        "Her",
        "1984",
        "Stoker",
        "Titanic",
        "The Queen",
        "Heat",
        "Casino",
        "X-Men",
        ": First Class",
        "the director of",
        "London",
        "as",
        "Emma Stone",
        "“",
        "”",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.lists(_PIECES, max_size=25).map(" ".join)))
def test_recognition_invariants(text):
    recognizer = _RECOGNIZER
    result = recognizer.recognise(text, candidates=["Stoker"], user_text=text[:40])
    assert not set(result.recommended) & set(result.mentioned)
    assert len(set(result.recommended)) == len(result.recommended) and len(set(result.mentioned)) == len(
        result.mentioned
    )
    assert set(result.all) <= set(FILMS["title"])
    for ref in result.references:
        assert 0 <= ref.start < ref.end <= len(text) and ref.role in ("recommended", "mentioned")
    assert set(result.all) == {r.title for r in result.references}


_RECOGNIZER = TitleRecognizer(FILMS)
