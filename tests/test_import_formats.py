"""Corpus formats behind one interface (crseval.corpora.formats): CRSArena-Dial and JSON lines beside the
legacy logs. Every defect rule is counted with its exact count on hand-made corpora, malformed files fail
naming the file, where and what, hostile names write nothing outside the output folder, votes become the
votes table, and the human labels reach the sessions table."""

from __future__ import annotations

import json
import math
import re
import runpy
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pandas as pd
import pytest
from conftest import REPO, copy_workflow, default_config, run_snakemake, write_config

from crseval.core.config_checks import ConfigError
from crseval.core.session_records import load_schema
from crseval.corpora import crsarena, jsonl, thesis_logs
from crseval.corpora.format_kind import CorpusFormat
from crseval.corpora.formats import CORPUS_FORMATS, CorpusError, import_logs, import_votes, sessions_per_system
from crseval.corpora.manifest import build_manifest, shard_slices, write_if_changed
from crseval.corpora.votes import VOTES_SCHEMA, write_votes
from crseval.metrics.scorer import with_labels
from crseval.planning import check_config, check_inputs, config_schema

SCHEMA = REPO / "src" / "crseval" / "core" / "schemas" / "session.schema.yaml"
SCRIPT = REPO / "workflow" / "scripts" / "import_logs.py"


def run_script(rule: str, **parts) -> None:
    """Run a rule's script as Snakemake would, with `parts` (input, output, params, log) as its `snakemake`."""
    snakemake = SimpleNamespace(**{k: v if k == "log" else SimpleNamespace(**v) for k, v in parts.items()})
    runpy.run_path(str(SCRIPT.parent / f"{rule}.py"), init_globals={"snakemake": snakemake})


EXAMPLES = REPO / "tests" / "data" / "corpora"
SHA = "0" * 64


def arena(agent, user, *messages, sentiment="frustrated", conversation_id=None):
    """One CRSArena-Dial dialogue; messages are (USER|AGENT, utterance); sentiment None leaves it out."""
    item = {
        "conversation ID": conversation_id or f"{agent}_{user}",
        "agent": {"id": agent, "type": "AGENT"},
        "user": {"id": user, "type": "USER"},
        "conversation": [
            {"participant": who, "utterance": text, "utterance ID": f"{agent}-{user}_{i}"}
            for i, (who, text) in enumerate(messages)
        ],
        "metadata": {"sentiment": sentiment} if sentiment else {},
    }
    return item


def write_arena(path: Path, *dialogues) -> Path:
    path.write_text(json.dumps(list(dialogues), indent=1))
    return path


def line(system, dialogue_id, *turns, labels=None, **extra):
    """One JSONL dialogue; turns are (user|system, text)."""
    item = {"system": system, "dialogue_id": dialogue_id, "turns": [{"role": r, "text": t} for r, t in turns]}
    if labels is not None:
        item["labels"] = labels
    return {**item, **extra}


def write_lines(path: Path, *items) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


def texts(records):
    return [[(t["user_text"], t["system_text"]) for t in r["turns"]] for r in records]


# ---------------------------------------------------------------- one interface, shared dialogue rules

# The messy dialogue of the legacy importer's test, in each format's words.
MESSY = [
    ("system", "Welcome!"),
    ("user", "A crime film."),
    ("user", "With De Niro."),
    ("system", "Try Heat."),
    ("user", " "),
    ("system", "Or Casino."),
    ("user", "Thanks"),
]
SHARED_RULES = {
    "opening SYSTEM message dropped": 1,
    "consecutive USER messages joined": 1,
    "empty USER message dropped": 1,
    "consecutive SYSTEM messages joined": 1,
    "final USER message without reply dropped": 1,
}


def messy_corpus(import_format: str, folder: Path) -> Path:
    if import_format == "thesis_logs":
        conversation = [{"speaker": role.upper(), "text": text} for role, text in MESSY]
        path = folder / "crs_session_crs_0.json"
        path.write_text(json.dumps({"model_name": "crs", "true_genre": "crime", "conversation": conversation}))
        return path
    if import_format == "crsarena":
        messages = [("AGENT" if role == "system" else "USER", text) for role, text in MESSY]
        return write_arena(folder / "arena.json", arena("crs", "u1", *messages))
    return write_lines(folder / "corpus.jsonl", line("crs", "d1", *MESSY))


def test_every_format_is_registered_under_its_config_name():
    assert set(CORPUS_FORMATS) == {"thesis_logs", "crsarena", "jsonl", "redial", "iard", "ab_redial", "inspired"}
    assert all(kind.name == name for name, kind in CORPUS_FORMATS.items())
    known = "thesis_logs, crsarena, jsonl, redial, iard, ab_redial, inspired"
    with pytest.raises(ValueError, match=rf"unknown corpus format 'csv'; known: {known}"):
        import_logs([], None, SHA, SHA, "csv")


@pytest.mark.parametrize("name", sorted(CORPUS_FORMATS))
def test_every_format_declares_itself_completely(name):
    kind = CORPUS_FORMATS[name]
    assert isinstance(kind, CorpusFormat) and kind.name == name and kind.summary
    assert callable(kind.read_file) and callable(kind.repeats) and len(kind.system_names) == 2
    assert kind.has_votes is callable(kind.import_votes)
    assert len({kind.renamed, kind.duplicate, kind.no_pair, kind.numbered}) == 4  # every rule counted apart
    if kind.file_by_file is not None:  # read file by file (crseval.corpora.manifest)
        per_file = kind.file_by_file
        assert all(map(callable, (per_file.file_entry, per_file.assign, per_file.import_file)))


def test_the_schema_offers_exactly_the_registered_formats_and_describes_each():
    # a new format is its module and one line in CORPUS_FORMATS: the schema's enum and description follow, docs and
    # tests are written for it
    schema = config_schema()
    entry = schema["properties"]["sessions"]["properties"]["import_format"]
    assert entry["$ref"] == "#/$defs/corpus_format" and entry["default"] in CORPUS_FORMATS
    assert schema["$defs"]["corpus_format"]["enum"] == list(CORPUS_FORMATS)
    described = re.findall(r"`(\w+)` \(([^)]*)\)", entry["description"])
    assert described == [(name, kind.summary) for name, kind in CORPUS_FORMATS.items()]


# the formats whose systems the corpus names (those of two people, one system each: tests/test_people_corpora.py)
@pytest.mark.parametrize("import_format", ["crsarena", "jsonl", "thesis_logs"])
def test_every_format_pairs_turns_by_the_same_counted_rules(tmp_path, matcher, import_format):
    path = messy_corpus(import_format, tmp_path)
    sessions, report = import_logs([path], matcher, SHA, SHA, import_format)
    assert texts(sessions["crs"]) == [[("A crime film. With De Niro.", "Try Heat. Or Casino.")]]
    assert report["rules_applied"] == SHARED_RULES and report["format"] == import_format
    (turn,) = sessions["crs"][0]["turns"]
    assert turn["recommended_titles"] == ["Heat", "Casino"] and turn["unknown_titles"] == []
    assert turn["user_meta"] is None
    assert sessions_per_system([path], import_format) == {"crs": 1}
    jsonschema.Draft202012Validator(load_schema(SCHEMA)).validate(sessions["crs"][0])


def test_legacy_logs_keep_their_rules_through_the_shared_pairing():
    from collections import Counter

    report = Counter()
    pairs = thesis_logs.pair_turns([{"speaker": "narrator", "text": "x"}, {"speaker": " user ", "text": "Hi"}], report)
    assert pairs == [] and report == {
        "message of unknown speaker 'narrator' dropped": 1,
        "final USER message without reply dropped": 1,
    }


# ---------------------------------------------------------------- CRSArena-Dial


def test_crsarena_dialogues_become_labelled_sessions(tmp_path, matcher):
    corpus = write_arena(
        tmp_path / "dial.json",
        arena(
            "kbrd_redial",
            "u1",
            ("USER", "A crime film?"),
            ("AGENT", "Have you seen Heat (1995)?"),
            sentiment="satisfied",
        ),
        arena("kbrd_redial", "u2", ("USER", "Scary please"), ("AGENT", "Scream"), ("USER", "More"), ("AGENT", "Up")),
        arena("chatgpt_opendialkg", "u1", ("USER", "Hi"), ("AGENT", "I recommend Casino.")),
    )
    sessions, report = import_logs([corpus], matcher, "a" * 64, "b" * 64, "crsarena")
    assert report["sessions"] == {"chatgpt_opendialkg": 1, "kbrd_redial": 2} and report["turns"] == 4
    assert report["dialogues"] == 3 and report["labels"] == {"satisfied": 1, "frustrated": 2, "unlabelled": 0}
    first, second = sessions["kbrd_redial"]
    assert (first["session_id"], first["session_index"], second["session_index"]) == (
        "kbrd_redial/kbrd_redial_u1",
        0,
        1,
    )
    assert first["labels"] == {"satisfaction": "satisfied", "verdicts": {"satisfied": 1.0}}
    assert second["labels"] == {"satisfaction": "frustrated", "verdicts": {"satisfied": 0.0}}
    assert report["verdicts"] == {"satisfied": {"1": 1, "0": 2, "none": 0}}
    assert first["provenance"] == {
        "source_file": "dial.json",
        "format": "crsarena",
        "conversation_id": "kbrd_redial_u1",
        "agent_id": "kbrd_redial",
        "user_id": "u1",
        "repairs": {},
    }
    assert first["turns"][0]["recommended_titles"] == ["Heat"] and first["seed"] is None
    assert texts([second]) == [[("Scary please", "Scream"), ("More", "Up")]]
    validator = jsonschema.Draft202012Validator(load_schema(SCHEMA))
    for records in sessions.values():
        for record in records:
            validator.validate(record)


def test_crsarena_defect_rules_are_counted_exactly(tmp_path):
    kept = arena("kbrd_redial", "u1", ("USER", "A crime film?"), ("AGENT", "Heat"))
    corpus = write_arena(
        tmp_path / "dial.json",
        kept,
        kept,  # the same dialogue twice: skipped
        arena("kbrd_redial", "u2", ("USER", "Hello")),  # no reply at all: final USER dropped, then skipped
        arena("kbrd_redial", "u3", ("USER", "Up?"), ("AGENT", "Sure"), conversation_id="kbrd_redial_u1"),  # id reused
        arena(
            "barcor_redial", "u1", ("AGENT", "Hi!"), ("USER", "Crime"), ("AGENT", ""), ("AGENT", "Heat"), sentiment=None
        ),
        arena("../../evil", "u4", ("USER", "Crime"), ("USER", "please"), ("AGENT", "Heat")),
    )
    sessions, report = import_logs([corpus], None, SHA, SHA, "crsarena")
    assert report["rules_applied"] == {
        crsarena.KIND.duplicate: 1,
        "final USER message without reply dropped": 1,
        crsarena.KIND.no_pair: 1,
        crsarena.NUMBERED: 1,
        "opening SYSTEM message dropped": 1,
        "empty SYSTEM message dropped": 1,
        crsarena.UNLABELLED: 1,
        "consecutive USER messages joined": 1,
        crsarena.KIND.renamed: 1,
    }
    assert report["sessions"] == {"barcor_redial": 1, "evil": 1, "kbrd_redial": 2} and report["dialogues"] == 6
    assert [r["session_id"] for r in sessions["kbrd_redial"]] == [
        "kbrd_redial/kbrd_redial_u1",
        "kbrd_redial/kbrd_redial_u1#2",
    ]
    assert sessions["barcor_redial"][0]["labels"] == {"satisfaction": None, "verdicts": {"satisfied": None}}
    assert report["labels"] == {"satisfied": 0, "frustrated": 3, "unlabelled": 1}
    assert report["renamed_systems"] == {"../../evil": "evil"}
    assert sessions["evil"][0]["provenance"]["agent_id"] == "../../evil"
    assert sessions_per_system([corpus], "crsarena") == report["sessions"]


def test_crsarena_agent_ids_sharing_a_folder_are_an_error(tmp_path):
    corpus = write_arena(
        tmp_path / "dial.json",
        arena("../../x", "u1", ("USER", "a"), ("AGENT", "b")),
        arena("x", "u2", ("USER", "a"), ("AGENT", "b")),
    )
    with pytest.raises(
        CorpusError,
        match=r"agent ids '\.\./\.\./x' \(.*dial\.json: dialogue 0 .*\) and 'x' \(.*dialogue 1 .*\) both become",
    ):
        import_logs([corpus], None, SHA, SHA, "crsarena")


# ---------------------------------------------------------------- JSON lines


def test_the_documented_example_corpus_imports_with_its_labels_and_votes():
    sessions, report = import_logs([EXAMPLES / "example.jsonl"], None, SHA, SHA, "jsonl")
    assert report["sessions"] == {"baseline": 1, "my-crs": 2}
    assert report["labels"] == {"satisfied": 1, "frustrated": 1, "unlabelled": 1}
    assert report["rules_applied"] == {
        "consecutive USER messages joined": 1,
        "empty SYSTEM message dropped": 1,
        "final USER message without reply dropped": 1,
        "opening SYSTEM message dropped": 1,
    }
    assert texts(sessions["my-crs"])[1] == [("A thriller from the nineties", "How about Heat?")]
    baseline = sessions["baseline"][0]
    assert baseline["provenance"]["metadata"] == {"collected": "2025-03"} and baseline["provenance"]["user_id"] == "u1"
    votes, votes_report = import_votes(EXAMPLES / "example_votes.jsonl", sessions, "jsonl")
    assert votes_report == {
        "file": "example_votes.jsonl",
        "rows": 2,
        "kept": 2,
        "dropped": 0,
        "rules_applied": {"vote kept with one side's dialogue missing": 1},
    }
    assert [(v["winner"], v["tie"], v["session_a"], v["found_a"], v["time"]) for v in votes] == [
        ("my-crs", False, "my-crs/d1", True, pd.Timestamp("2025-03-02 10:15").to_pydatetime()),
        (None, True, None, False, None),
    ]


def test_jsonl_defect_rules_are_counted_exactly(tmp_path):
    good = line("crs a/b", "d1", ("user", "Crime?"), ("system", "Heat"), labels={"satisfaction": "frustrated"})
    corpus = write_lines(
        tmp_path / "c.jsonl",
        good,
        good,  # a repeated line: skipped
        line("crs a/b", "d2", ("system", "Hello"), ("user", "")),  # nothing left: skipped
        line("crs a/b", "d3", ("user", "Up?"), ("system", "Yes"), ("system", "Really")),
    )
    sessions, report = import_logs([corpus], None, SHA, SHA, "jsonl")
    assert report["rules_applied"] == {
        jsonl.KIND.duplicate: 1,
        "empty USER message dropped": 1,
        "opening SYSTEM message dropped": 1,
        jsonl.KIND.no_pair: 1,
        "consecutive SYSTEM messages joined": 1,
        jsonl.KIND.renamed: 2,
    }
    assert report["sessions"] == {"crs-a-b": 2} and report["renamed_systems"] == {"crs a/b": "crs-a-b"}
    assert [r["labels"] for r in sessions["crs-a-b"]] == [
        {"satisfaction": "frustrated", "verdicts": {"satisfied": 0.0}},
        {"satisfaction": None, "verdicts": {"satisfied": None}},
    ]
    assert [r["provenance"]["line"] for r in sessions["crs-a-b"]] == [1, 4]


# ---------------------------------------------------------------- malformed input is named

LEGACY = {"model_name": "m", "true_genre": "crime", "conversation": [{"speaker": "USER", "text": "Hi"}]}


@pytest.mark.parametrize(
    "import_format, content, pattern",
    [
        (
            "crsarena",
            json.dumps(LEGACY),
            r"bad: expected a JSON list of CRSArena-Dial dialogues, found an object with the keys "
            r"\['conversation', 'model_name', 'true_genre'\]",
        ),
        ("crsarena", "[1, ", r"bad: cannot be read as JSON"),
        (
            "crsarena",
            json.dumps([arena("a", "u", ("USER", "x")), arena("a", "v", ("BOT", "x"))]),
            r"bad: dialogue 1 \('a_v'\): message 0: 'participant' must be USER or AGENT, found 'BOT'",
        ),
        (
            "crsarena",
            json.dumps([{**arena("a", "u", ("USER", "x")), "agent": {"type": "AGENT"}}]),
            r"bad: dialogue 0 \('a_u'\): 'agent\.id' must be a non-empty string",
        ),
        (
            "crsarena",
            json.dumps([arena("a", "u", ("USER", "x"), sentiment="meh")]),
            r"bad: dialogue 0 \('a_u'\): 'metadata\.sentiment' must be satisfied or frustrated .*'meh'",
        ),
        (
            "crsarena",
            json.dumps([{**arena("a", "u"), "conversation": [{"participant": "USER", "utterance": None}]}]),
            r"bad: dialogue 0 \('a_u'\): message 0: 'utterance' must be a string, found null",
        ),
        ("jsonl", json.dumps(LEGACY), r"bad, line 1: the line: Additional properties are not allowed"),
        ("jsonl", json.dumps([arena("a", "u")]), r"bad, line 1: the line: expected object, found a list"),
        (
            "jsonl",
            json.dumps(line("s", "d", ("user", "x"))) + "\n\n" + json.dumps(line("s", "e", ("bot", "x"))),
            r"bad, line 3: turns\[0\]\.role: 'bot' is not one of \['user', 'system'\]",
        ),
        (
            "jsonl",
            json.dumps(line("s", "d", ("user", "x"), labels={"satisfaction": "happy"})),
            r"bad, line 1: labels\.satisfaction: 'happy' is not one of",
        ),
        ("jsonl", json.dumps(line("s", "", ("user", "x"))), r"bad, line 1: dialogue_id: '' should be non-empty"),
        ("jsonl", "{not json", r"bad, line 1: cannot be read as JSON: .*\(the jsonl format: one dialogue per line"),
        (
            "jsonl",
            json.dumps(line("s", "d", ("user", "x"))) + "\n" + json.dumps(line("s", "d", ("user", "y"))),
            r"bad, line 2: dialogue_id 'd' of system 's' is already used by .*bad, line 1 for another dialogue",
        ),
        ("thesis_logs", json.dumps([arena("a", "u")]), r"bad: expected an object with 'model_name'"),
        ("crsarena", '{"x": "\\ud800"}', r"bad: holds text that is not valid Unicode"),
    ],
)
def test_a_file_not_in_the_selected_format_fails_naming_file_place_and_defect(
    tmp_path, import_format, content, pattern
):
    bad = tmp_path / "bad"
    bad.write_text(content)
    with pytest.raises(CorpusError, match=pattern):
        import_logs([bad], None, SHA, SHA, import_format)
    with pytest.raises(CorpusError, match=pattern):
        sessions_per_system([str(bad)], import_format)  # planning stops with the same message


@pytest.mark.parametrize(
    "content, where",
    [
        (b'{"system": "\xff"}\n', r"line 1: cannot be read as UTF-8 text: byte 13 of the line \(0xff\)"),
        (b'{"a": 1}\r\n{"b": "caf\xc3"}\n', r"line 2: cannot be read as UTF-8 text: byte 11 of the line \(0xc3\)"),
        (b'{}\n\n\n{"c": "\xed\xa0\x80"}', r"line 4: cannot be read as UTF-8 text: byte 8 of the line \(0xed\)"),
    ],
)
def test_undecodable_bytes_are_named_by_file_and_line(tmp_path, content, where):
    bad = tmp_path / "bytes.jsonl"
    bad.write_bytes(content)
    with pytest.raises(CorpusError, match=rf"bytes\.jsonl, {where}"):
        import_logs([bad], None, SHA, SHA, "jsonl")
    with pytest.raises(CorpusError, match=rf"bytes\.jsonl, {where}"):
        sessions_per_system([str(bad)], "jsonl")  # planning names it the same way


# ---------------------------------------------------------------- votes

VOTE_HEADER = "session_id,user_id,crs1,crs2,vote,feedback\n"


@pytest.fixture
def arena_sessions(tmp_path):
    corpus = write_arena(
        tmp_path / "dial.json",
        arena("kbrd_redial", "u1", ("USER", "a"), ("AGENT", "b")),
        arena("barcor_redial", "u1", ("USER", "a"), ("AGENT", "b")),
        arena("kbrd_redial", "u2", ("USER", "a"), ("AGENT", "b")),
        arena("barcor_redial", "u3", ("USER", "a")),  # no reply: skipped, so u3's vote finds no barcor dialogue
        arena("kbrd_redial", "u3", ("USER", "a"), ("AGENT", "b")),
    )
    sessions, _ = import_logs([corpus], None, SHA, SHA, "crsarena")
    return sessions


def test_crsarena_votes_rules_and_table(tmp_path, arena_sessions):
    votes_file = tmp_path / "votes.csv"
    votes_file.write_text(
        VOTE_HEADER
        + "2024-09-08 23:01:08,u1,kbrd_redial,barcor_redial,kbrd_redial,first was better\n"  # kept
        + "2024-09-08 23:05:00,u1,barcor_redial,kbrd_redial,Tie,\n"  # kept: a tie
        + "2024-09-09 10:00:00,u3,kbrd_redial,barcor_redial,barcor_redial,\n"  # kept: barcor's dialogue missing
        + "2024-09-09 11:00:00,u9,kbrd_redial,barcor_redial,tie,\n"  # no dialogue of either side
        + "2024-09-09 12:00:00,u1,kbrd_redial,unicrs_redial,tie,\n"  # a system not in the corpus
        + "2024-09-08 23:01:08,u1,kbrd_redial,barcor_redial,kbrd_redial,first was better\n"  # duplicate
        + "2024-09-09 13:00:00,u1,kbrd_redial,barcor_redial\n"  # wrong number of fields
        + ",u1,kbrd_redial,barcor_redial,tie,\n"  # an empty field
        + "yesterday,u1,kbrd_redial,barcor_redial,tie,\n"  # not a date and time
        + "2024-09-09 14:00:00,u1,kbrd_redial,kbrd_redial,tie,\n"  # one system on both sides
        + "2024-09-09 15:00:00,u1,kbrd_redial,barcor_redial,unicrs_redial,\n"  # a vote for neither side
        + '2024-09-09 16:00:00,u2,barcor_redial,kbrd_redial,kbrd_redial,"Fine, mostly\nsaid twice"\n'  # kept
    )
    votes, report = import_votes(votes_file, arena_sessions, "crsarena")
    malformed = "vote row malformed, dropped: "
    assert report == {
        "file": "votes.csv",
        "rows": 12,
        "kept": 4,
        "dropped": 8,
        "rules_applied": {
            "vote kept with one side's dialogue missing": 2,  # u3 (barcor skipped), u2 (no barcor dialogue)
            "vote without the dialogue of either side dropped": 1,
            "vote naming a system not in the corpus dropped": 1,
            "duplicate vote dropped": 1,
            malformed + "wrong number of fields": 1,
            malformed + "a required field is empty": 1,
            malformed + "session_id is not a date and time": 1,
            malformed + "one system on both sides": 1,
            malformed + "vote names neither side nor a tie": 1,
        },
    }
    write_votes(votes, tmp_path / "votes.parquet")
    table = pd.read_parquet(tmp_path / "votes.parquet")
    table = table.astype(object).where(table.notna(), None)  # missing values as None, whatever the dtype
    assert list(table.columns) == VOTES_SCHEMA.names
    assert table[["system_a", "system_b", "winner", "tie", "voter", "found_a", "found_b", "source_line"]].to_dict(
        "records"
    ) == [
        dict(system_a="kbrd_redial", system_b="barcor_redial", winner="kbrd_redial", tie=False, voter="u1",
             found_a=True, found_b=True, source_line=2),
        dict(system_a="barcor_redial", system_b="kbrd_redial", winner=None, tie=True, voter="u1",
             found_a=True, found_b=True, source_line=3),
        dict(system_a="kbrd_redial", system_b="barcor_redial", winner="barcor_redial", tie=False, voter="u3",
             found_a=True, found_b=False, source_line=4),
        dict(system_a="barcor_redial", system_b="kbrd_redial", winner="kbrd_redial", tie=False, voter="u2",
             found_a=False, found_b=True, source_line=14),
    ]  # fmt: skip
    assert table["session_a"].tolist() == [
        "kbrd_redial/kbrd_redial_u1",
        "barcor_redial/barcor_redial_u1",
        "kbrd_redial/kbrd_redial_u3",
        None,
    ]
    assert table["time"].iloc[0] == pd.Timestamp("2024-09-08 23:01:08")
    assert table["feedback"].tolist() == ["first was better", None, None, "Fine, mostly\nsaid twice"]


@pytest.mark.parametrize(
    "content, pattern",
    [
        ("when,who,a,b,winner\n", r"votes\.csv: not a CRSArena-Dial votes file: the header lacks the columns"),
        ("", r"votes\.csv: not a CRSArena-Dial votes file"),
        (
            VOTE_HEADER + "2024-09-09 10:00:00,u1," + "x" * 200_000 + ",b,tie,\n",
            r"votes\.csv, line 2: not readable as CSV",
        ),
    ],
)
def test_a_votes_file_not_in_the_format_is_named(tmp_path, arena_sessions, content, pattern):
    votes_file = tmp_path / "votes.csv"
    votes_file.write_text(content)
    with pytest.raises(CorpusError, match=pattern):
        import_votes(votes_file, arena_sessions, "crsarena")


def test_jsonl_votes_are_checked_line_by_line(tmp_path):
    sessions, _ = import_logs([EXAMPLES / "example.jsonl"], None, SHA, SHA, "jsonl")
    vote = {"system_a": "my-crs", "dialogue_a": "d1", "system_b": "baseline", "dialogue_b": "d1", "winner": "b"}
    votes_file = write_lines(
        tmp_path / "votes.jsonl",
        vote,
        vote,  # duplicate
        {**vote, "system_b": "other", "voter": "u1"},  # unknown system
        {**vote, "dialogue_a": "d7", "dialogue_b": "d8"},  # neither dialogue
    )
    votes, report = import_votes(votes_file, sessions, "jsonl")
    assert report["rules_applied"] == {
        "duplicate vote dropped": 1,
        "vote naming a system not in the corpus dropped": 1,
        "vote without the dialogue of either side dropped": 1,
    }
    assert [(v["winner"], v["session_b"]) for v in votes] == [("baseline", "baseline/d1")]
    for broken, pattern in [
        ({**vote, "winner": "my-crs"}, r"votes\.jsonl, line 1: winner: 'my-crs' is not one of \['a', 'b', 'tie'\]"),
        ({**vote, "system_b": "my-crs"}, r"votes\.jsonl, line 1: system_a and system_b are both 'my-crs'"),
        ({**vote, "time": "noon"}, r"votes\.jsonl, line 1: time 'noon' is not an ISO 8601 date and time"),
    ]:
        write_lines(votes_file, broken)
        with pytest.raises(CorpusError, match=pattern):
            import_votes(votes_file, sessions, "jsonl")
    with pytest.raises(CorpusError, match=r"votes\.jsonl: the thesis_logs format has no votes"):
        import_votes(votes_file, sessions, "thesis_logs")


# ---------------------------------------------------------------- hostile names write nothing outside


def hostile_names(root: Path) -> list[str]:
    """Names that climb out of a folder, name an absolute path (under `root`, so a file written there is
    seen), hold slashes or are dot names."""
    return ["../../x", str(root / "abs" / "crs"), "a/b/c", "..", "./.hidden"]


def files_outside(root: Path, *allowed: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not any(a in p.parents for a in allowed)]


def hostile_corpus(import_format: str, folder: Path, names: list[str]) -> tuple[Path, Path]:
    """A corpus whose systems, users and dialogue ids are all hostile names, and a vote on two of them."""
    folder.mkdir()
    if import_format == "crsarena":
        dialogues = [arena(name, name, ("USER", "Crime?"), ("AGENT", "Heat"), conversation_id=name) for name in names]
        votes = folder / "votes.csv"
        votes.write_text(VOTE_HEADER + f"2024-09-09 10:00:00,{names[0]},{names[0]},{names[1]},tie,\n")
        return write_arena(folder / "dial.json", *dialogues), votes
    items = [line(name, name, ("user", "Crime?"), ("system", "Heat")) for name in names]
    vote = {"system_a": names[0], "dialogue_a": names[0], "system_b": names[1], "dialogue_b": names[1]}
    return write_lines(folder / "c.jsonl", *items), write_lines(folder / "votes.jsonl", {**vote, "winner": "a"})


@pytest.mark.parametrize("import_format", ["crsarena", "jsonl"])
def test_hostile_names_write_nothing_outside_the_output_folder(tmp_path, index_dir, monkeypatch, import_format):
    names = hostile_names(tmp_path)
    corpus, votes_file = hostile_corpus(import_format, tmp_path / "corpus", names)
    work = tmp_path / "w1" / "w2"  # the working directory: `../../x` from here is still under tmp_path
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    counts = sessions_per_system([str(corpus)], import_format)
    assert len(counts) == len(names) and all("/" not in s and not s.startswith(".") for s in counts)
    # the workflow's rule scripts, the corpus planned as workflow/rules/common.smk plans it
    results = tmp_path / "a" / "results" / "exp"
    sessions_dir = results / "sessions"
    manifest = build_manifest([str(corpus)], import_format, sessions_dir / "corpus_manifest.json")
    catalog = {
        "films": str(index_dir / "films.parquet"),
        "concepts": str(index_dir / "concepts.parquet"),
        "catalog_summary": str(index_dir / "summary.json"),
        "schema": str(SCHEMA),
    }
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    shards, films = [], []
    for (system, shard), piece in shard_slices(manifest, 2).items():
        slice_file = sessions_dir / "import" / system / f"{shard}.slice.json"
        write_if_changed(slice_file, piece)
        shards.append(str(sessions_dir / system / f"shard-{shard}.jsonl"))
        films.append(str(sessions_dir / "import" / system / f"{shard}.films.json"))
        run_script(
            "import_logs",
            input={"slice": str(slice_file), **catalog},
            output={"shard": shards[-1], "films": films[-1]},
            params={"import_format": import_format, "shard_size": 2},
            wildcards={"system": system, "shard": str(shard)},
            log=[str(results / "logs" / "import_logs" / system / f"{shard}.log")],
        )
    run_script(
        "import_votes",
        input={"votes": str(votes_file), "shards": shards},
        output={"votes": str(results / "tables" / "votes.parquet"), "report": str(sessions_dir / "votes_report.json")},
        params={"import_format": import_format},
        log=[str(results / "logs" / "import_votes.log")],
    )
    run_script(
        "import_report",
        input={"manifest": str(sessions_dir / "corpus_manifest.json"), "films": films,
               "votes_report": str(sessions_dir / "votes_report.json")},
        output={"report": str(sessions_dir / "import_report.json")},
        params={"shards": [list(key) for key in shard_slices(manifest, 2)]},
        log=[str(results / "logs" / "import_report.log")],
    )  # fmt: skip
    # the command line, into its own folder
    from crseval.cli import main

    out = tmp_path / "b" / "c" / "out"
    arguments = ["import-logs", str(corpus), "--format", import_format, "--votes", str(votes_file)]
    assert main([*arguments, "--catalog-index", str(index_dir), "--out", str(out)]) == 0
    assert files_outside(tmp_path, results, out, tmp_path / "corpus", index_dir) == []
    assert sorted(p.name for p in out.glob("*.jsonl")) == sorted(f"{s}.jsonl" for s in counts)
    table = pd.read_parquet(results / "tables" / "votes.parquet")
    assert len(table) == 1 and set(table[["system_a", "system_b"]].iloc[0]) <= set(counts)
    report = json.loads((results / "sessions" / "import_report.json").read_text())
    assert set(report["renamed_systems"]) == set(names) and report["votes"]["kept"] == 1
    key = "conversation_id" if import_format == "crsarena" else "dialogue_id"
    ids = {json.loads(p.read_text())["provenance"][key] for p in out.glob("*.jsonl")}
    assert ids == set(names)  # the original names stay in the data


# ---------------------------------------------------------------- labels, config


def test_labels_become_the_satisfied_column_after_the_identifiers():
    records = [
        {"labels": {"satisfaction": "satisfied"}},
        {"labels": {"satisfaction": "frustrated"}},
        {"labels": {"satisfaction": None}},
        {},  # a simulated session
    ]
    sessions = pd.DataFrame({"system": ["s"] * 4, "session_id": list("abcd"), "seed": [None] * 4, "tas": [0.1] * 4})
    labelled = with_labels(sessions, records)
    assert list(labelled.columns) == ["system", "session_id", "seed", "satisfied", "tas"]
    assert labelled["satisfied"].tolist()[:2] == [1.0, 0.0] and labelled["satisfied"].iloc[2:].isna().all()


def import_config(tmp_path: Path, **sessions) -> dict:
    config = default_config()
    corpus = write_lines(tmp_path / "c.jsonl", line("s", "d", ("user", "a"), ("system", "b")))
    config["sessions"] = {"source": "import", "import_paths": str(corpus), "import_format": "jsonl", **sessions}
    return config


def test_votes_need_a_format_that_has_them_and_an_existing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"sessions\.import_votes: the thesis_logs format has no votes"):
        check_config(import_config(tmp_path, import_format="thesis_logs", import_votes="v.csv"))
    simulated = default_config()
    simulated["sessions"]["import_votes"] = "v.csv"
    with pytest.raises(ConfigError, match=r"sessions\.import_votes: votes are read only with `source: import`"):
        check_config(simulated)
    with pytest.raises(ConfigError, match=r"sessions\.import_votes: .*missing\.csv does not exist"):
        check_inputs(import_config(tmp_path, import_votes=str(tmp_path / "missing.csv")), REPO)
    with pytest.raises(ConfigError, match=r"sessions\.import_format: 'csv' is not one of"):
        check_config(import_config(tmp_path, import_format="csv"))
    check_config(import_config(tmp_path, import_votes=str(EXAMPLES / "example_votes.jsonl")))


# ---------------------------------------------------------------- the workflow


@pytest.mark.workflow
def test_a_jsonl_corpus_reaches_the_sessions_table_with_its_labels_and_votes(tmp_path):
    workdir = copy_workflow(tmp_path)
    corpus = workdir / "corpus"
    corpus.mkdir()
    write_lines(
        corpus / "dialogues.jsonl",
        line(
            "crs/one",
            "d1",
            ("user", "A crime film?"),
            ("system", "Try Casablanca."),
            labels={"satisfaction": "satisfied"},
        ),
        line("crs/one", "d2", ("user", "A western?"), ("system", "Stagecoach."), ("user", "Thanks")),
        line("two", "d1", ("user", "A crime film?"), ("system", "Citizen Kane"), labels={"satisfaction": "frustrated"}),
    )
    votes = {"system_a": "crs/one", "dialogue_a": "d1", "system_b": "two", "dialogue_b": "d1", "winner": "a"}
    write_lines(corpus / "votes.jsonl", {**votes, "voter": "u1", "time": "2025-01-02T03:04:05"})
    config = default_config()
    config.update(
        experiment="jsonl-import", judge={"enabled": False}, systems=[{"name": "unused", "agent": "template"}]
    )
    config["sessions"] = {
        "source": "import",
        "import_format": "jsonl",
        "import_paths": "corpus/dialogues.jsonl",
        "import_votes": "corpus/votes.jsonl",
        "shard_size": 1,
    }
    config["scoring"]["metrics"] = ["tas"]
    write_config(workdir, config, "jsonl.yaml")
    results = workdir / "results" / "jsonl-import"
    tables = results / "tables"
    targets = [str((tables / name).relative_to(workdir)) for name in ("sessions.parquet", "votes.parquet")]
    targets.append(str((results / "sessions" / "import_report.json").relative_to(workdir)))
    run_snakemake(workdir, *targets, "--configfile", "jsonl.yaml")  # the tables only: no statistics of 3 dialogues
    sessions = pd.read_parquet(tables / "sessions.parquet").set_index("session_id")
    assert sorted(sessions.index) == ["crs-one/d1", "crs-one/d2", "two/d1"]
    assert sessions.loc["crs-one/d1", "satisfied"] == 1.0 and sessions.loc["two/d1", "satisfied"] == 0.0
    assert math.isnan(sessions.loc["crs-one/d2", "satisfied"]) and sessions["seed"].isna().all()
    assert sessions.loc["crs-one/d1", "turns"] == 1 and not math.isnan(sessions.loc["crs-one/d1", "tas"])
    votes_table = pd.read_parquet(tables / "votes.parquet")
    assert votes_table[["system_a", "system_b", "winner", "voter"]].values.tolist() == [
        ["crs-one", "two", "crs-one", "u1"]
    ]
    report = json.loads((results / "sessions" / "import_report.json").read_text())
    assert report["format"] == "jsonl" and report["rules_applied"] == {
        "final USER message without reply dropped": 1,
        jsonl.KIND.renamed: 2,
    }
    assert report["votes"]["kept"] == 1


def test_film_coverage_counts_distinct_films_in_and_outside_the_catalog():
    from crseval.corpora.dialogue import film_coverage

    def turn(recommended, mentioned, unknown):
        return {"recommended_titles": recommended, "mentioned_titles": mentioned, "unknown_titles": unknown}

    sessions = {
        "a": [{"turns": [turn(["Heat"], [], ["Arrival"]), turn(["Heat"], ["Casino"], ["arrival", "Dune"])]}],
        "b": [{"turns": [turn([], [], [])]}],
    }
    # a: catalog {Heat, Casino}, outside {arrival, dune}: 2 of 4; b names nothing
    assert film_coverage(sessions) == {
        "films_named": 4,
        "in_catalog": 2,
        "outside_catalog": 2,
        "catalog_share": 0.5,
        "per_system": {
            "a": {"films_named": 4, "in_catalog": 2, "outside_catalog": 2, "catalog_share": 0.5},
            "b": {"films_named": 0, "in_catalog": 0, "outside_catalog": 0, "catalog_share": None},
        },
    }


def test_a_line_separator_inside_a_string_does_not_end_the_line(tmp_path):
    """JSON allows U+2028, U+2029 and other characters str.splitlines() breaks at inside a string."""
    corpus = tmp_path / "seps.jsonl"
    items = [
        line("crs", "d1", ("user", "Crime?\u2028Or drama"), ("system", "Heat\x1c")),
        line("crs", "d2", ("user", "Hi"), ("system", "Hello")),
    ]
    corpus.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items), encoding="utf-8")
    sessions, report = import_logs([corpus], None, SHA, SHA, "jsonl")
    assert [r["provenance"]["line"] for r in sessions["crs"]] == [1, 2]
    assert sessions["crs"][0]["turns"][0]["user_text"].startswith("Crime?")
