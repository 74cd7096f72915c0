"""Time of `crseval compare` on two synthetic runs: its paired statistics (crseval.runs.paired), and the whole
command (results folders read, compared, the page, tables and side-by-side pages written).

    python benchmarks/bench_compare.py [--sessions 6000] [--systems 10] [--metrics 20] [--resamples 10000]

Two runs of `--sessions` sessions each over `--systems` systems (the same users, session index and seed, in
both), `--metrics` registered metrics of realistic shapes (continuous scores, 0/1 outcomes, values missing in
part), the run's values shifted a little from the baseline's. Prints the seconds of paired_table (bootstrap
and Monte Carlo resamples set to `--resamples`), of changed_sessions, and of the command as `crseval compare`
runs it on two results folders written for the purpose (a provenance record whose stages agree but for one
system, and tables/sessions.parquet).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from crseval.runs.paired import changed_sessions, paired_table
from crseval.statistics.system_tests import default_analysis_plan

CONTINUOUS = [
    *("tas", "tas_cc", "tas_cr", "tas_copying", "repeat_rate", "dst_precision", "dst_recall", "dst_f1"),
    *("adherence_precision", "adherence_recall", "adherence_f1", "rec_satisfaction", "response_words"),
    *("distinct_1", "distinct_2", "judge_coherence", "judge_proactiveness"),
]
BINARY = ["success", "abandoned", "undisclosed_met"]


def synthetic_run(sessions: int, systems: int, metrics: list[str], seed: int, shift: float) -> pd.DataFrame:
    """A sessions table of `sessions` rows; `seed` draws the values, the users are the same for every seed."""
    rng = np.random.default_rng(seed)
    per_system = sessions // systems
    names = np.repeat([f"system-{i}" for i in range(systems)], per_system)
    index = np.tile(np.arange(per_system), systems)
    table = {
        "system": names,
        "session_id": [f"{s}/s{i:05d}" for s, i in zip(names, index)],
        "session_index": index,
        "seed": 1_000 + index,
        "shard": index % 8,
    }
    n = len(index)
    for metric in metrics:
        if metric in BINARY:
            values = (rng.random(n) < 0.3 + shift).astype(float)
        else:
            values = rng.normal(0.5 + shift, 0.2, n)
        table[metric] = np.where(rng.random(n) < 0.05, np.nan, values)
    return pd.DataFrame(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6000)
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    metrics = (CONTINUOUS + BINARY)[: args.metrics]
    baseline = synthetic_run(args.sessions, args.systems, metrics, seed=1, shift=0.0)
    run = synthetic_run(args.sessions, args.systems, metrics, seed=2, shift=0.01)
    plan = default_analysis_plan(resamples=args.resamples, permutations=args.resamples)

    start = time.perf_counter()
    table = paired_table(baseline, run, metrics=metrics, plan=plan)
    paired_seconds = time.perf_counter() - start
    start = time.perf_counter()
    changed = changed_sessions(baseline, run, metrics=metrics)
    changed_seconds = time.perf_counter() - start

    print(
        f"{args.sessions:,} sessions x 2 runs, {args.systems} systems, {len(metrics)} metrics, "
        f"{args.resamples:,} resamples"
    )
    print(f"paired_table: {paired_seconds:.2f} s ({len(table)} rows, {int(table['flag'].sum())} flagged)")
    print(f"changed_sessions: {changed_seconds:.3f} s ({len(changed)} rows)")
    with tempfile.TemporaryDirectory() as folder:
        paths = [
            results_folder(Path(folder), name, table, args.resamples) for name, table in (("a", baseline), ("b", run))
        ]
        start = time.perf_counter()
        command = [sys.executable, "-m", "crseval.cli", "compare", *map(str, paths), "--out", f"{folder}/out"]
        subprocess.run(command, check=True, capture_output=True)
        print(f"crseval compare (the whole command, one process): {time.perf_counter() - start:.2f} s")


def results_folder(root: Path, name: str, sessions: pd.DataFrame, resamples: int) -> Path:
    """A results folder `compare` reads: its sessions table and a record of stage digests (one system differs)."""
    folder = root / name
    (folder / "tables").mkdir(parents=True)
    sessions.to_parquet(folder / "tables" / "sessions.parquet")
    stage = {"digest": "0" * 64, "settings": {}}
    stats = {"alpha": 0.05, "family": {"scope": "report", "method": "holm"}, "min_sessions": 2, "small_sample": 30}
    stats |= {"bootstrap_resamples": resamples, "permutation_resamples": resamples, "seed": 11}
    systems = {system: dict(stage) for system in sessions["system"].unique()}
    systems[sessions["system"].iloc[0]] = {"digest": name * 64, "settings": {"system": {"version": name}}}
    record = {
        "config": {"stats": stats},
        "stages": {key: stage for key in ("catalog", "user", "metrics", "judge", "statistics")} | {"systems": systems},
    }
    (folder / "provenance.json").write_text(json.dumps(record))
    return folder


if __name__ == "__main__":
    main()
