"""Do the scores of the shared thesis logs come out the same on another CPU? Emulated on this one.

    .venv/bin/python benchmarks/cross_cpu_topics.py [--part topics|embeddings] [--variant NAME ...]
                                                    [--markdown] [--src DIR] [--fixture DIR]

Each variant runs in its own process with environment variables that make this machine's
libraries take the code paths another CPU would take:
- OPENBLAS_CORETYPE picks the kernels of numpy's and scipy's bundled OpenBLAS (DYNAMIC_ARCH builds
  that honour it; the architecture each library reports through threadpoolctl is printed);
- OPENBLAS_NUM_THREADS is the BLAS thread count, which decides how a many-core machine splits work
  (the partition depends on the count, not on the cores present, so 8 threads emulate 8 cores;
  OpenBLAS caps the variable at the cores present, so the worker sets the count with threadpoolctl);
- NPY_DISABLE_CPU_FEATURES turns off numpy's AVX-512 (or AVX2) loops, sorts among them;
- ATEN_CPU_CAPABILITY, MKL_ENABLE_INSTRUCTIONS and ONEDNN_MAX_CPU_ISA do the same for torch's own
  kernels and the MKL and oneDNN it calls (sentence embeddings).

Part `topics` (the default, about 20 s a variant): the catalog index of the full OpenDialKG catalog,
the LDA trained with the thesis settings (config/thesis_logs.yaml), the topic words of every distinct
text of the 300 shared logs, and the legacy CAS (TF-IDF similarity, LDA topics) of those logs in
thesis and in fixed mode, scored system by system in shards of 25 with one scorer, as
tests/test_score_equivalence.py does. Compared with the first variant: the LDA model's numbers, the
topics' top words, the texts whose topic words differ, and per mode the sessions whose CAS columns
differ (beyond 1e-9, or NaN in other places), with the largest difference per column.

Part `embeddings` (about 3 min a variant): the response statistics with sentence embeddings of the
shared logs and of the fixture's simulated sessions, as the equivalence test scores them; compared
are the columns computed from the embeddings.

Both parts also compare with the fixture (tests/data/score_reference/, or `--fixture DIR`), which
tells which emulated CPU reproduces the machine that wrote it. `--src` measures another source tree,
e.g. an older commit's: `git archive <commit> src tests/data | tar -x -C /tmp/old`, then `--src
/tmp/old/src --fixture /tmp/old/tests/data/score_reference`. docs/reproducibility.md has the numbers.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
LOGS = REPO.parent / "shared" / "data" / "reference_logs"
CATALOG = REPO.parent / "shared" / "data" / "opendialkg_movie_data.json"
NON_GENRES = REPO / "resources" / "wordlists" / "non_genre_values.tsv"
FIXTURE = REPO / "tests" / "data" / "score_reference"
SHARD_SIZE = 25
TOLERANCE = 1e-9
MODES = ("thesis", "fixed")
KEY = ["system", "session_id"]
CAS_COLUMNS = [
    "cross_coherence",
    "context_retention",
    "topic_recovery_rate",
    "avg_recovery_delay",
    "topic_interference",
    "context_adaptation_score",
    "cas_shifts",
]
EMBEDDING_COLUMNS = [
    "embedding_diversity",
    "semantic_clusters",
    "cluster_silhouette",
    "intra_cluster_diversity",
    "inter_cluster_diversity",
]
EMULATION = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_NUM_THREADS",
    "NPY_DISABLE_CPU_FEATURES",
    "ATEN_CPU_CAPABILITY",
    "MKL_ENABLE_INSTRUCTIONS",
    "ONEDNN_MAX_CPU_ISA",
)
AVX2_CPU = {
    "OPENBLAS_CORETYPE": "Haswell",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL",
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
}
SSE42_CPU = {
    "OPENBLAS_CORETYPE": "Nehalem",
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL",
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
}
# name -> environment; the first is the reference the others are compared with
VARIANTS = {
    "native": {},
    "native, 1 BLAS thread": {"OPENBLAS_NUM_THREADS": "1"},
    "native, 8 BLAS threads": {"OPENBLAS_NUM_THREADS": "8"},
    "OpenBLAS Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "OpenBLAS Sandybridge": {"OPENBLAS_CORETYPE": "Sandybridge"},
    "OpenBLAS Nehalem": {"OPENBLAS_CORETYPE": "Nehalem"},
    "OpenBLAS Prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "AVX2 CPU (every library)": AVX2_CPU,
    "SSE4.2 CPU (every library)": SSE42_CPU,
}
DEFAULT_VARIANTS = {
    "topics": list(VARIANTS),
    "embeddings": ["native", "AVX2 CPU (every library)", "SSE4.2 CPU (every library)"],
}


# ------------------------------------------------------------------ one variant, in its own process


def cpu_paths() -> dict:
    """What this process's libraries actually run: OpenBLAS kernels and threads, numpy's SIMD targets,
    torch's kernels when torch is loaded."""
    import scipy.linalg  # noqa: F401  (loads scipy's OpenBLAS, so that it is reported too)
    import threadpoolctl
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    paths = {
        "blas": {
            ("numpy" if "numpy" in info["filepath"] else "scipy"): f"{info['architecture']} x{info['num_threads']}"
            for info in threadpoolctl.threadpool_info()
            if info["user_api"] == "blas"
        },
        "numpy_simd": [target for target in __cpu_dispatch__ if __cpu_features__.get(target)],
    }
    if "torch" in sys.modules:
        paths["torch"] = sys.modules["torch"].backends.cpu.get_cpu_capability()
    return paths


def thesis_config() -> dict:
    """config/thesis_logs.yaml with the schema's defaults filled in (shipped configs hold only what they change)."""
    from crseval.core.config_checks import effective_config
    from crseval.planning import config_schema

    return effective_config(REPO / "config" / "thesis_logs.yaml", schema=config_schema())


def scoring_settings(families: list[str], mode: str = "thesis") -> dict:
    scoring = thesis_config()["scoring"]
    return {
        **scoring,
        "metrics": families,
        "cas": {**scoring["cas"], "mode": mode},
        "response_stats": {**scoring["response_stats"], "embeddings": True},
    }


def score(records: list[dict], settings: dict, out: Path) -> pd.DataFrame:
    """Session table of the records, system by system in shards, one scorer (as score jobs do)."""
    from crseval.metrics.scorer import build_scorer

    scorer = build_scorer(
        films=out / "films.parquet",
        concepts=out / "concepts.parquet",
        lda_dir=out / "lda",
        settings=settings,
        embedding_cache=None,
        threads=1,
    )
    tables = []
    for system in dict.fromkeys(r["system"] for r in records):
        mine = [r for r in records if r["system"] == system]
        tables += [scorer.score(mine[i : i + SHARD_SIZE])[0] for i in range(0, len(mine), SHARD_SIZE)]
    return pd.concat(tables, ignore_index=True)


def run_variant(part: str, out: Path, src: Path) -> None:
    """Index, LDA, topic words and CAS (or the embedding columns) of the shared logs, written to `out`."""
    import scipy.linalg  # noqa: F401  (loads scipy's OpenBLAS before the thread count is set)
    import threadpoolctl

    if "OPENBLAS_NUM_THREADS" in os.environ:
        threadpoolctl.threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]), user_api="blas")
    sys.path.insert(0, str(src))
    from crseval.catalog.build import build_index
    from crseval.catalog.index import CatalogIndex
    from crseval.catalog.topics import LdaSettings, TopicModel
    from crseval.core.io import write_parquet
    from crseval.corpora.thesis_logs import import_logs
    from crseval.language.concepts import ConceptMatcher

    config = thesis_config()
    films, concepts, _ = build_index(CATALOG, NON_GENRES, config["catalog"]["plot_keywords"])
    write_parquet(films, out / "films.parquet")
    write_parquet(concepts, out / "concepts.parquet")
    model = TopicModel.train([p for p in films.column("plot").to_pylist() if p], LdaSettings.from_config(config["lda"]))
    model.save(out / "lda")

    index = CatalogIndex.read(out / "films.parquet", out / "concepts.parquet")
    imported, _ = import_logs(
        sorted(LOGS.glob("*.json")), ConceptMatcher(index.concepts, index.films), "0" * 64, "0" * 64
    )
    records = [record for system in sorted(imported) for record in imported[system]]
    if part == "topics":
        model = TopicModel.load(out / "lda")
        np.save(out / "topic_word.npy", model.model.get_topics())
        texts = list(dict.fromkeys(t[k] for r in records for t in r["turns"] for k in ("user_text", "system_text")))
        (out / "topics.json").write_text(
            json.dumps({"topic_words": model.topic_words, "text_topics": model.topics_batch(texts)})
        )
        for mode in MODES:
            score(records, scoring_settings(["cas"], mode), out).to_parquet(
                out / f"{mode}.sessions.parquet", index=False
            )
    else:
        with gzip.open(FIXTURE / "simulated_sessions.jsonl.gz", "rt", encoding="utf-8") as handle:
            records += [json.loads(line) for line in handle if line.strip()]
        score(records, scoring_settings(["response_stats"]), out).to_parquet(
            out / "thesis.sessions.parquet", index=False
        )
    (out / "cpu.json").write_text(json.dumps(cpu_paths()))


# ------------------------------------------------------------------ comparison


def differing_sessions(table: pd.DataFrame, reference: pd.DataFrame, columns: list[str]) -> tuple[int, dict]:
    """Sessions whose `columns` differ beyond the tolerance (or NaN in other places), and the largest gap
    per column."""
    joined = reference[KEY + columns].merge(table[KEY + columns], on=KEY, suffixes=("", "_other"))
    if len(joined) != len(reference):
        raise ValueError(f"{len(reference)} sessions expected, {len(joined)} in common")
    differs = np.zeros(len(joined), dtype=bool)
    largest = {}
    for column in columns:
        want, got = joined[column].to_numpy(float), joined[f"{column}_other"].to_numpy(float)
        gap = np.abs(np.nan_to_num(want) - np.nan_to_num(got))
        differs |= (np.isnan(want) != np.isnan(got)) | (gap > TOLERANCE * np.maximum(1.0, np.abs(np.nan_to_num(want))))
        largest[column] = float(gap.max())
    return int(differs.sum()), largest


def compare(part: str, outs: dict[str, Path], fixture_dir: Path) -> list[dict]:
    reference = outs[next(iter(outs))]
    modes, columns = (MODES, CAS_COLUMNS) if part == "topics" else (("thesis",), EMBEDDING_COLUMNS)
    rows = []
    for name, out in outs.items():
        row = {"variant": name, "runs": json.loads((out / "cpu.json").read_text())}
        if part == "topics":
            row.update(compare_topics(out, reference))
        for mode in modes:
            table = pd.read_parquet(out / f"{mode}.sessions.parquet")
            count, largest = differing_sessions(table, pd.read_parquet(reference / f"{mode}.sessions.parquet"), columns)
            fixture = pd.read_parquet(fixture_dir / f"{mode}.sessions.parquet").merge(table[KEY], on=KEY)
            from_fixture, largest_from_fixture = differing_sessions(table, fixture, columns)
            row[mode] = {
                "sessions": len(table),
                "differing": count,
                "largest_gap": largest,
                "differing_from_fixture": from_fixture,
                "largest_gap_from_fixture": largest_from_fixture,
            }
        rows.append(row)
    return rows


def compare_topics(out: Path, reference: Path) -> dict:
    topics, ref_topics = (json.loads((path / "topics.json").read_text()) for path in (out, reference))
    matrix, ref_matrix = (np.load(path / "topic_word.npy") for path in (out, reference))
    return {
        "model_dtype": str(matrix.dtype),
        "model_identical": bool(np.array_equal(matrix, ref_matrix)),
        "model_max_relative_gap": float(np.max(np.abs(matrix - ref_matrix) / np.abs(ref_matrix))),
        "topics_other_words": sum(a != b for a, b in zip(topics["topic_words"], ref_topics["topic_words"])),
        "texts_other_words": sum(a != b for a, b in zip(topics["text_topics"], ref_topics["text_topics"])),
        "texts": len(ref_topics["text_topics"]),
    }


def markdown(part: str, rows: list[dict]) -> str:
    if part == "topics":
        lines = [
            "| variant | OpenBLAS kernels | numpy SIMD | LDA model | texts with other topic words | "
            "sessions differing (thesis / fixed) | from the fixture (thesis / fixed) |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            model = "identical" if row["model_identical"] else f"rel. gap {row['model_max_relative_gap']:.1e}"
            lines.append(
                f"| {row['variant']} | {row['runs']['blas']['numpy']} | {(row['runs']['numpy_simd'] or ['-'])[-1]} | "
                f"{row['model_dtype']}, {model} | {row['texts_other_words']} of {row['texts']} | "
                f"{row['thesis']['differing']} / {row['fixed']['differing']} of {row['thesis']['sessions']} | "
                f"{row['thesis']['differing_from_fixture']} / {row['fixed']['differing_from_fixture']} |"
            )
        return "\n".join(lines)
    lines = [
        "| variant | torch kernels | sessions differing | largest gap per column | from the fixture: differing, "
        "largest gap |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        thesis = row["thesis"]
        gaps = ", ".join(f"{column} {gap:.1e}" for column, gap in thesis["largest_gap"].items())
        fixture = max(thesis["largest_gap_from_fixture"].values())
        lines.append(
            f"| {row['variant']} | {row['runs'].get('torch', '-')} | {thesis['differing']} of {thesis['sessions']} "
            f"| {gaps} | {thesis['differing_from_fixture']}, {fixture:.1e} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=list(DEFAULT_VARIANTS), default="topics")
    parser.add_argument(
        "--variant", action="append", choices=list(VARIANTS), help="default: per part; first: reference"
    )
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables instead of JSON lines")
    parser.add_argument("--src", type=Path, default=REPO / "src", help="the crseval source tree to measure")
    parser.add_argument("--fixture", type=Path, default=FIXTURE, help="the score fixture to compare with")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_variant(args.part, args.worker, args.src.resolve())
        return
    if not (LOGS.exists() and CATALOG.exists()):
        sys.exit(f"the thesis logs ({LOGS}) and the OpenDialKG catalog ({CATALOG}) are needed")
    names = args.variant or DEFAULT_VARIANTS[args.part]
    with tempfile.TemporaryDirectory() as tmp:
        outs = {}
        for number, name in enumerate(names):
            out = Path(tmp) / str(number)
            out.mkdir()
            env = {k: v for k, v in os.environ.items() if k not in EMULATION}
            print(f"{name} ...", file=sys.stderr, flush=True)
            subprocess.run(
                [sys.executable, __file__, "--part", args.part, "--worker", str(out), "--src", str(args.src)],
                env={**env, **VARIANTS[name]},
                check=True,
            )
            outs[name] = out
        rows = compare(args.part, outs, args.fixture)
    print(markdown(args.part, rows) if args.markdown else "\n".join(json.dumps(row) for row in rows))


if __name__ == "__main__":
    main()
