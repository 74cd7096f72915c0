"""Time of the `stats` stage (crseval.statistics.comparison.compare_systems) on an experiment's sessions table.

    python benchmarks/bench_stats.py results/calibration [--resamples 10000] [--before-src PATH] [--before-resamples N]
    python benchmarks/bench_stats.py /tmp/synthetic-60000 --synthetic 60000 [--before-src /tmp/before/src] [--outputs]

Reads `<results>/tables/sessions.parquet` and the `stats` section of `<results>/provenance.json` if there is
one (else the config's defaults), sets `bootstrap_resamples` (and `permutation_resamples`) to `--resamples`,
and times compare_systems in a process of its own, as the rule runs it (the judge columns count when the
table has them). `--before-src` times another source tree (e.g. a `git worktree` of an older commit, its
src/ folder) on the same table, with `--before-resamples` (the older default, 1,000).

`--synthetic N` first writes `<results>/tables/sessions.parquet` of N sessions: six systems whose session
index and seed pair across systems (so the paired tests run), the default metrics with realistic shapes
(continuous scores, counts with ties, shares of turns, a 0/1 success, ground-truth metrics missing in part)
and the first judge's three scores, seeded so the same N gives the same table. `--outputs` writes each
tree's tables and texts under `<results>/stats-<tree>/` so that the two can be diffed.
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


SYSTEMS = ("gemma-2b", "llama2", "llama3-instruct", "mistral-7b", "qwen-4b", "qwen-7b")


def synthetic_sessions(sessions: int, seed: int = 7):
    """A sessions table of `sessions` rows over six paired systems, shaped like a simulated experiment's."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    per_system = sessions // len(SYSTEMS)
    frames = []
    for number, system in enumerate(SYSTEMS):
        shift = 0.03 * number
        index = np.arange(per_system)
        turns = 20

        def share(mean: float, spread: float = 8.0) -> np.ndarray:
            return rng.beta(mean * spread, (1 - mean) * spread, per_system)

        def sometimes_missing(values: np.ndarray, missing: float) -> np.ndarray:
            return np.where(rng.random(per_system) < missing, np.nan, values)

        judge = {
            f"judge_{criterion}": np.clip(rng.integers(1, 6, (per_system, 3)).mean(axis=1) + 0.2 * number, 1, 5)
            for criterion in ("proactiveness", "coherence", "personalization")
        }
        frames.append(
            pd.DataFrame(
                {
                    "system": system,
                    "session_id": [f"{system}-{i:06d}" for i in index],
                    "session_index": index,
                    "seed": 1000 + index,
                    "shard": (index // 250).astype("int32"),
                    "tas": share(0.4 + shift),
                    "tas_segment": sometimes_missing(share(0.38 + shift), 0.05),
                    "recovery_rate_cosine": sometimes_missing(rng.integers(0, 5, per_system) / 4, 0.1 + 0.02 * number),
                    "missing_concepts": rng.poisson(2 + 0.1 * number, per_system).astype(float),
                    "hallucinated_concepts": rng.poisson(1 + 0.1 * number, per_system).astype(float),
                    "rec_satisfaction": share(0.5 + shift),
                    "repeat_rate": rng.binomial(turns, 0.2 + shift / 2, per_system) / turns,
                    "cross_coherence": share(0.3 + shift, 20),
                    "context_retention": share(0.6 - shift, 20),
                    "topic_recovery_rate": rng.integers(0, 4, per_system) / 3,
                    "topic_interference": share(0.2 + shift / 3, 12),
                    "context_adaptation_score": share(0.45 + shift, 15),
                    "adherence_f1": sometimes_missing(share(0.55 + shift), 0.02),
                    "success": (rng.random(per_system) < 0.5 + shift).astype(float),
                    "stale_rate": rng.binomial(turns, 0.1, per_system) / turns,
                    "distinct_2": share(0.7 - shift, 30),
                    "self_bleu": share(0.25 + shift, 30),
                    "perplexity": rng.lognormal(3 + 0.05 * number, 0.3, per_system),
                    **judge,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def run_once(results: Path, resamples: int, outputs: Path | None = None) -> dict:
    """Time compare_systems here (called in the child process)."""
    import pandas as pd

    from crseval.core.config_checks import fill_defaults
    from crseval.planning import config_schema
    from crseval.statistics import comparison

    config = {"stats": {}}
    record = results / "provenance.json"
    if record.exists():
        config["stats"] = json.loads(record.read_text())["config"]["stats"]
    fill_defaults(config, config_schema())
    settings = {k: v for k, v in config["stats"].items()}
    settings["bootstrap_resamples"] = resamples
    if "permutation_resamples" in settings:
        settings["permutation_resamples"] = resamples
    sessions = pd.read_parquet(results / "tables" / "sessions.parquet")
    judged = any(c.startswith("judge_") for c in sessions.columns)
    start_cpu, start = time.process_time(), time.perf_counter()
    result = comparison.compare_systems(sessions, settings, judged)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - start_cpu
    if outputs is not None:
        outputs.mkdir(parents=True, exist_ok=True)
        names = [*result.tables, *result.texts]
        suffix = {name: ".csv" if name in result.tables else ".md" for name in names}
        comparison.write(result, {name: outputs / f"{name}{suffix[name]}" for name in names})
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "sessions": len(sessions),
        "systems": int(sessions["system"].nunique()),
        "metrics": len(result.compared),
    }


def measure(
    results: Path, resamples: int, source: str | None, outputs: Path | None = None, script: str = __file__
) -> dict:
    """Run `script`'s child mode on the source tree `source` (this one by default) in a process of its own."""
    env = {**os.environ, "PYTHONPATH": source or str(REPO / "src")}
    command = [sys.executable, script, str(results), "--resamples", str(resamples), "--child"]
    if outputs is not None:
        command += ["--outputs-to", str(outputs)]
    output = subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="results/<experiment>")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--before-src", help="a source tree (its src/ folder) to time beside this one")
    parser.add_argument("--before-resamples", type=int, default=1_000)
    parser.add_argument("--synthetic", type=int, help="first write a synthetic sessions table of this many sessions")
    parser.add_argument("--outputs", action="store_true", help="write each tree's tables under <results>/stats-*/")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--outputs-to", help=argparse.SUPPRESS)
    args = parser.parse_args()
    results = Path(args.results)
    if args.child:
        print(json.dumps(run_once(results, args.resamples, Path(args.outputs_to) if args.outputs_to else None)))
        return
    if args.synthetic:
        (results / "tables").mkdir(parents=True, exist_ok=True)
        synthetic_sessions(args.synthetic).to_parquet(results / "tables" / "sessions.parquet", index=False)
    now = measure(results, args.resamples, None, results / "stats-now" if args.outputs else None)
    print(f"{results}: {now['sessions']} sessions, {now['systems']} systems, {now['metrics']} metrics and judge scores")
    print(
        f"this tree, {args.resamples:,} resamples: {now['seconds']:.1f} s ({now['cpu_seconds']:.1f} CPU s), "
        f"peak RSS {now['peak_rss_mb']:.0f} MB"
    )
    if args.before_src:
        then = measure(
            results, args.before_resamples, args.before_src, results / "stats-before" if args.outputs else None
        )
        print(
            f"before ({args.before_src}), {args.before_resamples:,} resamples: {then['seconds']:.1f} s "
            f"({then['cpu_seconds']:.1f} CPU s), peak RSS {then['peak_rss_mb']:.0f} MB; "
            f"ratio {now['seconds'] / then['seconds']:.2f}"
        )
        if args.outputs:
            differing = differing_outputs(results / "stats-now", results / "stats-before")
            print("outputs identical" if not differing else f"outputs differ: {', '.join(differing)}")


def differing_outputs(now: Path, before: Path) -> list[str]:
    """The output files whose bytes differ between the two trees (or that only one tree wrote)."""
    names = sorted({p.name for p in now.iterdir()} | {p.name for p in before.iterdir()})
    return [
        name
        for name in names
        if not (now / name).exists()
        or not (before / name).exists()
        or (now / name).read_bytes() != (before / name).read_bytes()
    ]


if __name__ == "__main__":
    main()
