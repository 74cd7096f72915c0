"""Gather per-shard scores and judgements into the experiment's tables.

- sessions.parquet: one row per session (system, seed, shard, every metric, judge scores);
- turns.parquet: one row per turn;
- model_metrics.csv: one row per system, the mean of each metric with its 95% confidence interval
  (crseval.statistics.intervals: Wilson for 0/1 shares, else a seeded expanded percentile bootstrap,
  so it stays inside the metric's range), how that interval was computed and why it has no width or
  none, with the thesis table's column names where they exist (`model`, `proactiveness`...).
The Parquet schemas are declared, not inferred: every column's type comes from its declaration
(crseval.statistics.column_registry), so a column that is all-NaN in one run has the same type in every run,
and a column nobody declared stops the rule.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from crseval.core.io import atomic_path
from crseval.statistics import column_registry, trials
from crseval.statistics.intervals import mean_interval

ARROW_TYPES = {
    "float64": pa.float64(),
    "int64": pa.int64(),
    "int32": pa.int32(),
    "bool": pa.bool_(),
    "string": pa.string(),
}


def schema_for(frame: pd.DataFrame, table: str = "sessions") -> pa.Schema:
    """The declared type of every column (crseval.statistics.column_registry); a column nobody declared stops here."""
    unknown = column_registry.undeclared(frame.columns, table)
    if unknown:
        raise ValueError(f"{table} table: columns declared by no metric family, the scorer or the judge: {unknown}")
    declared = column_registry.SESSION_COLUMNS if table == "sessions" else column_registry.TURN_COLUMNS
    return pa.schema([pa.field(name, ARROW_TYPES[declared[name].dtype]) for name in frame.columns])


def to_table(frame: pd.DataFrame, table: str = "sessions") -> pa.Table:
    schema = schema_for(frame, table)
    columns = {}
    for field in schema:
        values = frame[field.name]
        if pa.types.is_floating(field.type):
            values = pd.to_numeric(values, errors="coerce").astype("float64")
        elif pa.types.is_integer(field.type):
            values = pd.to_numeric(values, errors="coerce").astype("Int64")
        elif pa.types.is_boolean(field.type):
            values = values.astype("boolean")
        else:
            values = values.astype("object").where(values.notna(), None)
        columns[field.name] = pa.array(values, type=field.type, from_pandas=True)
    return pa.table(columns, schema=schema)


def write_shard_tables(
    paths: list[str], shards: list[int], table: str, output: str | Path, trials: list[int] | None = None
) -> int:
    """The tables at `paths`, each with the number of its shard (and of its trial, when `trials` is given),
    written one after the other as one table of the declared types (`to_table`), with the columns in order
    of first appearance: what concatenating them would give, holding one shard at a time. The number of
    rows written."""
    added = ["shard", "trial"] if trials is not None else ["shard"]
    names = list(dict.fromkeys(name for path in paths for name in [*pq.read_schema(path).names, *added]))
    rows = 0
    with atomic_path(output) as temporary:
        writer = None
        try:
            for position, (path, shard) in enumerate(zip(paths, shards, strict=True)):
                frame = pd.read_parquet(path).assign(shard=shard)
                if trials is not None:
                    frame = frame.assign(trial=trials[position])
                frame = frame.reindex(columns=names)
                part = to_table(frame, table)
                writer = writer or pq.ParquetWriter(temporary, part.schema)
                writer.write_table(part)
                rows += len(frame)
            if writer is None:  # no shards: an empty table
                pq.write_table(to_table(pd.DataFrame(columns=names), table), temporary)
        finally:
            if writer is not None:
                writer.close()
    return rows


def metric_columns(frame: pd.DataFrame) -> list[str]:
    """The declared metrics among the frame's numeric columns, in the frame's order."""
    return [c for c in column_registry.metric_names(frame.columns) if pd.api.types.is_numeric_dtype(frame[c])]


def interval_kind(metric: str) -> str:
    """The interval kind of a metric: `proportion` where it is declared in 0-1 (a share, a rate, a
    precision), so that sessions that are all 0 or 1 count successes; `mean` for any other range or unit."""
    return "proportion" if column_registry.session_column(metric).unit == "0-1" else "mean"


def model_metrics(sessions: pd.DataFrame, *, resamples: int, seed: int) -> pd.DataFrame:
    """One row per system: per metric `<metric>` (mean), `<metric>_ci_low`, `<metric>_ci_high`,
    `<metric>_n` (sessions with a value), `<metric>_ci_method` and `<metric>_note` (why there is no
    interval, or why it has no width; empty otherwise). Every cell is bootstrapped with the same seed.

    With repeated trials (a `trial` column), every cell is over the users' means over their trials
    (crseval.statistics.trials.per_user): `sessions` counts the users, `trials_per_user` says how often
    each met the system, and the interval resamples users, not sessions of the same user."""
    rows = []
    repeated = trials.has_trials(sessions)
    per_trial = sessions.groupby("system")["trial"].nunique() if repeated else None
    sessions = trials.per_user(sessions)
    metrics = metric_columns(sessions)
    for system, group in sessions.groupby("system", sort=True):
        row = {"model": system, "sessions": len(group)}
        if repeated:
            row["trials_per_user"] = int(per_trial[system])
        if "judge_valid_samples" in group:
            row["judge_missing_share"] = float((group["judge_valid_samples"] == 0).mean())
        for metric in metrics:
            name = column_registry.thesis_name(metric)
            cell = mean_interval(group[metric], kind=interval_kind(metric), resamples=resamples, seed=seed)
            row.update(
                {
                    name: cell["mean"],
                    f"{name}_ci_low": cell["ci_low"],
                    f"{name}_ci_high": cell["ci_high"],
                    f"{name}_n": cell["n"],
                    f"{name}_ci_method": cell["ci_method"],
                    f"{name}_note": cell["note"],
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)


def check_complete(sessions: pd.DataFrame, expected: dict[str, int]) -> None:
    """Every system must have every session: a silent gap would bias every mean."""
    counts = sessions.groupby("system").size().to_dict()
    wrong = {system: (counts.get(system, 0), n) for system, n in expected.items() if counts.get(system, 0) != n}
    if wrong:
        raise ValueError(f"sessions per system (found, expected): {wrong}")
    duplicated = sessions["session_id"].duplicated()
    if duplicated.any():
        raise ValueError(f"duplicated sessions: {sessions.loc[duplicated, 'session_id'].tolist()[:5]}")
