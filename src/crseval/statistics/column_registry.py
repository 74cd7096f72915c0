"""The metric registry: every column of sessions.parquet and turns.parquet, as declared by its writer.

The identifier columns (crseval.core.columns), the scorer and each metric family of
crseval.metrics.families.FAMILY_KINDS, and the judge (crseval.judge.judge_columns) declare their columns once;
aggregate, statistics, validity, figures and the reports read label, range, direction, ground
truth and thesis name from here. A column nobody declared is an error, not a float by default.
The panel judges' columns carry names from the config (`judge_<name>_<criterion>`): the judge
declares them by pattern, so they are found by name but not listed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from crseval.core.columns import LABEL_COLUMNS, SESSION_ID_COLUMNS, TURN_ID_COLUMNS, Column, verdict_column
from crseval.judge import judge_columns
from crseval.metrics import families, scorer


def _by_name(*groups: tuple[Column, ...]) -> dict[str, Column]:
    registry: dict[str, Column] = {}
    for group in groups:
        for column in group:
            if column.name in registry and registry[column.name] != column:
                raise ValueError(f"column {column.name} is declared twice, differently")
            registry[column.name] = column
    return registry


# Who writes which columns, in table order: (writer, session columns, turn columns).
WRITERS = (
    ("identifiers", (*SESSION_ID_COLUMNS, *LABEL_COLUMNS), TURN_ID_COLUMNS),  # labels: carried by the score rule
    ("scorer", scorer.SESSION_COLUMNS, ()),
    *((name, kind.session_columns, kind.turn_columns) for name, kind in families.FAMILY_KINDS.items()),
    ("judge", judge_columns.SESSION_COLUMNS, ()),
)


class Declared(Mapping):
    """Column name -> Column: the columns declared by name, then those a writer declares by pattern
    (`by_pattern(name)`, None for no such column). Iterating lists the former only."""

    def __init__(self, by_name: dict[str, Column], by_pattern: Callable[[str], Column | None]):
        self._by_name, self._by_pattern = by_name, by_pattern

    def __getitem__(self, name: str) -> Column:
        column = self._by_name.get(name) or self._by_pattern(name)
        if column is None:
            raise KeyError(name)
        return column

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)


SESSION_COLUMNS = Declared(
    _by_name(*(session for _, session, _ in WRITERS)),
    lambda name: judge_columns.declared(name) or verdict_column(name),
)
# Columns declared by pattern, for the docs: (writer, columns with a placeholder name).
PATTERN_WRITERS = (
    ("identifiers", (verdict_column("verdict_<verdict>"),)),  # people's verdicts: carried by the score rule
    ("judge panel", judge_columns.panel_columns("<name>")),
)
TURN_COLUMNS = _by_name(*(turn for _, _, turn in WRITERS))
JUDGE_SCORES = judge_columns.SCORE_COLUMNS
# model_metrics.csv name -> column, for the columns the thesis table names differently
BY_THESIS_NAME = {c.thesis_name: c for c in SESSION_COLUMNS.values() if c.thesis_name}


def session_column(name: str) -> Column:
    """The declaration of a sessions.parquet column; KeyError naming it when nobody declared it."""
    try:
        return SESSION_COLUMNS[name]
    except KeyError:
        raise KeyError(f"sessions.parquet column {name!r} is declared by no metric family, the scorer or the judge")


def label(name: str) -> str:
    """A column's label for figures and tables (a model_metrics.csv thesis name is understood too)."""
    column = SESSION_COLUMNS.get(name) or BY_THESIS_NAME.get(name)
    return column.label if column else name.replace("_", " ")


def direction(name: str) -> bool | None:
    """Whether higher is better for a column named by its sessions.parquet or its model_metrics.csv name; None
    for a column declared without a direction or declared by nobody (a table may carry columns of its own)."""
    column = SESSION_COLUMNS.get(name) or BY_THESIS_NAME.get(name)
    return column.higher_is_better if column else None


def thesis_name(name: str) -> str:
    """The column's name in model_metrics.csv: the thesis table's name where it has one."""
    column = SESSION_COLUMNS.get(name)
    return column.thesis_name if column and column.thesis_name else name


def metric_names(columns) -> list[str]:
    """The metrics among `columns`, in their order (identifiers, counts, spreads and texts are not)."""
    return [name for name in columns if session_column(name).metric]


def undeclared(columns, table: str = "sessions") -> list[str]:
    """The columns of a table that nobody declared."""
    declared = SESSION_COLUMNS if table == "sessions" else TURN_COLUMNS
    return [name for name in columns if name not in declared]


DOCS_START, DOCS_END = "<!-- columns:start -->", "<!-- columns:end -->"


def markdown_reference() -> str:
    """The column reference of docs/metrics.md: one table per writer, sessions then turns."""

    def direction(column: Column) -> str:
        return {True: "higher", False: "lower", None: "–"}[column.higher_is_better]

    lines = []
    for table, position in (("sessions.parquet", 1), ("turns.parquet", 2)):
        lines += [
            f"### {table}",
            "",
            "| writer | column | label | range or unit | better | ground truth | thesis name |",
            "|---|---|---|---|---|---|---|",
        ]
        writers = [*WRITERS, *((writer, columns, ()) for writer, columns in PATTERN_WRITERS)]
        for writer, *columns in writers:
            for c in columns[position - 1]:
                truth, thesis = "needed" if c.ground_truth else "", c.thesis_name or ""
                lines.append(f"| {writer} | `{c.name}` | {c.label} | {c.unit} | {direction(c)} | {truth} | {thesis} |")
        if position == 1:
            lines += [
                "",
                "`<verdict>`: a verdict people gave on the dialogues of an imported corpus, one column per verdict "
                "its format declares (docs/importing.md); `<name>`: the name of a panel judge (`judge.panel` of "
                "the config), one set of columns each.",
            ]
        lines.append("")
    return "\n".join(lines)


def with_reference(document: str) -> str:
    """`document` with the text between the column markers replaced by `markdown_reference()`."""
    head, _, rest = document.partition(DOCS_START)
    _, _, tail = rest.partition(DOCS_END)
    return f"{head}{DOCS_START}\n{markdown_reference()}{DOCS_END}{tail}"


if __name__ == "__main__":  # python -m crseval.statistics.column_registry docs/metrics.md: rewrite the column reference
    import sys
    from pathlib import Path

    path = Path(sys.argv[1])
    path.write_text(with_reference(path.read_text(encoding="utf-8")), encoding="utf-8")
