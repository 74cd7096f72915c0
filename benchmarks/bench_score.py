"""Scoring throughput on 6,000 twenty-turn sessions made by replicating the 300 real thesis
logs, on the full OpenDialKG catalog, per metric family.

    python benchmarks/bench_score.py [--sessions 6000] [--shard 250]

Each family runs in its own process (so each peak RSS is its own): TAS; legacy CAS with TF-IDF
similarity and LDA topics; both together. Sessions are scored shard by shard with one scorer,
as `score` jobs would with this shard size; set-up (catalog, TF-IDF fit, LDA load, LM fit) is
timed apart. The logs are read minimally here (USER/SYSTEM pairs in order); replicated
sessions repeat texts, which the per-shard caches exploit as they would on real repeats.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
LOGS = REPO.parent / "shared" / "data" / "reference_logs"
CATALOG = REPO.parent / "shared" / "data" / "opendialkg_movie_data.json"


def read_logs() -> list[dict]:
    records = []
    for path in sorted(LOGS.glob("*.json")):
        log = json.loads(path.read_text())
        turns, pending = [], None
        for message in log["conversation"]:
            if message["speaker"] == "USER":
                pending = message["text"]
            elif message["speaker"] == "SYSTEM" and pending is not None:
                turns.append({"turn": len(turns) + 1, "user_text": pending, "user_meta": None, "system_text": message["text"],
                              "system_constraints": [], "recommended_titles": []})
                pending = None
        records.append({"system": log["model_name"], "session_id": path.stem, "turns": turns, "liked_titles": []})
    return records


def run_family(family: str, sessions: int, shard: int, workdir: Path) -> dict:
    from crseval.scoring import build_scorer

    config = yaml.safe_load((REPO / "config" / "opendialkg.yaml").read_text())
    settings = {**config["scoring"], "metrics": family.split("+")}
    settings["response_stats"] = {**settings["response_stats"], "embeddings": False}
    started = time.perf_counter()
    scorer = build_scorer(films=workdir / "films.parquet", concepts=workdir / "concepts.parquet", lda_dir=workdir / "lda",
                          settings=settings, embedding_cache=None)
    setup = time.perf_counter() - started
    logs = read_logs()
    records = [dict(logs[i % len(logs)], session_id=f"{logs[i % len(logs)]['session_id']}#{i}") for i in range(sessions)]
    started = time.perf_counter()
    scored = 0
    for start in range(0, sessions, shard):
        table, _ = scorer.score(records[start:start + shard])
        scored += len(table)
    elapsed = time.perf_counter() - started
    return {"family": family, "sessions": scored, "turns_per_session": round(sum(len(r["turns"]) for r in records) / sessions, 1),
            "setup_s": round(setup, 2), "score_s": round(elapsed, 2), "sessions_per_s": round(scored / elapsed, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def prepare(workdir: Path) -> None:
    from crseval.catalog import build_index
    from crseval.io import write_parquet
    from crseval.topics import LdaSettings, TopicModel

    config = yaml.safe_load((REPO / "config" / "opendialkg.yaml").read_text())
    films, concepts, summary = build_index(CATALOG, REPO / config["catalog"]["non_genre_values"], config["catalog"]["plot_keywords"])
    write_parquet(films, workdir / "films.parquet")
    write_parquet(concepts, workdir / "concepts.parquet")
    TopicModel.train([p for p in films.column("plot").to_pylist() if p], LdaSettings.from_config(config["lda"])).save(workdir / "lda")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6000)
    parser.add_argument("--shard", type=int, default=250)
    parser.add_argument("--family")
    parser.add_argument("--workdir")
    args = parser.parse_args()
    if args.family:
        print(json.dumps(run_family(args.family, args.sessions, args.shard, Path(args.workdir))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        prepare(Path(tmp))
        for family in ("tas", "cas", "tas+cas"):
            result = subprocess.run([sys.executable, __file__, "--family", family, "--sessions", str(args.sessions),
                                     "--shard", str(args.shard), "--workdir", tmp], capture_output=True, text=True, check=True)
            print(result.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
