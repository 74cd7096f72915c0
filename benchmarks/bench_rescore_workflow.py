"""Cost of re-scoring thousands of real logs through the workflow: time, CPU and memory, per rule.

    python benchmarks/bench_rescore_workflow.py [--sessions 6000 [60000 ...]] [--shard-size 25] [--cores 2]
                                                [--poll 0.2] [--keep]

The 300 shared thesis logs are replicated into a scratch folder until there are `--sessions`
files. The importer skips a conversation it has seen, so every replica carries a `replica` key in
its first message (ignored by the importer, its texts unchanged) and a file number of its own. The
run is `snakemake --cores N --configfile <config/thesis_logs.yaml pointed at them> --until aggregate`
in a scratch copy of the workflow. Several `--sessions` sizes run one after the other, each in a
scratch folder of its own (`--keep` keeps them, with Snakemake's time-stamped output in
snakemake-output.txt), and are then compared side by side.

Every run prints one JSON line on stdout and a readable table on stderr; several runs end with a
comparison (JSON line and table) whose ratios are each run's figure over the first run's:
- sessions: rows of the aggregated sessions table; jobs: the total of Snakemake's job stats.
- wall_s: from starting Snakemake until it exits.
- startup_s, parse_s, planning_s: from the start until Snakemake's first line of output (imports and
  options), until it announces "Building DAG of jobs..." (the Snakefile parsed) and until it
  announces its first job (the DAG built). All three are read from Snakemake's stdout and stderr,
  each line time-stamped as it arrives (its log file's timestamps only have whole seconds);
  first_job_process_s is the same moment seen by polling: the first job's process found running.
- after_last_job_s: from the last job's end to Snakemake's exit.
- rules: per rule, the jobs that finished, its span (first job's start to last job's end, from the
  same stamped output) and the peak RSS of its jobs (largest, and median over the sampled jobs).
  Rule names are read from that output, never assumed. A job's peak is the largest peak of any one
  of its processes (not their sum).
- cpu_s, cpu_pct: user + system CPU time of Snakemake and every process it waited for (its jobs),
  from os.wait4 on the Snakemake process, and as a share of wall time (2 cores fully busy = 200 %).
- snakemake_peak_rss_mib: the peak RSS of the Snakemake process itself, without its jobs;
  other_processes_peak_rss_mib: that of any other process it started (by program name).
- kernel_max_rss_mib: the largest peak RSS of any single process of the run, from os.wait4: a check
  on the polled peaks (polling misses a process that lives less than one poll).
- metadata_bytes: size of .snakemake/metadata after the run.
- score_jobs_scoring_s: sum of the scoring times the jobs' logs report ("scored N sessions ... in X s").

Peak RSS is sampled by polling the Snakemake process tree with psutil every `--poll` seconds and
reading each process's kernel high-water mark (VmHWM in /proc/<pid>/status), so a spike between two
polls still counts. A process belongs to a job when its command line names the job's script, a
file Snakemake writes under .snakemake/scripts/ (tmpXXXXXXXX.<script name>), or when one of its
ancestors does; the script's preamble (the pickled `snakemake` object) names the job's rule.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pyarrow.parquet
import yaml

REPO = Path(__file__).resolve().parents[1]
LOGS = REPO.parent / "shared" / "data" / "reference_logs"
CATALOG = REPO.parent / "shared" / "data" / "opendialkg_movie_data.json"
WORKFLOW_PARTS = ("Snakefile", "workflow", "profiles", "config", "resources", "src", "envs")
MIB = 2**20
_NUMBER = re.compile(r"_(\d+)\.json$")
_JOB_STARTED = re.compile(r"(?:local)?rule (\w+):$")
_JOB_FINISHED = re.compile(r"Finished jobid: \d+ \(Rule: (\w+)\)")
_JOB_SCRIPT = re.compile(r"[^\s'\"]*\.snakemake/scripts/tmp[^\s'\"]+")
_SCORED = re.compile(r"scored \d+ sessions \(\d+ turns\) in ([\d.]+) s")


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


def scoring_seconds(logs: Path) -> float:
    """Sum of the 'scored ... in X s' times that the jobs' logs report, whatever the rule."""
    return sum(float(seconds) for log in logs.rglob("*.log") for seconds in _SCORED.findall(log.read_text()))


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def peak_rss_bytes(pid: int) -> int | None:
    """The kernel's RSS high-water mark of a live process (None once it has exited)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    found = re.search(r"^VmHWM:\s+(\d+) kB$", status, re.M)
    return int(found.group(1)) * 1024 if found else None


def script_rule(script: Path) -> str:
    """The rule of a job, from the Snakemake object its script's preamble unpickles."""
    for line in script.read_text(encoding="utf-8").splitlines():
        if "pickle.loads(" in line:
            for node in ast.walk(ast.parse(line)):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "loads":
                    return pickle.loads(node.args[0].value).rule
    raise ValueError(f"{script}: no Snakemake preamble (pickle.loads(...)) to read the rule from")


@dataclass
class ProcessTree:
    """Peak RSS of Snakemake (the top process), of each job's processes, and of any other descendant."""

    top: psutil.Process
    snakemake_peak: int = 0
    job_rule: dict[str, str] = field(default_factory=dict)  # job script -> rule
    job_peak: dict[str, int] = field(default_factory=dict)  # job script -> largest peak of one of its processes
    other_peak: dict[str, int] = field(default_factory=dict)  # process name -> its largest peak
    first_job_seen_s: float | None = None

    def sample(self, elapsed: float) -> None:
        self.snakemake_peak = max(self.snakemake_peak, peak_rss_bytes(self.top.pid) or 0)
        top_command = self.top.cmdline()
        commands: dict[int, tuple[int, list[str]]] = {}
        for process in self.top.children(recursive=True):
            try:
                commands[process.pid] = (process.ppid(), process.cmdline())
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                continue
        jobs: dict[int, str | None] = {}

        def job_of(pid: int) -> str | None:
            if pid not in jobs:
                parent, command = commands[pid]
                named = _JOB_SCRIPT.search(" ".join(command))
                jobs[pid] = named.group(0) if named else job_of(parent) if parent in commands else None
            return jobs[pid]

        for pid, (_, command) in commands.items():
            if command == top_command:  # forked by Snakemake, not yet running what it was forked for
                continue
            peak = peak_rss_bytes(pid)
            if peak is None:
                continue
            script = job_of(pid)
            if script is None:
                name = Path(command[0]).name if command else str(pid)
                self.other_peak[name] = max(self.other_peak.get(name, 0), peak)
                continue
            if script not in self.job_rule:
                try:
                    self.job_rule[script] = script_rule(Path(script))
                except FileNotFoundError:  # the job ended and Snakemake removed its script: no rule to tell
                    continue
                if self.first_job_seen_s is None:
                    self.first_job_seen_s = elapsed
            self.job_peak[script] = max(self.job_peak.get(script, 0), peak)

    def rule_peaks(self) -> dict[str, list[int]]:
        """Rule -> each sampled job's peak RSS, in the order the jobs were first seen."""
        peaks: dict[str, list[int]] = {}
        for script, peak in self.job_peak.items():
            peaks.setdefault(self.job_rule[script], []).append(peak)
        return peaks


def read_lines(stream, into: list[tuple[float, str]], started: float) -> None:
    """Collect a stream's lines, each with the seconds since `started` at which it arrived."""
    for line in stream:
        into.append((time.perf_counter() - started, line.rstrip("\n")))


def wait_for(pid: int, into: dict) -> None:
    """Reap a child: its exit status and the resource use of it and the processes it waited for."""
    into["wait4"] = os.wait4(pid, 0)
    into["at"] = time.perf_counter()


def run_snakemake(scratch: Path, cores: int, poll: float) -> dict:
    """Run the workflow to `aggregate`, polling its process tree; its stamped output, CPU and memory."""
    snakemake = Path(sys.executable).parent / "snakemake"
    command = [str(snakemake), "--cores", str(cores), "--configfile", "rescore.yaml", "--until", "aggregate"]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=scratch, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []
    readers = [
        threading.Thread(target=read_lines, args=(stream, lines, started), daemon=True)
        for stream in (process.stdout, process.stderr)
    ]
    for reader in readers:
        reader.start()
    tree = ProcessTree(psutil.Process(process.pid))
    exited: dict = {}  # the waiter's os.wait4 result and the moment it returned
    waiter = threading.Thread(target=wait_for, args=(process.pid, exited), daemon=True)
    waiter.start()
    while waiter.is_alive():
        try:
            tree.sample(time.perf_counter() - started)
        except psutil.NoSuchProcess:  # Snakemake exited during the poll
            pass
        waiter.join(poll)
    wall = exited["at"] - started
    _, status, usage = exited["wait4"]
    process.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join()
    lines.sort(key=lambda stamped: stamped[0])
    (scratch / "snakemake-output.txt").write_text("".join(f"{stamp:9.3f} {text}\n" for stamp, text in lines))
    if process.returncode != 0:
        tail = "\n".join(text for _, text in lines[-60:])
        sys.exit(f"snakemake failed (exit {process.returncode}) in {scratch}:\n{tail}")
    return {
        "wall": wall,
        "lines": lines,
        "cpu": usage.ru_utime + usage.ru_stime,
        "kernel_max_rss": usage.ru_maxrss * 1024,
        "tree": tree,
    }


def first_stamp(lines: list[tuple[float, str]], pattern: re.Pattern, what: str) -> float:
    for stamp, text in lines:
        if pattern.match(text):
            return stamp
    raise ValueError(f"Snakemake's output has no line announcing {what} ({pattern.pattern!r})")


def rule_figures(lines: list[tuple[float, str]], peaks: dict[str, list[int]]) -> dict[str, dict]:
    """Rule -> finished jobs, span (first start to last end, s) and its jobs' peak RSS, in order of first start."""
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    finished: dict[str, int] = {}
    for stamp, text in lines:
        if started := _JOB_STARTED.match(text):
            starts.setdefault(started.group(1), stamp)
        elif ended := _JOB_FINISHED.match(text):
            ends[ended.group(1)] = stamp
            finished[ended.group(1)] = finished.get(ended.group(1), 0) + 1
    figures = {}
    for rule, start in starts.items():
        if rule not in ends:
            raise ValueError(f"rule {rule}: a job started but none finished in Snakemake's output")
        job_peaks = peaks.get(rule, [])
        figures[rule] = {
            "jobs": finished[rule],
            "span_s": round(ends[rule] - start, 2),
            "jobs_sampled": len(job_peaks),
            "peak_rss_mib": round(max(job_peaks) / MIB, 1) if job_peaks else None,
            "median_job_peak_rss_mib": round(statistics.median(job_peaks) / MIB, 1) if job_peaks else None,
            "job_peak_rss_mib": [round(peak / MIB, 1) for peak in job_peaks],
        }
    return figures


def benchmark(sessions: int, shard_size: int | None, cores: int, poll: float, keep: bool) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix=f"rescore-{sessions}-"))
    try:
        copy_workflow(scratch)
        files = replicate_logs(scratch / "logs", sessions)
        config = yaml.safe_load((REPO / "config" / "thesis_logs.yaml").read_text())
        config["catalog"]["path"] = str(CATALOG)
        config["sessions"]["import_paths"] = str(scratch / "logs" / "*.json")
        if shard_size:
            config["sessions"]["shard_size"] = shard_size
        (scratch / "rescore.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        run = run_snakemake(scratch, cores, poll)
        lines = run["lines"]
        results = scratch / "results" / config["experiment"]
        sessions_table = results / "tables" / "sessions.parquet"
        if not sessions_table.is_file():
            raise FileNotFoundError(f"{sessions_table}: the aggregated sessions table is missing after the run")
        output = "\n".join(text for _, text in lines)
        jobs = re.search(r"Job stats:\njob\s+count\n[-\s]+\n(.*?)\ntotal\s+(\d+)", output, re.S)
        if not jobs:
            raise ValueError("Snakemake's output has no 'Job stats' table")
        last_job_end = max(stamp for stamp, text in lines if _JOB_FINISHED.match(text))
        tree: ProcessTree = run["tree"]
        return {
            "log_files": files,
            "sessions": pyarrow.parquet.read_metadata(sessions_table).num_rows,
            "shard_size": config["sessions"]["shard_size"],
            "cores": cores,
            "jobs": int(jobs.group(2)),
            "wall_s": round(run["wall"], 2),
            "startup_s": round(lines[0][0], 2),
            "parse_s": round(first_stamp(lines, re.compile(r"Building DAG of jobs"), "the DAG"), 2),
            "planning_s": round(first_stamp(lines, _JOB_STARTED, "a job"), 2),
            "first_job_process_s": round(tree.first_job_seen_s, 2) if tree.first_job_seen_s is not None else None,
            "after_last_job_s": round(run["wall"] - last_job_end, 2),
            "cpu_s": round(run["cpu"], 1),
            "cpu_pct": round(100 * run["cpu"] / run["wall"], 1),
            "snakemake_peak_rss_mib": round(tree.snakemake_peak / MIB, 1),
            "kernel_max_rss_mib": round(run["kernel_max_rss"] / MIB, 1),
            "other_processes_peak_rss_mib": {name: round(peak / MIB, 1) for name, peak in tree.other_peak.items()},
            "metadata_bytes": folder_bytes(scratch / ".snakemake" / "metadata"),
            "score_jobs_scoring_s": round(scoring_seconds(results / "logs"), 1),
            "rules": rule_figures(lines, tree.rule_peaks()),
        }
    finally:
        if keep:
            print(f"kept {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def table(rows: list[list[str]]) -> str:
    """Rows of cells as aligned text: the first column to the left, the others to the right."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            cell.ljust(width) if column == 0 else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths))
        )
        for row in rows
    )


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def run_table(run: dict) -> str:
    head = (
        f"{run['sessions']} sessions, shard size {run['shard_size']}, {run['cores']} cores, {run['jobs']} jobs: "
        f"wall {run['wall_s']} s = planning {run['planning_s']} s (start-up {run['startup_s']} s, "
        f"parsed at {run['parse_s']} s)"
        f" + jobs {round(run['wall_s'] - run['planning_s'] - run['after_last_job_s'], 2)} s"
        f" + after the last job {run['after_last_job_s']} s\n"
        f"CPU {run['cpu_s']} s = {run['cpu_pct']} % of wall (200 % = 2 cores busy); Snakemake peak RSS "
        f"{run['snakemake_peak_rss_mib']} MiB (largest single process {run['kernel_max_rss_mib']} MiB); "
        f".snakemake/metadata {run['metadata_bytes'] / 1e6:.2f} MB; "
        f"scoring time the jobs' logs report {run['score_jobs_scoring_s']} s"
    )
    rows = [["rule", "jobs", "span s", "sampled", "peak RSS MiB", "median job MiB"]]
    for rule, figures in run["rules"].items():
        rows.append(
            [
                rule,
                str(figures["jobs"]),
                number(figures["span_s"]),
                str(figures["jobs_sampled"]),
                number(figures["peak_rss_mib"]),
                number(figures["median_job_peak_rss_mib"]),
            ]
        )
    return f"{head}\n{table(rows)}"


def comparison(runs: list[dict]) -> dict[str, list]:
    """Figure -> its value in each run, in the order the runs ran; then each rule's span and peak RSS."""
    figures = {
        "sessions": [run["sessions"] for run in runs],
        "jobs": [run["jobs"] for run in runs],
        "wall_s": [run["wall_s"] for run in runs],
        "planning_s": [run["planning_s"] for run in runs],
        "startup_s": [run["startup_s"] for run in runs],
        "parse_s": [run["parse_s"] for run in runs],
        "cpu_s": [run["cpu_s"] for run in runs],
        "cpu_pct": [run["cpu_pct"] for run in runs],
        "snakemake_peak_rss_mib": [run["snakemake_peak_rss_mib"] for run in runs],
        "kernel_max_rss_mib": [run["kernel_max_rss_mib"] for run in runs],
        "metadata_bytes": [run["metadata_bytes"] for run in runs],
        "score_jobs_scoring_s": [run["score_jobs_scoring_s"] for run in runs],
    }
    rules = list(dict.fromkeys(rule for run in runs for rule in run["rules"]))
    for key in ("span_s", "peak_rss_mib"):
        for rule in rules:
            figures[f"{rule} {key}"] = [run["rules"].get(rule, {}).get(key) for run in runs]
    return figures


def ratio(value: float | None, first: float | None) -> float | None:
    return None if value is None or not first else round(value / first, 2)


def comparison_table(figures: dict[str, list]) -> str:
    sizes = figures["sessions"]
    rows = [["figure", *(str(size) for size in sizes), *(f"x {size}/{sizes[0]}" for size in sizes[1:])]]
    for name, values in figures.items():
        if name != "sessions":
            ratios = [ratio(value, values[0]) for value in values[1:]]
            rows.append([name, *(number(value) for value in values), *(number(value) for value in ratios)])
    return table(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[6000], help="log files per run, one run each")
    parser.add_argument("--shard-size", type=int, help="sessions.shard_size (default: as in config/thesis_logs.yaml)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--poll", type=float, default=0.2, help="seconds between two samples of the process tree")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folders and print their paths")
    args = parser.parse_args()
    runs = []
    for sessions in args.sessions:
        run = benchmark(sessions, args.shard_size, args.cores, args.poll, args.keep)
        runs.append(run)
        print(json.dumps(run), flush=True)
        print(run_table(run) + "\n", file=sys.stderr, flush=True)
    if len(runs) > 1:
        figures = comparison(runs)
        print(json.dumps({"comparison": figures}))
        print(comparison_table(figures), file=sys.stderr)


if __name__ == "__main__":
    main()
