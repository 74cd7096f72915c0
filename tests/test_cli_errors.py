"""The command line on bad input: `crseval verify` names what is malformed in provenance.json or the configfile,
and `crseval import-logs` names an output path that is a file or lies under one, and a catalog index it cannot
read, before anything is read or written."""

from __future__ import annotations

import json

import pytest

from crseval.cli import main

# --- the command line -----------------------------------------------------------------------------------------------

MALFORMED = {
    "a list": ([1, 2], "holds a JSON list, not an object"),
    "schema_version text": ({"schema_version": "2", "outputs": []}, "schema_version is '2', not a whole number"),
    "outputs an object": ({"schema_version": 2, "outputs": {"a": 1}}, "outputs is a JSON object, not an array"),
    "an output without path": ({"schema_version": 2, "outputs": [{"sha256": "ab"}]}, "outputs[0].path is missing"),
    "an output that is text": ({"schema_version": 2, "outputs": ["tables/x.parquet"]}, "outputs[0] is a JSON string"),
    "a prompt path that is a number": (
        {"schema_version": 2, "outputs": [], "prompts": [{"path": 3, "sha256": "ab"}]},
        "prompts[0].path is 3, not a file path",
    ),
    "prompts used by a number": (
        {"schema_version": 2, "outputs": [], "prompts": [{"path": "p.txt", "used_by": 5}]},
        "prompts[0].used_by is 5",
    ),
    "a model file that is text": (
        {"schema_version": 2, "outputs": [], "models": [{"file": "m.gguf"}]},
        "models[0].file is a JSON string, not an object",
    ),
    "a catalog that is text": ({"schema_version": 2, "outputs": [], "catalog": "c.json"}, "catalog is a JSON string"),
    "other inputs null": ({"schema_version": 2, "outputs": [], "other_inputs": None}, None),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_verify_names_what_is_malformed_in_provenance_json(tmp_path, capsys, case):
    record, named = MALFORMED[case]
    results = tmp_path / "results" / "exp"
    results.mkdir(parents=True)
    (results / "provenance.json").write_text(json.dumps(record))
    code = main(["verify", str(results)])
    error = capsys.readouterr().err
    if named is None:  # null where a list may be: nothing to check, nothing wrong
        assert code == 0, error
        return
    assert code == 2 and error.startswith(f"crseval verify: {results / 'provenance.json'} ") and named in error, error
    assert "Traceback" not in error


def test_verify_names_an_unreadable_configfile(tmp_path, capsys):
    results = tmp_path / "results" / "exp"
    results.mkdir(parents=True)
    (results / "provenance.json").write_text(json.dumps({"schema_version": 2, "outputs": []}))
    broken = tmp_path / "broken.yaml"
    broken.write_text("simulator: [unclosed\n")
    assert main(["verify", str(results), "--configfile", str(broken)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"crseval verify: --configfile {broken}: ") and f"{broken}, line 2" in error, error
    broken.write_text("- a list\n")
    assert main(["verify", str(results), "--configfile", str(broken)]) == 2
    assert "holds a list; a config file holds a mapping of settings" in capsys.readouterr().err
    # read as the workflow reads a config: bounded, so a few lines of aliases cannot make a billion values
    broken.write_text(
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    )
    assert main(["verify", str(results), "--configfile", str(broken)]) == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and str(broken) in error and "values" in error, error


def test_import_logs_to_an_existing_file_is_named_before_anything_is_read(tmp_path, capsys):
    out = tmp_path / "sessions.jsonl"
    out.write_text("mine\n")
    code = main(
        ["import-logs", str(tmp_path / "none.json"), "--catalog-index", str(tmp_path / "none"), "--out", str(out)]
    )
    assert code == 2
    assert capsys.readouterr().err.startswith(f"crseval import-logs: --out {out} is a file, not a folder")
    assert out.read_text() == "mine\n"


def test_import_logs_to_a_folder_under_a_file_is_named(tmp_path, capsys, catalog_files):
    corpus = tmp_path / "corpus.jsonl"
    turns = [{"role": "user", "text": "Hi"}, {"role": "system", "text": "Try Heat."}]
    corpus.write_text(json.dumps({"dialogue_id": "d1", "system": "mine", "turns": turns}) + "\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = blocker / "sessions"
    arguments = ["import-logs", str(corpus), "--format", "jsonl", "--catalog-index", str(catalog_files)]
    code = main([*arguments, "--out", str(out)])
    error = capsys.readouterr().err
    assert code == 2 and error.startswith(f"crseval import-logs: cannot write to --out {out}: "), error


def test_import_logs_names_a_catalog_index_it_cannot_read(tmp_path, capsys):
    code = main(
        ["import-logs", str(tmp_path / "x.json"), "--catalog-index", str(tmp_path), "--out", str(tmp_path / "o")]
    )
    assert code == 2
    assert capsys.readouterr().err.startswith(
        f"crseval import-logs: --catalog-index {tmp_path}: cannot read the catalog"
    )
