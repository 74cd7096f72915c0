"""Rules judge and panel_judge: one shard of sessions -> one judgement row per session by one judge
(scores, G-Eval scores, or the reasons they are missing)."""

import json

import pandas as pd
import pyarrow as pa
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.catalog.index import CatalogIndex
from crseval.core.io import log_to, write_parquet
from crseval.core.session_records import read_sessions
from crseval.judge.judge_columns import CRITERIA, column, geval_column
from crseval.judge.llm_judge import Judge
from crseval.language.concepts import ConceptMatcher
from crseval.llm.client import make_client
from crseval.llm.prompts import PromptTemplate

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.judge)
name = settings.get("name")  # None: the first judge; else a panel judge's name
index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
client = make_client(settings["backend"], snakemake.config["llm"], snakemake.threads)
judge = Judge(
    client,
    PromptTemplate(snakemake.input.prompt),
    ConceptMatcher(index.concepts, index.films),
    settings["options"],
    settings["samples"],
    settings["retries"],
    settings["seed"],
    name=name,
    top_logprobs=settings["top_logprobs"],
)
rows = judge.judge_sessions(read_sessions(snakemake.input.sessions), max(1, snakemake.resources.llm_slots))
table = pd.DataFrame(rows)
missing = int((table[column("valid_samples", name)] == 0).sum())
log.info(
    "judge %s (%s model %s): %d sessions judged, %d missing; LLM calls %d, cache hits %d",
    name or "(first)",
    client.backend.name,
    client.backend.model,
    len(table),
    missing,
    client.calls,
    client.cache_hits,
)
with_geval = int(table[[geval_column(c, name) for c in CRITERIA]].notna().all(axis=1).sum())
reasons = table[column("geval_missing_reason", name)].dropna().value_counts()
log.info("G-Eval scores for every criterion in %d of %d sessions", with_geval, len(table))
for reason, count in reasons.items():
    log.info("G-Eval missing in %d sessions: %s", count, reason)
write_parquet(pa.Table.from_pandas(table, preserve_index=False), snakemake.output[0])
