"""Texts holding U+2028, U+2029, U+0085 and the other characters besides "\\n" that str.splitlines() ends a
line at come back exactly through import, simulation, scoring, aggregation, the viewer and the realism
reading: JSON lines end at "\\n" only (crseval.core.io)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, default_config, model_free_scorer, shard_inputs

from crseval.checks.user_realism import load_reference, simulated_turns
from crseval.cli import main
from crseval.core.io import JsonLinesError, json_line, read_json_lines, write_json_lines
from crseval.core.session_records import read_sessions, read_shards
from crseval.metrics.scorer import with_labels
from crseval.reports.viewer import write_viewer
from crseval.simulate.sessions import load_progress
from crseval.simulate.shard import build_shard_runner
from crseval.statistics.aggregate import model_metrics, to_table, write_shard_tables

BREAKS = ("\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")


def holding_every_break(opening: str) -> str:
    """`opening`, then a word after each of the characters."""
    return opening + "".join(f"{char}word{i}" for i, char in enumerate(BREAKS)) + "."


ASKED = holding_every_break("A crime film please")
ANSWERED = holding_every_break("Try Heat")

BREAKING_SYSTEM = f'''
class Breaks:
    """Answers every turn with a reply that holds each of the characters."""

    def start_session(self, session_id, seed):
        pass

    def respond(self, turn, user_text, history):
        return {ANSWERED!r}
'''


def corpus(path: Path) -> Path:
    """Two invented dialogues of one system in the jsonl import format, the characters in both speakers' texts."""
    lines = [
        {
            "system": "imported",
            "dialogue_id": f"d{n}",
            "turns": [{"role": "user", "text": ASKED}, {"role": "system", "text": ANSWERED}] * 2,
            "user_id": f"u{n}",
        }
        for n in range(2)
    ]
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def simulate(catalog_files: Path, tmp_path: Path, monkeypatch, output: Path) -> None:
    """Two sessions of a `python` system whose replies hold the characters, as the simulate rule makes them."""
    (tmp_path / "breaking_system.py").write_text(BREAKING_SYSTEM, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = default_config()
    config["simulator"]["templates"] = str(REPO / config["simulator"]["templates"])
    runner = build_shard_runner(
        system={"name": "mine", "agent": "python", "entry_point": "breaking_system:Breaks"},
        simulator=config["simulator"],
        agent=config["agent"],
        experiment_seed=3,
        turns=4,
        **shard_inputs(catalog_files, tmp_path),
    )
    runner.run(range(2), progress=tmp_path / "progress.jsonl", output=output)


def score(catalog_files: Path, shards: list[Path], tables: Path) -> tuple[list[Path], list[Path]]:
    """Each shard scored into its own session and turn tables, as the score rule writes them."""
    scoring = default_config()["scoring"]
    settings = {  # every family that needs no trained topic model or sentence embedder
        **scoring,
        "metrics": [name for name in scoring["metrics"] if name != "cas"],
        "response_stats": {**scoring["response_stats"], "embeddings": False},
    }
    scorer = model_free_scorer(catalog_files, settings)
    session_tables, turn_tables = [], []
    for shard in shards:
        records = read_sessions(shard)
        sessions, turns = scorer.score(records)
        session_tables.append(tables / f"{shard.parent.name}.sessions.parquet")
        turn_tables.append(tables / f"{shard.parent.name}.turns.parquet")
        tables.mkdir(parents=True, exist_ok=True)
        with_labels(sessions, records).to_parquet(session_tables[-1], index=False)
        turns.to_parquet(turn_tables[-1], index=False)
    return session_tables, turn_tables


def test_every_line_break_survives_import_simulation_scoring_the_viewer_and_realism(
    catalog_files, tmp_path, monkeypatch
):
    source = corpus(tmp_path / "corpus.jsonl")
    out = tmp_path / "imported"
    arguments = ["import-logs", str(source), "--format", "jsonl", "--catalog-index", str(catalog_files)]
    assert main([*arguments, "--out", str(out)]) == 0
    sessions_dir = tmp_path / "results" / "sessions"
    imported = sessions_dir / "imported" / "shard-0.jsonl"
    imported.parent.mkdir(parents=True)
    shutil.copy(out / "imported.jsonl", imported)
    simulated = sessions_dir / "mine" / "shard-0.jsonl"
    simulate(catalog_files, tmp_path, monkeypatch, simulated)
    shards = [imported, simulated]
    for shard in shards:  # one line per session, whatever the texts hold
        assert shard.read_bytes().count(b"\n") == 2 and not any(c in shard.read_text("utf-8") for c in BREAKS)

    records = {r["session_id"]: r for shard in shards for r in read_sessions(shard)}
    assert sorted(records) == ["imported/d0", "imported/d1", "mine/s00000", "mine/s00001"]
    for session_id, record in records.items():
        assert record["turns"] and all(turn["system_text"] == ANSWERED for turn in record["turns"])
        if session_id.startswith("imported/"):
            assert all(turn["user_text"] == ASKED for turn in record["turns"])

    session_tables, turn_tables = score(catalog_files, shards, tmp_path / "scored")
    sessions = pd.concat([pd.read_parquet(p) for p in session_tables], ignore_index=True)
    sessions_table = tmp_path / "tables" / "sessions.parquet"
    sessions_table.parent.mkdir()
    to_table(sessions).to_pandas().to_parquet(sessions_table, index=False)
    turns_table = tmp_path / "tables" / "turns.parquet"
    assert write_shard_tables(turn_tables, [0, 0], "turns", turns_table) == sum(
        len(r["turns"]) for r in records.values()
    )
    assert sorted(model_metrics(sessions, resamples=20, seed=0)["model"]) == ["imported", "mine"]

    counts = write_viewer(sessions_table, turns_table, shards, tmp_path / "viewer")
    assert counts["sessions"] == 4 and counts["unscored"] == 0
    text = (tmp_path / "viewer" / "data" / "0.js").read_text(encoding="utf-8")
    shown = json.loads(text.removeprefix("window.crsevalData(").removesuffix(");\n"))["sessions"]
    assert {t["system_text"] for s in shown.values() for t in s["turns"]} == {ANSWERED}
    assert {t["user_text"] for s in shown.values() if s["system"] == "imported" for t in s["turns"]} == {ASKED}

    users, _ = simulated_turns(read_shards(shards), {"imported": "people", "mine": "explicit"})
    assert users["people"].texts == [ASKED] * 4 and len(users[records["mine/s00000"]["profile"]].texts) > 0
    assert load_reference(source, "jsonl").real.texts == [ASKED] * 4


def test_a_progress_file_with_the_characters_resumes(tmp_path):
    """A killed shard's progress lines hold the replies as written; the re-run keeps every finished session
    and drops the cut line (and a damaged line with those after it: simulated again)."""
    path = tmp_path / "progress.jsonl"
    done = [{"session_index": i, "config_sha": "A", "text": ANSWERED} for i in range(3)]
    path.write_text("".join(json_line(r) for r in done) + '{"session_index": 3, "te', encoding="utf-8")
    assert load_progress(path, "A") == dict(enumerate(done))
    assert path.read_text(encoding="utf-8") == "".join(json_line(r) for r in done)
    damaged = json_line(done[0]) + '{"session_index": 1, "te\n' + json_line(done[2])  # from a damaged line on
    path.write_text(damaged, encoding="utf-8")
    assert load_progress(path, "A") == {0: done[0]} and path.read_text(encoding="utf-8") == json_line(done[0])


@pytest.mark.parametrize("char", BREAKS)
def test_the_writer_escapes_the_character_and_the_reader_gives_it_back(tmp_path, char):
    path = tmp_path / "values.jsonl"
    values = [{f"key{char}": f"a{char}b"}, [char], char]
    write_json_lines(values, path)
    assert path.read_text(encoding="utf-8").count("\n") == 3 and char not in path.read_text(encoding="utf-8")
    assert read_json_lines(path) == values


def test_a_line_written_raw_by_an_older_writer_still_reads(tmp_path):
    """A line is what lies between two "\\n": a raw U+2028 inside a string is part of it."""
    path = tmp_path / "old.jsonl"
    path.write_text('{"a": "x\u2028y\x85z"}\n\n{"b": 1}\n', encoding="utf-8")
    assert read_json_lines(path) == [{"a": "x\u2028y\x85z"}, {"b": 1}]


def test_a_line_that_is_not_json_names_the_file_and_the_line(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"a": 1}\n\n{"a": "cut\n', encoding="utf-8")
    with pytest.raises(JsonLinesError, match=rf"^{path}, line 3: not JSON: Unterminated string"):
        read_json_lines(path)
    path.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(JsonLinesError, match=rf"^{path}, line 2: not UTF-8"):
        read_json_lines(path)
