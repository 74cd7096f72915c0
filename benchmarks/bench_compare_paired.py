"""Time of `crseval compare`'s paired statistics (crseval.runs.paired) on two synthetic runs.

    python benchmarks/bench_compare_paired.py [--sessions 6000] [--systems 10] [--metrics 20] [--resamples 10000]

Two runs of `--sessions` sessions each over `--systems` systems (the same users, session index and seed, in
both), `--metrics` registered metrics of realistic shapes (continuous scores, 0/1 outcomes, values missing in
part), the run's values shifted a little from the baseline's. Prints the seconds of paired_table (bootstrap
and Monte Carlo resamples set to `--resamples`) and of changed_sessions.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from crseval.runs.paired import changed_sessions, paired_table
from crseval.statistics.system_tests import default_plan

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
    plan = default_plan(resamples=args.resamples, permutations=args.resamples)

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


if __name__ == "__main__":
    main()
