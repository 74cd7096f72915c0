"""Whether two runs can be compared, stage by stage, from the digests their provenance records hold.

A run's provenance.json records, per stage, the settings that shape its numbers and their digest
(crseval.stage_digests). Two runs are compared stage by stage: equal, or different with every setting
that differs named by its key path (`simulator.profile: baseline explicit, run realistic`). Runs whose
catalog, simulated user or metrics differ answer different questions (the same system meets other users,
or is measured by another ruler): `refused` lists those stages, and the caller refuses the comparison
unless told to go on. A system whose own stage differs is what a comparison is for; the judge and the
statistics are reported, not refused (judge scores are compared only under the same judge).

A comparability class groups runs for a board: equal catalog, user, metrics and judge digests.

A results folder may come from another machine, another crseval, an interrupted run or a hand's edit, so
everything read from it is checked before it is used: a file is read only when it is a regular file inside
the folder (a link out of it, a FIFO or a device is refused) and within its bounds (its bytes, and before it is
parsed its rows, columns and the bytes it decodes to); the record's shape, its format version and the analysis
plan it holds, and the identifiers of the sessions table, are checked against what crseval writes. What fails is
a RunError naming the file and what was wrong.

A record can also be stale or forged: a run made again behind it, or settings edited after their digest was
made. `Run.check_record` (which `crseval compare` and `crseval board` call on every run) holds the run to its
record: the record's format must be the one this crseval reads, each stage's digest the sha256 of the settings
beside it (as crseval.stage_digests makes it) and `config.stats` the statistics stage's own, and from then on
every table read must have the sha256 the record's `outputs` list for it (the bytes hashed are the bytes
parsed). A mismatch is a RecordMismatch naming the file and the field, or, for a run whose mismatches are
trusted, a line of `Run.mismatches`, which the pages put under the heading RECORD_MISMATCH_HEADING.
"""

from __future__ import annotations

import hashlib
import io
import json
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from crseval.core.canonical import MISSING, canonical_sha, changed_settings
from crseval.core.io import TableTooLarge, check_csv_bounds, open_bounded_parquet
from crseval.statistics.analysis_plan import METHODS, AnalysisPlan

# Stages whose difference refuses a comparison, and those that define a board's class.
REFUSING = ("catalog", "user", "metrics")
CLASS_STAGES = (*REFUSING, "judge")
SHARED_STAGES = ("catalog", "user", "metrics", "judge", "statistics")
# Bounds on what a results folder may hand us: a record or table past them is refused, not read.
MAX_RECORD_BYTES = 64 * 2**20
MAX_TABLE_BYTES = 2 * 2**30  # a parquet table on disk, and again decoded (a small file can decode to much more)
MAX_TABLE_ROWS = 10_000_000  # sessions
MAX_TABLE_COLUMNS = 10_000
MAX_CSV_BYTES = 64 * 2**20  # model_metrics.csv and the pass^k table: a row per system (and k)
MAX_CSV_ROWS = 100_000
MAX_CSV_COLUMNS = 20_000  # a few per metric
MAX_CSV_CELLS = 5_000_000  # rows times columns: what the parsed frame holds
_BLOCK = 1 << 22  # bytes hashed at a time
MAX_DIFFERENCES = 50  # per stage; the rest are counted
# The newest provenance format this reader knows (crseval.provenance.SCHEMA_VERSION, which runs may not import):
# a newer record may mean its stages differently.
RECORD_FORMAT = 3
# Resamples a comparison draws per system and metric: the record's plan may ask no more (a hand's 10**12 would
# never finish).
MAX_RESAMPLES = 1_000_000
# What identifies a session in every run's sessions table (`trial` too, where users met systems several times).
SESSION_KEYS = ("system", "session_id", "session_index", "seed")
TEXT_KEYS = ("system", "session_id")
WHOLE_NUMBER_KEYS = ("session_index", "seed", "trial")
# What the pages say above a run compared although its record does not describe its tables (its mismatches trusted).
RECORD_MISMATCH_HEADING = "record does not describe its tables"


class RunError(Exception):
    """A results folder that cannot be compared (no record, a record without stage digests, no tables)."""


class RecordMismatch(RunError):
    """A record that does not describe its folder: a table whose sha256 is not the one listed, a stage digest
    that is not the sha256 of its settings."""


@dataclass
class Run:
    """A finished run: its results folder, its label, its provenance record, and whether its tables are held to
    the record as they are read (`check_record`)."""

    path: Path
    name: str
    record: dict
    checked: bool = False
    trust_mismatched: bool = False
    mismatches: list[str] = field(default_factory=list)  # with trust_mismatched: what the record does not describe

    def check_record(self, trust_mismatched: bool = False) -> None:
        """Hold the run to its record: its format the one this crseval reads (RunError else, whatever is
        trusted), each stage digest the sha256 of its settings, and from now on every table read the sha256 its
        `outputs` entry lists. A mismatch is a RecordMismatch, or with `trust_mismatched` a line of
        `mismatches`."""
        record_path = self.path / "provenance.json"
        version = self.record.get("schema_version", MISSING)
        if type(version) is not int or version != RECORD_FORMAT:
            shown = "missing" if version is MISSING else _short(version)
            raise RunError(
                f"{record_path}: `schema_version` is {shown}, and this crseval reads records of format "
                f"{RECORD_FORMAT} only; write it again with `snakemake --forcerun provenance`"
            )
        self.checked, self.trust_mismatched = True, trust_mismatched
        for problem in _digest_problems(self.record):
            self._mismatch(f"{record_path}: {problem}")

    def _mismatch(self, problem: str) -> None:
        if not self.trust_mismatched:
            raise RecordMismatch(problem)
        if problem not in self.mismatches:
            self.mismatches.append(problem)

    def _held_to_record(self, relative: str, digest: str | None) -> None:
        """With check_record: the table at `relative` (None: absent) against the record's `outputs`."""
        if not self.checked:
            return
        record_path = self.path / "provenance.json"
        outputs = self.record.get("outputs", MISSING)
        if not isinstance(outputs, list):
            shown = "missing" if outputs is MISSING else f"a JSON {type(outputs).__name__}"
            self._mismatch(f"{record_path}: `outputs` is {shown}, not the list of files it describes ({relative})")
            return
        listed = [
            (i, entry.get("sha256"))
            for i, entry in enumerate(outputs)
            if isinstance(entry, dict) and entry.get("path") == relative
        ]
        if digest is None:
            if listed:
                self._mismatch(f"{record_path}: `outputs[{listed[0][0]}]` lists {relative}, which is missing")
            return
        if not listed:
            self._mismatch(
                f"{self.path / relative}: not among the `outputs` of {record_path}, which does not describe it "
                "(written after the record, or by another run)"
            )
        for i, recorded in listed:
            if recorded != digest:
                self._mismatch(
                    f"{self.path / relative}: its sha256 {_digest(digest)} is not the `outputs[{i}].sha256` of "
                    f"{record_path} ({_digest(recorded)}): the table changed after the record was written (a run "
                    "made again behind it, or an edit)"
                )

    @property
    def stages(self) -> dict:
        return self.record["stages"]

    def table(self, relative: str) -> Path:
        return self.path / relative

    def plan(self) -> AnalysisPlan:
        """The analysis plan of the run's recorded `stats` settings, each checked as the config schema states."""
        return _analysis_plan(self.record["config"]["stats"], self.path / "provenance.json")

    def sessions(self) -> pd.DataFrame:
        """tables/sessions.parquet, with the columns that identify a session (a trial column is optional), each
        of the type crseval writes, and every session once."""
        path = self.path / "tables" / "sessions.parquet"
        _regular_file(path, self.path, MAX_TABLE_BYTES)
        table = _read_table(path, self._read_parquet)
        missing = [column for column in SESSION_KEYS if column not in table.columns]
        if missing:
            raise RunError(f"{path} has no column {', '.join(missing)}: not a sessions table crseval wrote")
        if not len(table):
            raise RunError(f"{path} holds no sessions: run the workflow to the end first")
        return _checked_identifiers(table, path)

    def model_metrics(self) -> pd.DataFrame:
        path = self.path / "tables" / "model_metrics.csv"
        _regular_file(path, self.path, MAX_CSV_BYTES)
        return _read_table(path, self._read_csv)

    def pass_k(self) -> pd.DataFrame | None:
        path = self.path / "stats" / "reliability_trials.csv"
        if not path.exists() and not path.is_symlink():
            self._held_to_record("stats/reliability_trials.csv", None)
            return None
        _regular_file(path, self.path, MAX_CSV_BYTES)
        return _read_table(path, self._read_csv)

    def _read_parquet(self, path: Path) -> pd.DataFrame:
        """The parquet table, refused before it is decoded when its footer shows more rows, columns or decoded
        bytes than a comparison reads (crseval.core.io.open_bounded_parquet), and held to the record. One open
        file throughout: what is hashed and bounded is what is parsed."""
        with path.open("rb") as handle:
            if self.checked:
                self._held_to_record(_relative(path, self.path), _sha256(handle, path, MAX_TABLE_BYTES))
                handle.seek(0)
            bounds = {"max_bytes": MAX_TABLE_BYTES, "max_rows": MAX_TABLE_ROWS, "max_columns": MAX_TABLE_COLUMNS}
            open_bounded_parquet(handle, path, **bounds)
            handle.seek(0)
            return pd.read_parquet(handle)

    def _read_csv(self, path: Path) -> pd.DataFrame:
        """The CSV table, its rows, columns and cells bounded before it is parsed, and held to the record."""
        with path.open("rb") as handle:
            data = handle.read(MAX_CSV_BYTES + 1)
        if len(data) > MAX_CSV_BYTES:
            raise RunError(f"{path} grew past the {MAX_CSV_BYTES:,} bytes a comparison reads while it was read")
        if self.checked:
            self._held_to_record(_relative(path, self.path), hashlib.sha256(data).hexdigest())
        check_csv_bounds(data, path, max_rows=MAX_CSV_ROWS, max_columns=MAX_CSV_COLUMNS, max_cells=MAX_CSV_CELLS)
        return pd.read_csv(io.BytesIO(data))


def _relative(path: Path, folder: Path) -> str:
    """`path` as the record's `outputs` name it: relative to the results folder, with slashes."""
    return path.relative_to(folder).as_posix()


def _sha256(handle, path: Path, bound: int) -> str:
    """The sha256 of an open file read to its end, as crseval.core.io.sha256_file makes it for the record; a
    file growing past `bound` while it is read is refused."""
    digest, size = hashlib.sha256(), 0
    while block := handle.read(_BLOCK):
        size += len(block)
        if size > bound:
            raise RunError(f"{path} grew past the {bound:,} bytes a comparison reads while it was read")
        digest.update(block)
    return digest.hexdigest()


def _digest_problems(record: dict) -> list[str]:
    """Where a record's stage digests are not the sha256 of the settings beside them (canonical JSON, as
    crseval.stage_digests makes them), and whether `config.stats`, which plans the comparison, is the statistics
    stage's own: a digest vouches only for the settings it was made of."""
    stages = record["stages"]
    named = [(stage, stages[stage]) for stage in SHARED_STAGES]
    named += [(f"systems.{printable(name, 80)}", entry) for name, entry in stages["systems"].items()]
    problems = []
    for name, entry in named:
        try:
            made = canonical_sha(entry["settings"])
        except (ValueError, RecursionError) as error:  # a lone surrogate, nesting past the stack
            problems.append(f"`stages.{name}.settings` cannot be digested ({type(error).__name__})")
            continue
        if made != entry["digest"]:
            problems.append(
                f"`stages.{name}.digest` is {_digest(entry['digest'])}, not the sha256 of `stages.{name}.settings` "
                f"({_digest(made)}): the settings were edited after their digest was made"
            )
    if stages["statistics"]["settings"].get("stats", MISSING) != record["config"]["stats"]:
        problems.append("`config.stats` is not the `stages.statistics.settings.stats` that its digest covers")
    return problems


def _digest(value) -> str:
    """A digest in a message: its first 16 characters, or the value as JSON where it is no text."""
    return f"{printable(value[:16])}..." if isinstance(value, str) else _short(value)


def _regular_file(path: Path, folder: Path, bound: int) -> int:
    """The size of `path`, a regular file inside the results folder and within `bound` bytes; RunError else.
    A link out of the folder is refused: what it points to is no output of this run."""
    try:
        status = path.stat()
    except OSError as error:
        raise RunError(f"{path} cannot be read ({type(error).__name__}): run the workflow to the end first") from None
    if not stat.S_ISREG(status.st_mode):
        kind = "a folder" if stat.S_ISDIR(status.st_mode) else "no regular file (a FIFO, socket or device)"
        raise RunError(f"{path} is {kind}: not a file crseval wrote")
    real, inside = path.resolve(), folder.resolve()
    if not real.is_relative_to(inside):
        raise RunError(f"{path} links to {real}, outside the results folder {inside}: not an output of this run")
    if status.st_size > bound:
        raise RunError(f"{path} holds {status.st_size:,} bytes, more than the {bound:,} a comparison reads")
    return status.st_size


def _read_table(path: Path, reader):
    """reader(path), any way the file fails to parse a RunError naming it (never pandas' or pyarrow's traceback)."""
    try:
        return reader(path)
    except RunError:
        raise
    except TableTooLarge as error:
        raise RunError(str(error)) from None
    except (
        OSError,
        ValueError,
        TypeError,
        NotImplementedError,  # pandas on a column type it cannot hold (pyarrow's own are ArrowException)
        RecursionError,
        MemoryError,
        pa.ArrowException,
    ) as error:
        raise RunError(f"{path} cannot be read: {type(error).__name__}: {str(error)[:300]}") from None


def _checked_identifiers(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    """The table with its identifiers as crseval writes them (text; whole numbers as int64), or RunError
    naming the column: a session that cannot be named or paired unambiguously is no session to compare. The
    table is the one just read, changed in place (no second copy of a large table)."""
    for column in [c for c in (*TEXT_KEYS, *WHOLE_NUMBER_KEYS) if c in table.columns]:
        values = table[column]
        empty = int(values.isna().sum())
        if empty:
            raise RunError(f"{path}: column {column} is empty in {empty} of {len(values)} sessions")
        if column in TEXT_KEYS:
            if pd.api.types.infer_dtype(values.astype(object), skipna=False) != "string":
                raise RunError(f"{path}: column {column} holds {values.dtype} values, not text")
            table[column] = values.astype(str)
            continue
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            raise RunError(f"{path}: column {column} holds {values.dtype} values, not whole numbers")
        numbers = values.to_numpy(dtype=float)
        wrong = ~(np.isfinite(numbers) & (numbers == np.round(numbers)))
        if wrong.any():
            raise RunError(f"{path}: column {column} holds {_cell(values[wrong].iloc[0])}, not a whole number")
        table[column] = values.astype("int64")
    repeated = table["session_id"].duplicated()
    if repeated.any():
        raise RunError(
            f"{path}: session ids repeat ({int(repeated.sum())}, e.g. {_cell(table['session_id'][repeated].iloc[0])})"
        )
    keys = [c for c in ("system", "session_index", "seed", "trial") if c in table.columns]
    repeated = table.duplicated(keys)
    if repeated.any():
        first = ", ".join(f"{key} {_cell(table.loc[repeated, key].iloc[0])}" for key in keys)
        raise RunError(
            f"{path}: {int(repeated.sum())} sessions repeat one already seen ({first}): they cannot be paired"
        )
    return table


def _cell(value) -> str:
    """A table cell in an error message: text quoted and printable, a number as itself."""
    return printable(repr(value), 80) if isinstance(value, str) else printable(str(value), 80)


def _analysis_plan(settings: dict, record_path: Path) -> AnalysisPlan:
    """AnalysisPlan.from_settings on a record's `stats`, every value checked first against the config schema's range."""
    family = settings.get("family")
    if not isinstance(family, dict):
        raise _setting_error(record_path, "family", family, "an object")
    alpha = settings.get("alpha", MISSING)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise _setting_error(record_path, "alpha", alpha, "a number between 0 and 1")
    if family.get("scope", MISSING) not in ("report", "metric"):
        raise _setting_error(record_path, "family.scope", family.get("scope", MISSING), "report or metric")
    if family.get("method", MISSING) not in METHODS:
        raise _setting_error(record_path, "family.method", family.get("method", MISSING), " or ".join(METHODS))
    return AnalysisPlan(
        alpha=float(alpha),
        scope=family["scope"],
        method=family["method"],
        min_sessions=_whole_setting(settings, "min_sessions", 2, 2**31, record_path),
        small_sample=_whole_setting(settings, "small_sample", 2, 2**31, record_path),
        resamples=_whole_setting(settings, "bootstrap_resamples", 100, MAX_RESAMPLES, record_path),
        permutations=_whole_setting(settings, "permutation_resamples", 100, MAX_RESAMPLES, record_path),
        seed=_whole_setting(settings, "seed", 0, 2**63 - 1, record_path),
    )


def _whole_setting(settings: dict, key: str, low: int, high: int, record_path: Path) -> int:
    value = settings.get(key, MISSING)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _setting_error(record_path, key, value, f"a whole number from {low:,} to {high:,}")
    return value


def _setting_error(record_path: Path, key: str, value, wanted: str) -> RunError:
    shown = "missing" if value is MISSING else f"{_short(value)}"
    return RunError(f"{record_path}: `config.stats.{key}` is {shown}, not {wanted}")


def read_run(path: str | Path, name: str | None = None) -> Run:
    """The run in results folder `path`, labelled `name` (default: the folder's name)."""
    path = Path(path)
    record_path = path / "provenance.json"
    if not path.is_dir():
        raise RunError(f"{path} is not a results folder (results/<experiment>)")
    if not record_path.exists() and not record_path.is_symlink():
        raise RunError(f"{record_path} does not exist: run the workflow (its provenance rule) first")
    _regular_file(record_path, path, MAX_RECORD_BYTES)
    try:
        with record_path.open("rb") as handle:  # the file may have grown since its size was read
            text = handle.read(MAX_RECORD_BYTES + 1)
        if len(text) > MAX_RECORD_BYTES:
            raise RunError(f"{record_path} holds more than the {MAX_RECORD_BYTES:,} bytes a record may")
        record = json.loads(text.decode("utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: JSON nested past Python's stack
        raise RunError(f"{record_path} cannot be read: {type(error).__name__}: {str(error)[:300]}") from None
    newer = _newer_format(record)
    if newer:
        raise RunError(f"{record_path}: {newer}")
    problem = _stages_problem(record) or _config_problem(record)
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


def _newer_format(record) -> str:
    """Why a record's format is none this crseval reads (a version not a whole number, or a newer one), or ""."""
    version = record.get("schema_version", MISSING) if isinstance(record, dict) else MISSING
    if version is MISSING:
        return ""
    if isinstance(version, bool) or not isinstance(version, int):
        return f"`schema_version` is {_short(version)}, not a whole number: not a record crseval wrote"
    if version > RECORD_FORMAT:
        return (
            f"written by a newer crseval (record format {version}; this one reads up to {RECORD_FORMAT}), whose "
            "stages may mean other things: compare it with that crseval"
        )
    return ""


def _config_problem(record: dict) -> str:
    """What of the config a comparison reads is not as crseval writes it, or "" (after _stages_problem)."""
    config = record.get("config")
    if not isinstance(config, dict) or not isinstance(config.get("stats"), dict):
        return "`config.stats` is not an object (the resolved config is part of every record)"
    metrics = config["stats"].get("metrics", [])
    if not isinstance(metrics, list) or not all(isinstance(name, str) for name in metrics):
        return f"`config.stats.metrics` is {_short(metrics)}, not a list of metric names"
    return ""


def _is_stage(entry) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("digest"), str) and isinstance(entry.get("settings"), dict)


def _short(value) -> str:
    text = printable(json.dumps(value, sort_keys=True, ensure_ascii=False))
    return text if len(text) <= 80 else text[:77] + "..."


def printable(text: str, limit: int = 200) -> str:
    """`text` with every character a terminal or a page could act on (controls, line and paragraph separators,
    direction overrides) as a \\u escape, cut at `limit` characters: a key of a hand-edited record is printed."""
    shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text[: limit + 1])
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def differences(baseline, run) -> list[str]:
    """`key: baseline X, run Y` for every setting that differs, objects compared key by key."""
    found = []
    for path, was, now in changed_settings(baseline, run):
        path = printable(path)
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
    try:
        found = [] if equal else differences(baseline["settings"], run["settings"])
    except RecursionError:  # settings nested deeper than Python's stack: a hand-made record, not crseval's
        found = ["the settings are nested too deep to list their differences"]
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
    """The run's comparability class: (key, label). Equal keys: equal catalog, user, metrics and judge. The key
    ends in a digest of the whole stage digests: two records whose digests share their first characters (a hand
    can write any) are still two classes."""
    digests = {stage: run.stages[stage]["digest"] for stage in CLASS_STAGES}
    whole = hashlib.sha256("\0".join(digests.values()).encode("utf-8", "surrogatepass")).hexdigest()
    key = "-".join([*(printable(digests[stage][:12]) for stage in CLASS_STAGES), whole[:12]])
    label = ", ".join(f"{stage} {printable(digest[:8])}" for stage, digest in digests.items())
    return key, label
