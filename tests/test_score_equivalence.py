"""Scoring gives the same numbers as the reference fixture, so that speed-ups cannot change results.

The fixture (tests/data/score_reference/) holds the session and turn tables of:
- the 300 shared thesis logs, imported as the `import_logs` rule does, scored with every family
  (TAS, legacy CAS in thesis mode, adherence, response statistics with sentence embeddings), and
  again with the legacy CAS in fixed mode;
- a few simulated sessions (stored with the fixture, as the simulator may change), which carry
  the ground truth and liked films that imported logs lack, so that segments, recovery, adherence
  and persona similarity are compared too.
Every numeric column must match to 1e-9 (NaN where NaN), every other column exactly, on any CPU:
the LDA topics, TF-IDF similarities and legacy CAS come out the same to the last bit under every
CPU emulated (benchmarks/cross_cpu_topics.py, docs/reproducibility.md). The exceptions are the
columns computed from sentence embeddings (EMBEDDING_COLUMNS): float32 matrix products whose MKL and
oneDNN kernels differ between CPUs; they are compared at EMBEDDING_TOLERANCE (see there).
Rewrite the fixture, only when a metric is meant to change, with
    .venv/bin/python tests/test_score_equivalence.py --write [COLUMN ...]
which rewrites the named columns only (every column when none is named).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import FULL_CATALOG, NON_GENRES, REFERENCE_LOGS, REPO  # noqa: E402

from crseval.core.config_checks import effective_config
from crseval.planning import config_schema

FIXTURE = REPO / "tests" / "data" / "score_reference"
SIMULATED = FIXTURE / "simulated_sessions.jsonl.gz"
SHARD_SIZE = 25  # as config/thesis_logs.yaml
TOLERANCE = 1e-9
# The embedding columns (float32 embeddings: MKL and oneDNN take other kernels on other CPUs) moved
# by at most 3.6e-7 between the CPUs measured: the Intel CPU that wrote them, an AMD EPYC, and on
# it emulated AVX2 and SSE4.2 CPUs (benchmarks/cross_cpu_topics.py --part embeddings); the count of
# clusters chosen from them did not move. 1e-5 leaves a margin of about 30 for CPUs not measured and
# is far below what a change of these metrics would move (their values lie in -1..2).
EMBEDDING_TOLERANCE = 1e-5
EMBEDDING_COLUMNS = ("embedding_diversity", "cluster_silhouette", "intra_cluster_diversity", "inter_cluster_diversity")
# The columns computed from the sentence embeddings: absent from a run without them.
FROM_EMBEDDINGS = (*EMBEDDING_COLUMNS, "semantic_clusters")
# name -> (cas mode, metric families, sentence embeddings); the embedding model runs with one thread so that
# its vectors repeat. Each run has a fixture of its own.
RUNS = {
    "thesis": ("thesis", ["tas", "cas", "adherence", "response_stats"], True),
    "fixed": ("fixed", ["cas"], False),
}
# The thesis run without the embedding model (about 10 s, where the model takes 3-4 minutes on one core):
# every column but those FROM_EMBEDDINGS must match the thesis fixture; those are compared on every fourth
# session with the model, in a test marked `llm` (a language model), so the quick subset keeps every other check.
WITHOUT_EMBEDDINGS = {"thesis_words": "thesis"}
SIMULATED_SYSTEMS = [
    {"name": "template", "agent": "template"},
    {"name": "oracle", "agent": "oracle"},
    {"name": "stubborn", "agent": "stubborn"},
    {"name": "random", "agent": "random"},
    {"name": "parrot", "agent": "parrot"},
]

pytestmark = pytest.mark.skipif(
    not (REFERENCE_LOGS.exists() and FULL_CATALOG.exists()),
    reason="the thesis logs and the OpenDialKG catalog are not beside the repository",
)


def thesis_config() -> dict:
    return effective_config(REPO / "config" / "thesis_logs.yaml", schema=config_schema())


def prepare(workdir: Path) -> None:
    """Catalog index and LDA model of the full catalog, with the thesis settings."""
    from crseval.catalog.build import build_index
    from crseval.catalog.topics import LdaSettings, TopicModel
    from crseval.core.io import write_parquet

    config = thesis_config()
    films, concepts, summary = build_index(FULL_CATALOG, NON_GENRES, config["catalog"]["plot_keywords"])
    write_parquet(films, workdir / "films.parquet")
    write_parquet(concepts, workdir / "concepts.parquet")
    (workdir / "summary.json").write_text(json.dumps(summary))
    TopicModel.train([p for p in films.column("plot").to_pylist() if p], LdaSettings.from_config(config["lda"])).save(
        workdir / "lda"
    )


def imported_sessions(workdir: Path) -> list[dict]:
    """The shared logs as session records, with recognised titles, as the import_logs rule makes them."""
    from crseval.catalog.index import CatalogIndex
    from crseval.corpora.thesis_logs import import_logs
    from crseval.language.concepts import ConceptMatcher

    index = CatalogIndex.read(workdir / "films.parquet", workdir / "concepts.parquet")
    sessions, _ = import_logs(
        sorted(REFERENCE_LOGS.glob("*.json")), ConceptMatcher(index.concepts, index.films), "0" * 64, "0" * 64
    )
    return [record for system in sorted(sessions) for record in sessions[system]]


def simulate_sessions(workdir: Path) -> list[dict]:
    """A few LLM-free simulated sessions per calibration system (written to the fixture once)."""
    from crseval.simulate.shard import build_shard_runner

    config = effective_config(REPO / "config" / "calibration.yaml", schema=config_schema())
    simulator = {**config["simulator"], "templates": str(REPO / config["simulator"]["templates"])}
    records = []
    for system in SIMULATED_SYSTEMS:
        runner = build_shard_runner(
            system=system,
            simulator=simulator,
            agent=config["agent"],
            experiment_seed=7,
            turns=12,
            films=workdir / "films.parquet",
            concepts=workdir / "concepts.parquet",
            catalog_summary=workdir / "summary.json",
            schema=REPO / "src/crseval/core/schemas/session.schema.yaml",
            llm_runtime=config["llm"],
            threads=1,
        )
        output = workdir / "sessions" / f"{system['name']}.jsonl"
        runner.run(range(8), progress=workdir / "sessions" / f".{system['name']}.progress", output=output)
        records += [json.loads(line) for line in output.read_text().splitlines() if line.strip()]
    return records


def score_all(workdir: Path, records: list[dict], run: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score the records system by system in shards of SHARD_SIZE with one scorer, as score jobs do."""
    return score_with(workdir, records, *RUNS[run])


def score_with(workdir: Path, records: list[dict], mode: str, families: list[str], embeddings: bool):
    """`score_all` with the run's settings given: the CAS mode, the families, the sentence embeddings."""
    from crseval.metrics.scorer import build_scorer

    scoring = thesis_config()["scoring"]
    settings = {
        **scoring,
        "metrics": families,
        "cas": {**scoring["cas"], "mode": mode},
        "response_stats": {**scoring["response_stats"], "embeddings": embeddings},
    }
    scorer = build_scorer(
        films=workdir / "films.parquet",
        concepts=workdir / "concepts.parquet",
        lda_dir=workdir / "lda",
        settings=settings,
        embedding_cache=None,
        threads=1,
    )
    sessions, turns = [], []
    for system in dict.fromkeys(r["system"] for r in records):
        mine = [r for r in records if r["system"] == system]
        for start in range(0, len(mine), SHARD_SIZE):
            session_table, turn_table = scorer.score(mine[start : start + SHARD_SIZE])
            sessions.append(session_table)
            turns.append(turn_table)
    return pd.concat(sessions, ignore_index=True), pd.concat(turns, ignore_index=True)


def read_simulated() -> list[dict]:
    with gzip.open(SIMULATED, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def fixture_path(run: str, table: str) -> Path:
    return FIXTURE / f"{run}.{table}.parquet"


def assert_same_table(actual: pd.DataFrame, expected: pd.DataFrame, name: str) -> None:
    assert list(actual.columns) == list(expected.columns), f"{name}: columns differ"
    assert len(actual) == len(expected), f"{name}: {len(actual)} rows, expected {len(expected)}"
    for column in expected.columns:
        want, got = expected[column], actual[column]
        if pd.api.types.is_numeric_dtype(want) and not pd.api.types.is_bool_dtype(want):
            want, got = want.to_numpy(dtype=float), got.to_numpy(dtype=float)
            assert np.array_equal(np.isnan(want), np.isnan(got)), f"{name}.{column}: NaN in other rows"
            tolerance = EMBEDDING_TOLERANCE if column in EMBEDDING_COLUMNS else TOLERANCE
            gap = np.abs(np.nan_to_num(want) - np.nan_to_num(got))
            worst = int(np.argmax(gap)) if len(gap) else 0
            assert not len(gap) or gap[worst] <= tolerance * max(1.0, abs(np.nan_to_num(want)[worst])), (
                f"{name}.{column}: row {worst} is {got[worst]!r}, expected {want[worst]!r}"
            )
        else:
            assert (
                want.astype(object).where(want.notna(), None).tolist()
                == got.astype(object).where(got.notna(), None).tolist()
            ), f"{name}.{column}: values differ"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """The index, LDA model and records both runs score (each run is scored in its own test, so that
    test workers running them side by side do not each score both)."""
    workdir = tmp_path_factory.mktemp("score_reference")
    prepare(workdir)
    return workdir, imported_sessions(workdir) + read_simulated()


@pytest.mark.parametrize("run", [run for run in RUNS if not RUNS[run][2]])
def test_scores_match_the_reference(prepared, run):
    workdir, records = prepared
    sessions, turns = score_all(workdir, records, run)
    # parquet round trip, so that dtypes compare as stored
    for table, frame in (("sessions", sessions), ("turns", turns)):
        expected = pd.read_parquet(fixture_path(run, table))
        assert_same_table(pd.read_parquet(_round_trip(frame)), expected, f"{run}.{table}")


@pytest.mark.llm
@pytest.mark.parametrize("run", [run for run in RUNS if RUNS[run][2]])
def test_the_embedding_columns_match_the_reference_on_every_fourth_session(prepared, run):
    """The columns FROM_EMBEDDINGS, each computed from one session's replies alone, on a quarter of the
    sessions (the embedding model takes minutes on one core over all of them); every other column of the run is
    compared on every session by test_scores_without_the_embedding_model_match_the_reference."""
    workdir, records = prepared
    sample = records[::4]
    mode, _, _ = RUNS[run]
    sessions, _ = score_with(workdir, sample, mode, ["response_stats"], embeddings=True)
    actual = pd.read_parquet(_round_trip(sessions)).set_index(["system", "session_id"])
    expected = pd.read_parquet(fixture_path(run, "sessions")).set_index(["system", "session_id"])
    expected = expected.loc[actual.index, list(FROM_EMBEDDINGS)].reset_index()
    assert len(expected) == len(sample) and expected["semantic_clusters"].notna().any()
    assert_same_table(actual[list(FROM_EMBEDDINGS)].reset_index(), expected, f"{run}.sessions (every fourth)")


@pytest.mark.parametrize("run", list(WITHOUT_EMBEDDINGS))
def test_scores_without_the_embedding_model_match_the_reference(prepared, run):
    workdir, records = prepared
    reference = WITHOUT_EMBEDDINGS[run]
    mode, families, _ = RUNS[reference]
    tables = score_with(workdir, records, mode, families, embeddings=False)
    for table, frame in zip(("sessions", "turns"), tables):
        actual = pd.read_parquet(_round_trip(frame))
        computed = [column for column in FROM_EMBEDDINGS if column in actual]
        assert table == "turns" or computed, f"{run}.sessions: no column from the embeddings"
        assert actual[computed].isna().all().all(), f"{run}.{table}: embedding columns filled without the model"
        expected = pd.read_parquet(fixture_path(reference, table)).drop(columns=computed)
        assert_same_table(actual.drop(columns=computed), expected, f"{run}.{table}")


def _round_trip(frame: pd.DataFrame):
    import io

    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    buffer.seek(0)
    return buffer


def write_fixture(columns: list[str]) -> None:
    """Score everything and write the fixture: the named columns into the present tables, or every table whole."""
    import tempfile

    FIXTURE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        prepare(workdir)
        if not SIMULATED.exists():
            with gzip.open(SIMULATED, "wt", encoding="utf-8", compresslevel=9) as handle:
                handle.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in simulate_sessions(workdir))
        records = imported_sessions(workdir) + read_simulated()
        written = set()
        for run in RUNS:
            for table, frame in zip(("sessions", "turns"), score_all(workdir, records, run)):
                if columns:
                    frame = _with_columns(pd.read_parquet(fixture_path(run, table)), frame, columns, f"{run}.{table}")
                    written |= set(columns) & set(frame.columns)
                frame.to_parquet(fixture_path(run, table), index=False, compression="zstd")
        if set(columns) - written:
            sys.exit(f"no table has the columns {sorted(set(columns) - written)}")


def _with_columns(stored: pd.DataFrame, scored: pd.DataFrame, columns: list[str], name: str) -> pd.DataFrame:
    """The stored table with `columns` taken from the scored one (same rows; a named column the fixture lacks
    is added where the scored table has it)."""
    added = [c for c in scored.columns if c not in stored.columns]
    if (
        set(added) - set(columns)
        or set(stored.columns) - set(scored.columns)
        or not stored[["system", "session_id"]].equals(scored[["system", "session_id"]])
    ):
        sys.exit(f"{name}: the scored table has other rows or columns than the fixture; rewrite it whole")
    stored = stored.copy()
    for column in set(columns) & set(scored.columns):
        stored[column] = scored[column]
    return stored[list(scored.columns)]


if __name__ == "__main__":
    if sys.argv[1:2] != ["--write"]:
        sys.exit(__doc__)
    write_fixture(sys.argv[2:])
