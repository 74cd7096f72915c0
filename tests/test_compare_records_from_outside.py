"""`crseval compare` and `crseval board` on results folders from outside: missing, foreign, half-written or
hand-edited records and tables, links out of the folder, FIFOs, infinities, names that carry HTML or Markdown.
Each gives a RunError (or ValueError) naming the file and what is wrong, or a missing value with its reason,
never a traceback from pandas or pyarrow, a number made up, or a name that formats the page it is shown on."""

from __future__ import annotations

import json
import math
import os
import re

import pandas as pd
import pytest
from test_runs_board import metrics_frame, pass_frame
from test_runs_paired import sessions

from crseval import provenance
from crseval.runs import board, comparability
from crseval.runs.comparability import RunError, class_key, compare_runs, differences, read_run
from crseval.runs.compare import compare
from crseval.runs.compare_page import compare_html, compare_markdown, session_page_name, write_comparison

# Benjamini-Hochberg: Holm in statsmodels runs gc.collect() on every call
STATS = {
    "alpha": 0.05,
    "family": {"scope": "report", "method": "bh"},
    "min_sessions": 3,
    "small_sample": 10,
    "bootstrap_resamples": 200,
    "permutation_resamples": 200,
    "seed": 1,
    "metrics": ["tas", "success"],
}
SHARED = ("catalog", "user", "metrics", "judge", "statistics")
HOSTILE = "<script>alert(1)</script>|`x`\n# [link](javascript:y)"


def record(systems=("oracle",), **stats) -> dict:
    return {
        "schema_version": provenance.SCHEMA_VERSION,
        "config": {"stats": {**json.loads(json.dumps(STATS)), **stats}},
        "stages": {
            **{stage: {"digest": f"{stage}-digest", "settings": {}} for stage in SHARED},
            "systems": {name: {"digest": "system-digest", "settings": {}} for name in systems},
        },
    }


def table(system="oracle", tas=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)) -> pd.DataFrame:
    return sessions(system, {"tas": list(tas), "success": [float(i % 2) for i in range(len(tas))]})


def folder(path, the_record=None, sessions_table=None, model_metrics=None):
    """A results folder written by hand: provenance.json, tables/sessions.parquet, tables/model_metrics.csv."""
    (path / "tables").mkdir(parents=True)
    (path / "provenance.json").write_text(json.dumps(record() if the_record is None else the_record))
    (table() if sessions_table is None else sessions_table).to_parquet(path / "tables" / "sessions.parquet")
    (metrics_frame(["oracle"], [0.5]) if model_metrics is None else model_metrics).to_csv(
        path / "tables" / "model_metrics.csv", index=False
    )
    return path


def compared(tmp_path, run_table, base_table=None, systems=("oracle",)):
    base = read_run(folder(tmp_path / "base", record(systems), base_table))
    run = read_run(folder(tmp_path / "run", record(systems), run_table))
    return compare(base, [run]).runs[0]


# ------------------------------------------------------------------ the folder and its record


def test_a_path_that_is_no_folder_or_has_no_record_is_named(tmp_path):
    (tmp_path / "file").write_text("x")
    for path in (tmp_path / "missing", tmp_path / "file"):
        with pytest.raises(RunError, match="is not a results folder"):
            read_run(path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunError, match="provenance.json does not exist"):
        read_run(tmp_path / "empty")


def test_a_record_that_is_a_fifo_a_folder_or_a_link_out_is_not_opened(tmp_path):
    elsewhere = folder(tmp_path / "elsewhere")
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "provenance.json")  # opening it would wait for a writer forever
    with pytest.raises(RunError, match="no regular file"):
        read_run(fifo)
    (tmp_path / "dir" / "provenance.json").mkdir(parents=True)
    with pytest.raises(RunError, match="is a folder"):
        read_run(tmp_path / "dir")
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / "provenance.json").symlink_to(elsewhere / "provenance.json")
    with pytest.raises(RunError, match="outside the results folder"):
        read_run(tmp_path / "link")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe{", "UnicodeDecodeError"),
        (b'{"stages": ', "JSONDecodeError"),
        (b"[" * 100_000 + b"]" * 100_000, "RecursionError"),
        (b'{"stages": NaN}', "`stages` is not an object"),
        (json.dumps({**record(), "config": []}).encode(), r"`config.stats` is not an object"),
        (json.dumps({k: v for k, v in record().items() if k != "config"}).encode(), r"`config.stats` is not"),
        (json.dumps(record(metrics="tas")).encode(), r"`config.stats.metrics` is \"tas\", not a list"),
        (json.dumps(record(metrics=[1, None])).encode(), r"`config.stats.metrics` is \[1, null\]"),
        (json.dumps({**record(), "schema_version": "3"}).encode(), '`schema_version` is "3", not a whole number'),
        (
            json.dumps({**record(), "schema_version": provenance.SCHEMA_VERSION + 1}).encode(),
            f"newer crseval \\(record format {provenance.SCHEMA_VERSION + 1}; this one reads up to",
        ),
    ],
)
def test_a_record_of_the_wrong_shape_or_format_is_refused_by_name(tmp_path, content, message):
    path = folder(tmp_path / "odd")
    (path / "provenance.json").write_bytes(content)
    with pytest.raises(RunError, match=f"odd/provenance.json.*{message}"):
        read_run(path)


def test_this_reader_knows_the_newest_record_format():
    assert comparability.RECORD_FORMAT == provenance.SCHEMA_VERSION


@pytest.mark.parametrize(
    ("stats", "message"),
    [
        ({"alpha": "x"}, r"`config.stats.alpha` is \"x\", not a number between 0 and 1"),
        ({"alpha": float("nan")}, r"`config.stats.alpha` is NaN"),
        ({"bootstrap_resamples": 10**12}, r"bootstrap_resamples` is 1000000000000, not a whole number from 100 to"),
        ({"permutation_resamples": True}, r"permutation_resamples` is true"),
        ({"seed": None}, r"`config.stats.seed` is null"),
        ({"family": {"scope": "report", "method": "evil"}}, r"`config.stats.family.method` is \"evil\""),
        ({"family": []}, r"`config.stats.family` is \[\], not an object"),
    ],
)
def test_the_baselines_analysis_plan_is_checked_before_it_is_used(tmp_path, stats, message):
    base = read_run(folder(tmp_path / "base", record(**stats)))
    run = read_run(folder(tmp_path / "run"))
    with pytest.raises(RunError, match=f"base/provenance.json: .*{message}"):
        compare(base, [run])


def test_a_missing_plan_setting_is_named():
    with pytest.raises(RunError, match="`config.stats.seed` is missing"):
        comparability._analysis_plan({k: v for k, v in STATS.items() if k != "seed"}, comparability.Path("p.json"))


# ------------------------------------------------------------------ the sessions table


def test_a_missing_empty_truncated_or_foreign_sessions_table_is_named(tmp_path):
    run = read_run(folder(tmp_path / "run"))
    path = run.path / "tables" / "sessions.parquet"
    whole = path.read_bytes()
    for content, message in (
        (b"", "Parquet file size is 0 bytes"),
        (whole[: len(whole) // 2], "magic bytes not found"),
        (b"model,tas\noracle,1\n", "magic bytes not found"),
    ):
        path.write_bytes(content)
        with pytest.raises(RunError, match=f"sessions.parquet cannot be read: ArrowInvalid: .*{message}"):
            run.sessions()
    path.unlink()
    with pytest.raises(RunError, match="sessions.parquet cannot be read \\(FileNotFoundError\\)"):
        run.sessions()
    path.mkdir()
    with pytest.raises(RunError, match="sessions.parquet is a folder"):
        run.sessions()


def test_a_sessions_table_linked_from_outside_is_refused_one_inside_is_read(tmp_path):
    other = folder(tmp_path / "other")
    run = read_run(folder(tmp_path / "run"))
    path = run.path / "tables" / "sessions.parquet"
    path.unlink()
    path.symlink_to(other / "tables" / "sessions.parquet")
    with pytest.raises(RunError, match=f"links to {other.resolve()}.*outside the results folder"):
        run.sessions()
    path.unlink()
    table().to_parquet(run.path / "tables" / "kept.parquet")
    path.symlink_to("kept.parquet")
    assert len(run.sessions()) == 8


def test_a_table_past_its_bound_on_disk_or_decoded_is_not_read(tmp_path, monkeypatch):
    run = read_run(folder(tmp_path / "run"))
    monkeypatch.setattr(comparability, "MAX_TABLE_BYTES", 100)
    with pytest.raises(RunError, match="sessions.parquet holds .* bytes, more than the 100 a comparison reads"):
        run.sessions()
    # a file within its bound on disk whose footer says it decodes past it (8 sessions of 7 columns: 448 bytes)
    monkeypatch.setattr(comparability, "_regular_file", lambda path, folder, bound: 0)
    with pytest.raises(RunError, match="sessions.parquet decodes to .* bytes, more than the 100"):
        run.sessions()
    monkeypatch.undo()
    monkeypatch.setattr(comparability, "MAX_CSV_BYTES", 10)
    with pytest.raises(RunError, match="model_metrics.csv holds .* bytes, more than the 10 a comparison reads"):
        run.model_metrics()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.iloc[:0], "holds no sessions"),
        (lambda t: t.assign(session_index=t["session_index"].astype(str)), "session_index holds str values, not"),
        (lambda t: t.assign(session_index=t["session_index"] + 0.5), "session_index holds 0.5, not a whole number"),
        (lambda t: t.assign(seed=None), "column seed is empty in 8 of 8 sessions"),
        (lambda t: t.assign(trial=True), "column trial holds bool values, not whole numbers"),
        (lambda t: t.assign(system=None), "column system is empty in 8 of 8 sessions"),
        (lambda t: t.assign(system=3), "column system holds int64 values, not text"),
        (lambda t: t.assign(session_id="same"), r"session ids repeat \(7, e.g. 'same'\)"),
        (
            lambda t: pd.concat([t, t.iloc[:1].assign(session_id="again")]),
            r"1 sessions repeat one already seen \(system 'oracle', session_index 0, seed 100\)",
        ),
    ],
)
def test_identifiers_of_the_wrong_type_empty_or_repeated_are_named(tmp_path, change, message):
    run = read_run(folder(tmp_path / "run", sessions_table=change(table())))
    with pytest.raises(RunError, match=f"run/tables/sessions.parquet.*{message}"):
        run.sessions()


def test_whole_numbers_written_as_floats_are_read_as_identifiers(tmp_path):
    run = read_run(folder(tmp_path / "run", sessions_table=table().assign(seed=lambda t: t["seed"].astype(float))))
    assert run.sessions()["seed"].dtype == "int64"


# ------------------------------------------------------------------ metrics


def test_a_metric_of_text_is_left_out_with_its_reason(tmp_path):
    result = compared(tmp_path, table().assign(tas="x"))
    assert "tas: not numbers in the run (str values, e.g. 'x')" in result.not_compared
    assert list(result.table["metric"]) == ["success"]


def test_a_metric_in_one_run_only_is_left_out_with_its_reason(tmp_path):
    result = compared(tmp_path, table().drop(columns="tas"))
    assert result.not_compared == ["tas: not in the run"]


def test_an_infinite_value_is_left_out_of_the_pairs_and_counted(tmp_path):
    tas = [math.inf, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]  # every finite user 0.1 lower
    result = compared(tmp_path, table(tas=tas))
    row = result.table.set_index("metric").loc["tas"]
    assert row["users"] == 7 and row["diff"] == pytest.approx(-0.1) and math.isfinite(row["ci_low"])
    assert "1 session with an infinite value left out" in row["note"]
    first = result.changed.iloc[0]
    assert (first["session_index"], first["score"], first["run_value"]) == (0, 1.0, math.inf)
    # the page keeps the note in view, though the system's other metric is identical
    page = compare_html(compare_with(result), tmp_path)
    assert "infinite value left out" in page
    everywhere = compared(tmp_path / "all", table(tas=[-math.inf] * 8))
    row = everywhere.table.set_index("metric").loc["tas"]
    assert row["verdict"] == "no pairs" and math.isnan(row["diff"])
    assert "8 sessions with an infinite value left out" in row["note"]


def compare_with(run_comparison):
    """A BaselineComparison of one run, for the page functions."""
    base = read_run(run_comparison.run.path.parent / "base")
    return compare(base, [run_comparison.run])


def test_zero_sessions_in_common_are_no_pairs_with_the_count(tmp_path):
    result = compared(tmp_path, sessions("oracle", {"tas": [0.5] * 8}, users=list(range(100, 108))))
    assert set(result.table["verdict"]) == {"no pairs"} and not result.table["flag"].any()
    assert result.table["note"].str.contains("8 users only in the baseline; 8 users only in the run").all()
    assert result.table["diff"].isna().all()


def test_the_same_run_given_twice_is_identical(tmp_path):
    base = read_run(folder(tmp_path / "base"))
    again = read_run(tmp_path / "base", name="base (2)")
    result = compare(base, [again]).runs[0]
    assert set(result.table["verdict"]) == {"identical"} and result.changed.empty


# ------------------------------------------------------------------ names on the pages


def test_hostile_names_are_escaped_in_the_page_and_the_markdown(tmp_path):
    systems = (HOSTILE, "a/b", "a_b")
    base_table = pd.concat([table(name) for name in systems])
    run_table = pd.concat([table(name, tas=[0.0] * 8) for name in systems])
    the_record = record(systems)
    the_record["stages"]["user"] = {"digest": "other", "settings": {HOSTILE: 1}}
    base = read_run(folder(tmp_path / "base", record(systems), base_table))
    run = read_run(folder(tmp_path / HOSTILE.replace("/", "|"), the_record, run_table))
    comparison = compare(base, [run], allow_different=True)
    out = tmp_path / "out"
    write_comparison(comparison, out, comparison.exit_code(False))
    pages = [out / "compare.html", *(out / "sessions").rglob("*.html")]
    assert len(pages) == 1 + 3 * 8  # every changed session of the three systems has its own page
    for page in pages:
        text = page.read_text(encoding="utf-8")
        links = re.findall(r"""(?:href|src)=["']([^"']*)""", text)
        assert "<script" not in text and not [link for link in links if ":" in link], page
    markdown = compare_markdown(comparison)
    assert not re.search(r"(?<!\\)[<`]", markdown) and "\\<script\\>" in markdown
    assert not [line for line in markdown.splitlines() if line.startswith("# [link]")]  # no heading injected
    assert "[link]\\(javascript:y)" in markdown and "\\|\\`x\\`" in markdown
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert all(line.count(" | ") == 7 for line in rows)  # every row keeps its eight cells
    # "a/b" and "a_b" make two page names, and the hostile name one of plain characters
    names = {session_page_name(comparison.runs[0], {"system": s, "session_index": 0, "trial": 0}) for s in systems}
    assert len(names) == 3 and all(".." not in name and "\n" not in name for name in names)


def test_a_differing_key_with_control_characters_is_printed_escaped():
    found = differences({"a\x1b[2J\u202e": 1}, {"a\x1b[2J\u202e": 2, "x": "\x9b"})
    assert found == ["a\\u001b[2J\\u202e: baseline 1, run 2", 'x: only in the run ("\\u009b")']


def test_settings_nested_past_the_stack_are_reported_not_raised(tmp_path):
    base = read_run(folder(tmp_path / "base"))
    deep = read_run(folder(tmp_path / "deep"))
    nested: dict = {"leaf": 1}
    for _ in range(5000):
        nested = {"a": nested}
    deep.record["stages"]["user"] = {"digest": "deeper", "settings": nested}
    stage = compare_runs(base, deep).stage("user")
    assert not stage.equal and stage.differences == ["the settings are nested too deep to list their differences"]


def test_digests_alike_in_their_first_characters_are_two_classes(tmp_path):
    first = read_run(folder(tmp_path / "first"))
    second = read_run(folder(tmp_path / "second"))
    first.record["stages"]["user"]["digest"] = "0123456789ab-one"
    second.record["stages"]["user"]["digest"] = "0123456789ab-another"
    assert class_key(first)[0] != class_key(second)[0]


# ------------------------------------------------------------------ the board


def board_run(frame: pd.DataFrame, pass_k: pd.DataFrame | None = None) -> board.BoardRun:
    return board.BoardRun("r", "", "k", "class", frame, pass_k)


@pytest.mark.parametrize(
    ("run", "metrics", "message"),
    [
        (board_run(metrics_frame([None], [0.5])), ["success"], "run 'r': its model_metrics has a row without a"),
        (
            board_run(metrics_frame(["a"], [0.5]).assign(success="x")),
            ["success"],
            "run 'r': its model_metrics column success holds 'x', not a number",
        ),
        (
            board_run(metrics_frame(["a"], [0.5]).assign(sessions="many")),
            ["success"],
            "its model_metrics column sessions holds 'many'",
        ),
        (
            board_run(metrics_frame(["a"], [0.5]), pd.concat([pass_frame("a", [0.5]), pass_frame("a", [0.9])])),
            ["success"],
            "gives system 'a' at k 1 twice",
        ),
        (
            board_run(metrics_frame(["a"], [0.5]), pass_frame("a", [0.5]).assign(k=10**7)),
            ["success"],
            f"no whole number from 1 to {board.MAX_PASS_K}",
        ),
        (
            board_run(metrics_frame(["a"], [0.5]), pass_frame("a", [0.5]).assign(pass_hat_k="x")),
            ["success"],
            "its pass\\^k table column pass_hat_k holds 'x'",
        ),
        (board_run(metrics_frame(["a"], [0.5])), ["success", 1], r"metric names are text: \[1\]"),
        (board_run(metrics_frame(["a"], [0.5])), ["success", "success_ci_low"], "would be the same"),
        (board_run(metrics_frame(["a"], [0.5])), ["m"] * (board.MAX_METRICS + 1), "more than the 1,000 a board"),
    ],
)
def test_a_board_refuses_malformed_tables_naming_the_run(run, metrics, message):
    with pytest.raises(ValueError, match=message):
        board.board_table([run], metrics)


def test_board_markdown_escapes_what_would_format_or_script_it():
    frame = metrics_frame([HOSTILE, "plain"], [0.5, 0.4])
    text = board.board_markdown(board.board_table([board_run(frame)], ["success"]), ["success"])
    assert not re.search(r"(?<!\\)[<`]", text) and "](javascript" not in text
    assert "| r | \\<script\\>alert(1)\\</script\\>\\|\\`x\\` # [link]\\(javascript:y) | 10 |" in text
    assert "| r | plain | 10 | 0.4 [0.3, 0.5] (2) |" in text  # an interval's brackets are no link


def test_empty_cells_stay_missing_values_on_the_board():
    frame = metrics_frame(["a", "b"], [0.5, 0.4])
    frame.loc[1, "success"] = None
    table = board.board_table([board_run(frame)], ["success"])
    assert math.isnan(table.set_index("system").loc["b", "success"])


def test_a_pass_k_table_that_is_a_fifo_is_not_opened(tmp_path):
    run = read_run(folder(tmp_path / "run"))
    (run.path / "stats").mkdir()
    assert run.pass_k() is None
    os.mkfifo(run.path / "stats" / "reliability_trials.csv")
    with pytest.raises(RunError, match="reliability_trials.csv is no regular file"):
        run.pass_k()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "EmptyDataError"),
        (b"\xff\xfe\x00model", "UnicodeDecodeError"),
        (b'model,tas\noracle,0.5\n"never closed\n', "ParserError"),
    ],
)
def test_a_model_metrics_table_that_does_not_parse_is_named(tmp_path, content, message):
    run = read_run(folder(tmp_path / "run"))
    (run.path / "tables" / "model_metrics.csv").write_bytes(content)
    with pytest.raises(RunError, match=f"run/tables/model_metrics.csv cannot be read: {message}"):
        run.model_metrics()


# ------------------------------------------------------------------ the commands


def test_compare_refuses_an_output_inside_a_run_and_a_top_below_one(tmp_path, capsys):
    """The comparison is written beside the runs, never into a folder the workflow owns; --top counts sessions."""
    from crseval.cli import main

    base, run = folder(tmp_path / "base"), folder(tmp_path / "run")
    assert main(["compare", str(base), str(run), "--out", str(run / "compare")]) == 2
    assert f"--out {run / 'compare'} is inside the results folder of {run}" in capsys.readouterr().err
    assert not (run / "compare").exists()
    assert main(["compare", str(base), str(run), "--top", "0"]) == 2
    assert "--top 0: the changed sessions listed per system, at least 1" in capsys.readouterr().err
    (tmp_path / "taken").write_text("a file where the folder goes")
    assert main(["compare", str(base), str(run), "--out", str(tmp_path / "taken")]) == 2
    assert f"cannot write to {tmp_path / 'taken'}" in capsys.readouterr().err


def test_board_without_metrics_in_the_record_or_on_the_command_line_says_so(tmp_path, capsys):
    from crseval.cli import main

    bare = record()
    del bare["config"]["stats"]["metrics"]
    run = folder(tmp_path / "run", bare)
    assert main(["board", str(run), "--out", str(tmp_path / "board")]) == 2
    error = capsys.readouterr().err
    assert "its record names no stats.metrics; name the metrics with --metric" in error and "Traceback" not in error
