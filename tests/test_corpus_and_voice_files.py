"""Hostile input from outside on the way "real dialogues come in, a voice is learned from them": corpus files
a researcher names (crseval.corpora) and a learned voice read back from results/ (crseval.simulate.user.voice).

Each defect is a clear error naming the file, the place and what is wrong (or a rule counted where the design
counts one), never a library's traceback, an invented value or a hang. Every corpus and voice here is written
in this file with made-up words."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from crseval.corpora import crsarena, dialogue, manifest, thesis_logs
from crseval.corpora.dialogue import MAX_MESSAGE_CHARS, CorpusError
from crseval.corpora.formats import import_logs, import_votes
from crseval.simulate.user import voice as voice_module
from crseval.simulate.user.voice import MAX_TEMPLATE_CHARS, Voice, VoiceError, VoiceTemplate
from crseval.simulate.user.voice_learning import learn_voice

SHA = "0" * 64


def turns(*texts: str) -> list[dict]:
    """Alternating user and system messages of the jsonl format."""
    return [{"role": ("user", "system")[n % 2], "text": text} for n, text in enumerate(texts)]


def dialogue_line(dialogue_id: str = "d1", system: str = "blorp", **extra) -> str:
    item = {"system": system, "dialogue_id": dialogue_id, "turns": turns("any zorbic flims?", "try Quux."), **extra}
    return json.dumps(item)


def arena_item(user: str = "u1", **extra) -> dict:
    conversation = [
        {"participant": "USER", "utterance": "a plonky movie?"},
        {"participant": "AGENT", "utterance": "Wim."},
    ]
    return {
        "conversation ID": f"crs_{user}",
        "agent": {"id": "crs"},
        "user": {"id": user},
        "conversation": conversation,
        **extra,
    }


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def imported(path: Path, import_format: str) -> tuple[dict, dict]:
    return import_logs([path], None, SHA, SHA, import_format)


# ---------------------------------------------------------------- corpus files: bytes and size


def test_a_leading_byte_order_mark_is_dropped(tmp_path):
    """Editors on Windows write one; it used to fail the first line as 'Unexpected UTF-8 BOM'."""
    corpus = write(tmp_path / "bom.jsonl", "\ufeff" + dialogue_line())
    sessions, _ = imported(corpus, "jsonl")
    assert [r["session_id"] for r in sessions["blorp"]] == ["blorp/d1"]
    arena = write(tmp_path / "bom.json", "\ufeff" + json.dumps([arena_item()]))
    assert [r["session_id"] for r in imported(arena, "crsarena")[0]["crs"]] == ["crs/crs_u1"]


@pytest.mark.parametrize(
    "name, content, import_format, message",
    [
        ("e.jsonl", "", "jsonl", r"e\.jsonl: holds no dialogue: the file is empty \(or only blank lines\)"),
        ("e.jsonl", "\n  \n\t\n", "jsonl", r"e\.jsonl: holds no dialogue"),
        ("e.json", "", "crsarena", r"e\.json: holds no JSON: the file is empty"),
        ("e.json", "[]", "crsarena", r"e\.json: holds no dialogue: the JSON list is empty"),
        ("e_1.json", " \n", "thesis_logs", r"e_1\.json: holds no JSON: the file is empty"),
    ],
)
def test_an_empty_corpus_file_is_named_not_imported_as_nothing(tmp_path, name, content, import_format, message):
    corpus = write(tmp_path / name, content)
    with pytest.raises(CorpusError, match=message):
        imported(corpus, import_format)


@pytest.mark.parametrize(
    "start, hint",
    [
        (b"\x1f\x8b\x08\x00", "it starts like a gzip file: decompress it first"),
        (b"{", None),  # nothing it looks like: the byte is named
        (b"\xff\xfe{\x00", "it starts with a UTF-16 byte order mark: save it as UTF-8"),
        (b"PK\x03\x04\x14\x00", "it starts like a zip archive: unpack it first"),
    ],
)
def test_a_binary_file_is_named_with_what_it_looks_like(tmp_path, start, hint):
    corpus = write(tmp_path / "b.jsonl", start + b"\x80\x81")
    with pytest.raises(CorpusError, match=r"b\.jsonl, line 1: cannot be read as UTF-8 text") as raised:
        imported(corpus, "jsonl")
    if hint:
        assert str(raised.value).endswith(f"({hint})")


def test_a_corpus_file_over_the_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(dialogue, "MAX_FILE_BYTES", 200)
    corpus = write(tmp_path / "big.jsonl", "\n".join(dialogue_line(f"d{n}") for n in range(4)))
    with pytest.raises(CorpusError, match=r"big\.jsonl: over the 200 bytes a corpus file may hold \(\d{3} bytes"):
        imported(corpus, "jsonl")


def test_a_pipe_named_as_corpus_is_refused_not_read_forever(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)  # opening it would wait for a writer that never comes
    with pytest.raises(CorpusError, match=r"pipe\.jsonl: not a regular file"):
        imported(fifo, "jsonl")


# ---------------------------------------------------------------- corpus files: JSON that is not JSON


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"x": NaN}', r"NaN is no JSON value"),
        ('{"x": -Infinity}', r"-Infinity is no JSON value"),
        ('{"x": 1e999}', r"the number 1e999 is out of a double's range"),
        ('{"system": "a", "system": "b"}', r"the key 'system' is given twice in one object"),
    ],
)
def test_json_outside_the_standard_is_an_error_not_a_guess(tmp_path, text, message):
    """NaN reached the session records as NaN (invalid JSON), 1e999 became inf, and a key given twice
    silently took its last value."""
    line = dialogue_line().removesuffix("}") + ', "metadata": ' + text + "}"
    corpus = write(tmp_path / "c.jsonl", dialogue_line("d0") + "\n" + line)
    with pytest.raises(CorpusError, match=rf"c\.jsonl, line 2: cannot be read as JSON: {message}"):
        imported(corpus, "jsonl")
    arena = write(tmp_path / "c.json", json.dumps([arena_item()]).removesuffix("]") + ", " + text + "]")
    with pytest.raises(CorpusError, match=rf"c\.json: cannot be read as JSON: {message}"):
        imported(arena, "crsarena")


@pytest.mark.parametrize(
    "line, message",
    [
        (dialogue_line().replace('"d1"', "7"), r"line 1: dialogue_id: expected string, found a number"),
        (dialogue_line(user_id=["u1"]), r"line 1: user_id: expected \['string', 'null'\], found a list"),
        (dialogue_line().replace('"role": "user"', '"role": null'), r"line 1: turns\[0\]\.role: None is not one of"),
        (dialogue_line().replace('"text": "try Quux."', '"text": 3'), r"line 1: turns\[1\]\.text: expected string"),
        (json.dumps([1, 2]), r"line 1: the line: expected object, found a list"),
        ("null", r"line 1: the line: expected object, found null"),
        (dialogue_line(labels={"satisfaction": 1.5}), r"line 1: labels\.satisfaction: 1\.5 is not one of"),
    ],
)
def test_a_line_of_the_wrong_shape_names_the_key(tmp_path, line, message):
    corpus = write(tmp_path / "shape.jsonl", line)
    with pytest.raises(CorpusError, match=rf"shape\.jsonl, {message}"):
        imported(corpus, "jsonl")


@pytest.mark.parametrize(
    "vote, message",
    [
        ({"winner": "c"}, r"line 1: winner: 'c' is not one of \['a', 'b', 'tie'\]"),
        ({"time": 1700000000}, r"line 1: time: expected \['string', 'null'\], found a number"),
        ({"dialogue_a": None}, r"line 1: dialogue_a: expected string, found null"),
    ],
)
def test_a_vote_of_the_wrong_shape_names_the_key(tmp_path, vote, message):
    corpus = write(tmp_path / "c.jsonl", dialogue_line("d1", "a") + "\n" + dialogue_line("d1", "b"))
    sessions, _ = imported(corpus, "jsonl")
    line = {"system_a": "a", "dialogue_a": "d1", "system_b": "b", "dialogue_b": "d1", "winner": "a", **vote}
    votes = write(tmp_path / "v.jsonl", json.dumps(line))
    with pytest.raises(CorpusError, match=rf"v\.jsonl, {message}"):
        import_votes(votes, sessions, "jsonl")


def test_a_file_cut_off_mid_record_says_so(tmp_path):
    corpus = write(tmp_path / "cut.jsonl", dialogue_line("d0") + "\n" + dialogue_line("d1")[:40])
    with pytest.raises(CorpusError, match=r"cut\.jsonl, line 2: cannot be read as JSON: .*the text ends before"):
        imported(corpus, "jsonl")
    text = json.dumps([arena_item(), arena_item("u2")], indent=1)
    arena = write(tmp_path / "cut.json", text[: len(text) // 2])
    with pytest.raises(CorpusError, match=r"cut\.json: cannot be read as JSON: .*the text ends before the JSON does"):
        imported(arena, "crsarena")
    broken = write(tmp_path / "mid.json", '[\n {"a": 1}\n {"b": 2}\n]')
    with pytest.raises(CorpusError, match=r"mid\.json: cannot be read as JSON: Expecting ',' delimiter at line 3"):
        imported(broken, "crsarena")


# ---------------------------------------------------------------- corpus files: values out of bounds


def test_a_message_longer_than_any_chat_message_is_named(tmp_path):
    long_text = "zorbic " * (MAX_MESSAGE_CHARS // 7 + 1)
    item = {"system": "blorp", "dialogue_id": "d1", "turns": turns("hi", "hello", long_text, "ok")}
    corpus = write(tmp_path / "long.jsonl", json.dumps(item))
    with pytest.raises(CorpusError, match=r"long\.jsonl, line 1: message 2 \(USER\) holds 100,002 characters, over"):
        imported(corpus, "jsonl")


def test_a_huge_value_is_shown_cut_in_the_error(tmp_path):
    item = arena_item()
    item["conversation"][0]["participant"] = "BOT" * 10_000
    corpus = write(tmp_path / "p.json", json.dumps([item]))
    with pytest.raises(CorpusError, match=r"'participant' must be USER or AGENT, found 'BOTBOT.*\.\.\.$") as raised:
        imported(corpus, "crsarena")
    assert len(str(raised.value)) < 300


def test_an_unknown_speakers_rule_name_is_bounded(tmp_path):
    conversation = [
        {"speaker": "USER", "text": "a plonky movie?"},
        {"speaker": "NARRATOR" * 1000, "text": "meanwhile"},
        {"speaker": "SYSTEM", "text": "Wim."},
    ]
    log = write(tmp_path / "m_1.json", json.dumps({"model_name": "m", "conversation": conversation}))
    _, report = imported(log, "thesis_logs")
    (rule,) = [r for r in report["rules_applied"] if r.startswith("message of unknown speaker")]
    assert rule == f"message of unknown speaker {repr('NARRATOR' * 1000)[:60]}... dropped"


@pytest.mark.parametrize("time", ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"])
def test_a_vote_time_out_of_the_calendar_is_not_a_time(tmp_path, time):
    """Its UTC time overflowed datetime: an OverflowError from deep inside the standard library."""
    corpus = write(tmp_path / "c.jsonl", dialogue_line("d1", "a") + "\n" + dialogue_line("d1", "b"))
    sessions, _ = imported(corpus, "jsonl")
    vote = {"system_a": "a", "dialogue_a": "d1", "system_b": "b", "dialogue_b": "d1", "winner": "a", "time": time}
    votes = write(tmp_path / "v.jsonl", json.dumps(vote))
    with pytest.raises(CorpusError, match=rf"v\.jsonl, line 1: time .{re.escape(time)}. is not an ISO 8601 date"):
        import_votes(votes, sessions, "jsonl")
    arena = write(tmp_path / "a.json", json.dumps([arena_item("u1"), {**arena_item("u1"), "agent": {"id": "other"}}]))
    arena_sessions, _ = imported(arena, "crsarena")
    csv = write(tmp_path / "v.csv", f"session_id,user_id,crs1,crs2,vote,feedback\n{time},u1,crs,other,crs,\n")
    rows, report = crsarena.import_votes(csv, arena_sessions)
    assert rows == [] and report["rules_applied"] == {
        "vote row malformed, dropped: session_id is not a date and time": 1
    }


# ---------------------------------------------------------------- the manifest and its slices


def test_a_cached_manifest_of_another_shape_is_planned_again(tmp_path):
    """A cache cut short or edited used to stop planning with an AttributeError or a KeyError."""
    corpus = str(write(tmp_path / "c.jsonl", dialogue_line()))
    fresh = manifest.build_manifest([corpus], "jsonl")
    cache = tmp_path / "manifest.json"
    for broken in (
        {"version": 1, "format": "jsonl", "files": [1]},
        {"version": 1, "format": "jsonl", "files": {corpus: {"stamp": "now"}}, "sessions": {}},
        {**fresh, "sessions": {"blorp": [{"session_id": 7}]}},
    ):
        write(cache, json.dumps(broken))
        assert manifest.build_manifest([corpus], "jsonl", cache) == fresh


def test_a_cached_plan_of_another_shape_is_read_again_from_its_log(tmp_path):
    conversation = [{"speaker": "USER", "text": "a plonky movie?"}, {"speaker": "SYSTEM", "text": "Wim."}]
    log = str(write(tmp_path / "m_3.json", json.dumps({"model_name": "m", "conversation": conversation})))
    cache = tmp_path / "manifest.json"
    fresh = manifest.build_manifest([log], "thesis_logs", cache)
    edited = json.loads(cache.read_text())
    del edited["files"][log]["plan"]["turns"]
    write(cache, json.dumps(edited))
    assert thesis_logs.usable_entry(edited["files"][log]["plan"]) is False
    assert manifest.build_manifest([log], "thesis_logs", cache) == fresh


def test_a_slice_of_another_shape_or_a_removed_log_is_named(tmp_path):
    conversation = [{"speaker": "USER", "text": "a plonky movie?"}, {"speaker": "SYSTEM", "text": "Wim."}]
    log = write(tmp_path / "m_3.json", json.dumps({"model_name": "m", "conversation": conversation}))
    (piece,) = manifest.shard_slices(manifest.build_manifest([str(log)], "thesis_logs"), 10).values()
    with pytest.raises(CorpusError, match=r"slice of the corpus manifest of system 'm': 'sessions' is not a list"):
        manifest.import_slice({**piece, "sessions": [{"session_id": "m/m_3"}]}, None, SHA, SHA)
    with pytest.raises(CorpusError, match=r"slice of the corpus manifest is not a JSON object"):
        manifest.import_slice([piece], None, SHA, SHA)
    log.unlink()  # a FileNotFoundError from hashing it before
    with pytest.raises(CorpusError, match=r"m_3\.json changed after the workflow planned the import"):
        manifest.import_slice(piece, None, SHA, SHA)


# ---------------------------------------------------------------- learning a voice


def records(*user_turns: str) -> list[dict]:
    """One session record per user turn, as the importer gives them to learn_voice."""
    return [
        {
            "session_id": f"blorp/d{n}",
            "provenance": {"user_id": f"u{n}"},
            "turns": [{"user_text": text, "system_text": "Wim."}],
        }
        for n, text in enumerate(user_turns)
    ]


def test_a_corpus_of_which_no_turn_is_kept_has_nothing_to_teach(tmp_path):
    """It used to give a voice without a template: a `learned` user worded every turn by the rules."""
    left_out = records("a {zorbic} film?", "x" * (MAX_TEMPLATE_CHARS + 1), "   ")
    with pytest.raises(CorpusError) as raised:
        learn_voice(left_out, None, {"corpus": "made-up.jsonl"})  # no turn reaches the matcher
    assert str(raised.value).startswith(
        "made-up.jsonl: nothing to learn a voice from: 3 user turns of 3 dialogues read (the voice's part of the "
        "corpus), none kept (left out: braces (the slot marks): 1; empty: 1; over 2,000 characters: 1)"
    )
    with pytest.raises(CorpusError, match=r"the corpus: nothing to learn a voice from: 0 user turns of 0 dialogues"):
        learn_voice([], None, {})


# ---------------------------------------------------------------- a learned voice read back


POOLS = {
    "first|request|genre:wish": [VoiceTemplate("first|request|genre:wish#0", "any {genre} flims?", ("genre:wish",), 2)],
    "later|ask_about|title": [VoiceTemplate("later|ask_about|title#0", "what is {title} like", ("title",))],
    "leave||": [VoiceTemplate("leave||#0", "meh, zorp", ())],
}
SUMMARY = {
    "corpus": "made-up.jsonl",
    "fitted": {
        "greeting": {"value": 0.5, "statistic": "s", "n": 2},
        "patience": {"value": 3, "statistic": "s", "n": 1},
    },
    "said_as": {"genre|science fiction": {"sci fi": 2}},
    "asked": {"genre": {"science fiction": 1}},
}


def voice_data() -> dict:
    return Voice(POOLS, SUMMARY).as_json()


def template_with(**changes) -> dict:
    data = voice_data()
    data["pools"]["first|request|genre:wish"][0].update(changes)
    return data


def test_a_voice_written_is_read_back_whole(tmp_path):
    path = tmp_path / "voice.json"
    Voice(POOLS, SUMMARY).write(path)
    assert Voice.read(path).as_json() == voice_data()


@pytest.mark.parametrize(
    "content, message",
    [
        ("", r"not readable as JSON \(Expecting value.*\): cut off or corrupt"),
        (json.dumps(voice_data())[:200], r"not readable as JSON .*: cut off or corrupt"),
        (b"\xff\xfe{}", r"not UTF-8 text \(byte 1: invalid start byte\)"),
        ("[]", r"not a voice: expected a JSON object, found a list"),
        ('{"format": 4, "format": 4}', r"the key 'format' is given twice in one object"),
        (json.dumps({**voice_data(), "format": 3}), r"a voice of format 3, not 5; learn it again"),
        (json.dumps({**voice_data(), "pools": []}), r"'pools' must be an object, found a list"),
        ("[" * 100_000 + "]" * 100_000, r"nested too deeply|not a voice"),
    ],
)
def test_a_voice_file_that_is_no_voice_is_named(tmp_path, content, message):
    path = write(tmp_path / "voice.json", content)
    with pytest.raises(VoiceError, match=rf"voice\.json: .*{message}"):
        Voice.read(path)


def pools_with(key: str, template: dict) -> dict:
    data = voice_data()
    data["pools"][key] = [{"after": [], "complaint": False, **template}]
    return data


POOL = r"pool 'first\|request\|genre:wish', template 0: "


@pytest.mark.parametrize(
    "data, message",
    [
        (
            template_with(text="{0.__class__.__init__.__globals__}"),
            POOL + r"text .* holds a brace that is no slot mark",
        ),
        (template_with(text="any {genre!r} flims?"), POOL + r"text .* holds a brace that is no slot mark"),
        (template_with(text="any {genre:>999999} flims?"), POOL + r"text .* holds a brace that is no slot mark"),
        (template_with(text="any {genre flims?"), POOL + r"text .* holds a brace that is no slot mark"),
        (template_with(text="any {{genre}} flims?"), POOL + r"text .* holds a brace that is no slot mark"),
        (template_with(text="any {actor} flims?"), POOL + r"text's slot marks \['actor'\] are not its slots"),
        (template_with(text="any {genre} {genre}?"), POOL + r"text's slot marks \['genre', 'genre'\] are not"),
        (template_with(text="zorp " * 401), POOL + r"text of 2,005 characters, over the 2,000 a template may hold"),
        (template_with(text=" "), POOL + r"text must be a non-empty string"),
        (template_with(text=["any"]), POOL + r"text must be a non-empty string, found \['any'\]"),
        (template_with(slots=["colour:wish"]), POOL + r"slots must be a list of 'title' or 'field:role'"),
        (template_with(slots="genre:wish"), POOL + r"slots must be a list of 'title' or 'field:role'"),
        (template_with(said=0), POOL + r"said must be a whole number of people \(1 or more\), found 0"),
        (template_with(said=True), POOL + r"said must be a whole number of people \(1 or more\), found True"),
        (template_with(said=10**12), r"pool 'first\|request\|genre:wish': its templates are said 1,000,000,000,000"),
        (
            pools_with("leave||", {"id": "first|request|genre:wish#0", "text": "zorp", "slots": [], "said": 1}),
            r"pool 'leave\|\|', template 0: id 'first\|request\|genre:wish#0' is given to an earlier template too",
        ),
        (template_with(id=7), POOL + r"id must be a non-empty string, found 7"),
        (template_with(after=["pleading"]), POOL + r"after must be a list of reply cases"),
        (template_with(after="catalog_film"), POOL + r"after must be a list of reply cases"),
        (template_with(after=["start", "asked"]), POOL + r"after must list each reply case once, sorted"),
        (template_with(after=["asked", "asked"]), POOL + r"after must list each reply case once, sorted"),
        (template_with(complaint=1), POOL + r"complaint must be true or false, found 1"),
        (template_with(text="\ud800 {genre}"), r"holds text that is not valid Unicode \(a lone surrogate"),
    ],
)
def test_a_template_that_could_be_more_than_words_is_refused(tmp_path, data, message):
    """Slot marks are filled by splitting at `{field}`, never by str.format; the reader keeps it so."""
    path = write(tmp_path / "voice.json", json.dumps(data))
    with pytest.raises(VoiceError, match=rf"voice\.json: .*{message}"):
        Voice.read(path)


SUMMARY_PATH = r"voice\.json: summary: "


@pytest.mark.parametrize(
    "data, message",
    [
        (
            pools_with("later|dance|", {"id": "x", "text": "zorp", "slots": [], "said": 1}),
            r"pool 'later\|dance\|': unknown act 'dance'",
        ),
        (pools_with("later|ask", {"id": "x", "text": "zorp", "slots": [], "said": 1}), r"a pool's key is 'where"),
        (pools_with("leave|ask|", {"id": "x", "text": "zorp", "slots": [], "said": 1}), r"leaves with has no act"),
        (
            pools_with("later|request|", {"id": "x", "text": "{genre}?", "slots": ["genre:wish"], "said": 1}),
            r"template 0: slots \['genre:wish'\] are not the pool's \(''\)",
        ),
        ({**voice_data(), "pools": {"later|ask|": []}}, r"expected a list of one or more templates, found an empty"),
        (
            {**voice_data(), "summary": {"fitted": {"greeting": {"value": 5}}}},
            SUMMARY_PATH + r"fitted\.greeting: 5 is not a share",
        ),
        (
            {**voice_data(), "summary": {"fitted": {"patience": {"value": 2.5}}}},
            SUMMARY_PATH + r"fitted\.patience: 2\.5 is not a whole",
        ),
        (
            {**voice_data(), "summary": {"fitted": {"typo": {"value": "lots"}}}},
            SUMMARY_PATH + r"fitted\.typo must be an object",
        ),
        (
            {**voice_data(), "summary": {"said_as": {"genre|x": {"ex": 0}}}},
            SUMMARY_PATH + r"said_as\.'genre\|x': each words",
        ),
        ({**voice_data(), "summary": {"asked": {"genre": {"": 3}}}}, SUMMARY_PATH + r"asked\.'genre': each value"),
        ({**voice_data(), "summary": {"asked": []}}, SUMMARY_PATH + r"'asked' must be an object, found a list"),
    ],
)
def test_a_voice_whose_pools_or_summary_could_not_be_drawn_from_is_refused(tmp_path, data, message):
    path = write(tmp_path / "voice.json", json.dumps(data))
    with pytest.raises(VoiceError, match=message):
        Voice.read(path)


def test_a_voice_file_over_the_bound_or_no_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "voice.json"
    Voice(POOLS, SUMMARY).write(path)
    monkeypatch.setattr(voice_module, "MAX_VOICE_BYTES", 100)
    with pytest.raises(VoiceError, match=r"voice\.json: \d+ bytes, over the 100 bytes a voice may hold"):
        Voice.read(path)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(VoiceError, match=r"pipe\.json: not a regular file"):
        Voice.read(fifo)
    with pytest.raises(VoiceError, match=r"absent\.json: cannot be read"):
        Voice.read(tmp_path / "absent.json")
