"""Title recognition measured against the films a corpus marks in its replies (crseval.language.title_marks).

Every reply here is invented; the counts are worked out by hand in the comments.
"""

import json
import math

import pandas as pd
import pyarrow as pa
import pytest

from crseval.language.title_marks import evaluate_marks, mark_key
from crseval.language.titles import TitleRecognizer

FILMS = pd.DataFrame({"title": ["Heat", "Casino", "The Dark Knight"], "year": [1995.0, 1995.0, 2008.0]})


@pytest.fixture(scope="module")
def recognizer():
    return TitleRecognizer(FILMS, people=[])


def session(session_id, *turns):
    return {
        "session_id": session_id,
        "turns": [
            {
                "turn": n,
                "user_text": user,
                "system_text": reply,
                **({"marked_titles": marks} if marks is not None else {}),
            }
            for n, (user, reply, marks) in enumerate(turns, start=1)
        ],
    }


def test_titles_compare_without_case_punctuation_and_year_but_with_their_article():
    assert mark_key("Heat  (1995)") == mark_key("heat") == "heat"
    assert mark_key("Ocean's Eight (2018)") == mark_key("Oceans Eight") == "oceans eight"
    assert mark_key("Spider-Man: Homecoming") == "spider man homecoming"
    assert mark_key("Amélie [2001]") == "amelie" and mark_key("Mac & Devin") == "mac and devin"
    assert mark_key("The Dark Knight (2008)") != mark_key("Dark Knight")  # the article is kept
    assert mark_key("2012 (2009)") == "2012"  # only a year in parentheses at the end goes


def test_micro_precision_recall_and_f1_over_replies(recognizer):
    sessions = [
        session(
            "a",
            # recognised {heat, arrival}; marked {heat, arrival}: 2 true positives
            ("hi", "Try Heat (1995) or Arrival (2016).", ["Heat (1995)", "Arrival (2016)"]),
            # recognised {casino}; marked {casino, moon}: 1 tp, "Moon" missed (no cue in the text)
            ("more?", "Casino (1995) is great, and moon is too.", ["Casino (1995)", "Moon (2009)"]),
        ),
        session(
            "b",
            # recognised {the dark knight, zombian}; marked {the dark knight}: 1 tp, "Zombian" spurious
            ("hello", "Have you seen The Dark Knight or Zombian?", ["The Dark Knight (2008)"]),
            # no marks and nothing recognised: a reply counted, nothing else
            ("thanks", "You are welcome.", []),
            # a turn without marks (a corpus whose marks cannot be known for it) is not read
            ("bye", "Heat (1995)!", None),
        ),
    ]
    result = evaluate_marks(recognizer, sessions, errors=True)
    assert result["replies"] == 4 and result["replies_with_marks"] == 3
    titles = result["titles"]
    assert (titles["tp"], titles["predicted"], titles["gold"]) == (4, 5, 5)
    assert titles["precision"] == pytest.approx(0.8) and titles["recall"] == pytest.approx(0.8)
    assert titles["f1"] == pytest.approx(0.8)
    assert result["errors"] == [
        {"session_id": "a", "turn": 2, "missed": ["Moon (2009)"], "spurious": []},
        {"session_id": "b", "turn": 1, "missed": [], "spurious": ["Zombian"]},
    ]
    assert "errors" not in evaluate_marks(recognizer, sessions)


def test_a_mark_counts_once_per_reply_and_an_unmarked_reply_costs_precision(recognizer):
    # "Heat" marked twice and recognised twice: one pair; the film of an unmarked reply is spurious
    sessions = [session("s", ("x", "Heat (1995), yes, Heat.", ["Heat (1995)", "Heat"]), ("y", "Casino (1995)", []))]
    titles = evaluate_marks(recognizer, sessions)["titles"]
    assert (titles["tp"], titles["predicted"], titles["gold"]) == (1, 2, 1)
    assert titles["precision"] == 0.5 and titles["recall"] == 1.0 and titles["f1"] == pytest.approx(2 / 3)


def test_nothing_to_count_is_nan_never_a_default(recognizer):
    empty = evaluate_marks(recognizer, [session("s", ("x", "Nothing here.", []))])["titles"]
    assert math.isnan(empty["precision"]) and math.isnan(empty["recall"]) and math.isnan(empty["f1"])
    missed = evaluate_marks(recognizer, [session("s", ("x", "nothing here", ["Heat (1995)"]))])["titles"]
    assert math.isnan(missed["precision"]) and missed["recall"] == 0.0 and math.isnan(missed["f1"])


def test_the_films_the_user_named_are_read_as_an_import_reads_them():
    # a title that is also part of a person's name counts in a reply when the user named the film before
    films = pd.DataFrame({"title": ["Juno", "Heat"], "year": [2007.0, 1995.0]})
    with_person = TitleRecognizer(films, people=["Juno Temple"])
    sessions = [session("s", ("I loved Juno (2007).", "Juno was sweet; try Heat (1995).", ["Juno (2007)", "Heat"]))]
    assert with_person.recognise("Juno was sweet; try Heat (1995).").all == ["Heat"]  # alone, "Juno" is a name
    assert evaluate_marks(with_person, sessions)["titles"]["tp"] == 2


def redial_corpus(folder):
    """An invented ReDial file: two dialogues, films marked `@id`."""

    def line(conversation, messages, mentions):
        return {
            "conversationId": conversation,
            "initiatorWorkerId": 1,
            "respondentWorkerId": 2,
            "messages": [
                {"messageId": i, "timeOffset": i, "senderWorkerId": who, "text": text}
                for i, (who, text) in enumerate(messages)
            ],
            "movieMentions": mentions,
            "initiatorQuestions": {},
            "respondentQuestions": {},
        }

    lines = [
        line(
            "1",
            [(1, "Something like @10?"), (2, "Try @11 or @12"), (1, "ok")],
            {"10": "Casino (1995)", "11": "Heat (1995)", "12": "Glimmerfall  (1987)"},
        ),
        line("2", [(1, "hello"), (2, "Have you seen @13 yet"), (1, "no")], {"13": "Pelican Dawn"}),
    ]
    path = folder / "test_data.jsonl"
    path.write_text("\n".join(json.dumps(item) for item in lines) + "\n")
    return path


def write_index(index, folder):
    from crseval.core.io import write_parquet

    folder.mkdir()
    films = pa.Table.from_pandas(index.films.reset_index(drop=True), preserve_index=False)
    write_parquet(films, folder / "films.parquet")
    write_parquet(pa.Table.from_pandas(index.concepts, preserve_index=False), folder / "concepts.parquet")
    return folder


def test_eval_titles_on_a_corpus_with_marks(tmp_path, small_index, capsys):
    from crseval.cli import main

    index = write_index(small_index, tmp_path / "catalog")
    corpus = redial_corpus(tmp_path)
    assert main(["eval-titles", "--corpus", "redial", str(corpus), "--catalog-index", str(index), "--errors"]) == 0
    result = json.loads(capsys.readouterr().out)
    # replies: "Try Heat (1995) or Glimmerfall (1987)" (2 marks, both read), "Have you seen Pelican Dawn yet"
    # (1 mark, missed: the name does not end the clause)
    assert result["corpus"] == "redial" and result["sessions"] == 2 and result["replies"] == 2
    assert result["titles"]["tp"] == 2 and result["titles"]["gold"] == 3 and result["titles"]["precision"] == 1.0
    assert result["errors"] == [
        {"session_id": "redial-people/2", "turn": 1, "missed": ["Pelican Dawn"], "spurious": []}
    ]


def test_eval_titles_refuses_what_it_cannot_measure(tmp_path, small_index, capsys):
    from crseval.cli import main

    index = write_index(small_index, tmp_path / "catalog")
    corpus = redial_corpus(tmp_path)
    # a corpus format whose replies mark no films
    logs = tmp_path / "m_1.json"
    logs.write_text(
        json.dumps(
            {
                "model_name": "m",
                "conversation": [{"speaker": "USER", "text": "Hi"}, {"speaker": "SYSTEM", "text": "Try Heat."}],
            }
        )
    )
    assert main(["eval-titles", "--corpus", "thesis_logs", str(logs), "--catalog-index", str(index)]) == 2
    assert "marks its films" in capsys.readouterr().err
    # a file that is not of the format
    assert main(["eval-titles", "--corpus", "iard", str(corpus), "--catalog-index", str(index)]) == 2
    assert "crseval eval-titles:" in capsys.readouterr().err
    # no catalog index
    assert main(["eval-titles", "--corpus", "redial", str(corpus), "--catalog-index", str(tmp_path / "none")]) == 2
    assert "cannot read the catalog" in capsys.readouterr().err
    # label mode needs one label file and its logs
    assert main(["eval-titles", str(corpus), "--catalog-index", str(index)]) == 2
    assert "--logs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["eval-titles", "--corpus", "nonsense", str(corpus), "--catalog-index", str(index)])
