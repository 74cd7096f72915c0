"""`crseval compare BASELINE RUN [RUN ...]`: each run against the baseline, comparability first.

For each run: its stages against the baseline's (crseval.runs.comparability). A run whose catalog,
simulated user or metrics differ is refused, naming the settings that differ, unless `allow_different`;
then it is compared under a heading that says what differs. Sessions are matched by simulated user
(session index and seed) and trial, systems by name or `system_map`; judge scores are compared only
under an equal judge. Per system and metric: the paired differences, intervals, exact tests and
regression flags of crseval.runs.paired, under the baseline's analysis plan (checked before it is used: the
record may be hand-edited); and the sessions that changed most. A metric column that holds no numbers in
either run is left out with the reason, like one that is in one run only. A tolerance must be a finite number
(an infinite one would switch the regression gate off) and name a metric the comparison compares (a name
that matches none would leave the metric meant at tolerance 0, unsaid).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crseval.judge import judge_columns
from crseval.runs import paired
from crseval.runs.comparability import Comparability, Run, RunError, compare_runs, printable
from crseval.statistics import column_registry
from crseval.statistics.analysis_plan import AnalysisPlan

REFUSED, REGRESSED, FINE = 2, 1, 0


@dataclass
class RunComparison:
    """One run against the baseline."""

    run: Run
    comparability: Comparability
    refused: bool  # differs where comparisons are refused, and not allowed: nothing else computed
    table: pd.DataFrame = field(default_factory=pd.DataFrame)  # paired.paired_table
    changed: pd.DataFrame = field(default_factory=pd.DataFrame)  # paired.changed_sessions
    unmatched: dict = field(default_factory=dict)  # paired.unmatched
    not_compared: list[str] = field(default_factory=list)  # metrics left out, with the reason

    @property
    def regressions(self) -> pd.DataFrame:
        return self.table[self.table["flag"]] if len(self.table) else self.table


@dataclass
class BaselineComparison:
    """Finished runs against a baseline run (`crseval compare`), one RunComparison each; the systems of one
    run compared with each other are crseval.statistics.comparison.SystemComparison."""

    baseline: Run
    runs: list[RunComparison]
    plan: AnalysisPlan
    adjusted: bool
    tolerance: dict[str, float]

    def exit_code(self, fail_on_regression: bool) -> int:
        """2 when a run was refused, else 1 when a regression is flagged and that should fail, else 0."""
        if any(r.refused for r in self.runs):
            return REFUSED
        if fail_on_regression and any(len(r.regressions) for r in self.runs):
            return REGRESSED
        return FINE


def compared_metrics(baseline: pd.DataFrame, run: pd.DataFrame, same_judge: bool) -> tuple[list[str], list[str]]:
    """The metric columns both tables hold (in the baseline's order), and those left out with the reason."""
    left_out = []
    metrics = []
    for name in column_registry.metric_names(_declared(baseline)):
        if name not in run.columns:
            left_out.append(f"{name}: not in the run")
        elif not same_judge and _is_judge_column(name):
            left_out.append(f"{name}: the judges differ")
        elif text := next((f"{side} ({why})" for side, why in _not_numbers(name, baseline, run) if why), ""):
            left_out.append(f"{name}: not numbers in the {text}")
        else:
            metrics.append(name)
    left_out += [
        f"{name}: not in the baseline" for name in column_registry.metric_names(_declared(run)) if name not in baseline
    ]
    return metrics, left_out


def _not_numbers(name: str, baseline: pd.DataFrame, run: pd.DataFrame):
    """(side, what makes its column `name` no column of numbers, e.g. "str values, e.g. 'x'", or ""), baseline
    first: a hand-edited or foreign table may hold text where crseval writes numbers, and such a metric is left
    out with the reason, not guessed at."""
    for side, values in (("baseline", baseline[name]), ("run", run[name])):
        if pd.api.types.is_numeric_dtype(values):
            yield side, ""
            continue
        odd = (
            v
            for v in values.dropna()
            if isinstance(v, (bool, str, bytes)) or not isinstance(v, (int, float, np.number))
        )
        first = next(odd, None)
        yield side, "" if first is None else f"{values.dtype} values, e.g. {first!r:.40}"


def _declared(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if c in column_registry.SESSION_COLUMNS]


def _is_judge_column(name: str) -> bool:
    return name in {c.name for c in judge_columns.SESSION_COLUMNS} or judge_columns.declared(name) is not None


def compare(
    baseline: Run,
    runs: list[Run],
    *,
    system_map: dict[str, str] | None = None,
    allow_different: bool = False,
    tolerance: dict[str, float] | None = None,
    adjusted: bool = False,
    top: int = 10,
) -> BaselineComparison:
    """Every run against `baseline` (see the module docstring); tables are read only for runs not refused."""
    plan = baseline.plan()
    tolerance = dict(tolerance or {})
    paired.check_tolerance(tolerance)  # before any table is read
    base_sessions = None
    compared = []
    metrics_compared: dict[str, None] = {}
    for run in runs:
        comparability = compare_runs(baseline, run, system_map)
        if comparability.refused and not allow_different:
            compared.append(RunComparison(run, comparability, refused=True))
            continue
        if base_sessions is None:
            base_sessions = baseline.sessions()
        run_sessions = run.sessions()
        metrics, left_out = compared_metrics(base_sessions, run_sessions, comparability.stage("judge").equal)
        metrics_compared |= dict.fromkeys(metrics)
        renames = {name: base for name, base in comparability.system_map.items() if name != base}
        try:
            table = paired.paired_table(
                base_sessions,
                run_sessions,
                metrics=metrics,
                plan=plan,
                tolerance=tolerance,
                system_map=renames,
                adjusted=adjusted,
            )
            changed = paired.changed_sessions(base_sessions, run_sessions, metrics=metrics, system_map=renames, top=top)
            unmatched = paired.unmatched(base_sessions, run_sessions, system_map=renames)
        except ValueError as error:  # paired names the side ("baseline", "run"); the reader needs the runs
            raise RunError(f"{run.name} against {baseline.name}: {error}") from None
        compared.append(RunComparison(run, comparability, False, table, changed, unmatched, left_out))
    if metrics_compared:  # (every run refused: nothing compared, and no tolerance applied)
        _check_tolerance_names(tolerance, list(metrics_compared))
    return BaselineComparison(baseline, compared, plan, adjusted, tolerance)


def _check_tolerance_names(tolerance: dict[str, float], metrics: list[str]) -> None:
    """ValueError for a tolerance ("*" aside) naming no metric that was compared: a misspelt one ("tass") would
    leave the metric meant at tolerance 0 without a word."""
    for name, value in tolerance.items():
        if name != "*" and name not in metrics:
            listed = ", ".join(metrics[:30]) + (f" and {len(metrics) - 30} more" if len(metrics) > 30 else "")
            raise ValueError(
                f"tolerance {printable(name, 80)}={value:g}: {printable(name, 80)} is no metric this comparison "
                f"compares (compared: {listed})"
            )
