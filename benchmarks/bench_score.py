"""Scoring throughput per metric family on the 300 shared thesis logs and the full OpenDialKG catalog.

    python benchmarks/bench_score.py [--sessions 300] [--shard 25] [--repeat 1] [--before-src PATH]

The logs are imported as the import_logs rule imports them (recognised titles, tracked
constraints). Each family runs in its own process: TAS; legacy CAS (TF-IDF similarity, LDA
topics) in thesis and in fixed mode; TAS and CAS together; topic adherence; response statistics
(sentence embeddings off, as in config/thesis_logs.yaml: the model's speed is not ours); all four
families together. Sessions are scored shard by shard with one scorer, as `score` jobs do; set-up
(catalog, TF-IDF fit, LDA load, LM fit) is timed apart and excluded from sessions/s; after it the
benchmark calls gc.freeze(), exactly as workflow/scripts/score.py does after building its scorer
(each score job is its own process), so that the garbage collector does not walk the scorer. With
`--sessions` above 300 the logs repeat (as new sessions), which the scorer's caches exploit.

"before" is the figure measured before the scoring was optimised (one process each, 300 logs);
`--before-src` times another source tree (e.g. a `git worktree` of an older commit) beside this one.
Sessions per CPU second are shown beside sessions per (wall) second: on a shared machine the
wall figure falls with the other load, the CPU figure much less.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOGS = REPO.parent / "shared" / "data" / "reference_logs"
CATALOG = REPO.parent / "shared" / "data" / "opendialkg_movie_data.json"
# family -> (metric families, cas.mode, sessions/s measured before the optimisation)
FAMILIES = {
    "tas": (["tas"], "thesis", 118.0),
    "cas": (["cas"], "thesis", 44.5),
    "cas-fixed": (["cas"], "fixed", None),
    "tas+cas": (["tas", "cas"], "thesis", 30.7),
    "adherence": (["adherence"], "thesis", 298.0),
    "response_stats": (["response_stats"], "thesis", 8.5),
    "all": (["tas", "cas", "adherence", "response_stats"], "thesis", 6.4),
}


def thesis_config() -> dict:
    """config/thesis_logs.yaml with the schema's defaults filled in (shipped configs hold only what they change)."""
    from crseval.core.config_checks import effective_config
    from crseval.planning import config_schema

    return effective_config(REPO / "config" / "thesis_logs.yaml", schema=config_schema())


def scoring_settings(family: str) -> dict:
    metrics, mode, _ = FAMILIES[family]
    scoring = thesis_config()["scoring"]
    return {
        **scoring,
        "metrics": metrics,
        "cas": {**scoring["cas"], "mode": mode},
        "response_stats": {**scoring["response_stats"], "embeddings": False},
    }


def run_family(family: str, sessions: int, shard: int, repeat: int, workdir: Path) -> dict:
    from crseval.metrics.scorer import build_scorer

    logs = json.loads((workdir / "records.json").read_text())
    records = [
        dict(logs[i % len(logs)], session_id=f"{logs[i % len(logs)]['session_id']}#{i}") for i in range(sessions)
    ]
    best = None
    for _ in range(repeat):  # a fresh scorer each time: its caches must not carry over
        started = time.perf_counter()
        scorer = build_scorer(
            films=workdir / "films.parquet",
            concepts=workdir / "concepts.parquet",
            lda_dir=workdir / "lda",
            settings=scoring_settings(family),
            embedding_cache=None,
        )
        setup = time.perf_counter() - started
        gc.freeze()  # as workflow/scripts/score.py does after build_scorer
        started, cpu_started = time.perf_counter(), time.process_time()
        for start in range(0, sessions, shard):
            scorer.score(records[start : start + shard])
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        if best is None or elapsed < best[1]:
            best = (setup, elapsed, cpu)
    setup, elapsed, cpu = best
    return {
        "family": family,
        "sessions": sessions,
        "setup_s": round(setup, 2),
        "score_s": round(elapsed, 2),
        "sessions_per_s": round(sessions / elapsed, 1),
        "sessions_per_cpu_s": round(sessions / cpu, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def prepare(workdir: Path) -> None:
    """Catalog index, LDA model (thesis settings) and the imported logs, written once for every family."""
    from crseval.catalog.build import build_index
    from crseval.catalog.index import CatalogIndex
    from crseval.catalog.topics import LdaSettings, TopicModel
    from crseval.core.io import write_parquet
    from crseval.corpora.thesis_logs import import_logs
    from crseval.language.concepts import ConceptMatcher

    config = thesis_config()
    settings = config["catalog"]
    films, concepts, _ = build_index(CATALOG, REPO / settings["non_genre_values"], settings["plot_keywords"])
    write_parquet(films, workdir / "films.parquet")
    write_parquet(concepts, workdir / "concepts.parquet")
    plots = [p for p in films.column("plot").to_pylist() if p]
    TopicModel.train(plots, LdaSettings.from_config(config["lda"])).save(workdir / "lda")
    index = CatalogIndex.read(workdir / "films.parquet", workdir / "concepts.parquet")
    matcher = ConceptMatcher(index.concepts, index.films)
    sessions, _ = import_logs(sorted(LOGS.glob("*.json")), matcher, "0" * 64, "0" * 64)
    records = [record for system in sorted(sessions) for record in sessions[system]]
    (workdir / "records.json").write_text(json.dumps(records))


def measure(family: str, args, workdir: str, source: str | None) -> dict:
    env = {**os.environ, "PYTHONPATH": source} if source else None
    command = [
        sys.executable,
        __file__,
        "--family",
        family,
        "--sessions",
        str(args.sessions),
        "--shard",
        str(args.shard),
    ]
    command += ["--repeat", str(args.repeat), "--workdir", workdir]
    result = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--shard", type=int, default=25)
    parser.add_argument("--repeat", type=int, default=1, help="score this many times per family, keep the fastest")
    parser.add_argument("--before-src", help="a source tree (its src/ folder) to time beside this one")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--family")
    parser.add_argument("--workdir")
    args = parser.parse_args()
    if args.family:
        print(json.dumps(run_family(args.family, args.sessions, args.shard, args.repeat, Path(args.workdir))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        prepare(Path(tmp))
        header = f"{'family':16s} {'before':>8s}"
        header += f" {'measured before':>16s} {'(per cpu s)':>12s}" if args.before_src else ""
        header += f" {'now':>8s} {'(per cpu s)':>12s} {'setup_s':>8s} {'rss_mb':>7s}"
        print(f"{header}   sessions/s, {args.sessions} sessions", flush=True)
        for family in args.families.split(","):
            now = measure(family, args, tmp, None)
            before = FAMILIES[family][2]
            line = f"{family:16s} {before if before is not None else '-':>8}"
            if args.before_src:
                then = measure(family, args, tmp, args.before_src)
                line += f" {then['sessions_per_s']:>16} {then['sessions_per_cpu_s']:>12}"
            line += f" {now['sessions_per_s']:>8} {now['sessions_per_cpu_s']:>12}"
            line += f" {now['setup_s']:>8} {now['peak_rss_mb']:>7}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
