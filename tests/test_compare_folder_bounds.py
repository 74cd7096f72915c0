"""`crseval compare` and `crseval board` on results folders built to hurt: tables whose few bytes decode to
gigabytes, CSV tables within their byte bound with more rows or columns than memory holds, an output folder inside
a run, a folder named like a script URL, records that no longer describe their tables or were forged, and
tolerances that switch the regression gate off or name no metric. Each is refused by name (or compared under a
heading that says the record does not describe its tables, when asked), never read whole, written or trusted."""

from __future__ import annotations

import hashlib
import json
import re
import resource

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_compare_records_from_outside import folder, table
from test_runs_board import metrics_frame

from crseval.core.canonical import canonical_sha
from crseval.runs import board, comparability
from crseval.runs.comparability import RunError, read_run
from crseval.runs.compare import compare

MiB = 2**20


def sealed(path):
    """Make the folder's provenance.json describe it as the provenance rule would: each stage digest the sha256
    of its settings (the statistics stage holding config.stats), `outputs` the sha256 of every table."""
    the_record = json.loads((path / "provenance.json").read_text())
    stages = the_record["stages"]
    stages["statistics"]["settings"] = {"stats": the_record["config"]["stats"]}
    shared = [stages[stage] for stage in ("catalog", "user", "metrics", "judge", "statistics")]
    for entry in [*shared, *stages["systems"].values()]:
        entry["digest"] = canonical_sha(entry["settings"])
    the_record["outputs"] = [
        {"path": file.relative_to(path).as_posix(), "sha256": hashlib.sha256(file.read_bytes()).hexdigest()}
        for file in sorted(path.rglob("*"))
        if file.is_file() and file.name != "provenance.json"
    ]
    (path / "provenance.json").write_text(json.dumps(the_record))
    return path


def edit_record(path, change):
    the_record = json.loads((path / "provenance.json").read_text())
    change(the_record)
    (path / "provenance.json").write_text(json.dumps(the_record))


def crseval(*args) -> int:
    from crseval.cli import main

    return main([str(a) for a in args])


def links(page: str) -> list[str]:
    return re.findall(r"""(?:href|src)=["']([^"']*)""", page)


# ------------------------------------------------------------------ tables that decode past their bound


def identifiers(rows: int) -> dict:
    return {
        "system": pa.array(["oracle"] * rows),
        "session_id": pa.array([f"oracle/s{i:05d}" for i in range(rows)]),
        "session_index": pa.array(range(rows), pa.int64()),
        "seed": pa.array(range(100, 100 + rows), pa.int64()),
        "tas": pa.array(np.linspace(0, 1, rows)),
    }


def write_sessions(path, columns: dict, **options) -> None:
    """tables/sessions.parquet of `columns`, as another program may write it: without the Arrow schema crseval's
    writer stores, so that a dictionary column reads back as plain text (decoded in full)."""
    pq.write_table(pa.table(columns), path / "tables" / "sessions.parquet", store_schema=False, **options)


def test_a_dictionary_bomb_is_refused_from_its_footer_without_decoding(tmp_path, monkeypatch):
    """4,096 sessions whose rationale is one 1 MiB string of the dictionary page: about 11 KB on disk, 4 GiB
    decoded, twice the bound. It is refused by the bytes it decodes to, before anything is decoded."""
    rows = 4096
    bomb = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["x" * MiB]))
    run = read_run(folder(tmp_path / "run"))
    write_sessions(run.path, {**identifiers(rows), "judge_coherence_rationale": bomb}, compression="zstd")
    assert (run.path / "tables" / "sessions.parquet").stat().st_size < 64 * 1024

    def decoded(*args, **kwargs):
        raise AssertionError("the table was decoded")

    monkeypatch.setattr(pd, "read_parquet", decoded)
    monkeypatch.setattr(pq, "read_table", decoded)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    with pytest.raises(RunError, match=r"run/tables/sessions.parquet decodes to [\d,]+ bytes, more than the 2,147,"):
        run.sessions()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 256 * 1024


def test_a_dictionary_repeating_a_long_value_is_counted_from_its_indices(tmp_path, monkeypatch):
    """A dictionary of a short and a 100 KB value, alternating over 2,000 sessions: 100 MB decoded, past a 5 MB
    bound; the footer alone cannot tell it from a column of distinct ids, so the indices are counted."""
    monkeypatch.setattr(comparability, "MAX_TABLE_BYTES", 5 * MiB)
    rows = 2000
    alternating = pa.array([i % 2 for i in range(rows)], pa.int32())
    values = pa.DictionaryArray.from_arrays(alternating, pa.array(["", "y" * 100_000]))
    run = read_run(folder(tmp_path / "run"))
    write_sessions(run.path, {**identifiers(rows), "judge_coherence_rationale": values})
    with pytest.raises(RunError, match=r"sessions.parquet decodes to 10\d,[\d,]+ bytes, more than the 5,242,880"):
        run.sessions()


def test_distinct_ids_past_the_footers_bound_are_still_read(tmp_path, monkeypatch):
    """The footer's bound of a dictionary of 20,000 distinct ids is their number times the dictionary's size
    (gigabytes); what they decode to is under a megabyte, and the table is read."""
    monkeypatch.setattr(comparability, "MAX_TABLE_BYTES", 5 * MiB)
    rows = 20_000
    run = read_run(folder(tmp_path / "run"))
    write_sessions(run.path, identifiers(rows))
    chunk = pq.ParquetFile(run.path / "tables" / "sessions.parquet").metadata.row_group(0).column(1)
    assert "RLE_DICTIONARY" in chunk.encodings and rows * chunk.total_uncompressed_size > 5 * MiB
    assert len(run.sessions()) == rows


def test_a_prefix_encoded_bomb_is_refused_from_its_footer(tmp_path, monkeypatch):
    """DELTA_BYTE_ARRAY stores a value as the length of the prefix it shares with the one before: 200 copies of a
    100 KB value take 100 KB of pages and decode to 20 MB."""
    monkeypatch.setattr(comparability, "MAX_TABLE_BYTES", 5 * MiB)
    rows = 200
    run = read_run(folder(tmp_path / "run"))
    write_sessions(
        run.path,
        {**identifiers(rows), "judge_coherence_rationale": pa.array(["z" * 100_000] * rows)},
        use_dictionary=False,
        column_encoding={"judge_coherence_rationale": "DELTA_BYTE_ARRAY"},
    )
    with pytest.raises(RunError, match=r"sessions.parquet decodes to [\d,]+ bytes, more than the 5,242,880"):
        run.sessions()


def test_a_sessions_table_of_more_rows_or_columns_than_its_bound_is_refused(tmp_path, monkeypatch):
    run = read_run(folder(tmp_path / "run"))
    monkeypatch.setattr(comparability, "MAX_TABLE_ROWS", 5)
    with pytest.raises(RunError, match="sessions.parquet holds 8 rows, more than the 5"):
        run.sessions()
    monkeypatch.setattr(comparability, "MAX_TABLE_ROWS", 100)
    monkeypatch.setattr(comparability, "MAX_TABLE_COLUMNS", 3)
    with pytest.raises(RunError, match="sessions.parquet holds 7 columns, more than the 3"):
        run.sessions()


# ------------------------------------------------------------------ CSV tables: rows and columns, not bytes alone


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"model,success\n" + b"a,0.5\n" * 200_000, r"holds up to 200,000 rows, more than the [\d,]+ "),
        (b"model,success\r" + b"a,0.5\r" * 200_000, r"holds up to 200,000 rows, more than the [\d,]+ "),
        (",".join(f"c{i}" for i in range(30_000)).encode() + b"\nx\n", r"holds up to 30,000 columns, more than the"),
        (
            ",".join(f"c{i}" for i in range(10_000)).encode() + b"\n" + b"1\n" * 1000,
            r"holds up to 1,000 rows of 10,000 columns, more than the [\d,]+ cells",
        ),
    ],
    ids=["rows", "rows-with-carriage-returns", "columns", "cells"],
)
def test_a_csv_within_its_byte_bound_but_past_its_rows_columns_or_cells_is_refused(tmp_path, content, message):
    """A model_metrics.csv of a few hundred kilobytes parses into a frame far larger than itself (60 MB of
    commas and line ends take gigabytes): its rows, columns and cells are bounded before it is parsed."""
    run = read_run(folder(tmp_path / "run"))
    (run.path / "tables" / "model_metrics.csv").write_bytes(content)
    with pytest.raises(RunError, match=f"run/tables/model_metrics.csv {message}"):
        run.model_metrics()
    assert comparability.MAX_CSV_ROWS < 200_000 and comparability.MAX_CSV_COLUMNS < 30_000


def test_csv_bounds_count_a_header_line_end_inside_quotes_as_text():
    from crseval.core.io import TableTooLarge, check_csv_bounds

    bounds = {"max_rows": 2, "max_columns": 3, "max_cells": 6}
    check_csv_bounds(b'"a\nb",c,d\n1,2,3\n4,5,6\n', "t.csv", **bounds)  # a header name holding a line end
    with pytest.raises(TableTooLarge, match=r"t.csv holds up to 4 columns"):
        check_csv_bounds(b'"a\nb",c,d,e\n1,2,3,4\n', "t.csv", **bounds)
    check_csv_bounds(b"a,b\r\n1,2\r\n3,4\r\n", "t.csv", **bounds)  # \r\n is one line end
    with pytest.raises(TableTooLarge, match=r"t.csv holds up to 3 rows"):
        check_csv_bounds(b"a,b\r1,2\r3,4\r5,6", "t.csv", **bounds)


# ------------------------------------------------------------------ board: where it writes, what it links


def test_board_refuses_an_output_inside_a_run(tmp_path, capsys):
    run = sealed(folder(tmp_path / "run"))
    assert crseval("board", run, "--out", run / "board") == 2
    assert f"--out {run / 'board'} is inside the results folder of {run}" in capsys.readouterr().err
    assert not (run / "board").exists()
    assert crseval("board", run, "--out", run) == 2
    assert not (run / "board.html").exists()


def test_board_links_no_folder_named_like_a_script_url(tmp_path, monkeypatch):
    """A folder named `javascript:alert(1)`, given as a relative path, is a link to that folder on the board."""
    monkeypatch.chdir(tmp_path)
    sealed(folder(tmp_path / "javascript:alert(1)"))
    assert crseval("board", "javascript:alert(1)", "--out", "board") == 0
    hrefs = links((tmp_path / "board" / "board.html").read_text(encoding="utf-8"))
    assert hrefs == ["./javascript:alert(1)"]
    page = board.board_html(
        board.board_table([board.BoardRun("r", " \tjava\nscript:x", "k", "c", metrics_frame(["a"], [0.5]))], []), []
    )
    assert links(page) == ["./ \tjava\nscript:x"]


@pytest.mark.parametrize(
    ("url", "safe"),
    [
        ("javascript:alert(1)", "./javascript:alert(1)"),
        ("\x01 JavaScript:alert(1)", "./\x01 JavaScript:alert(1)"),
        ("java\tscript:x", "./java\tscript:x"),
        ("data:text/html,x", "./data:text/html,x"),
        ("vbscript:x", "./vbscript:x"),
        ("https://example.org/a", "https://example.org/a"),
        ("HTTP://example.org", "HTTP://example.org"),
        ("../run/viewer/index.html#session=a%3Ab", "../run/viewer/index.html#session=a%3Ab"),
        ("a/b:c", "a/b:c"),
    ],
)
def test_one_scheme_check_for_every_link(url, safe):
    from crseval.reports import findings, links

    assert links.safe_url(url) == safe
    assert findings._href(url) == findings.esc(safe)


def test_compare_pages_link_no_folder_named_like_a_script_url(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sealed(folder(tmp_path / "javascript:base"))
    sealed(folder(tmp_path / "javascript:run", sessions_table=table(tas=[0.0] * 8)))
    assert crseval("compare", "javascript:base", "javascript:run", "--out", "out") == 0
    pages = sorted((tmp_path / "out").rglob("*.html"))
    assert len(pages) > 1
    for page in pages:
        for link in links(page.read_text(encoding="utf-8")):
            assert not re.match(r"\s*[a-z][a-z0-9+.-]*:", link, re.IGNORECASE), (page, link)


# ------------------------------------------------------------------ records that do not describe their tables


def test_a_record_whose_tables_were_made_again_is_refused_naming_the_table_and_field(tmp_path, capsys):
    """The run was made again behind its record: every user worse. Without the check, 2 regressions flagged."""
    base = sealed(folder(tmp_path / "base"))
    run = sealed(folder(tmp_path / "run"))
    table(tas=[0.0] * 8).assign(success=0.0).to_parquet(run / "tables" / "sessions.parquet")
    out = tmp_path / "out"
    assert crseval("compare", base, run, "--out", out, "--fail-on-regression") == 2
    error = capsys.readouterr().err
    assert f"{run / 'tables' / 'sessions.parquet'}: its sha256 " in error
    assert re.search(r"is not the `outputs\[\d+\]\.sha256` of .*run/provenance.json", error)
    assert "--trust-mismatched-records" in error and not out.exists()


def test_trusted_mismatches_are_compared_under_a_heading_that_says_so(tmp_path, capsys):
    base = sealed(folder(tmp_path / "base"))
    run = sealed(folder(tmp_path / "run"))
    table(tas=[0.0] * 8).to_parquet(run / "tables" / "sessions.parquet")
    out = tmp_path / "out"
    assert crseval("compare", base, run, "--out", out, "--trust-mismatched-records") == 0
    assert "record does not describe its tables" in capsys.readouterr().err
    page = (out / "compare.html").read_text(encoding="utf-8")
    heading = page.index("record does not describe its tables")
    assert heading < page.index("<h2>What changed</h2>") and "sessions.parquet: its sha256" in page
    assert "record does not describe its tables" in (out / "compare.md").read_text(encoding="utf-8")
    summary = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert summary["baseline"]["record_mismatches"] == []
    assert any("sessions.parquet" in line for line in summary["runs"][0]["record_mismatches"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda r: r["stages"]["user"]["settings"].update(profile="realistic"),
            r"run/provenance.json: `stages.user.digest` is [0-9a-f]{16}\.\.\., not the sha256 of `stages.user.sett",
        ),
        (
            lambda r: r["stages"]["systems"]["oracle"].update(digest="0" * 64),
            r"`stages.systems.oracle.digest` is 0{16}\.\.\., not the sha256",
        ),
        (
            lambda r: r["config"]["stats"].update(alpha=0.5),
            r"`config.stats` is not the `stages.statistics.settings.stats` that its digest covers",
        ),
        (
            lambda r: r["outputs"].clear(),
            r"run/tables/sessions.parquet: not among the `outputs` of .*run/provenance.json",
        ),
        (lambda r: r.pop("outputs"), r"run/provenance.json: `outputs` is missing"),
    ],
    ids=["settings-edited", "digest-forged", "plan-edited", "table-not-listed", "no-outputs"],
)
def test_a_forged_or_edited_record_is_refused_naming_the_field(tmp_path, capsys, change, message):
    base = sealed(folder(tmp_path / "base"))
    run = sealed(folder(tmp_path / "run"))
    edit_record(run, change)
    assert crseval("compare", base, run, "--out", tmp_path / "out") == 2
    assert re.search(message, capsys.readouterr().err)
    assert crseval("compare", base, run, "--out", tmp_path / "out", "--trust-mismatched-records") == 0
    assert "record does not describe its tables" in (tmp_path / "out" / "compare.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("version", "shown"), [(2, "2"), (None, "null"), ("missing", "missing")], ids=["older", "null", "missing"]
)
def test_a_record_of_a_format_this_release_does_not_read_is_refused_even_when_trusted(tmp_path, capsys, version, shown):
    base = sealed(folder(tmp_path / "base"))
    run = sealed(folder(tmp_path / "run"))
    edit_record(run, lambda r: r.pop("schema_version") if version == "missing" else r.update(schema_version=version))
    for trust in ([], ["--trust-mismatched-records"]):
        assert crseval("compare", base, run, "--out", tmp_path / "out", *trust) == 2
        error = capsys.readouterr().err
        assert f"run/provenance.json: `schema_version` is {shown}" in error and "Traceback" not in error
    assert not (tmp_path / "out").exists()


def test_board_holds_its_tables_to_the_record(tmp_path, capsys):
    run = sealed(folder(tmp_path / "run"))
    (run / "stats").mkdir()
    metrics_frame(["oracle"], [0.9]).to_csv(run / "tables" / "model_metrics.csv", index=False)
    assert crseval("board", run, "--out", tmp_path / "board") == 2
    error = capsys.readouterr().err
    assert re.search(r"run/tables/model_metrics.csv: its sha256 .* is not the `outputs\[\d+\].sha256`", error)
    assert crseval("board", run, "--out", tmp_path / "board", "--trust-mismatched-records") == 0
    for name in ("board.html", "board.md"):
        assert "record does not describe its tables" in (tmp_path / "board" / name).read_text(encoding="utf-8")
    # a pass^k table the record lists and the folder lost
    sealed(run)
    (run / "stats" / "reliability_trials.csv").write_text("system,k,pass_hat_k\noracle,1,0.5\n")
    sealed(run)
    (run / "stats" / "reliability_trials.csv").unlink()
    assert crseval("board", run, "--out", tmp_path / "board") == 2
    assert re.search(r"lists stats/reliability_trials.csv, which is missing", capsys.readouterr().err)


def test_a_sealed_run_is_compared_and_boarded_without_a_heading(tmp_path):
    base = sealed(folder(tmp_path / "base"))
    run = sealed(folder(tmp_path / "run", sessions_table=table(tas=[0.0] * 8)))
    assert crseval("compare", base, run, "--out", tmp_path / "out") == 0
    assert "record does not describe" not in (tmp_path / "out" / "compare.html").read_text(encoding="utf-8")
    assert crseval("board", base, run, "--out", tmp_path / "board") == 0
    assert "record does not describe" not in (tmp_path / "board" / "board.html").read_text(encoding="utf-8")


# ------------------------------------------------------------------ tolerances


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("1e999", r"--tolerance '1e999': a tolerance is a finite non-negative number"),
        ("tas=inf", r"--tolerance 'tas=inf': a tolerance is a finite non-negative number"),
        ("tas=nan", r"--tolerance 'tas=nan': a tolerance is a finite non-negative number"),
        ("=0.5", r"--tolerance '=0.5': no metric named before '='"),
        ("tass=0.5", r"tolerance tass=0.5: tass is no metric this comparison compares \(compared: tas, success\)"),
    ],
)
def test_a_tolerance_that_is_infinite_or_names_no_compared_metric_is_refused(tmp_path, capsys, given, message):
    base = sealed(folder(tmp_path / "base"))
    run = sealed(folder(tmp_path / "run", sessions_table=table(tas=[0.0] * 8)))
    assert crseval("compare", base, run, "--out", tmp_path / "out", "--tolerance", given) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_the_api_refuses_the_same_tolerances(tmp_path):
    from crseval.runs import paired
    from crseval.statistics.analysis_plan import AnalysisPlan

    base = read_run(folder(tmp_path / "base"))
    run = read_run(folder(tmp_path / "run"))
    with pytest.raises(ValueError, match="tolerance tass=0.5: tass is no metric this comparison compares"):
        compare(base, [run], tolerance={"tass": 0.5})
    plan = AnalysisPlan(0.05, "report", "bh", min_sessions=3, small_sample=10, resamples=200, permutations=200, seed=1)
    with pytest.raises(ValueError, match="tolerance tas=inf: a tolerance is a finite non-negative number"):
        paired.paired_table(table(), table(), metrics=["tas"], plan=plan, tolerance={"tas": float("inf")})
    assert len(compare(base, [run], tolerance={"tas": 0.5, "*": 0.1}).runs[0].table)
