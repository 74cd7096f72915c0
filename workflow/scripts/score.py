"""Rule score: one shard of sessions -> per-session and per-turn metric tables.

After the scorer is built, its objects (catalog index, matchers, models: most of the process's
objects, none of them garbage) are frozen out of the cyclic garbage collector (gc.freeze): its
collections during scoring then walk only what scoring allocates, about 4% of the scoring time.
Each score job is a process of its own, so this changes nothing outside it;
benchmarks/bench_score.py does the same.
"""

import gc
import json
import time

import pyarrow as pa
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import log_to, write_parquet
from crseval.core.session_records import read_sessions
from crseval.llm.client import make_client
from crseval.metrics.grounded import PROMPT_KEYS
from crseval.metrics.scorer import build_scorer, with_labels

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.scoring)
llm_runtime = snakemake.config["llm"]
scorer = build_scorer(
    films=snakemake.input.films,
    concepts=snakemake.input.concepts,
    lda_dir=snakemake.input.get("lda"),
    settings=settings,
    embedding_cache=snakemake.config["scoring"]["embedding_cache"],
    llm_factory=lambda backend: make_client(backend, llm_runtime, snakemake.threads),
    topics_prompt=snakemake.input.get("topics_prompt"),
    threads=snakemake.threads,
    system_prompt={key: snakemake.input.get(key) for key in PROMPT_KEYS},  # the system's prompt file, if any
)
gc.freeze()  # the scorer lives as long as the process: the collector need not walk it (docstring)
records = read_sessions(snakemake.input.sessions)
started = time.perf_counter()
sessions, turns = scorer.score(records)
sessions = with_labels(sessions, records)  # human labels of imported sessions, NaN otherwise
log.info("scored %d sessions (%d turns) in %.2f s", len(sessions), len(turns), time.perf_counter() - started)
write_parquet(pa.Table.from_pandas(sessions, preserve_index=False), snakemake.output.sessions)
write_parquet(pa.Table.from_pandas(turns, preserve_index=False), snakemake.output.turns)
