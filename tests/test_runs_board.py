"""The board of many runs: systems grouped by comparability class and ranked within their class only (never
across classes), lower-is-better metrics ranked the other way, pass^k where a run has trials, every value
escaped in the page, and the table surviving its CSV."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from crseval.runs import board
from crseval.statistics import column_registry

SUCCESS, STALE = "success", "stale_rate"  # higher is better, lower is better
KEY_1, KEY_2 = "user aaa1, metrics bbb1, catalog ccc1", "user aaa2, metrics bbb1, catalog ccc1"


def metrics_frame(systems: list[str], success: list[float], stale: list[float] | None = None) -> pd.DataFrame:
    """A model_metrics.csv as aggregate.model_metrics writes it: mean, interval and n per metric."""
    frame = pd.DataFrame({"model": systems, "sessions": [10] * len(systems)})
    for name, means in ((SUCCESS, success), (STALE, stale)):
        if means is None:
            continue
        frame[name] = means
        frame[f"{name}_ci_low"] = [m - 0.1 for m in means]
        frame[f"{name}_ci_high"] = [m + 0.1 for m in means]
        frame[f"{name}_n"] = 10
    return frame


def pass_frame(system: str, estimates: list[float]) -> pd.DataFrame:
    """A reliability_trials.csv of one system (trials.PASS_COLUMNS)."""
    k = list(range(1, len(estimates) + 1))
    return pd.DataFrame(
        {
            "system": system,
            "k": k,
            "users": 10,
            "pass_hat_k": estimates,
            "ci_low": [e - 0.1 for e in estimates],
            "ci_high": [e + 0.1 for e in estimates],
            "pass_at_k": estimates,
            "at_ci_low": estimates,
            "at_ci_high": estimates,
        }
    )


def three_runs() -> list[board.BoardRun]:
    """Runs A and B compare (same key), C does not: A oracle 0.8, random 0.2; B oracle 0.7; C random 0.9."""
    return [
        board.BoardRun("run-A", "../run-A", "k1", KEY_1, metrics_frame(["oracle", "random"], [0.8, 0.2], [0.3, 0.1])),
        board.BoardRun("run-B", "../run-B", "k1", KEY_1, metrics_frame(["oracle"], [0.7], [0.2])),
        board.BoardRun(
            "run-C", "", "k2", KEY_2, metrics_frame(["random"], [0.9], [0.05]), pass_k=pass_frame("random", [0.9, 0.8])
        ),
    ]


def row(table: pd.DataFrame, run: str, system: str) -> pd.Series:
    rows = table[(table["run"] == run) & (table["system"] == system)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_the_registry_declares_the_directions_the_tests_rely_on():
    assert column_registry.session_column(SUCCESS).higher_is_better is True
    assert column_registry.session_column(STALE).higher_is_better is False


def test_runs_with_equal_keys_share_a_class_numbered_in_order_of_appearance():
    table = board.board_table(three_runs(), [SUCCESS])
    assert list(table.columns[: len(board.BOARD_COLUMNS)]) == list(board.BOARD_COLUMNS)
    assert table.groupby("class")["run"].unique().map(sorted).to_dict() == {1: ["run-A", "run-B"], 2: ["run-C"]}
    assert set(table.loc[table["class"] == 1, "class_label"]) == {KEY_1}
    assert set(table.loc[table["class"] == 2, "class_key"]) == {"k2"}
    assert row(table, "run-A", "oracle")["sessions"] == 10
    # the class first seen is class 1, whatever its key
    reordered = board.board_table(three_runs()[::-1], [SUCCESS])
    assert set(reordered.loc[reordered["class"] == 1, "run"]) == {"run-C"}


def test_ranks_are_within_a_class_only():
    table = board.board_table(three_runs(), [SUCCESS])
    ranks = {(r.run, r.system): r.success_rank for r in table.itertuples()}
    # random of C has the highest mean on the board, but it is alone in its class: rank 1 there, and no
    # rank of class 1 moves for it
    assert ranks == {
        ("run-A", "oracle"): 1,
        ("run-B", "oracle"): 2,
        ("run-A", "random"): 3,
        ("run-C", "random"): 1,
    }
    assert list(zip(table["class"], table["run"], table["system"])) == [
        (1, "run-A", "oracle"),
        (1, "run-B", "oracle"),
        (1, "run-A", "random"),
        (2, "run-C", "random"),
    ]
    assert row(table, "run-A", "oracle")[[SUCCESS, f"{SUCCESS}_ci_low", f"{SUCCESS}_ci_high"]].tolist() == [
        0.8,
        pytest.approx(0.7),
        pytest.approx(0.9),
    ]


def test_a_lower_is_better_metric_ranks_the_other_way_and_the_first_metric_sorts():
    table = board.board_table(three_runs(), [STALE, SUCCESS])
    ranks = {(r.run, r.system): r.stale_rate_rank for r in table.itertuples()}
    assert ranks == {("run-A", "random"): 1, ("run-B", "oracle"): 2, ("run-A", "oracle"): 3, ("run-C", "random"): 1}
    assert list(table["system"][:3]) == ["random", "oracle", "oracle"]  # sorted by the stale rate's rank
    assert row(table, "run-A", "oracle")[f"{SUCCESS}_rank"] == 1  # the other metric keeps its own direction


def test_ties_share_the_better_rank_and_no_direction_or_no_finite_mean_has_none():
    runs = [
        board.BoardRun("a", "", "k", "class", metrics_frame(["x", "y", "z"], [0.5, 0.5, math.inf])),
    ]
    runs[0].model_metrics["response_words"] = [3.0, 4.0, 5.0]  # declared without a better direction
    table = board.board_table(runs, [SUCCESS, "response_words"])
    assert column_registry.session_column("response_words").higher_is_better is None
    assert dict(zip(table["system"], table[f"{SUCCESS}_rank"].fillna(-1))) == {"x": 1, "y": 1, "z": -1}
    assert table["response_words_rank"].isna().all()
    assert list(table["system"]) == ["x", "y", "z"]  # the unranked last


def test_a_metric_is_found_by_its_thesis_name_or_its_column_name():
    assert column_registry.thesis_name("judge_proactiveness") == "proactiveness"
    frame = pd.DataFrame(
        {"model": ["a", "b"], "sessions": [5, 5], "proactiveness": [2.0, 4.0], "proactiveness_ci_low": [1.5, 3.5]}
    )
    run = board.BoardRun("r", "", "k", "class", frame)
    by_column = board.board_table([run], ["judge_proactiveness"])
    by_thesis = board.board_table([run], ["proactiveness"])
    assert dict(zip(by_column["system"], by_column["judge_proactiveness"])) == {"a": 2.0, "b": 4.0}
    assert dict(zip(by_thesis["system"], by_thesis["proactiveness_rank"])) == {"a": 2, "b": 1}
    assert dict(zip(by_column["system"], by_column["judge_proactiveness_rank"])) == {"a": 2, "b": 1}
    assert by_column["judge_proactiveness_ci_high"].isna().all()  # the run has no upper bound: NaN, not an error
    with pytest.raises(ValueError, match="same model_metrics column"):
        board.board_table([run], ["judge_proactiveness", "proactiveness"])


def test_pass_k_columns_for_a_run_with_trials_and_nan_for_the_others():
    table = board.board_table(three_runs(), [SUCCESS])
    assert [c for c in table.columns if c.startswith("pass_hat_")] == ["pass_hat_1", "pass_hat_2"]
    assert row(table, "run-C", "random")[["pass_hat_1", "pass_hat_2"]].tolist() == [0.9, 0.8]
    assert table.loc[table["run"] != "run-C", ["pass_hat_1", "pass_hat_2"]].isna().all().all()
    without = board.board_table(three_runs()[:2], [SUCCESS])
    assert not [c for c in without.columns if c.startswith("pass_hat")]


def test_a_metric_a_run_lacks_is_nan_there_and_a_dash_on_the_page():
    runs = three_runs()
    runs[1] = board.BoardRun("run-B", "", "k1", KEY_1, metrics_frame(["oracle"], [0.7]))  # no stale rate
    table = board.board_table(runs, [STALE])
    assert math.isnan(row(table, "run-B", "oracle")[STALE])
    assert math.isnan(row(table, "run-B", "oracle")[f"{STALE}_rank"])
    assert row(table, "run-A", "oracle")[f"{STALE}_rank"] == 2  # ranked among the values there are
    markdown = board.board_markdown(table, [STALE])
    assert "| run-B | oracle | 10 | – |" in markdown
    assert "<td>oracle</td><td class='num'>10</td><td class='num'>–</td>" in board.board_html(table, [STALE])


def test_markdown_one_section_per_class_with_the_within_class_line():
    runs = three_runs()
    table = board.board_table(runs, [SUCCESS])
    text = board.board_markdown(table, [SUCCESS])
    assert text.startswith("# Board\n")
    assert board.WITHIN_CLASS in text and "do not compare" in text
    assert text.index("## Class 1") < text.index("## Class 2")
    assert f"{KEY_1}. Runs: run-A (../run-A), run-B (../run-B)." in text
    assert f"{KEY_2}. Runs: run-C." in text
    label = column_registry.label(SUCCESS)
    assert f"| run | system | sessions | {label} ↑ | pass^1 | pass^2 |" in text
    assert "| run-A | oracle | 10 | 0.8 [0.7, 0.9] (1) | – | – |" in text
    assert "| run-C | random | 10 | 0.9 [0.8, 1] (1) | 0.9 | 0.8 |" in text
    class_2 = text[text.index("## Class 2") :]
    assert "run-A" not in class_2


def test_markdown_keeps_a_pipe_in_a_system_name_inside_its_cell():
    run = board.BoardRun("r", "", "k", "class", metrics_frame(["a|b"], [0.5]))
    text = board.board_markdown(board.board_table([run], [SUCCESS]), [SUCCESS])
    assert "| r | a\\|b | 10 |" in text


def test_html_escapes_every_value_and_looks_like_the_findings_page():
    from crseval.reports.findings import STYLE  # the page must share the findings page's style

    hostile = "<script>alert(1)</script>"
    runs = [
        board.BoardRun('run"><b>', 'x" onclick="y', "k<1>", "<i>label</i>", metrics_frame([hostile], [0.5])),
        board.BoardRun("plain", "", "k2", "other", metrics_frame(["<script>"], [0.4])),
    ]
    table = board.board_table(runs, [SUCCESS])
    page = board.board_html(table, [SUCCESS], title="<title>")
    assert "<script>" not in page and "<i>" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<td>&lt;script&gt;</td>" in page
    assert 'href="x&quot; onclick=&quot;y"' in page
    assert "<title>&lt;title&gt;</title>" in page
    assert STYLE in page and page.startswith("<!DOCTYPE html>") and "src=" not in page
    assert page.count("<h2>Class ") == 2 and "<table>" in page
    assert board.WITHIN_CLASS in page


def test_csv_round_trip(tmp_path):
    written = board.write_board(three_runs(), [SUCCESS, STALE], tmp_path, title="Nightly")
    assert {kind: path.name for kind, path in written.items()} == {
        "csv": "board.csv",
        "md": "board.md",
        "html": "board.html",
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board.csv", "board.html", "board.md"]  # no temporaries
    table = board.board_table(three_runs(), [SUCCESS, STALE])
    text_columns = ["class_key", "class_label", "run", "path", "system"]
    read = pd.read_csv(written["csv"], dtype={c: str for c in text_columns})
    read["path"] = read["path"].fillna("")
    pd.testing.assert_frame_equal(read, table)
    assert written["md"].read_text(encoding="utf-8") == board.board_markdown(table, [SUCCESS, STALE])
    assert "<h1>Nightly</h1>" in written["html"].read_text(encoding="utf-8")
    # the pages read from the CSV say the same as from the table
    assert board.board_markdown(read, [SUCCESS, STALE]) == board.board_markdown(table, [SUCCESS, STALE])


def test_a_run_without_model_or_a_repeated_name_is_refused():
    runs = three_runs()
    broken = board.BoardRun("run-X", "", "k1", KEY_1, pd.DataFrame({"system": ["a"], SUCCESS: [0.5]}))
    with pytest.raises(ValueError, match="run-X.*`model`"):
        board.board_table([*runs, broken], [SUCCESS])
    with pytest.raises(ValueError, match="unique.*run-A"):
        board.board_table([*runs, runs[0]], [SUCCESS])
    twice = board.BoardRun("run-Y", "", "k1", KEY_1, metrics_frame(["a", "a"], [0.1, 0.2]))
    with pytest.raises(ValueError, match="run-Y.*more than once"):
        board.board_table([twice], [SUCCESS])


def test_a_metric_no_run_has_is_said_and_an_empty_board_is_a_table():
    table = board.board_table(three_runs(), [SUCCESS, "no_such_metric"])
    assert table["no_such_metric"].isna().all() and table["no_such_metric_rank"].isna().all()
    assert "No run has a value of: no_such_metric." in board.board_markdown(table, [SUCCESS, "no_such_metric"])
    empty = board.board_table([], [SUCCESS])
    assert list(empty.columns) == [
        *board.BOARD_COLUMNS,
        SUCCESS,
        f"{SUCCESS}_ci_low",
        f"{SUCCESS}_ci_high",
        f"{SUCCESS}_rank",
    ]
    assert "0 runs in 0 classes" in board.board_markdown(empty, [SUCCESS])
    assert "No run with a system" in board.board_html(empty, [SUCCESS])
