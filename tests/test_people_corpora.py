"""Corpora of two people (crseval.corpora.redial, iard, ab_redial, inspired): each format read from a
small corpus written here (invented words only), with exact counts, verdicts computed by hand, film
marks resolved per turn, one malformed dialogue (or row) per format skipped under its named rule while
the others are imported, and files that are not the format refused naming the file."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
from conftest import REPO

from crseval.core.session_records import load_schema
from crseval.corpora import ab_redial, iard, inspired, redial
from crseval.corpora.dialogue import CorpusError, pair_turns
from crseval.corpora.formats import CORPUS_FORMATS, import_counts, import_logs
from crseval.corpora.manifest import build_manifest
from crseval.language.concepts import ConceptMatcher
from crseval.metrics.scorer import with_labels
from crseval.planning import config_schema
from crseval.statistics import column_registry

SHA = "0" * 64
SESSION_SCHEMA = jsonschema.Draft202012Validator(
    load_schema(REPO / "src" / "crseval" / "core" / "schemas" / "session.schema.yaml")
)
GLIM, OTTER, PELICAN = "Glimmerfall (1987)", "The Otterbury Heist (2003)", "Pelican Dawn (1999)"


def valid(sessions: dict) -> None:
    for records in sessions.values():
        for record in records:
            SESSION_SCHEMA.validate(record)


def turns_of(record: dict) -> list[tuple]:
    return [
        (t["user_text"], t["system_text"], t.get("user_marked_titles"), t.get("marked_titles")) for t in record["turns"]
    ]


# ---------------------------------------------------------------- the shared rules and the tables


def test_joined_messages_join_their_marks_each_once_and_count_it():
    report = Counter()
    pairs = pair_turns(
        [
            {"speaker": "USER", "text": "a", "marks": ["X"]},
            {"speaker": "SYSTEM", "text": "b", "marks": ["Y", "Z"]},
            {"speaker": "SYSTEM", "text": "c", "marks": ["Z", "W"]},
            {"speaker": "SYSTEM", "text": "d", "marks": []},
        ],
        report,
    )
    assert pairs[0]["system"]["marks"] == ["Y", "Z", "W"] and pairs[0]["system"]["text"] == "b c d"
    assert report == {"consecutive SYSTEM messages joined": 2, "film marks of consecutive SYSTEM messages joined": 1}


def test_a_message_sent_twice_in_a_row_is_kept_once_and_counted():
    report = Counter()
    pairs = pair_turns(
        [
            {"speaker": "USER", "text": "any genre is fine"},
            {"speaker": "USER", "text": "Any  genre is fine "},
            {"speaker": "USER", "text": "any genre is fine"},
            {"speaker": "SYSTEM", "text": "try this"},
            {"speaker": "USER", "text": "try this"},  # the other speaker's words are no repeat
            {"speaker": "SYSTEM", "text": "or that"},
            {"speaker": "USER", "text": "ok"},
            {"speaker": "USER", "text": "ok, thanks"},  # not word for word: joined
            {"speaker": "SYSTEM", "text": "welcome"},
        ],
        report,
    )
    assert [p["user"]["text"] for p in pairs] == ["any genre is fine", "try this", "ok ok, thanks"]
    assert report == {"USER message sent twice in a row: the repeat dropped": 2, "consecutive USER messages joined": 1}


def test_every_people_format_is_registered_with_its_verdicts():
    assert list(CORPUS_FORMATS)[-4:] == ["redial", "iard", "ab_redial", "inspired"]
    verdicts = {name: [(v.name, v.scale) for v in kind.verdicts] for name, kind in CORPUS_FORMATS.items()}
    assert verdicts["crsarena"] == [("satisfied", "binary")] and verdicts["redial"] == []
    assert verdicts["iard"] == verdicts["inspired"] == [("accepted", "binary")]
    assert verdicts["ab_redial"] == [
        ("overall", "ordinal"),
        ("understanding", "ordinal"),
        ("task_completion", "ordinal"),
        ("interest_arousal", "ordinal"),
        ("efficiency", "ordinal"),
    ]
    for name in ("redial", "iard", "ab_redial", "inspired"):
        assert "the recommender is a person, not a system" in CORPUS_FORMATS[name].summary
    schema = config_schema()
    simulator = schema["properties"]["simulator"]["properties"]
    assert schema["$defs"]["corpus_format"]["enum"] == list(CORPUS_FORMATS)
    assert simulator["voice"]["properties"]["format"]["$ref"] == "#/$defs/corpus_format"
    assert simulator["realism"]["properties"]["format"]["$ref"] == "#/$defs/corpus_format"


def test_verdicts_become_label_columns_after_satisfied():
    records = [
        {"labels": {"satisfaction": None, "verdicts": {"overall": 4.5, "efficiency": None}}},
        {"labels": {"satisfaction": "satisfied", "verdicts": {"satisfied": 1.0}}},
        {},
    ]
    sessions = pd.DataFrame({"system": ["s"] * 3, "session_id": ["a", "b", "c"], "seed": [None] * 3, "m": [1.0] * 3})
    table = with_labels(sessions, records)
    assert list(table.columns) == [
        "system",
        "session_id",
        "seed",
        "satisfied",
        "verdict_overall",
        "verdict_efficiency",
        "verdict_satisfied",
        "m",
    ]
    assert table["verdict_overall"].tolist()[0] == 4.5 and math.isnan(table["verdict_overall"].tolist()[1])
    assert table["verdict_satisfied"].tolist()[1] == 1.0 and table["satisfied"].tolist()[1] == 1.0
    assert math.isnan(table["verdict_efficiency"].tolist()[0])
    column = column_registry.session_column("verdict_task_completion")
    assert not column.metric and column_registry.undeclared(table.columns) == ["m"]
    assert column_registry.metric_names(["satisfied", "verdict_overall"]) == []


# ---------------------------------------------------------------- ReDial


def redial_line(conversation, seeker, recommender, messages, mentions, answers):
    return {
        "conversationId": conversation,
        "initiatorWorkerId": seeker,
        "respondentWorkerId": recommender,
        "messages": [
            {"messageId": i, "timeOffset": i, "senderWorkerId": who, "text": text}
            for i, (who, text) in enumerate(messages)
        ],
        "movieMentions": mentions,
        "initiatorQuestions": answers,
        "respondentQuestions": {},
    }


def redial_corpus(folder: Path) -> tuple[Path, Path]:
    good = redial_line(
        "7001",
        11,
        12,
        [
            (11, "Hi, anything like @501?"),
            (11, "I adored it."),
            (12, "Try @502 or @503."),
            (12, "Also @502, truly."),
            (11, "Lovely."),
        ],
        {"501": "Glimmerfall  (1987)", "502": "The Otterbury Heist (2003)"},
        {"501": {"suggested": 0, "seen": 1, "liked": 1}, "502": {"suggested": 1, "seen": 0, "liked": 2}},
    )
    no_answers = redial_line("7002", 21, 22, [(21, "Something odd?"), (22, "Maybe @999.")], {}, [])
    stranger = redial_line("7003", 31, 32, [(31, "Hello"), (33, "Intruder here")], {}, {})
    corpus = folder / "test_data.jsonl"
    corpus.write_text("\n".join([json.dumps(good), json.dumps(no_answers), "{not json", json.dumps(stranger)]) + "\n")
    films = folder / "movies_with_mentions.csv"
    films.write_text("movieId,movieName,nbMentions\n503,Pelican Dawn  (1999),4\nx9,Nameless,1\n")
    return corpus, films


def test_redial_resolves_its_ids_labels_its_films_and_skips_a_malformed_dialogue(tmp_path):
    corpus, films = redial_corpus(tmp_path)
    sessions, report = import_logs([corpus, films], None, SHA, SHA, "redial")
    assert report["dialogues"] == 2 and report["sessions"] == {"redial-people": 2} and report["turns"] == 2
    assert report["rules_applied"] == {
        "malformed dialogue skipped: a line that is not JSON": 1,
        "malformed dialogue skipped: a message of a worker who is neither the seeker nor the recommender": 1,
        "film list row skipped: movieId not a number or movieName empty": 1,
        redial.FROM_FILM_LIST: 1,
        redial.UNRESOLVED: 1,
        redial.NO_ANSWERS: 1,
        "consecutive USER messages joined": 1,
        "consecutive SYSTEM messages joined": 1,
        "film marks of consecutive SYSTEM messages joined": 1,
        "final USER message without reply dropped": 1,
    }
    assert report["skipped"]["malformed dialogue skipped: a line that is not JSON"] == [f"{corpus}, line 3"]
    assert "verdicts" not in report
    first, second = sessions["redial-people"]
    assert turns_of(first) == [
        (
            f"Hi, anything like {GLIM}? I adored it.",
            f"Try {OTTER} or {PELICAN}. Also {OTTER}, truly.",
            [GLIM],
            [OTTER, PELICAN],
        )
    ]
    assert turns_of(second) == [("Something odd?", "Maybe @999.", [], [])]
    assert first["session_id"] == "redial-people/7001"
    assert first["labels"] == {
        "verdicts": {},
        "films": {GLIM: {"suggested": 0, "seen": 1, "liked": 1}, OTTER: {"suggested": 1, "seen": 0, "liked": 2}},
    }
    assert first["provenance"] | {"repairs": {}} == {
        "source_file": "test_data.jsonl",
        "format": "redial",
        "conversation_id": "7001",
        "user_id": "11",
        "recommender_id": "12",
        "line": 1,
        "repairs": {},
    }
    valid(sessions)
    # without the film list the id its dialogue lacks stays as written
    alone, report = import_logs([corpus], None, SHA, SHA, "redial")
    assert alone["redial-people"][0]["turns"][0]["system_text"] == f"Try {OTTER} or @503. Also {OTTER}, truly."
    assert report["rules_applied"][redial.UNRESOLVED] == 2 and import_counts([corpus], "redial") == (
        {"redial-people": 2},
        False,
    )


@pytest.mark.parametrize(
    "content, pattern",
    [
        ("hello\n", r"line 1: cannot be read as JSON.*not ReDial JSON lines"),
        ("[1, 2]\n", r"line 1: not ReDial JSON lines: expected a dialogue object, found a list"),
        ("\n\n", r"holds no dialogue"),
    ],
)
def test_a_file_that_is_not_redial_is_refused_naming_it(tmp_path, content, pattern):
    bad = tmp_path / "dialogues.jsonl"
    bad.write_text(content)
    with pytest.raises(CorpusError, match=pattern) as raised:
        import_logs([bad], None, SHA, SHA, "redial")
    assert str(bad) in str(raised.value)
    films = tmp_path / "movies_with_mentions.csv"
    films.write_text("movieId,movieName,nbMentions\n1,A (2000),1\n")
    with pytest.raises(CorpusError, match="no ReDial dialogue file"):
        import_logs([films], None, SHA, SHA, "redial")
    films.write_text("movieId,title\n1,A (2000)\n")
    with pytest.raises(CorpusError, match=r"not a ReDial film list .*lacks the columns \['movieName'\]"):
        import_logs([films, bad], None, SHA, SHA, "redial")


# ---------------------------------------------------------------- IARD


def utterance(pos, role, worker, text, top=("OTH",), sub=("OTH",)):
    key = ("S" if role == "seeker" else "R") + str(pos)
    return key, {
        "utterance_pos": pos,
        "worker_id": worker,
        "role": role,
        "utterance_text": text,
        "top-level intent/action": list(top),
        "sub-intent/action": list(sub),
    }


def iard_corpus(path: Path) -> Path:
    accepted = dict(
        [
            utterance(1, "recommender", 8, "Greetings."),
            utterance(2, "seeker", 9, "hey...any cosy film?", ("AskForRec",), ("IQU",)),
            utterance(
                3, "recommender", 8, "Perhaps @502 <The Otterbury  Heist (2003)>  <The Otterbury  Heist (2003)> ?"
            ),
            utterance(4, "seeker", 9, "Yes! @502 <The Otterbury Heist (2003)> it is, and @77 too", ("GiveFeedback",)),
        ]
    )
    refused = dict(
        [utterance(2, "seeker", 5, "any film?"), utterance(1, "seeker", 5, "hi"), utterance(3, "recommender", 6, "no")]
    )
    stranger = dict(
        [utterance(1, "seeker", 5, "hi"), ("N2", {**utterance(2, "seeker", 5, "x")[1], "role": "narrator"})]
    )
    data = {
        "41": {"accepted_recommendation": [4], "dialogue_info": accepted},
        "42": {"accepted_recommendation": [], "dialogue_info": refused},
        "43": {"accepted_recommendation": [], "dialogue_info": stranger},
        "44": {"accepted_recommendation": "yes", "dialogue_info": refused},
    }
    path.write_text(json.dumps(data))
    return path


def test_iard_reads_accepted_recommendations_as_its_verdict(tmp_path):
    path = iard_corpus(tmp_path / "iard.json")
    sessions, report = import_logs([path], None, SHA, SHA, "iard")
    assert report["dialogues"] == 2 and report["sessions"] == {"iard-people": 2} and report["turns"] == 2
    assert report["verdicts"] == {"accepted": {"1": 1, "0": 1, "none": 0}}
    assert report["rules_applied"] == {
        "malformed dialogue skipped: an utterance whose role is neither seeker nor recommender": 1,
        "malformed dialogue skipped: accepted_recommendation missing or not a list of utterance positions": 1,
        iard.TWICE: 1,
        iard.UNRESOLVED: 1,
        "opening SYSTEM message dropped": 1,
        "consecutive USER messages joined": 1,
        "final USER message without reply dropped": 1,
    }
    yes, no = sessions["iard-people"]
    assert turns_of(yes) == [
        ("hey...any cosy film?", f"Perhaps {OTTER} ?", [], [OTTER]),
    ]
    assert yes["labels"] == {"verdicts": {"accepted": 1.0}, "accepted_utterances": [4]}
    assert no["labels"] == {"verdicts": {"accepted": 0.0}, "accepted_utterances": []}
    assert turns_of(no) == [("hi any film?", "no", [], [])]  # in utterance_pos order
    assert yes["provenance"]["user_id"] == "9" and yes["provenance"]["recommender_id"] == "8"
    assert yes["provenance"]["metadata"]["intents"][1] == ["S2", ["AskForRec"], ["IQU"]]
    assert import_counts([path], "iard")[1] is True and build_manifest([str(path)], "iard")["labelled"] is True
    valid(sessions)


@pytest.mark.parametrize(
    "content, pattern",
    [
        ("[]", r"expected a JSON object of IARD dialogues"),
        ("{}", r"holds no dialogue: the JSON object is empty"),
        ('{"model_name": "x", "conversation": []}', r"not an object of IARD dialogues .*no entry has a dialogue_info"),
        ("{oops", r"cannot be read as JSON"),
    ],
)
def test_a_file_that_is_not_iard_is_refused_naming_it(tmp_path, content, pattern):
    bad = tmp_path / "iard.json"
    bad.write_text(content)
    with pytest.raises(CorpusError, match=pattern) as raised:
        import_logs([bad], None, SHA, SHA, "iard")
    assert str(bad) in str(raised.value)


# ---------------------------------------------------------------- AB-ReDial

AB_SCORES = ["understanding", "task-completion", "interest-arousal", "efficiency", "dialogue-overall"]


def csv_cell(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    path.write_text("\n".join(",".join(csv_cell(c) for c in row) for row in [header, *rows]) + "\n")
    return path


QA = [
    "SYSTEM\tHello there.",
    "USER\tI fancy a caper.",
    'SYSTEM\tHave you seen "The Otterbury  Heist (2003)" ?',
    "USER  Not yet.",  # spaces instead of a tab
    "SYSTEM\tThen \u201cPelican Dawn (1999)\u201d too.",
    "SYSTEM\tBoth are brisk.",
]
QB = ["USER\tHi", "SYSTEM\tHello"]
QC = ["USER\tAny mystery?", 'SYSTEM\tTry "Glimmerfall (1987)".']


def ab_dialogues(path: Path) -> Path:
    header = ["ConvId", *[f"utterance{i}" for i in range(6)], *AB_SCORES, "justification-text"]

    def row(conv, utterances, scores):
        return [conv, *utterances, *[""] * (6 - len(utterances)), *scores, "fine, I suppose"]

    return write_csv(
        path,
        header,
        [
            row("QA", QA, ["3.0", "2.0", "1.0", "0.0", "5.0"]),
            row("QA", QA, ["2.0", "2.0", "0.0", "1.0", "4.0"]),
            row("QB", QB, ["3.0", "3.0", "3.0", "1.0", "5.0"]),
            row("QC", QC, ["1.0", "1.0", "1.0", "1.0", "lots"]),  # not a number: this annotator's row skipped
            row("QA", QA, ["3.0", "3.0", "2.0", "1.0", ""]),  # overall left empty
            row("QB", ["USER\tHi", "SYSTEM\tGoodbye"], ["3.0", "3.0", "3.0", "1.0", "5.0"]),  # another dialogue
            row("QC", QC, ["2.0", "1.0", "1.0", "0.0", "2.0"]),
        ],
    )


def ab_turns(path: Path) -> Path:
    header = ["ConvId"]
    for k in (1, 2):
        header += [f"utterance{4 * k - 4 + i}" for i in range(4)] + [f"{a}{k}" for a in ab_redial.TURN_ASPECTS]

    def turn(context, reply, after, scores):
        return [context[0], context[1], reply, after, *scores]

    qa1 = turn(QA[0:2], QA[2], QA[3], ["4", "3", "5"])
    qa2 = turn(QA[2:4], QA[4], "USER\tOk", ["2", "2", "3"])  # the first part of a joined reply
    return write_csv(
        path,
        header,
        [
            ["QA", *qa1, *qa2],
            ["QA", *turn(QA[0:2], QA[2], QA[3], ["0", "1", ""]), *turn(QA[2:4], QA[4], "USER\tOk", ["3", "3", "4"])],
            ["QB", *qa1, *qa2],  # a dialogue that is not imported
            ["QC", *turn(QC[0:1] + ["USER\tx"], "SYSTEM\tNothing like it", "USER\ty", ["1", "1", "1"]), *qa2],
        ],
    )


def test_ab_redial_means_its_annotators_scores_and_aligns_the_sampled_turns(tmp_path):
    dialogues, turns = ab_dialogues(tmp_path / "annotated_dialogues.csv"), ab_turns(tmp_path / "annotated_turns.csv")
    sessions, report = import_logs([dialogues, turns], None, SHA, SHA, "ab_redial")
    assert report["dialogues"] == 2 and report["sessions"] == {"ab-redial-people": 2} and report["turns"] == 3
    assert report["rules_applied"] == {
        ab_redial.DISAGREE: 1,
        "malformed annotator row skipped: dialogue-overall not a number": 1,
        ab_redial.NOT_IMPORTED: 1,
        ab_redial.SPACES: 1,
        "annotator left dialogue-overall empty: not in its mean": 1,
        "score 0 (the README says 1-5) kept as a value: interest-arousal": 1,
        "score 0 (the README says 1-5) kept as a value: efficiency": 2,
        "turn score 0 (the README says 1-5) kept as a value: relevance": 1,
        "sampled turn left overall empty: not in its mean": 1,
        ab_redial.ALIGNED_WITHIN: 1,
        ab_redial.NO_MATCH: 2,  # QC's two sampled replies are none of its own
        "opening SYSTEM message dropped": 1,
        "consecutive SYSTEM messages joined": 1,
    }
    assert report["verdicts"]["overall"] == {"rated": 2, "none": 0, "mean": 3.25, "min": 2.0, "max": 4.5}
    qa, qc = sessions["ab-redial-people"]
    assert qa["labels"] == {
        "verdicts": {
            "overall": 4.5,
            "understanding": round(8 / 3, 6),
            "task_completion": round(7 / 3, 6),
            "interest_arousal": 1.0,
            "efficiency": round(2 / 3, 6),
        },
        "annotators": 3,
        "turn_verdicts": [
            {"turn": 1, "relevance": 2.0, "interestingness": 2.0, "overall": 5.0},
            {"turn": 2, "relevance": 2.5, "interestingness": 2.5, "overall": 3.5},
        ],
    }
    assert qc["labels"]["annotators"] == 1 and qc["labels"]["turn_verdicts"] == []
    assert qc["labels"]["verdicts"]["overall"] == 2.0
    assert turns_of(qa) == [
        ("I fancy a caper.", 'Have you seen "The Otterbury  Heist (2003)" ?', [], [OTTER]),
        ("Not yet.", "Then \u201cPelican Dawn (1999)\u201d too. Both are brisk.", [], [PELICAN]),
    ]
    assert turns_of(qc) == [("Any mystery?", 'Try "Glimmerfall (1987)".', [], [GLIM])]
    assert report["skipped"][ab_redial.DISAGREE] == [f"{dialogues}: ConvId 'QB' (lines 4, 7)"]
    valid(sessions)
    # the dialogues alone: the same verdicts, no turn verdicts
    alone, _ = import_logs([dialogues], None, SHA, SHA, "ab_redial")
    assert "turn_verdicts" not in alone["ab-redial-people"][0]["labels"]
    assert import_counts([dialogues], "ab_redial")[1] is True


def test_a_file_that_is_not_ab_redial_is_refused_naming_it(tmp_path):
    turns = ab_turns(tmp_path / "annotated_turns.csv")
    with pytest.raises(CorpusError, match="no AB-ReDial annotated dialogues file"):
        import_logs([turns], None, SHA, SHA, "ab_redial")
    bad = write_csv(tmp_path / "other.csv", ["ConvId", "utterance0", "score"], [["Q", "USER\thi", "3"]])
    with pytest.raises(CorpusError, match=r"other.csv: not AB-ReDial annotated dialogues: the header lacks"):
        import_logs([bad], None, SHA, SHA, "ab_redial")
    header_only = write_csv(tmp_path / "empty.csv", ["ConvId", "utterance0", *AB_SCORES], [])
    with pytest.raises(CorpusError, match="empty.csv: holds no dialogue"):
        import_logs([header_only], None, SHA, SHA, "ab_redial")


# ---------------------------------------------------------------- INSPIRED

TSV_COLUMNS = [
    "dialog_id",
    "utt_id",
    "speaker",
    "turn_id",
    "text",
    "text_with_placeholder",
    "movies",
    "movie_dict",
    "fine_label",
]


def tsv_row(dialog, utt, speaker, text, placeholders, movie_dict, label):
    return [dialog, str(utt), speaker, "1", text, placeholders, "", movie_dict, label]


def inspired_corpus(path: Path) -> Path:
    films = repr({"Glimmerfall  (1987)": 0, "Pelican Dawn (1999)": 1})
    rows = [
        tsv_row(
            "d1", 2, "SEEKER", "A QUOTATION_MARKcosyQUOTATION_MARK one?", 'A "cosy" one?', films, "accept_rating_good"
        ),
        tsv_row("d1", 1, "RECOMMENDER", "Hello!", "Hello!", films, "accept_rating_good"),
        tsv_row("d1", 3, "RECOMMENDER", "Glimmerfall", "[MOVIE_TITLE_0]", films, "accept_rating_good"),
        tsv_row(
            "d1", 4, "RECOMMENDER", "or Pelican Dawn", "or [MOVIE_TITLE_1] [MOVIE_TITLE_7]", films, "accept_rating_good"
        ),
        tsv_row("d2", 1, "SEEKER", "Anything grim?", "Anything [MOVIE_GENRE_0]?", "{}", "reject"),
        tsv_row("d2", 2, "RECOMMENDER", "No idea", "No idea", "{}", "nan"),
        tsv_row("d3", 1, "SEEKER", "Hi", "Hi", "{'Broken (2001): 0}", "accept_others"),
        tsv_row("d3", 2, "RECOMMENDER", "Broken", "[MOVIE_TITLE_0]", "{'Broken (2001): 0}", "accept_others"),
        tsv_row("d4", 1, "SEEKER", "Hi", "Hi", "{}", "reject"),
        tsv_row("d4", 2, "ROBOT", "Beep", "Beep", "{}", "reject"),
        tsv_row("d5", 1, "SEEKER", "Hi", "Hi", "{}", "maybe"),
        tsv_row("d5", 2, "RECOMMENDER", "Hey", "Hey", "{}", "maybe"),
    ]
    path.write_text("\n".join("\t".join(row) for row in [TSV_COLUMNS, *rows]) + "\n")
    return path


def test_inspired_marks_its_placeholders_and_reads_the_outcome_as_accepted(tmp_path):
    path = inspired_corpus(tmp_path / "dev.tsv")
    sessions, report = import_logs([path], None, SHA, SHA, "inspired")
    assert report["dialogues"] == 3 and report["sessions"] == {"inspired-people": 3} and report["turns"] == 3
    assert report["verdicts"] == {"accepted": {"1": 1, "0": 2, "none": 0}}
    assert report["rules_applied"] == {
        "malformed dialogue skipped: a speaker neither SEEKER nor RECOMMENDER": 1,
        "malformed dialogue skipped: a fine_label that is not one of the five outcomes": 1,
        inspired.REORDERED: 1,
        inspired.QUOTES: 1,
        inspired.UNMARKED: 1,
        inspired.LABEL_TAKEN: 1,
        inspired.NO_DICT: 1,
        "opening SYSTEM message dropped": 1,
        "consecutive SYSTEM messages joined": 1,
        "film marks of consecutive SYSTEM messages joined": 1,
    }
    d1, d2, d3 = sessions["inspired-people"]
    assert turns_of(d1) == [('A "cosy" one?', "Glimmerfall or Pelican Dawn", [], [GLIM, PELICAN])]
    assert d1["labels"] == {"verdicts": {"accepted": 1.0}, "outcome": "accept_rating_good"}
    assert d2["labels"] == {"verdicts": {"accepted": 0.0}, "outcome": "reject"}
    assert d3["labels"] == {"verdicts": {"accepted": 0.0}, "outcome": "accept_others"}
    assert "marked_titles" not in d3["turns"][0]  # its films cannot be known: no marks rather than none
    assert d1["provenance"]["dialog_id"] == "d1" and d1["session_id"] == "inspired-people/d1"
    valid(sessions)


def test_a_file_that_is_not_inspired_is_refused_naming_it(tmp_path):
    bad = tmp_path / "dev.tsv"
    bad.write_text("dialog_id\tutt_id\ttext\nd1\t1\thi\n")
    with pytest.raises(CorpusError, match=r"dev.tsv: not INSPIRED dialogues .*lacks the columns"):
        import_logs([bad], None, SHA, SHA, "inspired")
    bad.write_text("\t".join(TSV_COLUMNS) + "\n")
    with pytest.raises(CorpusError, match="dev.tsv: holds no dialogue"):
        import_logs([bad], None, SHA, SHA, "inspired")


def test_python_literals_are_read_bounded_never_evaluated(tmp_path):
    from crseval.corpora.people import MAX_LITERAL_CHARS, python_literal

    assert python_literal("{'A (2000)': 0}", dict) == {"A (2000)": 0}
    assert python_literal("__import__('os').getcwd()", dict) is None
    assert python_literal("[1]", dict) is None
    assert python_literal("{" + "'a': 1, " * MAX_LITERAL_CHARS + "}", dict) is None


def test_marks_survive_film_recognition(tmp_path, small_index):
    matcher = ConceptMatcher(small_index.concepts, small_index.films)
    sessions, _ = import_logs([inspired_corpus(tmp_path / "dev.tsv")], matcher, SHA, SHA, "inspired")
    turn = sessions["inspired-people"][0]["turns"][0]
    assert turn["marked_titles"] == [GLIM, PELICAN] and turn["user_marked_titles"] == []
    valid(sessions)
