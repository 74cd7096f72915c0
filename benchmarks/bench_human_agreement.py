"""Time of the `human_agreement` tables (crseval.checks.human_agreement.agree) on an experiment's tables.

    python benchmarks/bench_human_agreement.py results/crsarena [--resamples 10000] [--before-src PATH]
        [--before-resamples N] [--outputs]

Reads `<results>/tables/sessions.parquet`, `turns.parquet` and `votes.parquet` (when there is one; e.g.
the tables of `config/crsarena.yaml`, judge disabled or not), sets `bootstrap_resamples` to `--resamples`
(the other `stats` settings are the config's defaults) and times `agree` in a process of its own, as the
rule runs it. `--before-src` times another source tree (e.g. a `git worktree` of an older commit, its src/
folder) on the same tables, with `--before-resamples` (default: the same number). `--outputs` writes each
tree's three tables and summary under `<results>/human_agreement-<tree>/` and says whether they are
byte for byte the same.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import bench_stats  # the same child process and byte comparison of two trees' outputs
from bench_stats import differing_outputs

REPO = Path(__file__).resolve().parents[1]
TABLES = ("table", "systems", "rankings")


def run_once(results: Path, resamples: int, outputs: Path | None = None) -> dict:
    """Time agree here (called in the child process)."""
    import pandas as pd

    from crseval.checks import human_agreement
    from crseval.core.config_checks import fill_defaults
    from crseval.planning import config_schema

    config = {"stats": {}}
    fill_defaults(config, config_schema())
    settings = {**config["stats"], "bootstrap_resamples": resamples}
    tables = results / "tables"
    sessions = pd.read_parquet(tables / "sessions.parquet")
    turns = pd.read_parquet(tables / "turns.parquet")
    votes = pd.read_parquet(tables / "votes.parquet") if (tables / "votes.parquet").exists() else None
    start_cpu, start = time.process_time(), time.perf_counter()
    dialogues, systems, rankings = human_agreement.agree(sessions, turns, votes, settings)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - start_cpu
    if outputs is not None:
        outputs.mkdir(parents=True, exist_ok=True)
        for name, table in zip(TABLES, (dialogues, systems, rankings)):
            table.to_csv(outputs / f"{name}.csv", index=False)
        summary = human_agreement.markdown(dialogues, systems, rankings, settings["alpha"])
        (outputs / "human_agreement.md").write_text(summary)
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "dialogues": int(sessions["satisfied"].notna().sum()),
        "votes": 0 if votes is None else len(votes),
    }


def measure(results: Path, resamples: int, source: str | None, outputs: Path | None) -> dict:
    return bench_stats.measure(results, resamples, source, outputs, script=__file__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="results/<experiment> with tables/sessions.parquet, turns.parquet")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--before-src", help="a source tree (its src/ folder) to time beside this one")
    parser.add_argument("--before-resamples", type=int, help="resamples of the before tree (default: --resamples)")
    parser.add_argument("--outputs", action="store_true", help="write and compare each tree's outputs")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--outputs-to", help=argparse.SUPPRESS)
    args = parser.parse_args()
    results = Path(args.results)
    if args.child:
        print(json.dumps(run_once(results, args.resamples, Path(args.outputs_to) if args.outputs_to else None)))
        return
    now = measure(results, args.resamples, None, results / "human_agreement-now" if args.outputs else None)
    print(f"{results}: {now['dialogues']} labelled dialogues, {now['votes']} votes")
    print(
        f"this tree, {args.resamples:,} resamples: {now['seconds']:.1f} s ({now['cpu_seconds']:.1f} CPU s), "
        f"peak RSS {now['peak_rss_mb']:.0f} MB"
    )
    if args.before_src:
        before_resamples = args.before_resamples or args.resamples
        before_outputs = results / "human_agreement-before" if args.outputs else None
        then = measure(results, before_resamples, args.before_src, before_outputs)
        print(
            f"before ({args.before_src}), {before_resamples:,} resamples: {then['seconds']:.1f} s "
            f"({then['cpu_seconds']:.1f} CPU s), peak RSS {then['peak_rss_mb']:.0f} MB; "
            f"ratio {now['seconds'] / then['seconds']:.2f}"
        )
        if args.outputs and before_resamples == args.resamples:
            differing = differing_outputs(results / "human_agreement-now", before_outputs)
            print("outputs identical" if not differing else f"outputs differ: {', '.join(differing)}")


if __name__ == "__main__":
    main()
