"""What each stage's numbers depend on, as one digest per stage: the basis of comparing runs.

Two runs can be compared only where they agree on what made their numbers. The provenance record holds,
per stage, the settings that shape its output (files by their content's sha256, never by path; the
library code by `code_digest`; the experiment's name and folder nowhere) and the sha256 of
their canonical JSON:
- `catalog`: the catalog file and the word lists and settings that index it, and the indexing code;
- `user`: who the systems meet. Simulated: the simulator's settings (not `realism`, which only checks
  the user), the templates and the learned voice's corpus by content, the settings of every user profile
  a system meets, the session seed and turns, and the code of the simulated user
  (crseval.simulate.user and what it imports). Imported: the corpus files and votes by content, their
  format and the importing code;
- `systems`: per system, its entry without its name, its user profile and speed-only keys (prompt files by
  content, a model file by its sha256), the shared agent settings, and the code of the conversation loop and
  every agent kind. The name is left out so that a renamed system keeps its digest;
- `metrics`: the scoring settings (not the embedding cache's folder), the topic model's settings, the topic
  extractor's prompt, and the code of the score, topic and aggregate steps;
- `judge`: the judge's settings and prompt and the judging code, or off;
- `statistics`: the analysis plan's settings and the statistics code.
The same digest means the same inputs, whatever the run is called or where it lies.

`code_digest` names the library code a step runs: the modules it imports and what those import,
transitively (at module or function level), with their packages' data files (the session schema, the
viewer's assets), each named by its path inside the library. Snakemake re-runs a job when its params,
inputs or rule script change, not when the library the script calls does: every rule carries the digest
of its script's code in its params (workflow/rules/common.smk, `library_code`), so an edit to a module the
script reaches re-runs it and what follows, and an edit elsewhere re-runs nothing.
"""

from __future__ import annotations

import ast
import copy
import glob
import hashlib
from functools import lru_cache
from pathlib import Path

from crseval.core.canonical import canonical_sha, without_runtime
from crseval.core.experiment import imports_sessions
from crseval.core.io import sha256_file
from crseval.core.redact import redact_url
from crseval.llm.backends import backend_kind
from crseval.llm.models import EMBEDDED_MODELS
from crseval.planning import TOPICS_PROMPT, input_path, resolved, scoring_backends, user_profiles_settings

# The library code of the simulated user, and of the conversation loop with every agent kind.
USER_CODE = ("crseval.simulate.user",)
SYSTEM_CODE = ("crseval.simulate.sessions", "crseval.simulate.kinds")


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


def _package_data(files: list[Path]) -> list[Path]:
    """Non-Python files of the packages the modules belong to (a package's own folder and its data
    folders, not its subpackages)."""
    data = []
    for folder in sorted({path.parent for path in files}):
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
                continue
            inner = path.parent
            while inner != folder and not (inner / "__init__.py").exists():
                inner = inner.parent
            if inner == folder:
                data.append(path)
    return data


def code_digest(roots: list[str | Path], src: str | Path = SRC) -> str:
    """sha256 over the name and content of every library file `roots` reach (module_files), their
    packages' data files and the root scripts themselves: equal for equal code wherever the tree lies."""
    src = Path(src)
    files = module_files(roots, src)
    files += _package_data(files)
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


# ------------------------------------------------------------------ the stages


def _content(path: str | None, workflow_dir: Path) -> dict | None:
    """A file by its content: {"sha256"} (or the reason it could not be read); None for no file."""
    if not path:
        return None
    try:
        return {"sha256": sha256_file(input_path(str(path), workflow_dir))}
    except OSError as error:
        return {"sha256": None, "reason": f"{type(error).__name__}: {error.strerror or error}"}


def _code(workflow_dir: Path, *roots: str) -> str | dict:
    """The digest of the library code reached from `roots` (module names, or rule scripts by file name); where
    the tree lacks one, {"digest": None, "reason"}: provenance records what it cannot find, and goes on."""
    scripts = workflow_dir / "workflow" / "scripts"
    paths = [scripts / root if root.endswith(".py") else root for root in roots]
    try:
        return code_digest(paths, workflow_dir / "src")
    except (OSError, ValueError, SyntaxError) as error:
        return {"digest": None, "reason": f"{type(error).__name__}: {error}"}


def _stage(settings: dict) -> dict:
    return {"digest": canonical_sha(settings), "settings": settings}


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


def catalog_stage(config: dict, workflow_dir: Path) -> dict:
    settings = copy.deepcopy(config.get("catalog", {}))
    settings["path"] = _content(settings.get("path"), workflow_dir)
    settings["non_genre_values"] = _content(settings.get("non_genre_values"), workflow_dir)
    return _stage({"catalog": settings, "code": _code(workflow_dir, "index_catalog.py")})


def user_stage(config: dict, workflow_dir: Path) -> dict:
    sessions = config.get("sessions", {})
    if imports_sessions(config):
        files = sorted(glob.glob(sessions["import_paths"]))
        return _stage(
            {
                "corpus": sorted((_content(path, workflow_dir) or {}).get("sha256") or "" for path in files),
                "format": sessions.get("import_format"),
                "votes": _content(sessions.get("import_votes"), workflow_dir),
                "code": _code(workflow_dir, "import_logs.py"),
            }
        )
    simulator = {key: value for key, value in copy.deepcopy(config.get("simulator", {})).items() if key != "realism"}
    simulator["templates"] = _content(simulator.get("templates"), workflow_dir)
    voice = simulator.pop("voice", None) or {}
    if voice.get("corpus"):  # without a corpus no user speaks with a voice: its settings change nothing
        simulator["voice"] = voice | {"corpus": _content(voice["corpus"], workflow_dir)}
    if simulator.get("paraphrase", {}).get("enabled"):
        simulator["paraphrase"]["backend"] = _model(simulator["paraphrase"].get("backend"), workflow_dir)
    return _stage(
        {
            "simulator": simulator,
            "profiles": user_profiles_settings(config),
            "sessions": {"seed": sessions.get("seed"), "turns": sessions.get("turns")},
            "code": _code(workflow_dir, *USER_CODE),
        }
    )


def system_stage(system: dict, config: dict, workflow_dir: Path) -> dict:
    entry = resolved(system, config)
    settings = {key: value for key, value in without_runtime(system).items() if key not in ("name", "profile")}
    if entry.prompt_key:
        settings[entry.prompt_key] = _content(entry.prompt, workflow_dir)
    if entry.backend is not None:
        settings["backend"] = _model(entry.backend, workflow_dir)
    return _stage({"system": settings, "agent": config.get("agent"), "code": _code(workflow_dir, *SYSTEM_CODE)})


def metrics_stage(config: dict, workflow_dir: Path) -> dict:
    scoring = {
        key: value for key, value in copy.deepcopy(config.get("scoring", {})).items() if key != "embedding_cache"
    }
    backends = scoring_backends(config)
    return _stage(
        {
            "scoring": scoring,
            "lda": config.get("lda"),
            "topics_prompt": _content(TOPICS_PROMPT, workflow_dir) if backends else None,
            "topic_backends": {user: _model(backend, workflow_dir) for user, backend in backends.items()},
            "code": _code(workflow_dir, "score.py", "train_lda.py", "aggregate.py"),
        }
    )


def judge_stage(config: dict, workflow_dir: Path) -> dict:
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
    return _stage({"judge": judge, "code": _code(workflow_dir, "judge.py")})


def statistics_stage(config: dict, workflow_dir: Path) -> dict:
    return _stage({"stats": config.get("stats"), "code": _code(workflow_dir, "stats.py", "reliability_trials.py")})


def stage_digests(config: dict, workflow_dir: str | Path) -> dict:
    """Every stage's {digest, settings} for the resolved `config` run by the workflow at `workflow_dir`
    (systems by name: {name: {digest, settings}})."""
    workflow_dir = Path(workflow_dir)
    # an imported corpus's systems answered elsewhere: what they were is the corpus's (the user stage)
    systems = (
        {}
        if imports_sessions(config)
        else {system["name"]: system_stage(system, config, workflow_dir) for system in config["systems"]}
    )
    return {
        "catalog": catalog_stage(config, workflow_dir),
        "user": user_stage(config, workflow_dir),
        "systems": systems,
        "metrics": metrics_stage(config, workflow_dir),
        "judge": judge_stage(config, workflow_dir),
        "statistics": statistics_stage(config, workflow_dir),
    }
