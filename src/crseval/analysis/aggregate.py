"""Gather per-shard scores and judgements into the experiment's tables.

- sessions.parquet: one row per session (system, seed, shard, every metric, judge scores);
- turns.parquet: one row per turn;
- model_metrics.csv: one row per system, mean and 95% confidence interval (Student t) of each
  metric, with the thesis table's column names where they exist (`model`, `proactiveness`...).
The Parquet schemas are declared, not inferred: identifiers and flags have fixed types and every
metric is float64, so a column that is all-NaN in one run has the same type in every run.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
from scipy import stats

from crseval.judge.columns import COUNT_COLUMNS, TEXT_COLUMNS, THESIS_NAMES

ID_TYPES = {
    "system": pa.string(),
    "session_id": pa.string(),
    "session_index": pa.int64(),
    "seed": pa.int64(),
    "shard": pa.int32(),
    "turn": pa.int32(),
}
BOOL_COLUMNS = {"shift", "cas_shift"}
NOT_METRICS = set(ID_TYPES) | TEXT_COLUMNS | BOOL_COLUMNS | set(COUNT_COLUMNS)

_SHARD = re.compile(r"shard-(\d+)")


def shard_of(path: str | Path) -> int:
    return int(_SHARD.search(Path(path).name).group(1))


def read_tables(paths: list[str]) -> pd.DataFrame:
    frames = []
    for path in paths:
        frame = pd.read_parquet(path)
        frame["shard"] = shard_of(path)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def schema_for(frame: pd.DataFrame) -> pa.Schema:
    fields = []
    for column in frame.columns:
        if column in ID_TYPES:
            kind = ID_TYPES[column]
        elif column in TEXT_COLUMNS:
            kind = pa.string()
        elif column in BOOL_COLUMNS:
            kind = pa.bool_()
        elif column in (*COUNT_COLUMNS, "turns"):
            kind = pa.int64()
        else:
            kind = pa.float64()
        fields.append(pa.field(column, kind))
    return pa.schema(fields)


def to_table(frame: pd.DataFrame) -> pa.Table:
    schema = schema_for(frame)
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


def sessions_table(score_paths: list[str], judge_paths: list[str]) -> pd.DataFrame:
    sessions = read_tables(score_paths)
    if judge_paths:
        judged = read_tables(judge_paths).drop(columns=["system", "session_index", "shard"], errors="ignore")
        sessions = sessions.merge(judged, on="session_id", how="left", validate="one_to_one")
    return sessions.sort_values(["system", "session_index", "session_id"], kind="stable").reset_index(drop=True)


def metric_columns(frame: pd.DataFrame) -> list[str]:
    return [
        c
        for c in frame.columns
        if c not in NOT_METRICS and not c.endswith("_sd") and pd.api.types.is_numeric_dtype(frame[c])
    ]


def mean_ci(values: pd.Series, level: float = 0.95) -> tuple[float, float, float, int]:
    data = values.dropna().to_numpy(dtype=float)
    n = len(data)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(data.mean())
    if n < 2:
        return mean, math.nan, math.nan, n
    half = stats.t.ppf((1 + level) / 2, n - 1) * data.std(ddof=1) / math.sqrt(n)
    return mean, mean - half, mean + half, n


def model_metrics(sessions: pd.DataFrame) -> pd.DataFrame:
    """One row per system: `<metric>` (mean), `<metric>_ci_low`, `<metric>_ci_high`, `<metric>_n`."""
    rows = []
    metrics = [c for c in metric_columns(sessions) if c != "turns"]
    for system, group in sessions.groupby("system", sort=True):
        row = {"model": system, "sessions": len(group)}
        if "judge_valid_samples" in group:
            row["judge_missing_share"] = float((group["judge_valid_samples"] == 0).mean())
        for metric in metrics:
            name = THESIS_NAMES.get(metric, metric)
            mean, low, high, n = mean_ci(group[metric])
            row.update({name: mean, f"{name}_ci_low": low, f"{name}_ci_high": high, f"{name}_n": n})
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
