"""The session viewer's files (crseval.reports.viewer) on a hand-written experiment: two systems that
meet the same three simulated users, and one imported dialogue whose texts hold markup.

The per-turn TAS of turns.parquet is (user + 1) / 10 + turn / 100, plus 0.5 for the oracle: the oracle's
user 1 at turn 2 has 0.72. tests/test_viewer_browser.py opens the same experiment in Chromium.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from crseval.core.session_records import load_schema, session_validator, write_sessions
from crseval.reports import viewer

SHA = "0" * 64
INJECTION = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert(2)</script>"
IMPORTED = "realdialogs/d00000"
# user -> (seed, focus genre, gold constraints, disclosure, the film the oracle recommends at each turn)
USERS = {
    0: (101, "comedy", [("genre", "comedy", False), ("actor", "Tom Hanks", False)], ["volunteer", "hidden"]),
    1: (202, "horror", [("genre", "horror", False), ("year", "1980", True)], ["volunteer", "on_ask"]),
    2: (303, "western", [("genre", "western", False)], ["volunteer"]),
}
FILMS = {
    ("oracle", 0): ["Big", "Splash", "Cast Away"],
    ("template", 0): ["Big", "Airplane!", "Amélie"],
    ("oracle", 1): ["Halloween", "The Thing", "Alien"],
    ("template", 1): ["The Shining", "Psycho", "Alien"],
    ("oracle", 2): ["Unforgiven", "Rio Bravo", "High Noon"],
    ("template", 2): ["Stagecoach", "Shane", "High Noon"],
}
# sessions.parquet: (success, tas, recovery_rate_cosine) per session
SCORES = {
    "oracle/s00000": (1.0, 0.5, 1.0),
    "oracle/s00001": (1.0, 0.25, math.nan),
    "oracle/s00002": (0.0, 0.75, 0.5),
    "template/s00000": (0.0, 0.125, 0.0),
    "template/s00001": (0.0, 0.375, 1.0),
    "template/s00002": (1.0, 0.0312549, math.nan),
    IMPORTED: (math.nan, 0.2, math.nan),
}
RATIONALE = "The replies keep to the comedy the user asked for, then follow the shift to drama."


def turn_tas(system: str, user: int, turn: int) -> float:
    return round((user + 1) / 10 + turn / 100 + (0.5 if system == "oracle" else 0), 4)


def constraint(field: str, value: str, negated: bool) -> dict:
    return {"field": field, "value": value, "negated": negated}


def user_meta(user: int, turn: int) -> dict:
    seed, genre, gold, disclosure = USERS[user]
    shift = user == 0 and turn == 3
    focus = ("genre", "drama") if user == 0 and turn == 3 else ("genre", genre)
    return {
        "focus_field": focus[0],
        "focus_value": focus[1],
        "constraints": [constraint(*c) for c in gold],
        "disclosure": disclosure,
        "said": [True] + [turn >= 2 and d == "on_ask" for d in disclosure[1:]],
        "revealed": [constraint(*gold[1])] if turn == 2 and disclosure[1:] == ["on_ask"] else [],
        "shift_event": shift,
        "plan_event": "shift" if shift else None,
        "bridge": {"field": "actor", "value": "Tom Hanks"} if shift else None,
        "anchor_title": FILMS[("oracle", user)][0],
        "stage": "shift" if shift else ("open" if turn == 1 else "ask"),
        "stated": [{"field": focus[0], "value": focus[1], "role": "wish"}],
        "titles": [],
        "paraphrase": None,
    }


def simulated(system: str, user: int) -> dict:
    seed, genre, _, _ = USERS[user]
    turns = []
    for turn in (1, 2, 3):
        film = FILMS[(system, user)][turn - 1]
        if turn == 1:  # both systems open alike: the side-by-side view highlights nothing on turn 1
            user_text, reply = f"Hi! I'd like a {genre} film.", f"How about {FILMS[('oracle', user)][0]}?"
            film = FILMS[("oracle", user)][0]
        elif user == 0 and turn == 3:
            user_text, reply = "Actually, a drama now, maybe with Tom Hanks.", f"{system} suggests {film}."
        else:
            user_text, reply = f"Another {genre} film, please.", f"{system} suggests {film}, unlike Casablanca."
        turns.append(
            {
                "turn": turn,
                "user_text": user_text,
                "user_meta": user_meta(user, turn),
                "system_text": reply,
                "system_constraints": [],
                "candidate_titles": [film],
                "recommended_titles": [film],
                "mentioned_titles": ["Casablanca"] if "Casablanca" in reply else [],
                "unknown_titles": ["Moonlight Express"] if (system, user, turn) == ("template", 1, 2) else [],
                "user_implies": {"accepts": [], "rejects": []},
                "system_asks": [],
                "llm": None,
            }
        )
    shifts = []
    if user == 0:
        shifts.append(
            {
                "turn": 3,
                "from_focus": {"field": "genre", "value": "comedy"},
                "to_focus": {"field": "genre", "value": "drama"},
                "bridge": {"field": "actor", "value": "Tom Hanks"},
                "from_anchor": "Big",
                "to_anchor": "Cast Away",
                "anchor_new": False,
            }
        )
    return {
        "session_id": f"{system}/s{user:05d}",
        "session_index": user,
        "system": system,
        "seed": seed,
        "catalog_sha": SHA,
        "config_sha": SHA,
        "liked_titles": [FILMS[("oracle", user)][0]],
        "profile": "explicit",
        "ending": {"reason": "turn_limit", "turn": 3, "farewell": None},
        "turns": turns,
        "shift_events": shifts,
    }


def imported() -> dict:
    """A real dialogue: no hidden state, texts with markup that must stay text."""
    texts = [(f"{SCRIPT} anything like Alien?", f"Try {INJECTION} or Aliens."), ("Thanks & bye", "Enjoy!")]
    return {
        "session_id": IMPORTED,
        "session_index": 0,
        "system": "realdialogs",
        "seed": None,
        "catalog_sha": SHA,
        "config_sha": SHA,
        "liked_titles": [],
        "turns": [
            {
                "turn": i,
                "user_text": user_text,
                "user_meta": None,
                "system_text": reply,
                "system_constraints": [],
                "candidate_titles": [],
                "recommended_titles": ["Aliens"] if i == 1 else [],
                "mentioned_titles": [],
                "unknown_titles": ["<b>Fake Film</b>"] if i == 1 else [],
                "llm": None,
            }
            for i, (user_text, reply) in enumerate(texts, 1)
        ],
        "shift_events": [],
    }


def build_experiment(root: Path) -> dict:
    """The experiment's shards and tables under `root`; returns write_viewer's inputs and the records."""
    validator = session_validator(load_schema())
    records = {}
    shards = []
    for system in ("oracle", "template"):
        group = [simulated(system, user) for user in USERS]
        shards.append(root / "sessions" / system / "shard-0.jsonl")
        write_sessions(group, shards[-1], validator)
        records |= {r["session_id"]: r for r in group}
    shards.append(root / "sessions" / "realdialogs" / "shard-0.jsonl")
    write_sessions([imported()], shards[-1], validator)
    records[IMPORTED] = imported()

    sessions, turns = [], []
    for sid, record in records.items():
        success, tas, recovery = SCORES[sid]
        ids = {
            "system": record["system"],
            "session_id": sid,
            "session_index": record["session_index"],
            "seed": record["seed"] or 0,
        }
        sessions.append(
            {
                **ids,
                "turns": len(record["turns"]),
                "success": success,
                "tas": tas,
                "recovery_rate_cosine": recovery,
                "judge_proactiveness": 3.5 if sid == "oracle/s00000" else math.nan,
                "judge_coherence": 4.0 if sid == "oracle/s00000" else math.nan,
                "judge_coherence_sd": 0.5 if sid == "oracle/s00000" else math.nan,
                "judge_coherence_rationale": RATIONALE if sid == "oracle/s00000" else None,
                "judge_missing_reason": "the judge's reply did not parse" if sid == "template/s00001" else None,
                "shard": 0,
            }
        )
        for t in record["turns"]:
            tas_t = turn_tas(record["system"], record["session_index"], t["turn"])
            if sid == IMPORTED:
                tas_t = 0.33 if t["turn"] == 1 else math.nan
            turns.append({**ids, "turn": t["turn"], "cc": 0.5, "cr": 0.25, "copying": 0.0, "tas": tas_t, "shard": 0})
    tables = root / "tables"
    tables.mkdir(parents=True)
    pd.DataFrame(sessions).to_parquet(tables / "sessions.parquet")
    pd.DataFrame(turns).to_parquet(tables / "turns.parquet")
    return {
        "sessions_table": tables / "sessions.parquet",
        "turns_table": tables / "turns.parquet",
        "shards": shards,
        "records": records,
    }


def write(experiment: dict, output: Path, title: str = "Demo") -> dict:
    return viewer.write_viewer(
        experiment["sessions_table"], experiment["turns_table"], experiment["shards"], output, title=title
    )


def payload(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("window.crsevalData(") and text.endswith(");\n")
    return json.loads(text[len("window.crsevalData(") : -len(");\n")])


def listed(output: Path) -> dict[str, dict]:
    """list.js as session id -> {field or metric: value}."""
    data = payload(output / "list.js")
    names = [*data["fields"], *(c["name"] for c in data["columns"])]
    return {row[0]: dict(zip(names, row)) for row in data["rows"]}


def chunked(output: Path) -> dict[str, tuple[int, dict]]:
    """Every data/<n>.js as session id -> (n, session)."""
    found = {}
    for path in sorted((output / "data").glob("*.js")):
        data = payload(path)
        assert path.name == f"{data['chunk']}.js"
        for sid, session in data["sessions"].items():
            found[sid] = (data["chunk"], session)
    return found


@pytest.fixture
def experiment(tmp_path):
    return build_experiment(tmp_path / "results")


def test_the_page_is_one_self_contained_file(experiment, tmp_path):
    counts = write(experiment, tmp_path / "viewer")
    assert counts == {
        "sessions": 7,
        "systems": 3,
        "chunks": 1,
        "turns": 20,
        "unscored": 0,
        "without_record": 0,
        "bytes": sum(p.stat().st_size for p in (tmp_path / "viewer").rglob("*") if p.is_file()),
    }
    page = (tmp_path / "viewer" / "index.html").read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<link|@import|@font-face|url\(", page)
    assert "fetch(" not in page and "XMLHttpRequest" not in page
    # the style and the script inlined, the data through script tags beside the page
    assert "{{" not in page and ".chip.rec" in page and "window.crsevalData = function" in page
    assert re.findall(r"<script src=\"([^\"]+)\"", page) == ["list.js"]
    assert "<title>Demo</title>" in page


def test_the_list_holds_every_session_with_its_metrics(experiment, tmp_path):
    write(experiment, tmp_path / "viewer")
    rows = listed(tmp_path / "viewer")
    assert set(rows) == set(experiment["records"])
    assert rows["oracle/s00001"] == {
        "id": "oracle/s00001",
        "system": "oracle",
        "session_index": 1,
        "seed": 202,
        "profile": "explicit",
        "trial": 0,
        "turns": 3,
        "ending": "turn_limit",
        "chunk": 0,
        "success": 1,
        "tas": 0.25,
        "recovery_rate_cosine": None,  # NaN in the table
        "judge_proactiveness": None,
        "judge_coherence": None,
    }
    assert rows["template/s00002"]["tas"] == 0.0313  # rounded to 4 places
    assert rows["oracle/s00000"]["judge_coherence"] == 4 and rows["oracle/s00000"]["judge_proactiveness"] == 3.5
    assert rows[IMPORTED]["seed"] is None and rows[IMPORTED]["success"] is None and rows[IMPORTED]["tas"] == 0.2
    data = payload(tmp_path / "viewer" / "list.js")
    assert [c["name"] for c in data["columns"]] == [
        "success",
        "tas",
        "recovery_rate_cosine",
        "judge_proactiveness",
        "judge_coherence",
    ]
    assert data["columns"][1] == {
        "name": "tas",
        "label": "grounded TAS",
        "unit": "-gamma to alpha + beta",
        "better": 1,
        "visible": True,
    }
    assert data["systems"] == ["oracle", "realdialogs", "template"] and data["trials"] is False
    assert [n["name"] for n in data["turn_metrics"]] == ["cc", "cr", "copying", "tas"]


def test_each_chunk_holds_its_sessions_turns_with_the_per_turn_scores(experiment, tmp_path):
    write(experiment, tmp_path / "viewer")
    sessions = chunked(tmp_path / "viewer")
    rows = listed(tmp_path / "viewer")
    assert set(sessions) == set(rows) and all(rows[sid]["chunk"] == n for sid, (n, _) in sessions.items())
    oracle = sessions["oracle/s00001"][1]
    record = experiment["records"]["oracle/s00001"]
    assert [t["user_text"] for t in oracle["turns"]] == [t["user_text"] for t in record["turns"]]
    assert [t["system_text"] for t in oracle["turns"]] == [t["system_text"] for t in record["turns"]]
    assert [t["recommended_titles"] for t in oracle["turns"]] == [["Halloween"], ["The Thing"], ["Alien"]]
    assert [t["metrics"]["tas"] for t in oracle["turns"]] == [0.71, 0.72, 0.73]
    assert oracle["turns"][1]["metrics"] == {"cc": 0.5, "cr": 0.25, "copying": 0, "tas": 0.72}
    hidden = oracle["turns"][1]["user_meta"]
    assert hidden["said"] == [True, True] and hidden["disclosure"] == ["volunteer", "on_ask"]
    assert hidden["revealed"] == [{"field": "year", "value": "1980", "negated": True}]
    assert sessions["template/s00001"][1]["turns"][1]["unknown_titles"] == ["Moonlight Express"]
    shifted = sessions["oracle/s00000"][1]
    assert shifted["turns"][2]["user_meta"]["shift_event"] is True and shifted["shift_events"][0]["turn"] == 3
    assert shifted["judges"] == [
        {
            "judge": "judge",
            "missing_reason": None,
            "scores": [
                {"criterion": "proactiveness", "score": 3.5, "sd": None, "geval": None, "rationale": None},
                {"criterion": "coherence", "score": 4, "sd": 0.5, "geval": None, "rationale": RATIONALE},
            ],
        }
    ]
    assert sessions["template/s00001"][1]["judges"] == [
        {"judge": "judge", "missing_reason": "the judge's reply did not parse", "scores": []}
    ]
    assert sessions["template/s00000"][1]["judges"] == []
    real = sessions[IMPORTED][1]
    assert [t["user_meta"] for t in real["turns"]] == [None, None]
    assert [t["metrics"] for t in real["turns"]] == [
        {"cc": 0.5, "cr": 0.25, "copying": 0, "tas": 0.33},
        {"cc": 0.5, "cr": 0.25, "copying": 0},
    ]


def test_chunks_keep_a_users_sessions_together(experiment, tmp_path, monkeypatch):
    monkeypatch.setattr(viewer, "CHUNK_SIZE", 2)
    counts = write(experiment, tmp_path / "viewer")
    rows = listed(tmp_path / "viewer")
    # user 0 has three sessions (two systems and the imported dialogue): one chunk of three, not split
    assert counts["chunks"] == 3
    assert {sid: row["chunk"] for sid, row in rows.items()} == {
        IMPORTED: 0,
        "oracle/s00000": 0,
        "template/s00000": 0,
        "oracle/s00001": 1,
        "template/s00001": 1,
        "oracle/s00002": 2,
        "template/s00002": 2,
    }
    assert {sid: n for sid, (n, _) in chunked(tmp_path / "viewer").items()} == {s: r["chunk"] for s, r in rows.items()}
    # a later, smaller viewer in the same folder leaves no chunk of the earlier one behind
    monkeypatch.setattr(viewer, "CHUNK_SIZE", 100)
    write(experiment, tmp_path / "viewer")
    assert sorted(p.name for p in (tmp_path / "viewer" / "data").iterdir()) == ["0.js"]


def test_the_output_is_byte_identical_on_a_second_call(experiment, tmp_path):
    def files(folder: Path) -> dict[str, bytes]:
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    write(experiment, tmp_path / "a")
    first = files(tmp_path / "a")
    write(experiment, tmp_path / "a")
    write(experiment, tmp_path / "b")
    assert files(tmp_path / "a") == first == files(tmp_path / "b")
    assert sorted(first) == ["data/0.js", "index.html", "list.js"]


def test_markup_in_the_sessions_is_stored_as_data(experiment, tmp_path):
    write(experiment, tmp_path / "viewer", title="<b>Demo</b> & more")
    output = tmp_path / "viewer"
    for path in output.rglob("*.js"):
        text = path.read_text(encoding="utf-8")
        assert "<img" not in text and "<script" not in text and "<b>" not in text
    chunk = (output / "data" / "0.js").read_text(encoding="utf-8")
    assert "Try \\u003cimg src=x onerror=alert(1)\\u003e or Aliens." in chunk
    assert "Thanks \\u0026 bye" in chunk
    real = chunked(output)[IMPORTED][1]
    assert real["turns"][0]["system_text"] == f"Try {INJECTION} or Aliens."
    assert real["turns"][0]["user_text"] == f"{SCRIPT} anything like Alien?"
    assert real["turns"][0]["unknown_titles"] == ["<b>Fake Film</b>"]
    page = (output / "index.html").read_text(encoding="utf-8")
    assert "<title>&lt;b&gt;Demo&lt;/b&gt; &amp; more</title>" in page and "<b>Demo" not in page
    assert payload(output / "list.js")["title"] == "<b>Demo</b> & more"
    # the script never parses data as markup
    script = (viewer.ASSETS / "viewer.js").read_text(encoding="utf-8")
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", script)


def add_trial(experiment: dict, root: Path) -> None:
    """User 2 meets both systems a second time (trial 1), with other replies; the tables leave them out."""
    for system in ("oracle", "template"):
        again = json.loads(json.dumps(experiment["records"][f"{system}/s00002"]))
        again |= {"session_id": f"{system}/s00002/t1", "trial": 1}
        for turn in again["turns"]:
            turn["system_text"] = f"Trial 1: {system} says {turn['recommended_titles'][0]} again."
        shard = root / "sessions" / system / "shard-0-t1.jsonl"
        write_sessions([again], shard, session_validator(load_schema()))
        experiment["shards"].append(shard)
        experiment["records"][again["session_id"]] = again


def test_trials_and_missing_scores(experiment, tmp_path):
    """A repeated trial is listed with its number; a session the tables lack is listed without metrics."""
    add_trial(experiment, tmp_path / "results")
    counts = write(experiment, tmp_path / "viewer")
    assert counts["sessions"] == 9 and counts["unscored"] == 2
    rows = listed(tmp_path / "viewer")
    assert rows["oracle/s00002/t1"]["trial"] == 1 and rows["oracle/s00002/t1"]["tas"] is None
    assert payload(tmp_path / "viewer" / "list.js")["trials"] is True
    assert chunked(tmp_path / "viewer")["oracle/s00002/t1"][1]["turns"][0]["metrics"] == {}


def test_a_session_twice_in_the_shards_is_an_error(experiment, tmp_path):
    experiment["shards"].append(experiment["shards"][0])
    with pytest.raises(ValueError, match="oracle/s00000.*twice"):
        write(experiment, tmp_path / "viewer")


# A tool-using system (docs/own_recommender.md): user 1 meets "toolbot", whose turns record tool calls.
TOOL_SESSION = "toolbot/s00001"
NOT_JSON = '{"genre": "<script>alert(3)</script>'


def tool_call(step, name, arguments, status="ok", result=None, error=None, latency=0.25, text=None) -> dict:
    call = {"step": step, "name": name, "arguments": arguments, "status": status}
    if text is not None:
        call["arguments_text"] = text
    return call | {"result": result, "error": error, "latency_s": latency}


def tool_record() -> dict:
    """Turn 1 searches (markup in the arguments and in a title found), reads an unknown film (an error), reads
    a film, commits it, and calls once more after the commit (ignored); turn 2 sends arguments that are no JSON
    (an error), searches, and stops at the call bound (an error); turn 3 answers without any call."""
    record = simulated("oracle", 1) | {"session_id": TOOL_SESSION, "system": "toolbot"}
    first, second, third = record["turns"]
    found = {"films": [{"id": 7, "title": "Halloween"}, {"id": 8, "title": "<b>The Thing</b>"}], "total": 12}
    committed = {"films": [found["films"][0]]}
    first |= {
        "system_text": "Try Halloween.",
        "recommended_titles": ["Halloween"],
        "mentioned_titles": [],
        "committed_titles": ["Halloween"],
        "tool_turn_end": "recommend",
        "tool_calls": [
            tool_call(1, "search_films", {"genre": ["horror"], "keywords": INJECTION}, result=found, latency=0.5),
            tool_call(2, "film_details", {"id": 99999}, "error", error="unknown film id: 99999", latency=0.001),
            tool_call(2, "film_details", {"id": 7}, result={"id": 7, "title": "Halloween"}, latency=0.0123456),
            tool_call(3, "recommend", {"film_ids": [7], "message": "Try Halloween."}, result=committed),
            tool_call(3, "search_films", {"genre": "comedy"}, "ignored", error="after the turn's recommend", latency=0),
        ],
    }
    second |= {
        "system_text": "Let me look further.",
        "recommended_titles": [],
        "mentioned_titles": [],
        "tool_turn_end": "bound",
        "tool_calls": [
            tool_call(1, "search_films", None, "error", error="arguments not JSON: Expecting ','", text=NOT_JSON),
            tool_call(2, "search_films", {"genre": "horror"}, result={"films": [], "total": 0}),
            tool_call(3, "search_films", {"genre": "horror"}, "error", error="too many calls: the bound is 2"),
        ],
    }
    third |= {
        "system_text": "Anything else?",
        "recommended_titles": [],
        "mentioned_titles": [],
        "tool_turn_end": "message",
        "tool_calls": [],
    }
    return record


def add_tool_session(experiment: dict, root: Path, record: dict | None = None) -> dict:
    """The toolbot's session in a shard of its own (written without the schema, which gets the tool fields
    elsewhere); the tables leave it out."""
    record = record or tool_record()
    shard = root / "sessions" / "toolbot" / "shard-0.jsonl"
    write_sessions([record], shard)
    experiment["shards"].append(shard)
    experiment["records"][record["session_id"]] = record
    return record


def test_a_turns_tool_calls_are_written_bounded_and_summarised(experiment, tmp_path):
    add_tool_session(experiment, tmp_path / "results")
    write(experiment, tmp_path / "viewer")
    sessions = chunked(tmp_path / "viewer")
    first, second, third = (t["tools"] for t in sessions[TOOL_SESSION][1]["turns"])
    assert {k: v for k, v in first.items() if k != "calls"} == {
        "count": 5,
        "errors": 1,
        "ignored": 1,
        "names": [["search_films", 2], ["film_details", 2], ["recommend", 1]],
        "more_names": 0,
        "more": 0,
        "committed": ["Halloween"],
        "end": "recommend",
    }
    assert first["calls"] == [
        {
            "step": 1,
            "name": "search_films",
            "arguments": '{"genre":["horror"],"keywords":"<img src=x onerror=alert(1)>"}',
            "raw": False,
            "status": "ok",
            "result": "2 of 12 found: Halloween · <b>The Thing</b>",
            "error": None,
            "latency_s": 0.5,
        },
        {
            "step": 2,
            "name": "film_details",
            "arguments": '{"id":99999}',
            "raw": False,
            "status": "error",
            "result": None,
            "error": "unknown film id: 99999",
            "latency_s": 0.001,
        },
        {
            "step": 2,
            "name": "film_details",
            "arguments": '{"id":7}',
            "raw": False,
            "status": "ok",
            "result": "Halloween (id 7)",
            "error": None,
            "latency_s": 0.0123,
        },
        {
            "step": 3,
            "name": "recommend",
            "arguments": '{"film_ids":[7],"message":"Try Halloween."}',
            "raw": False,
            "status": "ok",
            "result": "committed: Halloween",
            "error": None,
            "latency_s": 0.25,
        },
        {
            "step": 3,
            "name": "search_films",
            "arguments": '{"genre":"comedy"}',
            "raw": False,
            "status": "ignored",
            "result": None,
            "error": "after the turn's recommend",
            "latency_s": 0,
        },
    ]
    # arguments that were no JSON: the excerpt the record kept, marked raw
    assert second["calls"][0] | {"error": None} == {
        "step": 1,
        "name": "search_films",
        "arguments": NOT_JSON,
        "raw": True,
        "status": "error",
        "result": None,
        "error": None,
        "latency_s": 0.25,
    }
    assert second["calls"][1]["result"] == "0 of 0 found"
    assert (second["count"], second["errors"], second["committed"], second["end"]) == (3, 2, None, "bound")
    assert third == {
        "count": 0,
        "errors": 0,
        "ignored": 0,
        "names": [],
        "more_names": 0,
        "calls": [],
        "more": 0,
        "committed": None,
        "end": "message",
    }
    # the other systems' turns carry nothing new: their chunk is what it was
    for sid, (_, session) in sessions.items():
        assert sid == TOOL_SESSION or all("tools" not in t for t in session["turns"])


def test_markup_in_tool_calls_is_stored_as_data(experiment, tmp_path):
    add_tool_session(experiment, tmp_path / "results")
    write(experiment, tmp_path / "viewer")
    chunk = (tmp_path / "viewer" / "data" / "0.js").read_text(encoding="utf-8")
    assert "<img" not in chunk and "<script" not in chunk and "<b>" not in chunk
    assert '\\"keywords\\":\\"\\u003cimg src=x onerror=alert(1)\\u003e\\"' in chunk
    assert "Halloween · \\u003cb\\u003eThe Thing\\u003c/b\\u003e" in chunk
    assert '{\\"genre\\": \\"\\u003cscript\\u003ealert(3)\\u003c/script\\u003e' in chunk


def test_thousands_of_calls_in_a_turn_stay_bounded(experiment, tmp_path):
    """A turn with 3,000 recorded calls, each with 5,000 characters of arguments and of error, and 3,000 tool
    names: the chunk carries the first 50 calls, their texts cut to 300 characters, and 8 names; the rest is
    counted."""
    record = tool_record()
    long = "x" * 5000
    record["turns"][1]["tool_calls"] = [
        tool_call(i, f"tool_{i:04d}_{long}", {"q": long}, "error", error=f"bad: {long}") for i in range(1, 3001)
    ]
    add_tool_session(experiment, tmp_path / "results", record)
    write(experiment, tmp_path / "viewer")
    assert (tmp_path / "results" / "sessions" / "toolbot" / "shard-0.jsonl").stat().st_size > 30_000_000
    tools = chunked(tmp_path / "viewer")[TOOL_SESSION][1]["turns"][1]["tools"]
    assert (tools["count"], tools["errors"], tools["more"], len(tools["calls"])) == (3000, 3000, 2950, 50)
    assert len(tools["names"]) == 8 and tools["more_names"] == 2992 and tools["names"][0][1] == 1
    assert tools["calls"][49]["step"] == 50
    call = tools["calls"][0]
    assert len(call["name"]) == viewer.TOOL_NAME and call["name"].endswith("…")
    assert len(call["arguments"]) == len(call["error"]) == viewer.TOOL_TEXT and call["arguments"].endswith("x…")
    assert (tmp_path / "viewer" / "data" / "0.js").stat().st_size < 100_000
