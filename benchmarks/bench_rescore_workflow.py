"""Wall time of re-scoring thousands of real logs through the workflow: import, index, LDA, score, aggregate.

    python benchmarks/bench_rescore_workflow.py [--sessions 6000] [--shard-size 25] [--cores 2]

The 300 shared thesis logs are replicated into a scratch folder until there are `--sessions`
files. The importer skips a conversation it has seen, so every replica carries a `replica` key in
its first message (ignored by the importer, its texts unchanged) and a file number of its own. The
run is `snakemake --cores N --configfile <config/thesis_logs.yaml pointed at them> --until aggregate`
in a scratch copy of the workflow, timed from start to end; the score jobs' own scoring times are
read from their logs, each rule's span (first start to last end) from Snakemake's.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
LOGS = REPO.parent / "shared" / "data" / "reference_logs"
CATALOG = REPO.parent / "shared" / "data" / "opendialkg_movie_data.json"
WORKFLOW_PARTS = ("Snakefile", "workflow", "profiles", "config", "resources", "src", "envs")
_NUMBER = re.compile(r"_(\d+)\.json$")


def copy_workflow(destination: Path) -> None:
    for part in WORKFLOW_PARTS:
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, destination / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, destination / part)


def replicate_logs(folder: Path, sessions: int) -> int:
    """`sessions` log files made of the shared ones; replica k > 0 gets file number n + 1000 k."""
    folder.mkdir(parents=True)
    sources = sorted(LOGS.glob("*.json"))
    written = 0
    for replica in range(-(-sessions // len(sources))):
        for source in sources:
            if written == sessions:
                return written
            data = json.loads(source.read_text(encoding="utf-8"))
            name = source.name
            if replica:
                data["conversation"][0]["replica"] = replica
                number = int(_NUMBER.search(name).group(1)) + 1000 * replica
                name = _NUMBER.sub(f"_{number}.json", name)
            (folder / name).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            written += 1
    return written


def scoring_seconds(results: Path) -> float:
    """Sum of the score jobs' own 'scored ... in X s' times."""
    total = 0.0
    for log in (results / "logs" / "score").rglob("*.log"):
        total += sum(float(m) for m in re.findall(r"scored \d+ sessions \(\d+ turns\) in ([\d.]+) s", log.read_text()))
    return total


def rule_spans(scratch: Path) -> dict[str, float]:
    """Rule -> seconds from its first job's start to its last job's end, from Snakemake's log."""
    log = sorted((scratch / ".snakemake" / "log").glob("*.snakemake.log"))[-1].read_text()
    starts, ends, stamp = {}, {}, None
    for line in log.splitlines():
        if re.fullmatch(r"\[\w{3} \w{3} +\d+ [\d:]+ \d{4}\]", line):
            stamp = datetime.strptime(line.strip("[]"), "%a %b %d %H:%M:%S %Y")
        elif (started := re.match(r"localrule (\w+):", line)) and stamp:
            starts.setdefault(started.group(1), stamp)
        elif (finished := re.match(r"Finished jobid: \d+ \(Rule: (\w+)\)", line)) and stamp:
            ends[finished.group(1)] = stamp
    return {rule: (ends[rule] - starts[rule]).total_seconds() for rule in starts if rule in ends}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6000)
    parser.add_argument("--shard-size", type=int, help="sessions.shard_size (default: as in config/thesis_logs.yaml)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder and print its path")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="rescore-"))
    try:
        copy_workflow(scratch)
        files = replicate_logs(scratch / "logs", args.sessions)
        config = yaml.safe_load((REPO / "config" / "thesis_logs.yaml").read_text())
        config["catalog"]["path"] = str(CATALOG)
        config["sessions"]["import_paths"] = str(scratch / "logs" / "*.json")
        if args.shard_size:
            config["sessions"]["shard_size"] = args.shard_size
        (scratch / "rescore.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        snakemake = Path(sys.executable).parent / "snakemake"
        started = time.perf_counter()
        run = subprocess.run(
            [str(snakemake), "--cores", str(args.cores), "--configfile", "rescore.yaml", "--until", "aggregate"],
            cwd=scratch,
            capture_output=True,
            text=True,
        )
        elapsed = time.perf_counter() - started
        if run.returncode != 0:
            sys.exit(f"snakemake failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
        results = scratch / "results" / config["experiment"]
        summary = json.loads((results / "sessions" / "import_report.json").read_text())
        jobs = re.search(r"Job stats:\njob\s+count\n[-\s]+\n(.*?)\ntotal\s+(\d+)", run.stdout + run.stderr, re.S)
        print(
            json.dumps(
                {
                    "log_files": files,
                    "sessions": sum(summary["sessions"].values()),
                    "shard_size": config["sessions"]["shard_size"],
                    "cores": args.cores,
                    "jobs": int(jobs.group(2)) if jobs else None,
                    "wall_s": round(elapsed, 1),
                    "score_jobs_scoring_s": round(scoring_seconds(results), 1),
                    "rule_spans_s": rule_spans(scratch),
                }
            )
        )
    finally:
        if args.keep:
            print(f"kept {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
