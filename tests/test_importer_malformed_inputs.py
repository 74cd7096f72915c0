"""Importer and catalog hardening: unsafe model names, colliding session numbers, several pasted records in
one message, titles that differ only by white space, and the malformed inputs the fuzz tests found."""

import json
import os
import runpy
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
from conftest import REPO
from hypothesis import example, given, settings
from hypothesis import strategies as st

from crseval.catalog.build import CatalogError, load_catalog
from crseval.core.session_records import load_schema
from crseval.corpora.dialogue import MAX_DEPTH, unusable
from crseval.corpora.formats import sessions_per_system as count_sessions
from crseval.corpora.manifest import build_manifest, shard_slices, write_if_changed
from crseval.corpora.thesis_logs import LogImportError, import_logs, read_log, repair_user_text

SCRIPT = REPO / "workflow" / "scripts" / "import_logs.py"
SCHEMA = REPO / "src" / "crseval" / "core" / "schemas" / "session.schema.yaml"
RENAMED = "model name mapped to a safe folder name"
RENUMBERED = "session number taken or missing: next free number assigned"


def log(path, model="mini:1b", reply="Try Heat.", **extra):
    path.parent.mkdir(parents=True, exist_ok=True)
    conversation = [{"speaker": "USER", "text": "A crime film?"}, {"speaker": "SYSTEM", "text": reply}]
    path.write_text(json.dumps({"model_name": model, "true_genre": "crime", "conversation": conversation, **extra}))
    return path


def sessions_outside(root: Path, inside: Path) -> list[Path]:
    """Session files written anywhere under `root` but not inside `inside`."""
    return [p for p in root.rglob("*.jsonl") if inside not in p.parents]


def run_cli(logs, index_dir, out):
    from crseval.cli import main

    return main(["import-logs", *map(str, logs), "--catalog-index", str(index_dir), "--out", str(out)])


# ---------------------------------------------------------------- 1. model names as folder names


def test_cli_keeps_a_climbing_model_name_inside_the_output_folder(tmp_path, index_dir):
    out = tmp_path / "a" / "b" / "out"
    source = log(tmp_path / "logs" / "evil_0.json", model="../../ESCAPED")
    assert run_cli([source], index_dir, out) == 0
    assert sessions_outside(tmp_path, out) == []
    record = json.loads((out / "ESCAPED.jsonl").read_text())
    assert record["system"] == "ESCAPED" and record["session_id"] == "ESCAPED/evil_0"
    assert record["provenance"]["model_name"] == "../../ESCAPED"
    report = json.loads((out / "import_report.json").read_text())
    assert report["renamed_systems"] == {"../../ESCAPED": "ESCAPED"}
    assert report["rules_applied"][RENAMED] == 1


def test_cli_keeps_an_absolute_model_name_inside_the_output_folder(tmp_path, index_dir):
    target = tmp_path / "elsewhere" / "ABS"
    target.parent.mkdir()
    source = log(tmp_path / "logs" / "abs_0.json", model=str(target))
    assert run_cli([source], index_dir, tmp_path / "out") == 0
    assert not target.with_suffix(".jsonl").exists() and sessions_outside(tmp_path, tmp_path / "out") == []
    (written,) = (tmp_path / "out").glob("*.jsonl")
    assert json.loads(written.read_text())["provenance"]["model_name"] == str(target)


def test_two_model_names_with_one_slug_are_an_error(tmp_path, index_dir, capsys):
    files = [
        log(tmp_path / "one_0.json", model="../../ESCAPED"),
        log(tmp_path / "two_0.json", model="ESCAPED", reply="Casino."),
    ]
    with pytest.raises(
        LogImportError,
        match=r"model names '\.\./\.\./ESCAPED' \(.*one_0\.json\) and 'ESCAPED' "
        r"\(.*two_0\.json\) both become the system folder 'ESCAPED'",
    ):
        import_logs(files, None, "a" * 64, "b" * 64)
    assert run_cli(files, index_dir, tmp_path / "out") == 2
    assert "both become the system folder 'ESCAPED'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_one_unsafe_name_in_several_files_is_counted_per_file(tmp_path):
    files = [
        log(tmp_path / "m_0.json", model="my model/v1"),
        log(tmp_path / "m_1.json", model="my model/v1", reply="Up."),
    ]
    sessions, report = import_logs(files, None, "a" * 64, "b" * 64)
    assert list(sessions) == ["my-model-v1"]
    assert report["renamed_systems"] == {"my model/v1": "my-model-v1"}
    assert report["rules_applied"][RENAMED] == 2
    assert count_sessions(list(map(str, files)), "thesis_logs") == {"my-model-v1": 2}


def test_safe_model_names_are_unchanged_and_records_match_the_schema(tmp_path):
    sessions, report = import_logs([log(tmp_path / "m_0.json", model="qwen:7b")], None, "a" * 64, "b" * 64)
    (record,) = sessions["qwen:7b"]
    assert record["provenance"]["model_name"] == "qwen:7b"
    assert report["renamed_systems"] == {} and RENAMED not in report["rules_applied"]
    jsonschema.Draft202012Validator(load_schema(SCHEMA)).validate(record)


def test_cli_refuses_a_system_path_outside_the_output_folder(tmp_path, index_dir, monkeypatch, capsys):
    """Defence in depth: should an unsafe system name ever come back from the importer, nothing is written."""
    import crseval.cli

    source = log(tmp_path / "m_0.json")
    sessions, report = import_logs([source], None, "a" * 64, "b" * 64)
    monkeypatch.setattr(crseval.cli, "import_logs", lambda *args: ({"../escaped": sessions["mini:1b"]}, report))
    assert run_cli([source], index_dir, tmp_path / "out") == 2
    assert "system '../escaped' would be written outside the output folder" in capsys.readouterr().err
    assert list(tmp_path.rglob("*.jsonl")) == []


def planned_import(tmp_path, index_dir, logs, shard_size=2):
    """The `snakemake` object of each import_logs job, its slice planned and written as
    workflow/rules/common.smk plans and writes it; and the results folder."""
    results = tmp_path / "results" / "exp"
    sessions_dir = results / "sessions"
    manifest = build_manifest([str(p) for p in logs], "thesis_logs", sessions_dir / "corpus_manifest.json")
    jobs = []
    for (system, shard), piece in shard_slices(manifest, shard_size).items():
        slice_file = sessions_dir / "import" / system / f"{shard}.slice.json"
        write_if_changed(slice_file, piece)
        jobs.append(
            SimpleNamespace(
                input=SimpleNamespace(
                    slice=str(slice_file),
                    films=str(index_dir / "films.parquet"),
                    concepts=str(index_dir / "concepts.parquet"),
                    catalog_summary=str(index_dir / "summary.json"),
                    schema=str(SCHEMA),
                ),
                params=SimpleNamespace(shard_size=shard_size, import_format="thesis_logs"),
                output=SimpleNamespace(
                    shard=str(sessions_dir / system / f"shard-{shard}.jsonl"),
                    films=str(sessions_dir / "import" / system / f"{shard}.films.json"),
                ),
                wildcards=SimpleNamespace(system=system, shard=str(shard)),
                log=[str(tmp_path / "logs" / system / f"{shard}.log")],
            )
        )
    return jobs, results


def run_script(snakemake, monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # as Snakemake does for a rule script
    runpy.run_path(str(SCRIPT), init_globals={"snakemake": snakemake})


def test_workflow_script_writes_unsafe_model_names_under_their_slug(tmp_path, index_dir, monkeypatch):
    source = log(tmp_path / "logs" / "e_0.json", model="../../ESCAPED")
    jobs, results = planned_import(tmp_path, index_dir, [source])
    assert [job.wildcards.system for job in jobs] == ["ESCAPED"]  # planned under the slug
    run_script(jobs[0], monkeypatch)
    assert sessions_outside(tmp_path, results / "sessions") == []
    record = json.loads((results / "sessions" / "ESCAPED" / "shard-0.jsonl").read_text())
    assert record["provenance"]["model_name"] == "../../ESCAPED"


def test_workflow_script_imports_only_the_slice_its_job_was_planned_for(tmp_path, index_dir, monkeypatch):
    """A slice that names another system or shard than the job's own (edited by hand, or left from another
    plan) is refused before anything is read or written."""
    sources = [log(tmp_path / "logs" / f"e_{k}.json", model=m) for k, m in enumerate(["a:1b", "b:1b"])]
    jobs, results = planned_import(tmp_path, index_dir, sources)
    first, second = jobs
    piece = json.loads(Path(first.input.slice).read_text())
    Path(first.input.slice).write_text(json.dumps({**piece, "system": "../../x"}))
    with pytest.raises(ValueError, match=r"is for system '\.\./\.\./x', shard 0, not system 'a:1b', shard 0"):
        run_script(first, monkeypatch)
    first.input.slice = second.input.slice
    with pytest.raises(ValueError, match=r"is for system 'b:1b', shard 0, not system 'a:1b', shard 0"):
        run_script(first, monkeypatch)
    assert list(tmp_path.rglob("*.jsonl")) == []
    run_script(second, monkeypatch)
    assert [p.relative_to(results) for p in results.rglob("*.jsonl")] == [Path("sessions/b:1b/shard-0.jsonl")]


# ---------------------------------------------------------------- 2. session numbers and ids


def test_unnumbered_log_gets_the_smallest_free_number(tmp_path):
    files = [
        log(tmp_path / "m_0.json"),
        log(tmp_path / "m_2.json", reply="Casino."),
        log(tmp_path / "m.json", reply="Up."),
    ]
    sessions, report = import_logs(files, None, "a" * 64, "b" * 64)
    assert [(r["provenance"]["source_file"], r["session_index"]) for r in sessions["mini:1b"]] == [
        ("m_0.json", 0),
        ("m.json", 1),
        ("m_2.json", 2),
    ]
    assert report["rules_applied"][RENUMBERED] == 1


def test_same_number_and_stem_in_two_folders_stay_distinct(tmp_path):
    files = [
        log(tmp_path / "dirA" / "x_0.json"),
        log(tmp_path / "dirB" / "x_0.json", reply="Casino."),
        log(tmp_path / "dirA" / "x_2.json", reply="Up."),
        log(tmp_path / "dirB" / "x.json", reply="Scream."),
    ]
    sessions, report = import_logs(files, None, "a" * 64, "b" * 64)
    records = sessions["mini:1b"]
    by_file = {(Path(r["provenance"]["source_file"]).name, r["turns"][0]["system_text"]): r for r in records}
    assert {key: r["session_index"] for key, r in by_file.items()} == {
        ("x_0.json", "Try Heat."): 0,
        ("x_2.json", "Up."): 2,
        ("x.json", "Scream."): 1,
        ("x_0.json", "Casino."): 3,
    }
    assert [r["session_index"] for r in records] == [0, 1, 2, 3]
    ids = [r["session_id"] for r in records]
    assert len(set(ids)) == len(ids) == 4
    assert by_file[("x_0.json", "Try Heat.")]["session_id"] == "mini:1b/x_0"
    assert by_file[("x_0.json", "Casino.")]["session_id"] == "mini:1b/x_0#3"
    assert report["rules_applied"][RENUMBERED] == 2


def test_a_session_number_too_long_for_a_table_counts_as_missing(tmp_path):
    files = [log(tmp_path / "m_1.json"), log(tmp_path / "m_99999999999999999999.json", reply="Up.")]
    sessions, report = import_logs(files, None, "a" * 64, "b" * 64)
    assert [(r["session_id"], r["session_index"]) for r in sessions["mini:1b"]] == [
        ("mini:1b/m_99999999999999999999", 0),
        ("mini:1b/m_1", 1),
    ]
    assert report["rules_applied"][RENUMBERED] == 1


# ---------------------------------------------------------------- 3. pasted records


def test_two_pasted_records_are_replaced_one_by_one():
    report = Counter()
    text = "I like {'name': 'Heat', 'year': '1995'} and also Ran, {'name': 'Alien', 'year': '1979'} what else?"
    assert repair_user_text(text, report) == "I like Heat and also Ran, Alien what else?"
    assert report == {"structure pasted into a user turn: replaced by the film name": 2}


def test_pasted_record_braces_in_quotes_and_truncation():
    report = Counter()
    text = "{'name': 'Heat', 'plot': 'a } and a {'} or {\"name\": \"Alien\", \"plot\": \"A crew {finds"
    assert repair_user_text(text, report) == "Heat or Alien"
    text = "Is {'year': '1995', 'genre': ['Crime']} good? Or {'name': 'Up'}?"
    assert repair_user_text(text, report) == "Is good? Or Up?"
    assert report == {
        "structure pasted into a user turn: replaced by the film name": 3,
        "structure pasted into a user turn: removed": 1,
    }


# ---------------------------------------------------------------- 4. catalog titles


def test_titles_differing_only_by_white_space_are_one_film(tmp_path):
    record = {"name": "Heat", "year": "1995", "genre": ["Crime"], "plot": "Robbers.", "original_id": "1"}
    path = tmp_path / "catalog.json"
    path.write_text(
        json.dumps(
            {
                "Heat": record,
                "Heat ": {**record, "year": "1996"},
                " The  Third\tMan": {**record, "name": "The Third Man"},
            }
        )
    )
    films, report = load_catalog(path)
    assert [(f.title, f.year) for f in films] == [("Heat", "1995"), ("The Third Man", "1995")]
    assert [f.film_id for f in films] == [0, 1]
    assert report.defects == {
        "title with surrounding or repeated white space (cleaned)": 2,
        "repeated title key (first record kept)": 1,
    }
    assert report.as_dict()["repaired_defects"]["repeated title key (first record kept)"]["examples"] == ["'Heat '"]


# ---------------------------------------------------------------- 5. malformed logs found by fuzzing


@pytest.mark.parametrize(
    "content, pattern",
    [
        ('{"model_name": "m", "conversation": [], "n": 1' + "0" * 5000 + "}", r"cannot be read as JSON"),
        ('{"model_name": "m", "conversation": ' + "[" * 100_000 + "]" * 100_000 + "}", r"cannot be read as JSON"),
        (
            '{"model_name": "m", "conversation": [], "x": ' + "[" * 100 + "]" * 100 + "}",
            r"nested deeper than 64 levels",
        ),
        ('{"model_name": "m\\ud800", "conversation": []}', r"not valid Unicode"),
        ('{"model_name": "m", "conversation": [{"speaker": "USER", "text": "\\udfff"}]}', r"not valid Unicode"),
    ],
)
def test_unreadable_logs_fail_with_a_named_error(tmp_path, content, pattern):
    bad = tmp_path / "bad_1.json"
    bad.write_text(content)
    with pytest.raises(LogImportError, match=rf"bad_1\.json: .*{pattern}"):
        read_log(bad)


def test_odd_constraints_and_true_genre_are_repaired(tmp_path):
    source = tmp_path / "m_0.json"
    constraints = {"genre": [["crime"], {"a": 1}, "crime"], "year": 1e300, "actor": None}
    conversation = [
        {"speaker": "USER", "text": "Crime?"},
        {"speaker": "SYSTEM", "text": "Heat.", "constraints": constraints},
    ]
    source.write_text(json.dumps({"model_name": "m", "true_genre": ["crime"], "conversation": conversation}))
    sessions, report = import_logs([source], None, "a" * 64, "b" * 64)
    (record,) = sessions["m"]
    assert record["turns"][0]["system_constraints"] == [{"field": "genre", "value": "crime", "negated": False}]
    assert record["provenance"]["true_genre"] is None
    assert report["rules_applied"]["true_genre not a string: set to null"] == 1
    jsonschema.Draft202012Validator(load_schema(SCHEMA)).validate(record)


def test_a_blank_title_takes_the_name_and_is_counted(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text(
        json.dumps(
            {
                "Heat": {"name": "Heat", "plot": "Robbers.", "original_id": "1"},
                " ": {"name": "Heat", "plot": "Other.", "original_id": "2"},
            }
        )
    )
    films, report = load_catalog(path)
    assert [(f.title, f.plot) for f in films] == [("Heat", "Robbers.")]
    assert report.defects == {"blank title (the film's name used)": 1, "repeated title key (first record kept)": 1}


@pytest.mark.parametrize(
    "content, pattern",
    [
        ('{"Heat": {"name": "Heat", "n": 1' + "0" * 5000 + "}}", r"not valid JSON here: Exceeds the limit"),
        ('{"Heat": {"name": "Heat", "genre": ' + "[" * 100_000 + "]" * 100_000 + "}}", r"nested too deeply"),
        ('{"Heat": {"name": "Heat", "genre": ' + "[" * 100 + "]" * 100 + "}}", r"film 'Heat', field 'genre': nested"),
        ('{"Heat": {"name": "Heat", "actor": ["Al \\ud800"]}}', r"film 'Heat', field 'actor': text is not valid"),
        ('{"He\\udc00at": {"name": "Heat"}}', r"film 'He\\udc00at': title is not valid Unicode"),
    ],
)
def test_catalog_json_that_parses_but_cannot_be_used_is_a_catalog_error(tmp_path, content, pattern):
    path = tmp_path / "catalog.json"
    path.write_text(content)
    with pytest.raises(CatalogError, match=pattern):
        load_catalog(path)


def test_a_file_name_that_is_not_utf8_still_gives_a_writable_record(tmp_path):
    source = log(tmp_path / os.fsdecode(b"bad\xff_0.json"))
    sessions, _ = import_logs([source], None, "a" * 64, "b" * 64)
    (record,) = sessions["mini:1b"]
    assert record["provenance"]["source_file"] == "bad\ufffd_0.json" and record["session_index"] == 0
    json.dumps(record, ensure_ascii=False).encode("utf-8")


def depth_and_surrogate(value, depth=1):
    """What `unusable` decides, by its plain recursive definition: (deepest level, any lone surrogate)."""
    if isinstance(value, str):
        return depth, any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    parts = [p for pair in value.items() for p in pair] if isinstance(value, dict) else value
    if not isinstance(value, (dict, list)) or not parts:
        return depth, False
    found = [depth_and_surrogate(p, depth + 1) for p in parts]
    return max(d for d, _ in found), any(s for _, s in found)


json_values = st.recursive(
    st.none() | st.integers() | st.text(alphabet=st.sampled_from("ab\ud800\udfff\\u")),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["k", "\udc00"]), inner, max_size=2),
    max_leaves=40,
)


@given(value=json_values, nesting=st.integers(0, 70))
@example(value="\ud800\udfff", nesting=0)  # a pair: lone in Python, one character once written and read back
@settings(max_examples=300, deadline=None)
def test_unusable_json_is_found_with_or_without_the_text_it_was_parsed_from(value, nesting):
    """The walk over containers, and the short cut that skips strings when the text spells no surrogate,
    decide as the plain definition: deeper than MAX_DEPTH levels, or a lone surrogate anywhere."""
    for _ in range(nesting):
        value = [value]
    text = json.dumps(value)  # escapes surrogates as \udXXX, as a buggy writer would
    reread = json.loads(text)  # a high and a low surrogate escaped side by side read back as one character
    for checked, found in ((value, unusable(value)), (value, unusable(value, text)), (reread, unusable(reread, text))):
        deepest, surrogate = depth_and_surrogate(checked)
        if deepest > MAX_DEPTH:
            assert found == f"nested deeper than {MAX_DEPTH} levels" or (surrogate and "surrogate" in found)
        elif surrogate:
            assert "lone surrogate" in found
        else:
            assert found is None
