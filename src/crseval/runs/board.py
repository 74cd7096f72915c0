"""The board: every system of many finished runs in one table, grouped by comparability class.

Numbers of two runs compare only when the runs used the same simulated users, metrics, judge and catalog: the
caller gives each run its comparability key (equal keys = comparable, computed from the provenance digests
elsewhere) and a short description of what defines its class. The board numbers the classes in order of
first appearance and ranks systems on each metric within their class only, never across classes: a rank
across classes would compare numbers measured differently.

`board_table` is the table at full precision (board.csv); `board_markdown` and `board_html` show it one
section per class, each cell "mean [95% interval] (rank)", the HTML page in the findings page's style
(crseval.reports.findings.STYLE), self-contained, with every value escaped (system names come from users'
configs) and every link through the scheme check of crseval.reports.links (a run's folder may be named
`javascript:...`). A run put on the board although its record does not describe its tables (its mismatches
trusted) puts the heading RECORD_MISMATCH_HEADING with each mismatch above the classes. `write_board` writes
the three files atomically.

The tables come from results folders that may be foreign or hand-edited: a cell that should hold a number and
holds text, a system without a name or listed twice, a pass^k table with a k twice or past MAX_PASS_K is
refused naming the run; a cell left empty is a missing value, shown as "–".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from crseval.core.io import atomic_path
from crseval.reports.findings import STYLE, esc, num
from crseval.reports.links import safe_url
from crseval.runs.comparability import RECORD_MISMATCH_HEADING
from crseval.statistics import column_registry


@dataclass(frozen=True)
class BoardRun:
    """One finished run on the board: its label, where its results are, its class and its tables."""

    name: str  # the run's label (its results folder name, unique on the board)
    path: str  # href or path of the results folder, for links (may be "")
    class_key: str  # comparability key: equal keys = comparable
    class_label: str  # short description of the class, e.g. "user 3f2a9c1b2d4e, metrics 91ab..., catalog ..."
    model_metrics: pd.DataFrame  # the run's tables/model_metrics.csv as read by pandas
    pass_k: pd.DataFrame | None = None  # the run's stats/reliability_trials.csv when it has trials, else None
    mismatches: tuple[str, ...] = ()  # what the run's record does not describe, when put on the board anyway


# The leading columns of every board table; per metric and pass^k columns follow (see board_table).
BOARD_COLUMNS = ("class", "class_key", "class_label", "run", "path", "system", "sessions")
METRIC_SUFFIXES = ("", "_ci_low", "_ci_high", "_rank")
PASS_PREFIX = "pass_hat_"
_PASS_COLUMN = re.compile(rf"^{PASS_PREFIX}(\d+)$")
MAX_METRICS = 1000  # four columns each
MAX_PASS_K = 1000  # one column each
# What would start a code span, HTML tag, autolink or another table cell in Markdown, and the "](" that makes
# brackets a link (brackets alone stay: every interval is "[low, high]"; emphasis is left alone too, since
# underscores are in most metric names, and a stray one formats, it does not inject)
_MARKDOWN_SPECIAL = re.compile(r"([\\`<>|]|(?<=\])\()")
WITHIN_CLASS = (
    "Ranks are within a class only. Runs in different classes used different simulated users, metrics, judges "
    "or catalogs (their comparability keys differ), so their numbers do not compare and no system is ranked "
    "against one of another class."
)
LEGEND = (
    "Each cell is the mean [95% interval] (rank in the class, 1 = best in the metric's direction: ↑ higher is "
    "better, ↓ lower is better; ties share the better rank). A metric without a better direction, or a mean that "
    "is no finite number, has no rank. – : the run has no such value. sessions: per system; in a run with "
    "repeated trials, the users. pass^k: the chance of succeeding on every one of k tries at the same user "
    "(runs with repeated trials only)."
)


# ------------------------------------------------------------------ the table


def _label(metric: str) -> str:
    return column_registry.label(metric)


def _arrow(metric: str) -> str:
    return {True: " ↑", False: " ↓", None: ""}[column_registry.direction(metric)]


def _resolve(metrics: list[str]) -> dict[str, str]:
    """metric as given -> its model_metrics column; two names for one column would make two equal columns."""
    if len(metrics) > MAX_METRICS:
        raise ValueError(f"{len(metrics):,} metrics, more than the {MAX_METRICS:,} a board shows")
    odd = [m for m in metrics if not isinstance(m, str) or not m.strip()]
    if odd:
        raise ValueError(f"metric names are text: {odd[:5]}")
    resolved = {metric: column_registry.thesis_name(metric) for metric in metrics}
    seen: dict[str, str] = {}
    for metric, column in resolved.items():
        if column in seen and seen[column] != metric:
            raise ValueError(f"metrics {seen[column]!r} and {metric!r} are the same model_metrics column {column!r}")
        seen[column] = metric
    if len(resolved) != len(metrics):
        raise ValueError(f"a metric is named twice: {metrics}")
    clash = [m for m in metrics if m in BOARD_COLUMNS or _PASS_COLUMN.match(m)]
    if clash:
        raise ValueError(f"metric names that are board columns: {clash}")
    made = [f"{m}{suffix}" for m in metrics for suffix in METRIC_SUFFIXES]
    twice = sorted({c for c in made if made.count(c) > 1})
    if twice:
        raise ValueError(f"metrics whose board columns would be the same: {twice} (e.g. a metric and its interval)")
    return resolved


def _numbers(frame: pd.DataFrame, column: str, where: str) -> pd.Series:
    """A column as floats (NaN where a cell is empty), all NaN when the frame lacks it; ValueError naming
    `where` when a cell holds something else than a number (text where crseval writes numbers)."""
    if column not in frame:
        return pd.Series(math.nan, index=frame.index, dtype=float)
    values = frame[column]
    if isinstance(values, pd.DataFrame):
        raise ValueError(f"{where} holds the column {column} more than once")
    numbers = pd.to_numeric(values, errors="coerce").astype(float)
    wrong = numbers.isna() & values.notna()
    if wrong.any():
        raise ValueError(f"{where} column {column} holds {values[wrong].iloc[0]!r:.60}, not a number")
    return numbers


def _pass_values(run: BoardRun) -> dict[tuple[str, int], float]:
    """(system, k) -> pass^k estimate of a run's reliability_trials table; empty without one."""
    if run.pass_k is None or not len(run.pass_k):
        return {}
    missing = [c for c in ("system", "k", "pass_hat_k") if c not in run.pass_k]
    if missing:
        raise ValueError(f"run {run.name!r}: its pass^k table lacks the columns {missing}")
    ks = pd.to_numeric(run.pass_k["k"], errors="coerce")
    if ks.isna().any() or (ks < 1).any() or (ks != ks.round()).any() or (ks > MAX_PASS_K).any():
        raise ValueError(f"run {run.name!r}: its pass^k table has a k that is no whole number from 1 to {MAX_PASS_K}")
    values = _numbers(run.pass_k, "pass_hat_k", f"run {run.name!r}: its pass^k table")
    found: dict[tuple[str, int], float] = {}
    for system, k, value in zip(run.pass_k["system"].astype(str), ks, values, strict=True):
        if (system, int(k)) in found:
            raise ValueError(f"run {run.name!r}: its pass^k table gives system {system!r} at k {int(k)} twice")
        found[(system, int(k))] = value
    return found


def _run_rows(run: BoardRun, number: int, label: str, resolved: dict[str, str]) -> pd.DataFrame:
    frame = run.model_metrics
    where = f"run {run.name!r}: its model_metrics"
    if "model" not in frame:
        raise ValueError(f"run {run.name!r}: its model_metrics has no `model` column (columns: {list(frame.columns)})")
    if frame["model"].isna().any():
        raise ValueError(f"run {run.name!r}: its model_metrics has a row without a system (`model` is empty)")
    systems = frame["model"].astype(str)
    twice = sorted(set(systems[systems.duplicated()]))
    if twice:
        raise ValueError(f"run {run.name!r}: its model_metrics lists the systems {twice} more than once")
    rows = pd.DataFrame(
        {
            "class": number,
            "class_key": str(run.class_key),
            "class_label": label,
            "run": run.name,
            "path": run.path,
            "system": systems.to_numpy(),
            "sessions": _numbers(frame, "sessions", where).to_numpy(),
        },
        index=range(len(frame)),
    )
    for metric, column in resolved.items():
        for suffix in METRIC_SUFFIXES[:3]:
            rows[f"{metric}{suffix}"] = _numbers(frame, f"{column}{suffix}", where).to_numpy()
    return rows


def board_table(runs: list[BoardRun], metrics: list[str]) -> pd.DataFrame:
    """One row per (run, system): BOARD_COLUMNS, then per metric `<metric>`, `<metric>_ci_low`,
    `<metric>_ci_high` and `<metric>_rank` (within the class, 1 = best in the metric's direction, ties share
    the better rank, NaN without a direction or a finite mean), then `pass_hat_1`..`pass_hat_K` when a run has
    pass^k (NaN for the others). Metrics are sessions column names or model_metrics (thesis) names; one a run
    lacks is NaN there. Sorted by class, the first metric's rank (NaN last), run and system."""
    names = [run.name for run in runs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"run names on a board must be unique; more than once: {repeated}")
    resolved = _resolve(metrics)
    classes: dict[str, int] = {}
    labels: dict[str, str] = {}
    for run in runs:
        classes.setdefault(str(run.class_key), len(classes) + 1)
        labels.setdefault(str(run.class_key), run.class_label)
    metric_columns = [f"{m}{suffix}" for m in metrics for suffix in METRIC_SUFFIXES]
    parts = [_run_rows(run, classes[str(run.class_key)], labels[str(run.class_key)], resolved) for run in runs]
    passes = {run.name: _pass_values(run) for run in runs}
    most = max((k for values in passes.values() for _, k in values), default=0)
    pass_columns = [f"{PASS_PREFIX}{k}" for k in range(1, most + 1)]
    columns = [*BOARD_COLUMNS, *metric_columns, *pass_columns]
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=columns)
    table = pd.concat(parts, ignore_index=True)
    table["class"] = table["class"].astype("int64")
    for metric in metrics:
        direction = column_registry.direction(metric)
        means = table[metric].where(np.isfinite(table[metric]))
        table[f"{metric}_rank"] = (
            means.groupby(table["class"]).rank(method="min", ascending=not direction)
            if direction is not None
            else math.nan
        )
    for k in range(1, most + 1):
        table[f"{PASS_PREFIX}{k}"] = [
            passes[run].get((system, k), math.nan) for run, system in zip(table["run"], table["system"])
        ]
    order = ["class", f"{metrics[0]}_rank", "run", "system"] if metrics else ["class", "run", "system"]
    table = table.sort_values(order, na_position="last", kind="stable").reset_index(drop=True)
    return table[columns].astype({c: float for c in [*metric_columns, *pass_columns]})


# ------------------------------------------------------------------ for a reader


def _count(value) -> str:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "–"
    return f"{int(value):,}" if math.isfinite(value) else "–"


def _text(value) -> str:
    """A text cell read back from a CSV: "" for a missing one."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _cell(row: pd.Series, metric: str) -> str:
    """ "0.8 [0.7, 0.9] (1)"; the mean alone without an interval; "–" where the run has no value."""
    mean = row.get(metric, math.nan)
    shown = num(mean)
    if shown in ("–", "n/a"):
        return shown
    low, high = row.get(f"{metric}_ci_low", math.nan), row.get(f"{metric}_ci_high", math.nan)
    if num(low) != "–" and num(high) != "–":
        shown += f" [{num(low)}, {num(high)}]"
    rank = pd.to_numeric(row.get(f"{metric}_rank", math.nan), errors="coerce")
    return shown + (f" ({int(rank)})" if pd.notna(rank) else "")


def _pass_columns(table: pd.DataFrame) -> list[str]:
    return sorted((c for c in table.columns if _PASS_COLUMN.match(str(c))), key=lambda c: int(c[len(PASS_PREFIX) :]))


def _classes(table: pd.DataFrame):
    """(number, label, [(run, path)], rows) per class, in class order."""
    for number, rows in table.groupby("class", sort=True):
        runs = list(dict.fromkeys(zip(rows["run"].astype(str), rows["path"].map(_text))))
        yield int(number), _text(rows["class_label"].iloc[0]), sorted(runs), rows


def _run_link(run: str, path: str) -> str:
    """A run's name, linked to its results folder when the board knows where it is."""
    return f'<a href="{esc(safe_url(path))}">{esc(run)}</a>' if path else esc(run)


def _missing(table: pd.DataFrame, metrics: list[str]) -> list[str]:
    """The metrics no run on the board has a value of: most likely a name no run wrote."""
    return [m for m in metrics if m not in table or table[m].isna().all()]


def _summary(table: pd.DataFrame) -> str:
    runs, classes = table["run"].nunique(), table["class"].nunique()
    return f"{runs} run{'s' * (runs != 1)} in {classes} class{'es' * (classes != 1)}, {len(table)} rows (run, system)."


def markdown_text(value) -> str:
    """`value` as Markdown text on one line (a table cell, a heading): whitespace runs one space, and what would
    start a code span, link, HTML tag or another cell escaped, so that a name from a config cannot format or
    script the page that shows it."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(value).split()))


def board_markdown(table: pd.DataFrame, metrics: list[str], mismatches: dict[str, list[str]] | None = None) -> str:
    """board.md: the within-class line, then per class its label, runs and a table of its rows. `mismatches`:
    run name -> what its record does not describe, for runs on the board although it does not."""
    passes = _pass_columns(table)
    lines = ["# Board", ""]
    if mismatches:
        lines += [f"## The {RECORD_MISMATCH_HEADING}", ""]
        lines += [
            f"- {markdown_text(run)}: {markdown_text(line)}" for run, found in mismatches.items() for line in found
        ]
        lines.append("")
    lines += [WITHIN_CLASS, "", LEGEND, "", _summary(table)]
    missing = _missing(table, metrics)
    if missing:
        lines += ["", f"No run has a value of: {', '.join(markdown_text(m) for m in missing)}."]
    header = [
        "run",
        "system",
        "sessions",
        *(_label(m) + _arrow(m) for m in metrics),
        *(f"pass^{c[len(PASS_PREFIX) :]}" for c in passes),
    ]
    for number, label, runs, rows in _classes(table):
        listed = ", ".join(markdown_text(run) + (f" ({markdown_text(path)})" if path else "") for run, path in runs)
        lines += ["", f"## Class {number}", "", f"{markdown_text(label)}. Runs: {listed}.", ""]
        lines += ["| " + " | ".join(markdown_text(h) for h in header) + " |", "|---" * len(header) + "|"]
        for _, row in rows.iterrows():
            cells = [markdown_text(row["run"]), markdown_text(row["system"]), _count(row["sessions"])]
            cells += [markdown_text(_cell(row, m)) for m in metrics] + [num(row[c]) for c in passes]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def board_html(
    table: pd.DataFrame, metrics: list[str], title: str = "Board", mismatches: dict[str, list[str]] | None = None
) -> str:
    """board.html: the board as one self-contained page in the findings page's style (`mismatches` as for
    board_markdown)."""
    passes = _pass_columns(table)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
    ]
    if mismatches:
        parts += [
            f"<h2 class='fail'>The {esc(RECORD_MISMATCH_HEADING)}</h2>",
            "<p class='fail'>On the board although their provenance records do not describe what was read: a number "
            "below may come from tables or settings other than those the record names.</p><ul>",
            *(f"<li><b>{esc(run)}</b>: {esc(line)}</li>" for run, found in mismatches.items() for line in found),
            "</ul>",
        ]
    parts += [
        f"<p><small>{esc(_summary(table))}</small></p>",
        f"<p class='lead'>{esc(WITHIN_CLASS)}</p>",
        f"<p><small>{esc(LEGEND)}</small></p>",
    ]
    missing = _missing(table, metrics)
    if missing:
        parts.append(f"<p class='untestable'>No run has a value of: {esc(', '.join(missing))}.</p>")
    header = "<tr><th>run</th><th>system</th><th>sessions</th>"
    header += "".join(f"<th title='{esc(m)}'>{esc(_label(m) + _arrow(m))}</th>" for m in metrics)
    header += "".join(f"<th>pass<sup>{esc(c[len(PASS_PREFIX) :])}</sup></th>" for c in passes) + "</tr>"
    for number, label, runs, rows in _classes(table):
        listed = ", ".join(_run_link(run, path) for run, path in runs)
        key = esc(_text(rows["class_key"].iloc[0]))
        parts += [
            f"<h2>Class {number}</h2>",
            f"<p>{esc(label)}<br><small>key <code>{key}</code>; runs: {listed}</small></p>",
            f"<table>{header}",
        ]
        for _, row in rows.iterrows():
            cells = [f"<td>{esc(row['run'])}</td>", f"<td>{esc(row['system'])}</td>"]
            cells.append(f"<td class='num'>{esc(_count(row['sessions']))}</td>")
            cells += [f"<td class='num'>{esc(_cell(row, m))}</td>" for m in metrics]
            cells += [f"<td class='num'>{esc(num(row[c]))}</td>" for c in passes]
            parts.append(f"<tr>{''.join(cells)}</tr>")
        parts.append("</table>")
    if not len(table):
        parts.append("<p>No run with a system on this board.</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_board(runs: list[BoardRun], metrics: list[str], out_dir: Path, title: str = "Board") -> dict[str, Path]:
    """board.csv, board.md and board.html in `out_dir`, each written whole or not at all: {"csv", "md",
    "html"} -> path."""
    table = board_table(runs, metrics)
    out_dir = Path(out_dir)
    mismatches = {run.name: list(run.mismatches) for run in runs if run.mismatches}
    texts = {
        "md": ("board.md", board_markdown(table, metrics, mismatches)),
        "html": ("board.html", board_html(table, metrics, title, mismatches)),
    }
    written = {"csv": out_dir / "board.csv"}
    with atomic_path(written["csv"]) as temporary:
        table.to_csv(temporary, index=False)
    for kind, (name, text) in texts.items():
        written[kind] = out_dir / name
        with atomic_path(written[kind]) as temporary:
            temporary.write_text(text, encoding="utf-8")
    return written
