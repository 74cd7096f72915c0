"""What each stage's numbers depend on, as one digest per stage: the basis of comparing runs.

Two runs can be compared only where they agree on what made their numbers. The provenance record holds,
per stage, the settings that shape its output (files by their content's sha256, never by path; the
library code as `code`, {rule script or part of one: its `code_digest`}; the experiment's name and folder
nowhere) and the sha256 of their canonical JSON:
- `catalog`: the catalog file and the word lists and settings that index it, and the indexing code;
- `user`: who the systems meet. Simulated: the simulator's settings (not `realism`, which only checks
  the user), the templates and the learned voice's corpus by content, the settings of every user profile
  a system meets, the session seed and turns, and the code of the simulated user
  (crseval.simulate.user.simulator and what it imports). Imported: the corpus files and votes by content, their
  format and the importing code;
- `systems`: per system, its entry without its name, its user profile and speed-only keys (prompt files by
  content, a model file by its sha256), the shared agent settings, and the code of the simulate step (the
  conversation loop, every agent kind, the user) its sessions were made with. The name is left out so that a
  renamed system keeps its digest;
- `metrics`: the scoring settings (not the embedding cache's folder), the topic model's settings, the topic
  extractor's prompt, and the code of the score, topic and aggregate steps;
- `judge`: the judge's settings and prompt and the judging code, or off;
- `statistics`: the analysis plan's settings and the statistics code (and the reliability code, with trials).
The same digest means the same inputs, whatever the run is called or where it lies.

`code_digest` names the library code a step runs: the modules it imports and what those import,
transitively (at module or function level), with the data files pyproject.toml declares for their packages
(the session schema, the viewer's assets), each named by its path inside the library; nothing else in the
library's folders (an editor's swap file, a patch's .orig) is part of it. Snakemake re-runs a job when its
params, inputs or rule script change, not when the library the script calls does: every rule carries
`code_param` of its script in its params (workflow/rules/common.smk, `library_code`), so an edit to a module
the script reaches re-runs it and what follows, and an edit elsewhere re-runs nothing.

A stage's `code` is the code its jobs ran with: the digests in their params, which Snakemake keeps with each
job's outputs and crseval.provenance reads back (`JobCode`), not the tree as it is when the record is written,
which may have been edited since. Jobs of one stage that ran different code give it every digest they ran with,
sorted: such a stage equals no stage of a run made with one. Code no job left a record of is taken from the
tree, and the stage names it under `code_from_tree`.
"""

from __future__ import annotations

import ast
import copy
import glob
import hashlib
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from crseval.core.canonical import canonical_sha, without_runtime
from crseval.core.io import sha256_file
from crseval.core.redact import redact_url
from crseval.llm.backends import backend_kind
from crseval.llm.models import EMBEDDED_MODELS
from crseval.planning import (
    PARAPHRASE_PROMPT,
    TOPICS_PROMPT,
    Experiment,
    SimulatedSystem,
    input_path,
    resolve_experiment,
)

# The library code of the simulated user: a part of what the simulate step runs, digested apart (SCRIPT_PARTS) so
# that an edit to an agent kind leaves the users of two runs the same.
USER_CODE = ("crseval.simulate.user.simulator",)


# ------------------------------------------------------------------ the library code a step runs

PACKAGE = "crseval"
SRC = Path(__file__).resolve().parents[1]  # the src/ folder this library lives in


def _module_file(name: str, src: Path) -> Path | None:
    """The file of module `name` (a.b.c) under `src`: a module, or a package's __init__.py."""
    base = src.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@lru_cache(maxsize=None)
def _imports(path: Path, stamp: tuple[int, int]) -> tuple[str, ...]:
    """The crseval modules a file imports anywhere in its body (cached by the file's size and mtime)."""
    del stamp  # part of the cache key only
    found: list[str] = []
    tree = ast.parse(path.read_bytes(), filename=str(path))
    for node in _statements(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from crseval.x import y`: y may be a module of package x, or a name defined in x
            found += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return tuple(name for name in found if name.split(".")[0] == PACKAGE)


def _statements(body: list[ast.stmt]):
    """Every statement of a body, nested ones included (an import is a statement: expressions need no visit)."""
    pending = list(body)
    while pending:
        node = pending.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            nested = getattr(node, field, None)
            if isinstance(nested, list):
                pending.extend(nested)


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def module_files(roots: list[str | Path], src: str | Path = SRC) -> list[Path]:
    """Every library file reached from `roots` (module names, or paths of scripts outside the library),
    with the parent packages' __init__.py (importing a.b.c runs a and a.b first), sorted."""
    src = Path(src)
    pending: list[Path] = []
    for root in roots:
        path = Path(root) if str(root).endswith(".py") else _module_file(str(root), src)
        if path is None:
            raise ValueError(f"no module {root} under {src}")
        pending.append(path)
    seen: set[Path] = set()
    files: dict[str, Path | None] = {}  # module name -> its file, looked up once a call
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imports(path, _stamp(path)):
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):
                module = ".".join(parts[:depth])
                if module not in files:
                    files[module] = _module_file(module, src)
                found = files[module]
                if found is not None and found not in seen:
                    pending.append(found)
    library = src / PACKAGE
    return sorted(path for path in seen if path.is_relative_to(library))


# The package data setuptools ships with the library ([tool.setuptools.package-data] of pyproject.toml). A tree
# without pyproject.toml (the workflow's folders copied alone) takes this, which a test keeps equal to it.
PACKAGE_DATA = {"crseval.core": ("schemas/*.yaml",), "crseval.reports": ("viewer_assets/*",)}
MAX_PYPROJECT_BYTES = 1 << 20


def declared_package_data(src: str | Path = SRC) -> dict[str, tuple[str, ...]]:
    """{package: glob patterns} of the data files pyproject.toml (beside `src`) declares ("*": every package);
    PACKAGE_DATA when the tree has no pyproject.toml. ValueError naming the file and the field when malformed."""
    path = Path(src).parent / "pyproject.toml"
    try:
        stamp = _stamp(path)
    except FileNotFoundError:
        return PACKAGE_DATA
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({type(error).__name__}: {error.strerror or error})") from None
    return _read_package_data(path, stamp)


@lru_cache(maxsize=8)
def _read_package_data(path: Path, stamp: tuple[int, int]) -> dict[str, tuple[str, ...]]:
    if stamp[0] > MAX_PYPROJECT_BYTES:
        raise ValueError(f"{path}: {stamp[0]:,} bytes, more than the {MAX_PYPROJECT_BYTES:,} a pyproject.toml may hold")
    try:
        declared = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"{path}: not valid TOML ({error})") from None
    data = declared
    for key in ("tool", "setuptools", "package-data"):
        data = data.get(key, {})
        if not isinstance(data, dict):
            break
    if not isinstance(data, dict):
        raise ValueError(f"{path}: tool.setuptools.package-data (or a table above it) is {data!r:.60}, not a table")
    patterns = {}
    for package, globs in data.items():
        if not (isinstance(globs, list) and all(isinstance(pattern, str) and pattern for pattern in globs)):
            raise ValueError(
                f"{path}: tool.setuptools.package-data.{package} is {globs!r:.60}, not a list of file patterns"
            )
        patterns[package] = tuple(globs)
    return patterns


def _package_data(files: list[Path], src: Path) -> list[Path]:
    """The data files pyproject.toml declares for the packages the modules belong to, matched as setuptools
    matches them (glob from the package's folder; a name starting with a dot only when the pattern says so)."""
    declared = declared_package_data(src)
    data = []
    for folder in sorted({path.parent for path in files}):
        package = ".".join(folder.relative_to(src).parts)
        for pattern in declared.get("", ()) + declared.get("*", ()) + declared.get(package, ()):
            for name in glob.glob(pattern, root_dir=folder, recursive=True):
                path = folder / name
                inside = path.resolve().is_relative_to(folder.resolve())  # `../` in a pattern leaves the package
                if inside and path.is_file() and "__pycache__" not in path.parts:
                    data.append(path)
    return sorted(set(data))


def code_digest(roots: list[str | Path], src: str | Path = SRC) -> str:
    """sha256 over the name and content of every library file `roots` reach (module_files), their
    packages' data files and the root scripts themselves: equal for equal code wherever the tree lies."""
    src = Path(src)
    files = module_files(roots, src)
    files += _package_data(files, src)
    files += [Path(root) for root in roots if str(root).endswith(".py") and not Path(root).is_relative_to(src)]
    return _digest(src, tuple((path, _stamp(path)) for path in files))


@lru_cache(maxsize=None)
def _digest(src: Path, stamped: tuple[tuple[Path, tuple[int, int]], ...]) -> str:
    """The digest of files unchanged since last asked is not read again (every rule asks at planning)."""
    digest = hashlib.sha256()
    for path, _ in stamped:
        # a library file by its path in the library; a script outside it (a rule script) by its name
        name = path.relative_to(src).as_posix() if path.is_relative_to(src) else f"script:{path.name}"
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


# ------------------------------------------------------------------ the code a job ran with

# Parts of a rule script's code digested apart, for the stage that depends on that part only.
SCRIPT_PARTS = {"simulate.py": (USER_CODE,)}
_NAMED_DIGEST = r"[A-Za-z0-9_.+-]+=[0-9a-f]{64}"
_CODE_PARAM = re.compile(rf"code ({_NAMED_DIGEST}(?: {_NAMED_DIGEST})*)")


def part_name(roots: tuple[str, ...]) -> str:
    """How params and stages name a part: its root modules, joined by "+"."""
    return "+".join(roots)


_PARTS = {part_name(part): part for parts in SCRIPT_PARTS.values() for part in parts}


def code_param(script: str | Path, src: str | Path = SRC) -> str:
    """The `code` param of the rules that run `script`: `code <script>=<digest>`, then `<part>=<digest>` for each
    part SCRIPT_PARTS digests apart. Snakemake keeps it with the job's outputs; provenance reads it back."""
    script = Path(script)
    named = {script.name: code_digest([script], src)}
    for part in SCRIPT_PARTS.get(script.name, ()):
        named[part_name(part)] = code_digest(list(part), src)
    return "code " + " ".join(f"{name}={digest}" for name, digest in named.items())


def parse_code_param(text) -> dict[str, str] | None:
    """{name: digest} of a `code_param`; None for any other value."""
    match = _CODE_PARAM.fullmatch(text) if isinstance(text, str) else None
    return dict(item.split("=", 1) for item in match[1].split(" ")) if match else None


@dataclass
class JobCode:
    """The code one job ran with, as its `code` param named it, and the system whose sessions it made, if any."""

    job: str  # how the records name the job: by its log, else by an output
    code: dict[str, str]  # parse_code_param of its param
    system: str | None = None


NO_JOB_RECORDS = "no job records were read: the code as the tree held it when the record was written"
NO_JOB_OF_IT = (
    "no job of the run left a record naming it (outputs copied from elsewhere, or Snakemake's metadata dropped): "
    "the code as the tree held it when the record was written"
)


class StageCode:
    """The digests of the code a stage names: those its jobs ran with (`jobs`, read from their records), else the
    tree's at `workflow_dir`. Several digests for one name mean its jobs ran different code: all are kept."""

    def __init__(self, workflow_dir: Path, jobs: list[JobCode] | None = None):
        self.workflow_dir, self.jobs = workflow_dir, jobs
        self.ran: dict[tuple[str, str | None], set[str]] = {}  # (name, system or None for all) -> digests
        for job in jobs or []:
            for name, digest in job.code.items():
                self.ran.setdefault((name, None), set()).add(digest)
                self.ran.setdefault((name, job.system), set()).add(digest)

    def __call__(self, *names: str, system: str | None = None) -> tuple[dict, dict]:
        """({name: digest, or the sorted digests when several}, {name: why it came from the tree})."""
        code, from_tree = {}, {}
        for name in names:
            digests = self.ran.get((name, system))
            if digests:
                code[name] = next(iter(digests)) if len(digests) == 1 else sorted(digests)
            else:
                code[name] = self._tree(name)
                from_tree[name] = NO_JOB_RECORDS if self.jobs is None else NO_JOB_OF_IT
        return code, from_tree

    def _tree(self, name: str) -> str | dict:
        """The digest of a rule script (by file name) or of a part of one as the tree holds it; where the tree lacks
        it, {"digest": None, "reason"}: provenance records what it cannot find, and goes on."""
        roots = _PARTS.get(name) or [self.workflow_dir / "workflow" / "scripts" / name]
        try:
            return code_digest(list(roots), self.workflow_dir / "src")
        except (OSError, ValueError, SyntaxError) as error:
            return {"digest": None, "reason": f"{type(error).__name__}: {error}"}


# ------------------------------------------------------------------ the stages


def _content(path: str | None, workflow_dir: Path) -> dict | None:
    """A file by its content: {"sha256"} (or the reason it could not be read); None for no file."""
    if not path:
        return None
    try:
        return {"sha256": sha256_file(input_path(str(path), workflow_dir))}
    except OSError as error:
        return {"sha256": None, "reason": f"{type(error).__name__}: {error.strerror or error}"}


def _stage(settings: dict, code: tuple[dict, dict] | None = None) -> dict:
    """{digest, settings} with the stage's `code` in the settings; the code taken from the tree is named beside."""
    if code is None:
        return {"digest": canonical_sha(settings), "settings": settings}
    settings = settings | {"code": code[0]}
    stage = {"digest": canonical_sha(settings), "settings": settings}
    return stage | ({"code_from_tree": code[1]} if code[1] else {})


def _model(backend: dict | None, workflow_dir: Path) -> dict | None:
    """A backend as what answers: in-process models by their file's sha256, servers by their settings."""
    if backend is None:
        return None
    backend = {key: (redact_url(value) if isinstance(value, str) else value) for key, value in backend.items()}
    if not backend_kind(backend.get("type")).in_process:
        return backend
    model = backend.get("model")
    spec = EMBEDDED_MODELS.get(model)
    file = {"sha256": spec.sha256} if spec is not None else _content(model, workflow_dir)
    return {**backend, "model": file}


def catalog_stage(config: dict, workflow_dir: Path, code: StageCode) -> dict:
    settings = copy.deepcopy(config.get("catalog", {}))
    settings["path"] = _content(settings.get("path"), workflow_dir)
    settings["non_genre_values"] = _content(settings.get("non_genre_values"), workflow_dir)
    return _stage({"catalog": settings}, code("index_catalog.py"))


def user_stage(config: dict, experiment: Experiment, code: StageCode) -> dict:
    sessions, workflow_dir = config.get("sessions", {}), experiment.workflow_dir
    if experiment.importing:
        files = sorted(glob.glob(sessions["import_paths"]))
        return _stage(
            {
                "corpus": sorted((_content(path, workflow_dir) or {}).get("sha256") or "" for path in files),
                "format": sessions.get("import_format"),
                "votes": _content(sessions.get("import_votes"), workflow_dir),
            },
            code("import_logs.py"),
        )
    simulator = {key: value for key, value in copy.deepcopy(config.get("simulator", {})).items() if key != "realism"}
    simulator["templates"] = _content(simulator.get("templates"), workflow_dir)
    voice = simulator.pop("voice", None) or {}
    if voice.get("corpus"):  # without a corpus no user speaks with a voice: its settings change nothing
        simulator["voice"] = voice | {"corpus": _content(voice["corpus"], workflow_dir)}
    if simulator.get("paraphrase", {}).get("enabled"):
        simulator["paraphrase"]["backend"] = _model(simulator["paraphrase"].get("backend"), workflow_dir)
        simulator["paraphrase"]["prompt"] = _content(PARAPHRASE_PROMPT, workflow_dir)
    return _stage(
        {
            "simulator": simulator,
            "profiles": experiment.user_profiles,
            "sessions": {"seed": sessions.get("seed"), "turns": sessions.get("turns")},
        },
        code(part_name(USER_CODE)),
    )


def system_stage(system: SimulatedSystem, config: dict, workflow_dir: Path, code: StageCode) -> dict:
    entry = system.resolved
    settings = {key: value for key, value in without_runtime(entry.entry).items() if key not in ("name", "profile")}
    if entry.prompt_key:
        settings[entry.prompt_key] = _content(entry.prompt, workflow_dir)
    if entry.backend is not None:
        settings["backend"] = _model(entry.backend, workflow_dir)
    return _stage({"system": settings, "agent": config.get("agent")}, code("simulate.py", system=entry.name))


def metrics_stage(config: dict, experiment: Experiment, code: StageCode) -> dict:
    scoring = {
        key: value for key, value in copy.deepcopy(config.get("scoring", {})).items() if key != "embedding_cache"
    }
    backends, workflow_dir = experiment.scoring_backends, experiment.workflow_dir
    return _stage(
        {
            "scoring": scoring,
            "lda": config.get("lda"),
            "topics_prompt": _content(TOPICS_PROMPT, workflow_dir) if backends else None,
            "topic_backends": {user: _model(backend, workflow_dir) for user, backend in backends.items()},
        },
        code("score.py", "train_lda.py", "aggregate.py"),
    )


def judge_stage(config: dict, workflow_dir: Path, code: StageCode) -> dict:
    judge = copy.deepcopy(config.get("judge", {}))
    if not judge.get("enabled"):
        return _stage({"enabled": False})
    judge = without_runtime(judge)
    judge["prompt"] = _content(judge.get("prompt"), workflow_dir)
    judge["backend"] = _model(judge.get("backend"), workflow_dir)
    judge["panel"] = [
        without_runtime(entry) | {"backend": _model(entry.get("backend"), workflow_dir)}
        for entry in judge.get("panel", [])
    ]
    return _stage({"judge": judge}, code("judge.py"))


def statistics_stage(config: dict, workflow_dir: Path, code: StageCode) -> dict:
    # reliability over trials runs only when the users meet the systems more than once (sessions.trials)
    trials = config.get("sessions", {}).get("trials", 1)
    scripts = ("stats.py", "reliability_trials.py") if trials > 1 else ("stats.py",)
    return _stage({"stats": config.get("stats")}, code(*scripts))


def stage_digests(
    config: dict, workflow_dir: str | Path, jobs: list[JobCode] | None = None, experiment: Experiment | None = None
) -> dict:
    """Every stage's {digest, settings} for the resolved `config` run by the workflow at `workflow_dir`
    (systems by name: {name: {digest, settings}}), with the code `jobs` ran with (None: the tree's). `experiment`:
    the config resolved for that workflow (crseval.planning.resolve_experiment), when the caller has it."""
    workflow_dir = Path(workflow_dir)
    experiment = experiment or resolve_experiment(config, workflow_dir)
    code = StageCode(workflow_dir, jobs)
    # an imported corpus's systems answered elsewhere: what they were is the corpus's (the user stage); the
    # experiment simulates none
    systems = {name: system_stage(system, config, workflow_dir, code) for name, system in experiment.systems.items()}
    return {
        "catalog": catalog_stage(config, workflow_dir, code),
        "user": user_stage(config, experiment, code),
        "systems": systems,
        "metrics": metrics_stage(config, experiment, code),
        "judge": judge_stage(config, workflow_dir, code),
        "statistics": statistics_stage(config, workflow_dir, code),
    }
