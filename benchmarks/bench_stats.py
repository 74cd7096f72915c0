"""Time of the `stats` stage (crseval.analysis.comparison.compare_systems) on an experiment's sessions table.

    python benchmarks/bench_stats.py results/calibration [--resamples 10000] [--before-src PATH] [--before-resamples N]

Reads `<results>/tables/sessions.parquet` and the `stats` section of `<results>/provenance.json` if there is
one (else the config's defaults), sets `bootstrap_resamples` (and `permutation_resamples`) to `--resamples`,
and times compare_systems in a process of its own, as the rule runs it (the judge columns count when the
table has them). `--before-src` times another source tree (e.g. a `git worktree` of an older commit, its
src/ folder) on the same table, with `--before-resamples` (the older default, 1,000).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_once(results: Path, resamples: int) -> dict:
    """Time compare_systems here (called in the child process)."""
    import pandas as pd

    from crseval.analysis import comparison
    from crseval.core.config_checks import fill_defaults

    config = {"stats": {}}
    record = results / "provenance.json"
    if record.exists():
        config["stats"] = json.loads(record.read_text())["config"]["stats"]
    fill_defaults(config)
    settings = {k: v for k, v in config["stats"].items()}
    settings["bootstrap_resamples"] = resamples
    if "permutation_resamples" in settings:
        settings["permutation_resamples"] = resamples
    sessions = pd.read_parquet(results / "tables" / "sessions.parquet")
    judged = any(c.startswith("judge_") for c in sessions.columns)
    start_cpu, start = time.process_time(), time.perf_counter()
    result = comparison.compare_systems(sessions, settings, judged)
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - start_cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "sessions": len(sessions),
        "systems": int(sessions["system"].nunique()),
        "metrics": len(result.compared),
    }


def measure(results: Path, resamples: int, source: str | None) -> dict:
    env = {**os.environ, "PYTHONPATH": source or str(REPO / "src")}
    command = [sys.executable, __file__, str(results), "--resamples", str(resamples), "--child"]
    output = subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="results/<experiment>")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--before-src", help="a source tree (its src/ folder) to time beside this one")
    parser.add_argument("--before-resamples", type=int, default=1_000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    results = Path(args.results)
    if args.child:
        print(json.dumps(run_once(results, args.resamples)))
        return
    now = measure(results, args.resamples, None)
    print(f"{results}: {now['sessions']} sessions, {now['systems']} systems, {now['metrics']} metrics and judge scores")
    print(
        f"this tree, {args.resamples:,} resamples: {now['seconds']:.1f} s ({now['cpu_seconds']:.1f} CPU s), "
        f"peak RSS {now['peak_rss_mb']:.0f} MB"
    )
    if args.before_src:
        then = measure(results, args.before_resamples, args.before_src)
        print(
            f"before ({args.before_src}), {args.before_resamples:,} resamples: {then['seconds']:.1f} s "
            f"({then['cpu_seconds']:.1f} CPU s), peak RSS {then['peak_rss_mb']:.0f} MB; "
            f"ratio {now['seconds'] / then['seconds']:.2f}"
        )


if __name__ == "__main__":
    main()
