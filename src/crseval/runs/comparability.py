"""Whether two runs can be compared, stage by stage, from the digests their provenance records hold.

A run's provenance.json records, per stage, the settings that shape its numbers and their digest
(crseval.stage_digests). Two runs are compared stage by stage: equal, or different with every setting
that differs named by its key path (`simulator.profile: baseline explicit, run realistic`). Runs whose
catalog, simulated user or metrics differ answer different questions (the same system meets other users,
or is measured by another ruler): `refused` lists those stages, and the caller refuses the comparison
unless told to go on. A system whose own stage differs is what a comparison is for; the judge and the
statistics are reported, not refused (judge scores are compared only under the same judge).

A comparability class groups runs for a board: equal catalog, user, metrics and judge digests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from crseval.core.canonical import MISSING, changed_settings

# Stages whose difference refuses a comparison, and those that define a board's class.
REFUSING = ("catalog", "user", "metrics")
CLASS_STAGES = (*REFUSING, "judge")
SHARED_STAGES = ("catalog", "user", "metrics", "judge", "statistics")
# Bounds on what a results folder may hand us: a record or table past them is refused, not read.
MAX_RECORD_BYTES = 64 * 2**20
MAX_TABLE_BYTES = 2 * 2**30
MAX_DIFFERENCES = 50  # per stage; the rest are counted
# What identifies a session in every run's sessions table (`trial` too, where users met systems several times).
SESSION_KEYS = ("system", "session_id", "session_index", "seed")


class RunError(Exception):
    """A results folder that cannot be compared (no record, a record without stage digests, no tables)."""


@dataclass
class Run:
    """A finished run: its results folder, its label, its provenance record."""

    path: Path
    name: str
    record: dict

    @property
    def stages(self) -> dict:
        return self.record["stages"]

    def table(self, relative: str) -> Path:
        return self.path / relative

    def sessions(self) -> pd.DataFrame:
        """tables/sessions.parquet, with the columns that identify a session (a trial column is optional)."""
        path = self.path / "tables" / "sessions.parquet"
        table = _read_bounded(path, pd.read_parquet)
        missing = [column for column in SESSION_KEYS if column not in table.columns]
        if missing:
            raise RunError(f"{path} has no column {', '.join(missing)}: not a sessions table crseval wrote")
        return table

    def model_metrics(self) -> pd.DataFrame:
        return _read_bounded(self.path / "tables" / "model_metrics.csv", pd.read_csv)

    def pass_k(self) -> pd.DataFrame | None:
        path = self.path / "stats" / "reliability_trials.csv"
        return _read_bounded(path, pd.read_csv) if path.is_file() else None


def _read_bounded(path: Path, reader):
    try:
        size = path.stat().st_size
    except OSError as error:
        raise RunError(f"{path} cannot be read ({type(error).__name__}): run the workflow to the end first") from None
    if size > MAX_TABLE_BYTES:
        raise RunError(f"{path} holds {size:,} bytes, more than the {MAX_TABLE_BYTES:,} a comparison reads")
    try:
        return reader(path)
    except (OSError, ValueError) as error:
        raise RunError(f"{path} cannot be read: {type(error).__name__}: {error}") from None


def read_run(path: str | Path, name: str | None = None) -> Run:
    """The run in results folder `path`, labelled `name` (default: the folder's name)."""
    path = Path(path)
    record_path = path / "provenance.json"
    if not path.is_dir():
        raise RunError(f"{path} is not a results folder (results/<experiment>)")
    try:
        size = record_path.stat().st_size
        if size > MAX_RECORD_BYTES:
            raise RunError(f"{record_path} holds {size:,} bytes, more than the {MAX_RECORD_BYTES:,} a record may")
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunError(f"{record_path} does not exist: run the workflow (its provenance rule) first") from None
    except (OSError, ValueError) as error:
        raise RunError(f"{record_path} cannot be read: {error}") from None
    problem = _stages_problem(record)
    if problem:
        raise RunError(
            f"{record_path}: {problem}; write it again with `snakemake --forcerun provenance` (same settings)"
        )
    return Run(path, name or path.resolve().name, record)


def _stages_problem(record) -> str:
    """What keeps a record's stage digests from being compared, or ""."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not a provenance record"
    stages = record.get("stages")
    if stages is None:
        return "written by an older crseval, it records no stage digests"
    if not isinstance(stages, dict):
        return "`stages` is not an object"
    for stage in SHARED_STAGES:
        if not _is_stage(stages.get(stage)):
            return f"`stages.{stage}` is not a {{digest, settings}} object"
    systems = stages.get("systems")
    if not isinstance(systems, dict) or not all(_is_stage(entry) for entry in systems.values()):
        return "`stages.systems` is not an object of {digest, settings} objects"
    return ""


def _is_stage(entry) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("digest"), str) and isinstance(entry.get("settings"), dict)


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def differences(baseline, run) -> list[str]:
    """`key: baseline X, run Y` for every setting that differs, objects compared key by key."""
    found = []
    for path, was, now in changed_settings(baseline, run):
        if was is MISSING:
            found.append(f"{path}: only in the run ({_short(now)})")
        elif now is MISSING:
            found.append(f"{path}: only in the baseline ({_short(was)})")
        else:
            found.append(f"{path}: baseline {_short(was)}, run {_short(now)}")
    return found


@dataclass
class StageComparison:
    """One stage (or one system's stage) of two runs: equal, or the settings that differ."""

    stage: str  # a stage, or `systems.<baseline name>`
    equal: bool
    baseline_digest: str
    run_digest: str
    differences: list[str] = field(default_factory=list)
    omitted: int = 0  # differences past MAX_DIFFERENCES

    def describe(self) -> str:
        if self.equal:
            return f"{self.stage}: equal ({self.baseline_digest[:12]})"
        listed = "; ".join(self.differences) or "the digests differ"
        more = f"; {self.omitted} more" if self.omitted else ""
        return f"{self.stage}: differs ({listed}{more})"


@dataclass
class Comparability:
    """Two runs' stages side by side, and the systems each has."""

    stages: list[StageComparison]  # the shared stages, then each matched system's
    only_baseline: list[str]
    only_run: list[str]
    system_map: dict[str, str]  # run name -> baseline name of every matched system

    @property
    def refused(self) -> list[StageComparison]:
        """The differing stages that make the comparison meaningless unless the reader accepts them."""
        return [s for s in self.stages if s.stage in REFUSING and not s.equal]

    def stage(self, name: str) -> StageComparison:
        return next(s for s in self.stages if s.stage == name)

    @property
    def differing_keys(self) -> list[str]:
        """The key paths of every refusing difference (for the refusal message)."""
        return [d.split(":", 1)[0] for s in self.refused for d in s.differences]


def _compare_stage(name: str, baseline: dict, run: dict) -> StageComparison:
    equal = baseline["digest"] == run["digest"]
    found = [] if equal else differences(baseline["settings"], run["settings"])
    return StageComparison(
        name, equal, baseline["digest"], run["digest"], found[:MAX_DIFFERENCES], max(0, len(found) - MAX_DIFFERENCES)
    )


def compare_runs(baseline: Run, run: Run, system_map: dict[str, str] | None = None) -> Comparability:
    """The stages of `run` against `baseline`'s. `system_map` ({run name: baseline name}) pairs renamed
    systems; every other system is matched by its name."""
    system_map = dict(system_map or {})
    base_systems, run_systems = baseline.stages["systems"], run.stages["systems"]
    for run_name, base_name in system_map.items():
        if run_name not in run_systems:
            raise RunError(f"--map {run_name}={base_name}: run {run.name} has no system {run_name!r}")
        if base_name not in base_systems:
            raise RunError(f"--map {run_name}={base_name}: baseline {baseline.name} has no system {base_name!r}")
    mapped = {name: system_map.get(name, name) for name in run_systems}
    matched = {run_name: base_name for run_name, base_name in mapped.items() if base_name in base_systems}
    stages = [_compare_stage(stage, baseline.stages[stage], run.stages[stage]) for stage in SHARED_STAGES]
    for run_name, base_name in matched.items():
        stages.append(_compare_stage(f"systems.{base_name}", base_systems[base_name], run_systems[run_name]))
    return Comparability(
        stages=stages,
        only_baseline=[name for name in base_systems if name not in matched.values()],
        only_run=[name for name in run_systems if name not in matched],
        system_map=matched,
    )


def class_key(run: Run) -> tuple[str, str]:
    """The run's comparability class: (key, label). Equal keys: equal catalog, user, metrics and judge."""
    digests = {stage: run.stages[stage]["digest"] for stage in CLASS_STAGES}
    key = "-".join(digests[stage][:12] for stage in CLASS_STAGES)
    label = ", ".join(f"{stage} {digest[:8]}" for stage, digest in digests.items())
    return key, label
