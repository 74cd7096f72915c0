"""Shared fixtures: repository paths, a scratch copy of the workflow, the Snakemake CLI."""

from __future__ import annotations

import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from crseval.planning import effective_config

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
DEMO_CATALOG = REPO / "resources" / "catalog" / "demo_movies.json"
NON_GENRES = REPO / "resources" / "wordlists" / "non_genre_values.tsv"
FULL_CATALOG = REPO.parent / "shared" / "data" / "opendialkg_movie_data.json"
REFERENCE_LOGS = REPO.parent / "shared" / "data" / "reference_logs"

WORKFLOW_PARTS = ("Snakefile", "workflow", "profiles", "config", "resources", "src", "envs", "examples")


def missing_input_of(configfile: str) -> str | None:
    """The first file a shipped config names that is not on this machine (the catalog, the realism
    reference), or None: Snakefile's input check stops such a config before it plans anything."""
    config = yaml.safe_load((REPO / configfile).read_text())
    named = [config["catalog"]["path"], ((config.get("simulator") or {}).get("realism") or {}).get("reference")]
    return next((path for path in named if path and not (REPO / path).exists()), None)


def default_config() -> dict:
    """config/config.yaml as the workflow runs it: the schema's defaults filled in, without the corpora of
    people's verdicts it names (read from ../shared/data, which a scratch folder does not have beside it;
    the tests of the agreement with people write corpora of their own)."""
    config = effective_config(REPO / "config" / "config.yaml")
    config["human_agreement"]["corpora"] = []
    return config


TEST_CONFIGS = REPO / "config" / "test"


def load_test_config(name: str) -> dict:
    """config/test/<name>.yaml as the workflow runs it, defaults filled in (a fresh copy, free to change)."""
    return effective_config(TEST_CONFIGS / f"{name}.yaml")


def copy_workflow(destination: Path) -> Path:
    """A scratch copy of the workflow, so that runs never touch the repository's results/."""
    for part in WORKFLOW_PARTS:
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, destination / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, destination / part)
    return destination


@pytest.fixture
def workflow_copy(tmp_path: Path) -> Path:
    return copy_workflow(tmp_path)


def _runs_snakemake(function, seen: set) -> bool:
    """Whether a test-suite function calls run_snakemake or runs `python -m snakemake` itself, or
    through the test suite's own helpers it names (followed a few levels deep)."""
    function = inspect.unwrap(function)
    code = getattr(function, "__code__", None)
    if code is None or code in seen or len(seen) > 50:
        return False
    seen.add(code)
    codes = [code]
    while codes:
        current = codes.pop()
        if "run_snakemake" in current.co_names or {"-m", "snakemake"} <= set(current.co_consts):
            return True
        codes += [c for c in current.co_consts if inspect.iscode(c)]
        for name in current.co_names:
            helper = function.__globals__.get(name)
            if inspect.isfunction(helper) and Path(helper.__code__.co_filename).parent == TESTS:
                if _runs_snakemake(helper, seen):
                    return True
    return False


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config, items):
    """Every test that runs the Snakemake CLI, itself or in a fixture of the test suite, is marked
    `workflow` (the marker's definition), so that `-m "not workflow"` leaves out every one of them
    even where the test module does not say so."""
    for item in items:
        if item.get_closest_marker("workflow") or not isinstance(item, pytest.Function):
            continue
        functions = [item.function]
        for definitions in item._fixtureinfo.name2fixturedefs.values():
            functions += [d.func for d in definitions if Path(inspect.getfile(d.func)).parent == TESTS]
        if any(_runs_snakemake(function, set()) for function in functions):
            item.add_marker(pytest.mark.workflow)


# The longest tests outside the Snakemake runs (seconds on two cores), started first when pytest-xdist shares
# the tests out, so that the other tests fill in around them instead of one of them ending the run alone.
LONGEST_FIRST = {
    "test_score_equivalence.py::test_scores_match_the_reference[thesis]": 225,
    "test_simulator.py::test_the_user_says_exactly_what_it_means_on_the_full_catalog": 39,
    "test_concurrency.py::test_kill_9_at_concurrency_8_loses_and_duplicates_nothing": 19,
    "test_comparison.py::test_one_family_setting_changes_every_table_alike": 17,
    "test_sessions.py::test_kill_9_mid_shard_then_resume": 11,
}


@pytest.hookimpl(specname="pytest_collection_modifyitems", trylast=True)  # on the tests left after -m
def pytest_collection_modifyitems_deal_out_the_longest(config, items):
    """In a pytest-xdist worker (every worker sorts alike): `--dist worksteal` first gives each of the n workers
    one of n consecutive equal slices of the tests (and later moves tests from the ends of the slices of
    busy workers to idle ones); the longest tests are dealt out over the heads of the slices."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    long = sorted((i for i in items if i.nodeid.endswith(tuple(LONGEST_FIRST))), key=_seconds, reverse=True)
    if workers < 2 or not long:
        return
    heads = [[] for _ in range(workers)]
    for item in long:
        min(heads, key=lambda head: sum(map(_seconds, head))).append(item)
    rest = [item for item in items if item not in long]
    ordered, start = [], 0
    for worker, head in enumerate(heads):
        size = (len(items) - len(ordered)) // (workers - worker)
        taken = max(0, size - len(head))
        ordered += head + rest[start : start + taken]
        start += taken
    ordered += rest[start:]
    items[:] = ordered


def _seconds(item) -> int:
    return next(seconds for name, seconds in LONGEST_FIRST.items() if item.nodeid.endswith(name))


def run_snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def planned_jobs(result: subprocess.CompletedProcess) -> dict[str, int]:
    """Rule -> job count from the 'Job stats' table of a (dry) run; empty when nothing to do."""
    text = result.stdout + result.stderr
    match = re.search(r"Job stats:\njob\s+count\n[-\s]+\n(.*?)\ntotal\s+\d+", text, re.S)
    if not match:
        return {}
    return {line.split()[0]: int(line.split()[1]) for line in match.group(1).splitlines() if line.strip()}


def planned_outputs(result: subprocess.CompletedProcess, rule: str) -> set[str]:
    """Output paths of the jobs of `rule` that a (dry) run lists."""
    text = result.stdout + result.stderr
    return set(re.findall(rf"rule {rule}:\n(?:[ \t]+(?!output:).*\n)*?[ \t]+output: (\S+)", text))


def rerun_config(ollama_host: str) -> dict:
    """config/test/rerun.yaml with its LLM system and its judge on the Ollama server at `ollama_host`."""
    config = load_test_config("rerun")
    next(s for s in config["systems"] if s["name"] == "fake-llm")["backend"]["host"] = ollama_host
    config["judge"]["backend"]["host"] = ollama_host
    return config


def write_config(directory: Path, config: dict, name: str = "test.yaml") -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


SMALL_CATALOG = {
    "Heat": {
        "name": "Heat",
        "year": "1995",
        "genre": ["Crime Fiction", "Thriller"],
        "actor": ["Al Pacino", "Robert De Niro"],
        "director": ["Michael Mann"],
        "writer": ["Michael Mann"],
        "language": ["English Language"],
        "plot": "A detective hunts a crew of bank robbers in Los Angeles.",
        "original_id": "1",
    },
    "Casino": {
        "name": "Casino",
        "year": "1995",
        "genre": ["Crime", "Drama"],
        "actor": ["Robert De Niro", "Sharon Stone"],
        "director": ["Martin Scorsese"],
        "writer": ["Nicholas Pileggi"],
        "language": ["English"],
        "plot": "A casino manager in Las Vegas faces the mob.",
        "original_id": "2",
    },
    "Goodfellas": {
        "name": "Goodfellas",
        "year": "1990",
        "genre": ["Crime", "Drama"],
        "actor": ["Robert De Niro", "Ray Liotta"],
        "director": ["Martin Scorsese"],
        "writer": ["Nicholas Pileggi", "Martin Scorsese"],
        "language": ["English"],
        "plot": "A young man rises through the mob in New York.",
        "original_id": "3",
    },
    "Citizen Kane": {
        "name": "Citizen Kane",
        "year": "1941",
        "genre": ["Drama", "Mystery"],
        "actor": ["Orson Welles", "Joseph Cotten"],
        "director": ["Orson Welles"],
        "writer": ["Herman J. Mankiewicz", "Orson Welles"],
        "language": ["English"],
        "plot": "A reporter investigates the last word of a newspaper tycoon.",
        "original_id": "4",
    },
    "The Third Man": {
        "name": "The Third Man",
        "year": "1949",
        "genre": ["Thriller", "Mystery"],
        "actor": ["Joseph Cotten", "Orson Welles"],
        "director": ["Carol Reed"],
        "writer": ["Graham Greene"],
        "language": ["English", "German"],
        "plot": "A writer in Vienna searches for the truth about his friend.",
        "original_id": "5",
    },
    "Up": {
        "name": "Up",
        "year": "2009",
        "genre": ["Animation", "Adventure"],
        "actor": ["Ed Asner"],
        "director": ["Pete Docter"],
        "writer": ["Pete Docter"],
        "language": ["English"],
        "plot": "An old man flies his house to South America with balloons.",
        "original_id": "6",
    },
    "Amelie": {
        "name": "Amelie",
        "year": "2001",
        "genre": ["Comedy", "Romance"],
        "actor": ["Audrey Tautou"],
        "director": ["Jean-Pierre Jeunet"],
        "writer": ["Jean-Pierre Jeunet"],
        "language": ["French"],
        "plot": "A shy waitress in Paris decides to change the lives of others.",
        "original_id": "7",
    },
    "Scream": {
        "name": "Scream",
        "year": "1996",
        "genre": ["Horror", "Mystery"],
        "actor": ["Neve Campbell"],
        "director": ["Wes Craven"],
        "writer": ["Kevin Williamson"],
        "language": ["English"],
        "plot": "A masked killer stalks teenagers in a small town.",
        "original_id": "8",
    },
}


@pytest.fixture(scope="session")
def small_index(tmp_path_factory):
    """The hand-written eight-film catalog above, indexed."""
    import json

    from crseval.catalog.build import build_index
    from crseval.catalog.index import CatalogIndex

    path = tmp_path_factory.mktemp("small") / "catalog.json"
    path.write_text(json.dumps(SMALL_CATALOG))
    films, concepts, _ = build_index(path, NON_GENRES, {"per_film": 3, "min_df": 1, "max_df": 1.0, "lemmatize": True})
    return CatalogIndex(films.to_pandas(), concepts.to_pandas())


@pytest.fixture(scope="session")
def matcher(small_index):
    """The concept matcher of the eight-film catalog (a test file over another catalog defines its own)."""
    from crseval.language.concepts import ConceptMatcher

    return ConceptMatcher(small_index.concepts, small_index.films)


@pytest.fixture(scope="session")
def demo_matcher(demo_index):
    """The concept matcher of the demo catalog."""
    from crseval.language.concepts import ConceptMatcher

    return ConceptMatcher(demo_index.concepts, demo_index.films)


@pytest.fixture(scope="session")
def full_matcher(full_index):
    """The concept matcher of the OpenDialKG catalog."""
    from crseval.language.concepts import ConceptMatcher

    return ConceptMatcher(full_index.concepts, full_index.films)


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory):
    from crseval.catalog.build import build_index
    from crseval.catalog.index import CatalogIndex

    films, concepts, _ = build_index(
        DEMO_CATALOG, NON_GENRES, {"per_film": 5, "min_df": 2, "max_df": 0.5, "lemmatize": True}
    )
    return CatalogIndex(films.to_pandas(), concepts.to_pandas())


@pytest.fixture(scope="session")
def full_index():
    """The 2,164-film OpenDialKG catalog, indexed (tests using it skip when it is absent)."""
    from crseval.catalog.build import build_index
    from crseval.catalog.index import CatalogIndex

    if not FULL_CATALOG.exists():
        pytest.skip("the OpenDialKG catalog is not beside the repository")
    films, concepts, _ = build_index(
        FULL_CATALOG, NON_GENRES, {"per_film": 5, "min_df": 2, "max_df": 0.5, "lemmatize": True}
    )
    return CatalogIndex(films.to_pandas(), concepts.to_pandas())


@pytest.fixture(scope="session")
def catalog_files(tmp_path_factory):
    """The demo catalog's index files (films, concepts, summary) in a folder, as index_catalog writes them."""
    from crseval.catalog.build import build_index
    from crseval.core.io import write_json, write_parquet

    folder = tmp_path_factory.mktemp("catalog")
    films, concepts, summary = build_index(
        DEMO_CATALOG, NON_GENRES, {"per_film": 5, "min_df": 2, "max_df": 0.5, "lemmatize": True}
    )
    write_parquet(films, folder / "films.parquet")
    write_parquet(concepts, folder / "concepts.parquet")
    write_json(summary, folder / "summary.json")
    return folder


def shard_inputs(catalog: Path, tmp_path: Path) -> dict:
    """The inputs a ShardRunner takes besides the system and the simulator, for a catalog folder as
    `catalog_files` writes it: the index files, the session schema, an LLM runtime caching under `tmp_path`."""
    return {
        "films": str(catalog / "films.parquet"),
        "concepts": str(catalog / "concepts.parquet"),
        "catalog_summary": str(catalog / "summary.json"),
        "schema": str(REPO / "src" / "crseval" / "core" / "schemas" / "session.schema.yaml"),
        "llm_runtime": {"cache_dir": str(tmp_path / "cache"), "timeout_s": 10, "max_retries": 1, "backoff_s": 0.0},
        "threads": 1,
    }


def model_free_scorer(catalog: Path, settings: dict):
    """A scorer of the catalog folder's index with no topic model and no embedder (`settings` must select
    metrics that need neither)."""
    from crseval.metrics.scorer import build_scorer

    return build_scorer(
        films=catalog / "films.parquet",
        concepts=catalog / "concepts.parquet",
        lda_dir=None,
        settings=settings,
        embedding_cache=None,
    )


@pytest.fixture
def no_git_above(tmp_path, monkeypatch):
    """git must not find a repository above tmp_path (as if the tree had no .git)."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    return tmp_path


@pytest.fixture(scope="module")
def ollama():
    """A loopback Ollama server (tests/fake_servers.py) shared by a test file's workflow runs."""
    from fake_servers import FakeOllama  # a test helper module beside this one

    with FakeOllama() as server:
        yield server


@pytest.fixture
def index_dir(tmp_path, small_index):
    """The eight-film catalog's index files in a folder, with a catalog summary, as index_catalog writes them."""
    import json

    import pyarrow as pa

    from crseval.core.io import write_parquet

    folder = tmp_path / "catalog"
    folder.mkdir()
    films = small_index.films.reset_index(drop=True)
    write_parquet(pa.Table.from_pandas(films, preserve_index=False), folder / "films.parquet")
    write_parquet(pa.Table.from_pandas(small_index.concepts, preserve_index=False), folder / "concepts.parquet")
    (folder / "summary.json").write_text(json.dumps({"catalog": {"sha256": "c" * 64}}))
    return folder
